/**
 * Shopify: `X-Shopify-Hmac-Sha256`, base64 HMAC-SHA256 of the raw body (Shopify's documented
 * scheme, computed here independently of src/). @shopify/shopify-api only verifies
 * (shopify.webhooks.validate, which also wants the topic, shop, API version and webhook id
 * headers Shopify sends), so it first accepts this signer's output. Its Web API adapter takes a
 * fetch Request, which Node has built in.
 * https://shopify.dev/docs/apps/build/webhooks/subscribe/https
 */
import { randomUUID } from 'node:crypto';
import '@shopify/shopify-api/adapters/web-api';
import { ApiVersion, LogSeverity, shopifyApi } from '@shopify/shopify-api';
import { hmac, jsonDelivery, type ProviderCase, sharedSecret } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

export const shopifyCase: ProviderCase = {
  preset: 'shopify',
  ...sharedSecret('shopify-app-secret'),
  deliver(secret) {
    const body = samplePayload('shopify', 'orders-create.json');
    return jsonDelivery(body, {
      'x-shopify-topic': 'orders/create',
      'x-shopify-api-version': ApiVersion.July25,
      'x-shopify-shop-domain': 'example.myshopify.com',
      'x-shopify-webhook-id': randomUUID(),
      'x-shopify-event-id': randomUUID(),
      'x-shopify-triggered-at': new Date().toISOString(),
      'x-shopify-hmac-sha256': hmac('sha256', secret, [body], 'base64'),
    });
  },
  async accepts({ body, headers }, secret) {
    const shopify = shopifyApi({
      apiKey: 'switchboard-test',
      apiSecretKey: secret,
      scopes: [],
      hostName: 'localhost',
      apiVersion: ApiVersion.July25,
      isEmbeddedApp: false,
      logger: { level: LogSeverity.Error },
    });
    const rawBody = body.toString('utf8');
    const rawRequest = new Request('https://hooks.example.com/hooks/shopify', {
      method: 'POST',
      headers,
      body: rawBody,
    });
    const result = await shopify.webhooks.validate({ rawBody, rawRequest });
    return result.valid;
  },
  timestamped: false,
  requiredHeader: 'X-Shopify-Hmac-Sha256',
  eventType: 'orders/create',
  proof: 'package-verifies',
};
