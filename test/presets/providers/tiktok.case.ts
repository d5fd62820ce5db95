/**
 * TikTok for Developers: `TikTok-Signature: t=<unix>,s=<hex>`, HMAC-SHA256 of `{t}.{body}` with the
 * client secret (TikTok's documented scheme, computed here independently of src/).
 * https://developers.tiktok.com/doc/webhooks-verification
 */
import { hmac, jsonDelivery, type ProviderCase } from './provider-case.ts';
import { samplePayload, unixSeconds } from './timed-case.ts';

const header = (body: Buffer, secret: string, t: string): string =>
  `t=${t},s=${hmac('sha256', secret, [`${t}.`, body], 'hex')}`;

export const tiktokCase: ProviderCase = {
  preset: 'tiktok',
  credential: 'secret',
  secret: 'tiktok-client-secret-current',
  wrongSecret: 'tiktok-client-secret-wrong',
  deliver(secret, atMs) {
    const body = samplePayload('tiktok-video-publish-complete.json');
    return jsonDelivery(body, { 'tiktok-signature': header(body, secret, unixSeconds(atMs)) });
  },
  accepts({ body, headers }, secret) {
    const sent = headers['tiktok-signature'] ?? '';
    return sent === header(body, secret, /t=(\d+)/.exec(sent)?.[1] ?? '');
  },
  timestamped: true,
  requiredHeader: 'TikTok-Signature',
  eventType: 'video.publish.complete',
  proof: 'example',
};
