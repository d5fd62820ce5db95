/**
 * Real deliveries to a running switchboard, signed with the providers' own libraries (not
 * switchboard's presets), so what gets stored is what a real provider would have caused.
 */
import { randomUUID } from 'node:crypto';
import { sign as signGithub } from '@octokit/webhooks-methods';
import Stripe from 'stripe';
import { GITHUB_SECRET, HOOK_TOKEN, STRIPE_SECRET } from './switchboard-harness.ts';

export interface Delivered {
  id: string;
  status: number;
  /** Every signature or token value sent, for leak scans. */
  secrets: string[];
}

async function post(
  origin: string,
  path: string,
  body: Buffer | string,
  headers: Record<string, string>,
  secrets: string[],
): Promise<Delivered> {
  const response = await fetch(new URL(path, origin), {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  const answer = (await response.json()) as { id?: string };
  return { id: answer.id ?? '', status: response.status, secrets };
}

export async function deliverGithub(
  origin: string,
  payload: string,
  options: { event?: string; secret?: string; contentType?: string } = {},
): Promise<Delivered> {
  const signature = await signGithub(options.secret ?? GITHUB_SECRET, payload);
  return post(
    origin,
    '/hooks/github',
    payload,
    {
      'content-type': options.contentType ?? 'application/json',
      'x-github-event': options.event ?? 'issues',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': signature,
    },
    [signature, signature.replace(/^sha256=/, '')],
  );
}

const stripe = new Stripe('sk_test_not_used_for_requests');

export async function deliverStripe(origin: string, payload: string): Promise<Delivered> {
  const header = stripe.webhooks.generateTestHeaderString({ payload, secret: STRIPE_SECRET });
  const signature = /v1=([0-9a-f]+)/.exec(header)?.[1] ?? header;
  return post(origin, '/hooks/stripe', payload, { 'content-type': 'application/json', 'stripe-signature': header }, [
    header,
    signature,
  ]);
}

export async function deliverToken(
  origin: string,
  payload: Buffer | string,
  contentType = 'application/octet-stream',
): Promise<Delivered> {
  return post(origin, '/hooks/hook', payload, { 'content-type': contentType, 'x-webhook-token': HOOK_TOKEN }, []);
}

export async function deliverOpen(origin: string, payload: string): Promise<Delivered> {
  return post(origin, '/hooks/open', payload, { 'content-type': 'application/json' }, []);
}
