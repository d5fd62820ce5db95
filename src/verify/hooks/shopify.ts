import { isRecord } from '../identify.ts';
import type { DeliveryBody, HeaderBag, ProviderHooks } from '../preset-types.ts';
import { headerText, summaryLine } from '../summary.ts';

/**
 * The topic and the resource's id, then its name where it has one (an order's `#1001`, a
 * product's title).
 */
function summarizeShopify(body: DeliveryBody, headers: HeaderBag): string | null {
  const json = body.json;
  return summaryLine([
    headerText(headers, 'x-shopify-topic'),
    isRecord(json) ? json['id'] : null,
    isRecord(json) ? (json['name'] ?? json['title']) : null,
  ]);
}

/**
 * Shopify: base64 HMAC-SHA256 of the raw body keyed by the app's client secret (the hmac
 * engine's) (catalog/shopify/provider.json). Nothing time-related is signed; X-Shopify-Webhook-Id is
 * for dedupe. Base64 is compared as text: Shopify emits canonical padded base64, and decoding
 * first would accept the many non-canonical spellings Node's lenient decoder tolerates.
 */
export const shopifyHooks: ProviderHooks = { summarize: summarizeShopify };
