/**
 * Microsoft Teams outgoing webhooks: `Authorization: HMAC <base64>`, an HMAC-SHA256 of the body
 * keyed with the security token Teams shows at creation, base64-DECODED (not its text). No npm
 * package signs or checks these, so the signer and the check below are Microsoft's published
 * computation, written here independently of src/: the documentation's verification method
 * (https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-outgoing-webhook#2-create-a-method-to-verify-the-outgoing-webhook-hmac-token:
 * Convert.FromBase64String(token) as the HMACSHA256 key, the body's UTF-8 bytes hashed, "HMAC " +
 * Convert.ToBase64String(hash) compared with the header) and its Node sample
 * (https://github.com/OfficeDev/Microsoft-Teams-Samples/tree/main/samples/outgoing-webhook/nodejs:
 * `"HMAC " + crypto.createHmac('sha256', Buffer.from(sharedSecret, 'base64')).update(msgBuf).digest('base64')`,
 * compared with `headers.authorization`).
 */
import { createHmac } from 'node:crypto';
import { jsonDelivery, type ProviderCase } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

/** A security token as Teams hands it out: 32 random-looking bytes, base64. */
export const teamsToken = (name: string): string =>
  Buffer.from(`${name}-teams-security-token-32bytes!`.slice(0, 32)).toString('base64');

/** What Teams writes in Authorization for this body and token, per Microsoft's sample. */
export function teamsAuthorization(body: Buffer, token: string): string {
  return `HMAC ${createHmac('sha256', Buffer.from(token, 'base64')).update(body).digest('base64')}`;
}

export const microsoftTeamsCase: ProviderCase = {
  preset: 'microsoft-teams',
  credential: 'secret',
  secret: teamsToken('current'),
  wrongSecret: teamsToken('wrong'),
  deliver(token) {
    const body = samplePayload('microsoft-teams', 'message.json');
    return jsonDelivery(body, { authorization: teamsAuthorization(body, token) });
  },
  // Microsoft's sample compares the whole header with the computed "HMAC <base64>".
  accepts: ({ body, headers }, token) => headers.authorization === teamsAuthorization(body, token),
  timestamped: false,
  requiredHeader: 'Authorization',
  eventType: 'message',
  proof: 'example',
};
