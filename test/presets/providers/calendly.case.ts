/**
 * Calendly: `Calendly-Webhook-Signature: t=<unix>,v1=<hex>`, HMAC-SHA256 of `{t}.{body}` with the
 * webhook signing key (Calendly's documented scheme, computed here independently of src/).
 * https://developer.calendly.com/api-docs/4c305798a61d3-webhook-signatures
 */
import { hmac, jsonDelivery, type ProviderCase } from './provider-case.ts';
import { samplePayload, unixSeconds } from './timed-case.ts';

const header = (body: Buffer, secret: string, t: string): string =>
  `t=${t},v1=${hmac('sha256', secret, [`${t}.`, body], 'hex')}`;

export const calendlyCase: ProviderCase = {
  preset: 'calendly',
  credential: 'secret',
  secret: 'calendly-signing-key-current',
  wrongSecret: 'calendly-signing-key-wrong',
  deliver(secret, atMs) {
    const body = samplePayload('calendly-invitee-created.json');
    return jsonDelivery(body, {
      'calendly-webhook-signature': header(body, secret, unixSeconds(atMs)),
    });
  },
  accepts({ body, headers }, secret) {
    const sent = headers['calendly-webhook-signature'] ?? '';
    const t = /t=(\d+)/.exec(sent)?.[1] ?? '';
    return sent === header(body, secret, t);
  },
  timestamped: true,
  requiredHeader: 'Calendly-Webhook-Signature',
  eventType: 'invitee.created',
  proof: 'example',
};
