/**
 * LaunchDarkly: an HMAC of the raw body alone in X-LD-Signature, no timestamp; checked by the
 * documented comparison. https://docs.launchdarkly.com/home/connecting/webhooks
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const launchdarklyCase = bodyHmacCase({
  preset: 'launchdarkly',
  sample: 'flag-updateon',
  header: 'X-LD-Signature',
  written: '<hex sha256>',
  eventType: 'flag.updateOn',
});
