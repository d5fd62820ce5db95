/**
 * The providers that sign the body alone: an HMAC of the raw body with the shared secret, written
 * into one header (hex or base64, some behind a prefix), no timestamp. One row a provider, as its
 * documentation (linked above the row) describes the scheme; the signature is computed here,
 * independently of src/, and checked by the provider's own package where it publishes a verifier
 * (coinbase-commerce-node, gocardless-nodejs, razorpay), otherwise by the documented comparison.
 */
import { randomUUID } from 'node:crypto';
import coinbase from 'coinbase-commerce-node';
import { verifySignature } from 'gocardless-nodejs/webhooks';
import Razorpay from 'razorpay';
import type { PresetName } from '../../../generated/constants.ts';
import { hmac, jsonDelivery, type ProviderCase, sharedSecret } from './provider-case.ts';
import { samplePayload, unixSeconds } from './timed-case.ts';

type Algorithm = 'sha1' | 'sha256';
type Encoding = 'hex' | 'base64';
/** How the header's value is written: a prefix, then the digest, e.g. `sha256=<hex sha256>`. */
type Written = `${string}<${Encoding} ${Algorithm}>`;

type Row = [
  preset: PresetName,
  /** The sample sent: catalog/<preset>/<sample>.json. */
  sample: string,
  /** The signature's header, as the provider's documentation spells it. */
  header: string,
  written: Written,
  eventType: string,
];

const ROWS: readonly Row[] = [
  // https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/
  ['bitbucket', 'repo-push', 'X-Hub-Signature', 'sha256=<hex sha256>', 'repo:push'],
  // https://cal.com/docs/developing/guides/automation/webhooks
  ['cal-com', 'booking-created', 'X-Cal-Signature-256', '<hex sha256>', 'BOOKING_CREATED'],
  // https://circleci.com/docs/webhooks/ (a `v1=` item)
  ['circleci', 'workflow-completed', 'circleci-signature', 'v1=<hex sha256>', 'workflow-completed'],
  // https://docs.cdp.coinbase.com/commerce-onchain/docs/webhooks-security
  ['coinbase-commerce', 'charge-confirmed', 'X-CC-Webhook-Signature', '<hex sha256>', 'charge:confirmed'],
  // https://developers.docusign.com/platform/webhooks/connect/hmac/ (one header per key)
  ['docusign', 'envelope-completed', 'X-DocuSign-Signature-1', '<base64 sha256>', 'envelope-completed'],
  // https://www.dropbox.com/developers/reference/webhooks (the app secret)
  ['dropbox', 'list-folder', 'X-Dropbox-Signature', '<hex sha256>', 'list_folder'],
  // https://docs.gitea.com/usage/webhooks (Gitea and Forgejo)
  ['gitea', 'push', 'X-Gitea-Signature', '<hex sha256>', 'push'],
  // https://developer.gocardless.com/getting-started/staying-up-to-date-with-webhooks
  ['gocardless', 'payments-confirmed', 'Webhook-Signature', '<hex sha256>', 'payments.confirmed'],
  // https://developers.intercom.com/docs/references/webhooks/webhook-models (the client secret)
  ['intercom', 'conversation-user-created', 'X-Hub-Signature', 'sha1=<hex sha1>', 'conversation.user.created'],
  // https://developer.atlassian.com/cloud/jira/platform/webhooks/ (Jira Cloud)
  ['jira', 'jira-issue-created', 'X-Hub-Signature', 'sha256=<hex sha256>', 'jira:issue_created'],
  // https://docs.launchdarkly.com/home/connecting/webhooks
  ['launchdarkly', 'flag-updateon', 'X-LD-Signature', '<hex sha256>', 'flag.updateOn'],
  // https://docs.lemonsqueezy.com/help/webhooks/signing-requests
  ['lemon-squeezy', 'order-created', 'X-Signature', '<hex sha256>', 'order_created'],
  // https://developers.facebook.com/docs/graph-api/webhooks/getting-started (Facebook, Instagram, WhatsApp; the app secret)
  [
    'meta',
    'whatsapp-business-account-messages',
    'X-Hub-Signature-256',
    'sha256=<hex sha256>',
    'whatsapp_business_account.messages',
  ],
  // https://developers.notion.com/reference/webhooks (the verification token)
  ['notion', 'page-created', 'X-Notion-Signature', 'sha256=<hex sha256>', 'page.created'],
  // https://developer.pagerduty.com/docs/webhooks/webhook-signatures (a list of `v1=` items)
  ['pagerduty', 'incident-triggered', 'X-PagerDuty-Signature', 'v1=<hex sha256>', 'incident.triggered'],
  // https://razorpay.com/docs/webhooks/validate-test/
  ['razorpay', 'payment-captured', 'X-Razorpay-Signature', '<hex sha256>', 'payment.captured'],
  // https://segment.com/docs/connections/destinations/catalog/webhooks/ (Twilio Segment)
  ['segment', 'track', 'X-Signature', '<hex sha1>', 'track'],
  // https://docs.sentry.io/organization/integrations/integration-platform/webhooks/ (the client secret)
  ['sentry', 'issue-created', 'Sentry-Hook-Signature', '<hex sha256>', 'issue.created'],
  // https://www.typeform.com/developers/webhooks/secure-your-webhooks/
  ['typeform', 'form-response', 'Typeform-Signature', 'sha256=<base64 sha256>', 'form_response'],
  // https://vercel.com/docs/webhooks/webhooks-api (the client secret)
  ['vercel', 'deployment-succeeded', 'x-vercel-signature', '<hex sha1>', 'deployment.succeeded'],
  // https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks
  ['woocommerce', 'order-created', 'X-WC-Webhook-Signature', '<base64 sha256>', 'order.created'],
];

/** Headers besides the signature that a provider sends: event names, delivery ids (fresh each time). */
const OTHER_HEADERS: Partial<Record<PresetName, (atMs: number) => Record<string, string>>> = {
  bitbucket: () => ({ 'x-event-key': 'repo:push', 'x-request-uuid': randomUUID(), 'x-hook-uuid': randomUUID() }),
  circleci: () => ({ 'circleci-event-type': 'workflow-completed' }),
  gitea: () => ({ 'x-gitea-event': 'push', 'x-gitea-delivery': randomUUID() }),
  jira: () => ({ 'x-atlassian-webhook-identifier': randomUUID() }),
  'lemon-squeezy': () => ({ 'x-event-name': 'order_created' }),
  pagerduty: () => ({ 'x-webhook-subscription': 'PS1234' }),
  razorpay: () => ({ 'x-razorpay-event-id': randomUUID() }),
  sentry: (atMs) => ({
    'sentry-hook-resource': 'issue',
    'sentry-hook-timestamp': unixSeconds(atMs),
    'request-id': randomUUID(),
  }),
  woocommerce: () => ({
    'x-wc-webhook-topic': 'order.created',
    'x-wc-webhook-resource': 'order',
    'x-wc-webhook-event': 'created',
    'x-wc-webhook-delivery-id': randomUUID(),
    'x-wc-webhook-id': '12',
    'x-wc-webhook-source': 'https://shop.example.com/',
  }),
};

/** The providers' own verifiers, where they publish one: does it accept this signature of this body? */
const PACKAGE_VERIFIERS: Partial<Record<PresetName, (body: Buffer, signature: string, secret: string) => boolean>> = {
  'coinbase-commerce': (body, signature, secret) => {
    try {
      return coinbase.Webhook.verifySigHeader(body.toString('utf8'), signature, secret);
    } catch {
      return false;
    }
  },
  gocardless: (body, signature, secret) => {
    try {
      verifySignature(body, secret, signature);
      return true;
    } catch {
      return false;
    }
  },
  razorpay: (body, signature, secret) => Razorpay.validateWebhookSignature(body.toString('utf8'), signature, secret),
};

function bodyHmacCase([preset, sample, header, written, eventType]: Row): ProviderCase {
  const [prefix = '', digest = ''] = written.split('<');
  const [encoding, algorithm] = digest.replace('>', '').split(' ') as [Encoding, Algorithm];
  const name = header.toLowerCase();
  const sign = (body: Buffer, secret: string): string => `${prefix}${hmac(algorithm, secret, [body], encoding)}`;
  const verifier = PACKAGE_VERIFIERS[preset];
  return {
    preset,
    ...sharedSecret(`${preset}-signing-secret`),
    deliver(secret, atMs) {
      const body = samplePayload(preset, `${sample}.json`);
      return jsonDelivery(body, { ...OTHER_HEADERS[preset]?.(atMs), [name]: sign(body, secret) });
    },
    accepts({ body, headers }, secret) {
      const sent = headers[name] ?? '';
      return verifier === undefined ? sent === sign(body, secret) : verifier(body, sent, secret);
    },
    timestamped: false,
    requiredHeader: header,
    eventType,
    proof: verifier === undefined ? 'example' : 'package-verifies',
  };
}

export const bodyHmacCases: readonly ProviderCase[] = ROWS.map(bodyHmacCase);
