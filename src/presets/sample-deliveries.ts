/**
 * A sample delivery per preset, as its sender would make it: a trimmed real payload (samples/),
 * fresh ids and timestamps, the sender's own headers, and the signature or token the preset puts
 * on it. `switchboard trigger` sends these; nothing here touches the network.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { PROVIDER_CATALOG } from '../../generated/catalog.ts';
import type { PresetName } from '../../generated/constants.ts';
import type { Sample } from '../../generated/types.ts';
import { resolveJsonPointer } from './identify.ts';
import type { Preset } from './preset-types.ts';

type JsonObject = Record<string, unknown>;

interface SendContext {
  nowMs: number;
  /** A fresh id per send, so a repeated trigger is a new event rather than a deduplicated retry. */
  uid: string;
}

interface SampleDefinition {
  name: string;
  description: string;
  /** File under presets/samples/. */
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

/** A sample: its name, the file under samples/ it starts from, what it is, and how it is freshened. */
const sample = (
  name: string,
  file: string,
  description: string,
  prepare: SampleDefinition['prepare'],
): SampleDefinition => ({ name, file, description, prepare });

function github(event: string, file: string, description: string): SampleDefinition {
  return sample(event, file, description, (_doc, { uid }) => ({
    'x-github-event': event,
    'x-github-delivery': uid,
    'x-github-hook-id': '292929292',
    'x-github-hook-installation-target-type': 'repository',
    'user-agent': 'GitHub-Hookshot/switchboard-trigger',
  }));
}

function stripe(type: string, file: string, description: string): SampleDefinition {
  return sample(type, file, description, (doc, { nowMs }) => {
    doc['id'] = `evt_${shortId()}`;
    doc['created'] = Math.floor(nowMs / 1000);
    return { 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' };
  });
}

const GENERIC = sample(
  'generic',
  'generic-event.json',
  'a generic JSON event (type order.shipped)',
  (doc, { nowMs, uid }) => {
    doc['id'] = `evt_${uid}`;
    doc['created_at'] = new Date(nowMs).toISOString();
    return {
      'x-event-type': typeof doc['type'] === 'string' ? doc['type'] : 'order.shipped',
      'user-agent': 'switchboard-trigger',
    };
  },
);

type Fresh = NonNullable<NonNullable<Sample['fresh']>[string]>;

function freshValue(kind: Fresh, { nowMs, uid }: SendContext): string | number {
  switch (kind) {
    case 'uuid':
      return uid;
    case 'now_unix':
      return Math.floor(nowMs / 1000);
    case 'now_ms':
      return nowMs;
    case 'now_iso':
      return new Date(nowMs).toISOString();
  }
}

/** Sets the value a JSON pointer names, when its parent exists (a sample names only paths it has). */
function setPointer(doc: JsonObject, pointer: string, value: unknown): void {
  const tokens = pointer.split('/').slice(1);
  const last = tokens.pop();
  const parent = resolveJsonPointer(doc, tokens.length === 0 ? '' : `/${tokens.join('/')}`);
  if (last === undefined || typeof parent !== 'object' || parent === null) return;
  if (Array.isArray(parent)) parent[Number(last)] = value;
  else
    (parent as JsonObject)[last] =
      typeof value === 'number' && typeof (parent as JsonObject)[last] === 'string' ? String(value) : value;
}

/** A catalog sample (schemas/providers/<name>.json): its headers' placeholders and fresh pointers filled in. */
function catalogSample(definition: Sample): SampleDefinition {
  return sample(definition.name, definition.file, definition.description, (doc, context) => {
    for (const [pointer, kind] of Object.entries(definition.fresh ?? {})) {
      if (kind !== undefined) setPointer(doc, pointer, freshValue(kind, context));
    }
    const headers: Record<string, string> = {};
    for (const [name, value = ''] of Object.entries(definition.headers ?? {})) {
      headers[name.toLowerCase()] = value.replace(/\{(uuid|now_unix|now_ms|now_iso)\}/g, (_m, kind: Fresh) =>
        String(freshValue(kind, context)),
      );
    }
    return headers;
  });
}

function samplesOf(preset: PresetName): readonly SampleDefinition[] {
  return CODE_SAMPLES[preset] ?? (PROVIDER_CATALOG[preset].samples ?? []).map(catalogSample);
}

/** The samples of the presets that predate the catalog, freshened by code. */
const CODE_SAMPLES: Readonly<Partial<Record<PresetName, readonly SampleDefinition[]>>> = {
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
    sample('app_mention', 'slack-app-mention.json', 'an Events API app_mention', (doc, { nowMs }) => {
      const seconds = Math.floor(nowMs / 1000);
      doc['event_id'] = `Ev${shortId().toUpperCase()}`;
      doc['event_time'] = seconds;
      const event = record(doc['event']);
      event['ts'] = `${seconds}.000200`;
      event['event_ts'] = `${seconds}.000200`;
      return { 'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)' };
    }),
  ],
  shopify: [
    sample('orders/create', 'shopify-orders-create.json', 'an order created (test order)', (doc, { nowMs, uid }) => {
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
    }),
  ],
  'standard-webhooks': [
    sample(
      'invoice.paid',
      'standard-webhooks-invoice-paid.json',
      'an invoice.paid event in the Standard Webhooks envelope',
      (doc, { nowMs }) => {
        doc['timestamp'] = new Date(nowMs).toISOString();
        return { 'user-agent': 'switchboard-trigger' };
      },
    ),
  ],
  linear: [
    sample('Issue.create', 'linear-issue-create.json', 'an issue created', (doc, { nowMs, uid }) => {
      // Linear's receiver checks webhookTimestamp against its clock, so it must be now.
      doc['webhookTimestamp'] = nowMs;
      doc['createdAt'] = new Date(nowMs).toISOString();
      return { 'linear-delivery': uid, 'linear-event': 'Issue', 'user-agent': 'Linear-Webhook' };
    }),
  ],
  gitlab: [
    sample('push', 'gitlab-push.json', 'a push hook', (_doc, { uid }) => ({
      'x-gitlab-event': 'Push Hook',
      'idempotency-key': uid,
      'x-gitlab-event-uuid': uid,
      'user-agent': 'GitLab/17.4.0',
    })),
  ],
  'generic-hmac': [GENERIC],
  token: [GENERIC],
  'basic-auth': [GENERIC],
  open: [GENERIC],
};

/** The samples `switchboard trigger` can send for a preset; the first is the default. */
export function listSamples(preset: PresetName): TriggerSampleInfo[] {
  return samplesOf(preset).map(({ name, description }) => ({ name, description }));
}

/** Every preset's samples, for help text and docs. */
export function allSamples(): Record<PresetName, TriggerSampleInfo[]> {
  const out = {} as Record<PresetName, TriggerSampleInfo[]>;
  for (const preset of Object.keys(PROVIDER_CATALOG) as PresetName[]) out[preset] = listSamples(preset);
  return out;
}

export interface SampleDelivery {
  sample: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** A form sample's fields, encoded as the sender posts them. */
function formBody(doc: JsonObject): string {
  const fields = new URLSearchParams();
  for (const [name, value] of Object.entries(doc))
    fields.append(name, typeof value === 'string' ? value : JSON.stringify(value));
  return fields.toString();
}

/** The sample of that name (case-insensitive), or the preset's first; undefined when it has none such. */
function findSample(preset: PresetName, name: string | undefined): SampleDefinition | undefined {
  const available = samplesOf(preset);
  return name === undefined ? available[0] : available.find((s) => s.name.toLowerCase() === name.toLowerCase());
}

/**
 * The request a real sender would make with `credential` (a signing secret for signed presets, a
 * token for token presets, nothing for open ones), or undefined when the preset has no such sample.
 */
export async function sampleDelivery(
  preset: Preset,
  sampleName: string | undefined,
  credential: string | undefined,
  nowMs: number,
): Promise<SampleDelivery | undefined> {
  const definition = findSample(preset.name, sampleName);
  if (definition === undefined) return undefined;
  const text = await readFile(new URL(`./samples/${definition.file}`, import.meta.url), 'utf8');
  // A .txt sample is form fields (Twilio posts a form): its fields are freshened by name (/Name).
  const form = definition.file.endsWith('.txt');
  const parsed: unknown = form ? Object.fromEntries(new URLSearchParams(text.trim())) : JSON.parse(text);
  // An array payload (HubSpot sends a batch) is kept as it is; prepare() reaches into it by pointer.
  const doc = Array.isArray(parsed) ? (parsed as unknown as JsonObject) : record(parsed);
  const senderHeaders = definition.prepare(doc, { nowMs, uid: randomUUID() });
  const made = Buffer.from(form ? formBody(doc) : JSON.stringify(doc), 'utf8');
  const body =
    credential !== undefined && preset.signBody !== undefined
      ? preset.signBody({ body: made, secret: credential, nowMs })
      : made;
  const contentType = form ? 'application/x-www-form-urlencoded' : 'application/json';
  const headers: Record<string, string> = { 'content-type': contentType, ...senderHeaders };
  if (credential !== undefined && preset.sign !== undefined) {
    Object.assign(headers, preset.sign({ body, secret: credential, nowMs, headers }));
  } else if (credential !== undefined && preset.tokenHeader !== undefined) {
    headers[preset.tokenHeader] = credential;
  }
  return { sample: definition.name, headers, body };
}
