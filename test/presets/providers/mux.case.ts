/**
 * Mux: `Mux-Signature: t=<unix>,v1=<hex>`, HMAC-SHA256 of `{t}.{body}`. @mux/mux-node verifies
 * (it does not sign), so switchboard's test signer is shown to pass it first.
 * https://docs.mux.com/core/verify-webhook-signatures
 */
import Mux from '@mux/mux-node';
import { hmac, jsonDelivery, type ProviderCase } from './provider-case.ts';
import { samplePayload, unixSeconds } from './timed-case.ts';

const mux = new Mux({ tokenId: 'test', tokenSecret: 'test' });

export const muxCase: ProviderCase = {
  preset: 'mux',
  credential: 'secret',
  secret: 'mux-webhook-secret-current',
  wrongSecret: 'mux-webhook-secret-wrong',
  deliver(secret, atMs) {
    const body = samplePayload('mux-video-asset-ready.json');
    const t = unixSeconds(atMs);
    return jsonDelivery(body, {
      'mux-signature': `t=${t},v1=${hmac('sha256', secret, [`${t}.`, body], 'hex')}`,
    });
  },
  async accepts({ body, headers }, secret) {
    return mux.webhooks.verifySignature(body.toString('utf8'), headers, secret).then(
      () => true,
      () => false,
    );
  },
  timestamped: true,
  requiredHeader: 'Mux-Signature',
  eventType: 'video.asset.ready',
  proof: 'package-verifies',
};
