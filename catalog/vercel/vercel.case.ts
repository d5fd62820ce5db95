/**
 * Vercel (the client secret): an HMAC of the raw body alone in x-vercel-signature, no timestamp;
 * checked by the documented comparison. https://vercel.com/docs/webhooks/webhooks-api
 */
import { bodyHmacCase } from '../../test/verify/providers/body-hmac-case.ts';

export const vercelCase = bodyHmacCase({
  preset: 'vercel',
  sample: 'deployment-succeeded',
  header: 'x-vercel-signature',
  written: '<hex sha1>',
  eventType: 'deployment.succeeded',
});
