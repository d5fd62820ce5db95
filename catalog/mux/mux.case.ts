/**
 * Mux: `t=<unix>,v1=<hex HMAC-SHA256 of {t}.{body}>`; @mux/mux-node's verifySignature checks it.
 * https://docs.mux.com/core/verify-webhook-signatures
 */
import Mux from '@mux/mux-node';
import { hex, hmacSchemeCase } from '../../test/verify/providers/hmac-scheme-case.ts';
import { unixSeconds } from '../../test/verify/providers/timed-case.ts';

const mux = new Mux({ tokenId: 'test', tokenSecret: 'test' });

export const muxCase = hmacSchemeCase({
  preset: 'mux',
  sample: 'video-asset-ready',
  clock: unixSeconds,
  header: 'Mux-Signature',
  eventType: 'video.asset.ready',
  sign: (body, secret, t) => ({ 'mux-signature': `t=${t},v1=${hex(secret, `${t}.`, body)}` }),
  verifier: ({ body, headers }, secret) =>
    mux.webhooks.verifySignature(body.toString('utf8'), headers, secret).then(
      () => true,
      () => false,
    ),
});
