import { headerValue } from './headers.ts';
import { compareSha256, hmacEncoded, isOutcome, readSignature, signedPreset } from './hmac.ts';
import { asIdentifier, isRecord } from './identify.ts';
import type { DeliveryBody, EventIdentity, HeaderBag, SignInput, VerifyInput, VerifyOutcome } from './preset-types.ts';
import { headerText, summaryLine } from './summary.ts';

const SIGNATURE_HEADER = 'X-Shopify-Hmac-Sha256';

/**
 * Shopify: base64 HMAC-SHA256 of the raw body keyed by the app's client secret. Nothing
 * time-related is signed, so there is no freshness check; X-Shopify-Webhook-Id is for dedupe.
 * Base64 is compared as text: Shopify emits canonical padded base64, and decoding first would
 * accept the many non-canonical spellings Node's lenient decoder tolerates.
 */
export function verifyShopify(input: VerifyInput): VerifyOutcome {
  const signature = readSignature(input, SIGNATURE_HEADER);
  if (isOutcome(signature)) return signature;
  return compareSha256(SIGNATURE_HEADER, signature.secrets, [signature.value.trim()], [input.body], 'base64');
}

export function signShopify(input: SignInput): Record<string, string> {
  return { 'x-shopify-hmac-sha256': hmacEncoded('sha256', input.secret, [input.body], 'base64') };
}

/** Topic is `orders/create` style; the webhook id is stable across Shopify's retries. */
export function identifyShopify(_body: Buffer, headers: HeaderBag): EventIdentity {
  return {
    eventType: asIdentifier(headerValue(headers, 'x-shopify-topic')) ?? 'unknown',
    externalId: asIdentifier(headerValue(headers, 'x-shopify-webhook-id')),
  };
}

/**
 * The topic and the resource's id, then its name where it has one (an order's `#1001`, a
 * product's title). The only preset whose identify() reads no body: the summary is what parses it.
 */
export function summarizeShopify(body: DeliveryBody, headers: HeaderBag): string | null {
  const json = body.json;
  return summaryLine([
    headerText(headers, 'x-shopify-topic'),
    isRecord(json) ? json['id'] : null,
    isRecord(json) ? (json['name'] ?? json['title']) : null,
  ]);
}

export const shopifyPreset = signedPreset(
  'shopify',
  { requiredHeaders: ['x-shopify-hmac-sha256'], sensitiveHeaders: ['x-shopify-hmac-sha256'] },
  { verify: verifyShopify, sign: signShopify, identify: identifyShopify, summarize: summarizeShopify },
);
