/**
 * Adyen: each notification item carries `additionalData.hmacSignature`, signed and checked by the
 * @adyen/api-library HmacValidator (calculateHmac, validateHMAC) with the hex HMAC key. Only the
 * item's references, amount, event code and success are signed.
 * https://docs.adyen.com/development-resources/webhooks/verify-hmac-signatures/
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { bodyCheck, jsonDelivery, type ProviderCase } from '../../test/verify/providers/provider-case.ts';

export type AdyenItem = Record<string, unknown> & { additionalData?: Record<string, string> };
interface HmacValidatorClass {
  new (): { calculateHmac(item: AdyenItem, key: string): string; validateHMAC(item: AdyenItem, key: string): boolean };
}
const require = createRequire(import.meta.url);
export const HmacValidator = (
  require('@adyen/api-library/lib/src/utils/hmacValidator.js') as { default: HmacValidatorClass }
).default;

export function adyenItem(key: string, overrides: Partial<AdyenItem> = {}): { NotificationRequestItem: AdyenItem } {
  const item: AdyenItem = {
    amount: { currency: 'EUR', value: 10_100 },
    eventCode: 'AUTHORISATION',
    eventDate: '2026-01-15T12:00:00+01:00',
    merchantAccountCode: 'AcmeShopECOM',
    merchantReference: `order-${randomUUID()}`,
    paymentMethod: 'visa',
    pspReference: `PSP${Date.now()}${Math.floor(Math.random() * 1000)}`,
    reason: '033899:1111:03/2030',
    success: 'true',
    ...overrides,
  };
  item.additionalData = { hmacSignature: new HmacValidator().calculateHmac(item, key) };
  return { NotificationRequestItem: item };
}

export const adyenBody = (items: unknown[]): Buffer =>
  Buffer.from(JSON.stringify({ live: 'false', notificationItems: items }));

export function adyenAccepts(body: Buffer, key: string): boolean {
  const doc = JSON.parse(body.toString('utf8')) as { notificationItems: { NotificationRequestItem: AdyenItem }[] };
  const validator = new HmacValidator();
  return doc.notificationItems.every((i) => validator.validateHMAC(i.NotificationRequestItem, key));
}

export const adyenCase: ProviderCase = {
  preset: 'adyen',
  credential: 'secret',
  secret: '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056',
  wrongSecret: '0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF',
  deliver: (secret) => jsonDelivery(adyenBody([adyenItem(secret)]), {}),
  accepts: bodyCheck(adyenAccepts),
  timestamped: false,
  requiredHeader: null,
  eventType: 'AUTHORISATION',
  bodyUnsigned: true,
  proof: 'package-signs',
};
