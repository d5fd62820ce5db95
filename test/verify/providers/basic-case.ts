/**
 * HTTP Basic senders (Postmark, Chargebee): the user name and password written in the webhook URL
 * (or set on the webhook) arrive as `Authorization: Basic base64(user:password)` (RFC 7617,
 * computed here independently of src/). Nothing covers the body.
 */
import { BASIC_USERNAME, type ProviderCase, type Signed } from './provider-case.ts';

export const basicAuthorization = (password: string, username = BASIC_USERNAME): string =>
  `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;

/** RFC 7617's check, as a receiver written from the RFC makes it. */
export function basicAccepts({ headers }: Signed, password: string): boolean {
  const match = /^Basic (.+)$/.exec(headers['authorization'] ?? '');
  return (
    match?.[1] !== undefined && Buffer.from(match[1], 'base64').toString('utf8') === `${BASIC_USERNAME}:${password}`
  );
}

export function basicCase(
  preset: ProviderCase['preset'],
  payload: () => Buffer,
  eventType: string,
): Omit<ProviderCase, 'secret' | 'wrongSecret'> {
  return {
    preset,
    credential: 'password',
    deliver: (password) => ({
      body: payload(),
      headers: { 'content-type': 'application/json', authorization: basicAuthorization(password) },
    }),
    accepts: basicAccepts,
    timestamped: false,
    requiredHeader: 'Authorization',
    eventType,
    bodyUnsigned: true,
    proof: 'example',
  };
}
