import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { PresetName, ProviderConfig, WebhookProviderConfig } from '../config/resolve-config.ts';
import { invalidArgument } from '../errors/app-error.ts';
import { buildPreset } from '../presets/preset-registry.ts';
import { DEFAULT_TOKEN_HEADER } from '../presets/token-preset.ts';

export const DEFAULT_TRIGGER_BASE_URL = 'http://127.0.0.1:8080';

type JsonObject = Record<string, unknown>;

interface SendContext {
  nowMs: number;
  /** A fresh id per send, so a repeated trigger is a new event rather than a deduplicated retry. */
  uid: string;
}

interface SampleDefinition {
  name: string;
  description: string;
  /** File under samples/. */
  file: string;
  /** Makes the document look freshly sent (ids, timestamps) and returns the sender's own headers. */
  prepare(doc: JsonObject, context: SendContext): Record<string, string>;
}

export interface TriggerSampleInfo {
  name: string;
  description: string;
}

const shortId = (): string => randomBytes(12).toString('base64url');

function record(value: unknown): JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonObject) : {};
}

function github(event: string, file: string, description: string): SampleDefinition {
  return {
    name: event,
    description,
    file,
    prepare: (_doc, { uid }) => ({
      'x-github-event': event,
      'x-github-delivery': uid,
      'x-github-hook-id': '292929292',
      'x-github-hook-installation-target-type': 'repository',
      'user-agent': 'GitHub-Hookshot/switchboard-trigger',
    }),
  };
}

function stripe(type: string, file: string, description: string): SampleDefinition {
  return {
    name: type,
    description,
    file,
    prepare: (doc, { nowMs }) => {
      doc['id'] = `evt_${shortId()}`;
      doc['created'] = Math.floor(nowMs / 1000);
      return { 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' };
    },
  };
}

const GENERIC: SampleDefinition = {
  name: 'generic',
  description: 'a generic JSON event (type order.shipped)',
  file: 'generic-event.json',
  prepare: (doc, { nowMs, uid }) => {
    doc['id'] = `evt_${uid}`;
    doc['created_at'] = new Date(nowMs).toISOString();
    return {
      'x-event-type': typeof doc['type'] === 'string' ? doc['type'] : 'order.shipped',
      'user-agent': 'switchboard-trigger',
    };
  },
};

const SAMPLES: Readonly<Record<PresetName, readonly SampleDefinition[]>> = {
  github: [
    github('push', 'github-push.json', 'a push of one commit to master'),
    github('pull_request', 'github-pull-request.json', 'a pull request opened'),
    github('issues', 'github-issues.json', 'an issue opened'),
  ],
  stripe: [
    stripe('payment_intent.succeeded', 'stripe-payment-intent-succeeded.json', 'a card payment succeeded'),
    stripe('invoice.paid', 'stripe-invoice-paid.json', 'a subscription invoice paid'),
  ],
  slack: [
    {
      name: 'app_mention',
      description: 'an Events API app_mention',
      file: 'slack-app-mention.json',
      prepare: (doc, { nowMs }) => {
        const seconds = Math.floor(nowMs / 1000);
        doc['event_id'] = `Ev${shortId().toUpperCase()}`;
        doc['event_time'] = seconds;
        const event = record(doc['event']);
        event['ts'] = `${seconds}.000200`;
        event['event_ts'] = `${seconds}.000200`;
        return { 'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)' };
      },
    },
  ],
  shopify: [
    {
      name: 'orders/create',
      description: 'an order created (test order)',
      file: 'shopify-orders-create.json',
      prepare: (doc, { nowMs, uid }) => {
        const at = new Date(nowMs).toISOString();
        doc['created_at'] = at;
        doc['updated_at'] = at;
        return {
          'x-shopify-topic': 'orders/create',
          'x-shopify-webhook-id': uid,
          'x-shopify-event-id': randomUUID(),
          'x-shopify-shop-domain': 'switchboard-test.myshopify.com',
          'x-shopify-api-version': '2024-07',
          'x-shopify-triggered-at': at,
          'user-agent': 'Shopify-Captain-Hook',
        };
      },
    },
  ],
  'standard-webhooks': [
    {
      name: 'invoice.paid',
      description: 'an invoice.paid event in the Standard Webhooks envelope',
      file: 'standard-webhooks-invoice-paid.json',
      prepare: (doc, { nowMs }) => {
        doc['timestamp'] = new Date(nowMs).toISOString();
        return { 'user-agent': 'switchboard-trigger' };
      },
    },
  ],
  linear: [
    {
      name: 'Issue.create',
      description: 'an issue created',
      file: 'linear-issue-create.json',
      prepare: (doc, { nowMs, uid }) => {
        // Linear's receiver checks webhookTimestamp against its clock, so it must be now.
        doc['webhookTimestamp'] = nowMs;
        doc['createdAt'] = new Date(nowMs).toISOString();
        return { 'linear-delivery': uid, 'linear-event': 'Issue', 'user-agent': 'Linear-Webhook' };
      },
    },
  ],
  gitlab: [
    {
      name: 'push',
      description: 'a push hook',
      file: 'gitlab-push.json',
      prepare: (_doc, { uid }) => ({
        'x-gitlab-event': 'Push Hook',
        'idempotency-key': uid,
        'x-gitlab-event-uuid': uid,
        'user-agent': 'GitLab/17.4.0',
      }),
    },
  ],
  'generic-hmac': [GENERIC],
  token: [GENERIC],
  open: [GENERIC],
};

/** The samples `switchboard trigger` can send for a preset; the first is the default. */
export function listSamples(preset: PresetName): TriggerSampleInfo[] {
  return SAMPLES[preset].map(({ name, description }) => ({ name, description }));
}

/** Every preset's samples, for help text and docs. */
export function allSamples(): Record<PresetName, TriggerSampleInfo[]> {
  const out = {} as Record<PresetName, TriggerSampleInfo[]>;
  for (const preset of Object.keys(SAMPLES) as PresetName[]) out[preset] = listSamples(preset);
  return out;
}

export interface TriggerOptions {
  provider: ProviderConfig;
  /** A sample name from listSamples (case-insensitive); default the preset's first sample. */
  sample?: string;
  /** Where switchboard listens; default http://127.0.0.1:8080. A path prefix is kept. */
  baseUrl?: string;
  fetch?: typeof fetch;
  now?: () => number;
  timeoutMs?: number;
}

export interface TriggerResult {
  status: number;
  /** The response body as text (switchboard answers JSON). */
  body: string;
  sample: string;
  url: string;
}

export interface PreparedRequest {
  sample: string;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Builds the request a real sender would make: the sample with fresh ids and timestamps, the
 * sender's own headers, and the signature the provider's preset produces with the first configured
 * secret (the current one, when rotating), or the first token for token providers.
 */
export async function prepareTrigger(
  provider: WebhookProviderConfig,
  sampleName: string | undefined,
  nowMs: number,
): Promise<PreparedRequest> {
  const available = SAMPLES[provider.preset];
  const definition =
    sampleName === undefined ? available[0] : available.find((s) => s.name.toLowerCase() === sampleName.toLowerCase());
  if (definition === undefined) {
    throw invalidArgument(
      `provider ${provider.name} (${provider.preset}) has no sample "${sampleName ?? ''}"; available: ${available.map((s) => s.name).join(', ')}`,
    );
  }
  const doc = record(
    JSON.parse(await readFile(new URL(`../presets/samples/${definition.file}`, import.meta.url), 'utf8')),
  );
  const senderHeaders = definition.prepare(doc, { nowMs, uid: randomUUID() });
  const body = Buffer.from(JSON.stringify(doc), 'utf8');
  const headers: Record<string, string> = { 'content-type': 'application/json', ...senderHeaders };

  const secret = provider.secrets[0];
  if (provider.trustMode === 'signed' || provider.trustMode === 'token') {
    if (secret === undefined) {
      throw invalidArgument(
        `provider ${provider.name} has no ${provider.trustMode === 'signed' ? 'secret' : 'token'} configured, so the sample cannot be ${provider.trustMode === 'signed' ? 'signed' : 'authenticated'}`,
      );
    }
  }
  if (provider.trustMode === 'signed' && secret !== undefined) {
    const preset = buildPreset({ preset: provider.preset, hmac: provider.hmac });
    if (preset.sign === undefined) throw invalidArgument(`preset ${provider.preset} cannot sign`);
    Object.assign(headers, preset.sign({ body, secret, nowMs, headers }));
  } else if (provider.trustMode === 'token' && secret !== undefined) {
    const header = provider.preset === 'gitlab' ? 'X-Gitlab-Token' : (provider.tokenHeader ?? DEFAULT_TOKEN_HEADER);
    headers[header.toLowerCase()] = secret;
  }
  return { sample: definition.name, headers, body };
}

/** Sends one sample event to a running switchboard, as `switchboard trigger <provider> [sample]` does. */
export async function triggerSample(options: TriggerOptions): Promise<TriggerResult> {
  const { provider } = options;
  if (provider.family !== 'webhook') {
    throw invalidArgument(
      `provider ${provider.name} is a queue provider; publish to Redis channel ${provider.channel} instead`,
    );
  }
  const prepared = await prepareTrigger(provider, options.sample, (options.now ?? Date.now)());
  const url = joinUrl(options.baseUrl ?? DEFAULT_TRIGGER_BASE_URL, provider.route);
  const doFetch = options.fetch ?? fetch;
  const response = await doFetch(url, {
    method: 'POST',
    headers: prepared.headers,
    body: new Uint8Array(prepared.body),
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  });
  return { status: response.status, body: await response.text(), sample: prepared.sample, url };
}

function joinUrl(base: string, route: string): string {
  let parsed: URL;
  try {
    parsed = new URL(base);
  } catch {
    throw invalidArgument(`--url ${base} is not a URL`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw invalidArgument(`--url ${base} must be http(s)`);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}${route}`;
}
