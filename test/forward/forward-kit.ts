/**
 * Forwarding tests' shared parts: the composed server with forward rules, deliveries signed by the
 * providers' own libraries, the /api calls, and polling until a condition holds.
 */
import { randomUUID } from 'node:crypto';
import { sign as signGithub } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import type { Delivery, EventDeliveries, ForwardList } from '../../generated/types.ts';
import { startComposedServer, type ComposedServer } from '../support/composed-server.ts';

export const TOKEN = 'forward-test-token-0123456789abcdef';
export const GITHUB_SECRET = 'gh-forward-secret';
export const STRIPE_SECRET = 'whsec_forward_0123456789abcdef';
// Standard Webhooks secrets are base64 after the whsec_ prefix.
export const STANDARD_SECRET = `whsec_${Buffer.from('standard-webhooks-forward-secret').toString('base64')}`;
export const CI_TOKEN = 'ci-forward-token';
export const RELAY_USER = 'relay';
export const RELAY_PASSWORD = 'relay-pw-5e0c7a13';

export const stripe = new Stripe('sk_test_forward');

/** Providers of every trust mode; `forward` is the YAML of the forward: block's rules (indented by two). */
export function forwardConfig(forward: string, extra = ''): string {
  return [
    'providers:',
    `  github: { preset: github, secret: ${GITHUB_SECRET} }`,
    `  stripe: { preset: stripe, secret: ${STRIPE_SECRET} }`,
    `  standard: { preset: standard-webhooks, secret: "${STANDARD_SECRET}" }`,
    `  ci: { trust_mode: token, token: ${CI_TOKEN}, event_type_from: /type }`,
    `  relay: { preset: basic-auth, username: ${RELAY_USER}, password: ${RELAY_PASSWORD} }`,
    '  sandbox: { trust_mode: open, event_type_from: /type }',
    '  orders: { family: queue, channel: orders }',
    'forward:',
    forward,
    extra,
    '',
  ].join('\n');
}

export interface ForwardServer {
  composed: ComposedServer;
  url: string;
  post(path: string, body: string, headers?: Record<string, string>): Promise<Response>;
  api<T>(path: string, method?: 'GET' | 'POST'): Promise<{ status: number; body: T }>;
  deliveries(eventId: string): Promise<Delivery[]>;
  forwards(): Promise<ForwardList>;
  close(): Promise<void>;
}

export async function startForwardServer(config: string): Promise<ForwardServer> {
  const composed = await startComposedServer({ config, envToken: TOKEN });
  const url = composed.running.url;
  const api = async <T>(path: string, method: 'GET' | 'POST' = 'GET') => {
    const res = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${TOKEN}` } });
    return { status: res.status, body: (await res.json()) as T };
  };
  return {
    composed,
    url,
    post: (path, body, headers = {}) =>
      fetch(`${url}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } }),
    api,
    deliveries: async (eventId) => {
      const res = await api<EventDeliveries>(`/api/events/${eventId}/deliveries`);
      // A refused read (429 when a poll outruns the read budget) must fail as itself, not as rows.
      if (res.status !== 200)
        throw new Error(`GET deliveries of ${eventId}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.deliveries;
    },
    forwards: async () => (await api<ForwardList>('/api/forwards')).body,
    close: () => composed.close(),
  };
}

/** Stores a delivery and answers the event id switchboard gave it. */
async function stored(res: Response): Promise<string> {
  const text = await res.text();
  if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { id: string }).id;
}

export async function sendGithub(
  server: ForwardServer,
  event: string,
  payload: unknown,
  secret = GITHUB_SECRET,
): Promise<{ id: string; body: string; status: number }> {
  const body = JSON.stringify(payload);
  const res = await server.post('/hooks/github', body, {
    'x-github-event': event,
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': await signGithub(secret, body),
  });
  const text = await res.text();
  return { id: res.status === 200 ? (JSON.parse(text) as { id: string }).id : '', body, status: res.status };
}

export async function sendStripe(server: ForwardServer, type: string): Promise<{ id: string; body: string }> {
  const body = JSON.stringify({ id: `evt_${randomUUID().slice(0, 8)}`, object: 'event', type, data: { object: {} } });
  const header = stripe.webhooks.generateTestHeaderString({ payload: body, secret: STRIPE_SECRET });
  return { id: await stored(await server.post('/hooks/stripe', body, { 'stripe-signature': header })), body };
}

export async function sendStandard(server: ForwardServer, type: string): Promise<{ id: string; body: string }> {
  const body = JSON.stringify({ type, data: { n: 1 } });
  const msgId = `msg_${randomUUID()}`;
  const now = new Date();
  const headers = {
    'webhook-id': msgId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': new Webhook(STANDARD_SECRET).sign(msgId, now, body),
  };
  return { id: await stored(await server.post('/hooks/standard', body, headers)), body };
}

export async function sendOpen(server: ForwardServer, payload: unknown): Promise<{ id: string; body: string }> {
  const body = JSON.stringify(payload);
  return { id: await stored(await server.post('/hooks/sandbox', body)), body };
}

export async function sendToken(
  server: ForwardServer,
  payload: unknown,
  token = CI_TOKEN,
): Promise<{ id: string; body: string; status: number }> {
  const body = JSON.stringify(payload);
  const res = await server.post('/hooks/ci', body, { 'x-webhook-token': token });
  const text = await res.text();
  return { id: res.status === 200 ? (JSON.parse(text) as { id: string }).id : '', body, status: res.status };
}

export async function sendBasic(server: ForwardServer, payload: unknown): Promise<{ id: string; body: string }> {
  const body = JSON.stringify(payload);
  const authorization = `Basic ${Buffer.from(`${RELAY_USER}:${RELAY_PASSWORD}`).toString('base64')}`;
  return { id: await stored(await server.post('/hooks/relay', body, { authorization })), body };
}

/** Polls until `check` returns a value other than undefined/false; fails naming `what` after timeoutMs. */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
