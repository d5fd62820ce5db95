/**
 * OpenAI: webhook-* headers, signed by standardwebhooks and checked by the openai package's
 * client.webhooks.unwrap. https://platform.openai.com/docs/guides/webhooks
 */
import OpenAI from 'openai';
import { familyCase, passes } from '../../test/verify/providers/standard-webhooks-family.ts';

const openai = new OpenAI({ apiKey: 'sk-switchboard-test' });

export const openaiCase = familyCase({
  preset: 'openai',
  family: 'webhook',
  sample: 'response-completed',
  requiredHeader: 'webhook-signature',
  eventType: 'response.completed',
  verifier: ({ body, headers }, secret) => passes(() => openai.webhooks.unwrap(body.toString('utf8'), headers, secret)),
});
