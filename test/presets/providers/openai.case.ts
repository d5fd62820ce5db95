/**
 * OpenAI: Standard Webhooks (webhook-* headers, whsec_ secret). The openai package only verifies
 * (client.webhooks.unwrap), so deliveries are signed by the standardwebhooks package and openai
 * checks them. https://platform.openai.com/docs/guides/webhooks
 */
import OpenAI from 'openai';
import type { ProviderCase } from './provider-case.ts';
import { passes, signFamily } from './standard-webhooks-family.ts';
import { samplePayload } from './timed-case.ts';

const openai = new OpenAI({ apiKey: 'sk-switchboard-test' });

export const openaiCase: ProviderCase = {
  preset: 'openai',
  credential: 'secret',
  secret: `whsec_${Buffer.from('openai webhook secret, current').toString('base64')}`,
  wrongSecret: `whsec_${Buffer.from('openai webhook secret, wrong').toString('base64')}`,
  deliver: (secret, atMs) => signFamily('webhook', secret, samplePayload('openai-response-completed.json'), atMs),
  accepts: ({ body, headers }, secret) => passes(() => openai.webhooks.unwrap(body.toString('utf8'), headers, secret)),
  timestamped: true,
  requiredHeader: 'webhook-signature',
  eventType: 'response.completed',
  proof: 'package-verifies',
};
