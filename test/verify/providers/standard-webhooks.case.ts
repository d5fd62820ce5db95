/**
 * The Standard Webhooks preset itself (signed and checked by the standardwebhooks package), and the
 * members of the Standard Webhooks family that sign with a `whsec_` secret: Svix and the
 * senders that deliver through it (svix-* headers), and those that use the standardwebhooks library
 * (webhook-* headers). Each delivery is signed by the library its sender uses (standard-webhooks-
 * family.ts); each is checked by the member's own package where it has one that verifies, otherwise
 * by the svix package its docs verify with. Polar, whose key is the secret's own text, has its own
 * case file.
 */
import OpenAI from 'openai';
import { validateWebhook } from 'replicate';
import { Resend } from 'resend';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook } from 'svix';
import type { PresetName } from '../../../generated/constants.ts';
import type { ProviderCase, Signed } from './provider-case.ts';
import { passes, signFamily, type HeaderFamily } from './standard-webhooks-family.ts';
import { samplePayload } from './timed-case.ts';

type Verifier = (delivery: Signed, secret: string) => Promise<boolean> | boolean;

const svixVerifies: Verifier = ({ body, headers }, secret) =>
  passes(() => new Webhook(secret).verify(body.toString('utf8'), headers));

const standardVerifies: Verifier = ({ body, headers }, secret) =>
  passes(() => new StandardWebhook(secret).verify(body.toString('utf8'), headers));

/** The packages that sign as well as verify: the case is their code on both sides. */
const SIGNING_PACKAGES: readonly Verifier[] = [svixVerifies, standardVerifies];

const openai = new OpenAI({ apiKey: 'sk-switchboard-test' });
const openaiVerifies: Verifier = ({ body, headers }, secret) =>
  passes(() => openai.webhooks.unwrap(body.toString('utf8'), headers, secret));

const replicateVerifies: Verifier = ({ body, headers }, secret) =>
  validateWebhook({
    id: headers['webhook-id'] ?? '',
    timestamp: headers['webhook-timestamp'] ?? '',
    signature: headers['webhook-signature'] ?? '',
    body: body.toString('utf8'),
    secret,
  });

const resend = new Resend('re_switchboard_test');
const resendVerifies: Verifier = ({ body, headers }, secret) =>
  passes(() =>
    resend.webhooks.verify({
      payload: body.toString('utf8'),
      headers: {
        id: headers['svix-id'] ?? '',
        timestamp: headers['svix-timestamp'] ?? '',
        signature: headers['svix-signature'] ?? '',
      },
      webhookSecret: secret,
    }),
  );

type Row = [
  preset: PresetName,
  family: HeaderFamily,
  /** The sample sent: catalog/<preset>/<sample>.json. */
  sample: string,
  requiredHeader: string,
  eventType: string,
  /**
   * The package that checks: the member's own (which only verifies: svix or standardwebhooks signs),
   * or svix itself, which also signs.
   */
  verifier: Verifier,
];

const ROWS: readonly Row[] = [
  // https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md (the
  // standardwebhooks package signs and verifies)
  ['standard-webhooks', 'webhook', 'invoice-paid', 'webhook-signature', 'invoice.paid', standardVerifies],
  // https://docs.svix.com/receiving/verifying-payloads/how-manual (the svix package signs and verifies)
  ['svix', 'svix', 'invoice-paid', 'svix-signature', 'invoice.paid', svixVerifies],
  // https://clerk.com/docs/webhooks/sync-data (delivered through Svix; Clerk's docs verify with svix)
  ['clerk', 'svix', 'user-created', 'svix-id', 'user.created', svixVerifies],
  // https://resend.com/docs/dashboard/webhooks/verify-webhooks-requests (through Svix; resend.webhooks.verify)
  ['resend', 'svix', 'email-delivered', 'svix-timestamp', 'email.delivered', resendVerifies],
  // https://platform.openai.com/docs/guides/webhooks (client.webhooks.unwrap)
  ['openai', 'webhook', 'response-completed', 'webhook-signature', 'response.completed', openaiVerifies],
  // https://replicate.com/docs/topics/webhooks/verify-webhook (validateWebhook). The prediction carries
  // no event type: switchboard names it prediction.<status>.
  ['replicate', 'webhook', 'prediction-succeeded', 'webhook-id', 'prediction.succeeded', replicateVerifies],
];

const whsec = (words: string): string => `whsec_${Buffer.from(words).toString('base64')}`;

function familyCase([preset, family, sample, requiredHeader, eventType, verifier]: Row): ProviderCase {
  return {
    preset,
    credential: 'secret',
    secret: whsec(`${preset} signing secret, current`),
    wrongSecret: whsec(`${preset} signing secret, wrong`),
    deliver: (secret, atMs) => signFamily(family, secret, samplePayload(preset, `${sample}.json`), atMs),
    accepts: verifier,
    timestamped: true,
    requiredHeader,
    eventType,
    proof: SIGNING_PACKAGES.includes(verifier) ? 'package-signs' : 'package-verifies',
  };
}

export const standardWebhooksCases: readonly ProviderCase[] = ROWS.map(familyCase);
