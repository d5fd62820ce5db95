/**
 * Trello: `X-Trello-Webhook`, base64 HMAC-SHA1 of the body followed by the callback URL, keyed by
 * the application secret (Trello's documented scheme, computed independently of src/).
 * https://developer.atlassian.com/cloud/trello/guides/rest-api/webhooks/
 */
import { hmac, jsonDelivery, type ProviderCase, PUBLIC_URL } from './provider-case.ts';
import { samplePayload } from './timed-case.ts';

const CALLBACK = `${PUBLIC_URL}trello`;

export const trelloCase: ProviderCase = {
  preset: 'trello',
  config: { public_url: CALLBACK },
  credential: 'secret',
  secret: 'trello-app-secret-current',
  wrongSecret: 'trello-app-secret-wrong',
  deliver(secret) {
    const body = samplePayload('trello-createcard.json');
    return jsonDelivery(body, {
      'x-trello-webhook': hmac('sha1', secret, [body, CALLBACK], 'base64'),
    });
  },
  accepts({ body, headers }, secret) {
    return headers['x-trello-webhook'] === hmac('sha1', secret, [body, CALLBACK], 'base64');
  },
  timestamped: false,
  requiredHeader: 'X-Trello-Webhook',
  eventType: 'createCard',
  proof: 'example',
};
