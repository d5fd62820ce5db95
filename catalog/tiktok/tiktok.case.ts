/**
 * TikTok: `t=<unix>,s=<hex HMAC-SHA256 of {t}.{body}>`, checked by recomputing it from the
 * delivery's t. https://developers.tiktok.com/doc/webhooks-verification
 */
import { hex, hmacSchemeCase } from '../../test/verify/providers/hmac-scheme-case.ts';
import { unixSeconds } from '../../test/verify/providers/timed-case.ts';

export const tiktokCase = hmacSchemeCase({
  preset: 'tiktok',
  sample: 'video-publish-complete',
  clock: unixSeconds,
  header: 'TikTok-Signature',
  eventType: 'video.publish.complete',
  sign: (body, secret, t) => ({ 'tiktok-signature': `t=${t},s=${hex(secret, `${t}.`, body)}` }),
  signedAt: (headers) => /t=(\d+)/.exec(headers['tiktok-signature'] ?? '')?.[1] ?? '',
});
