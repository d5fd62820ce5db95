/**
 * basic-auth, any HTTP Basic sender: the user name and password as `Authorization: Basic
 * base64(user:password)`, checked by a receiver written from RFC 7617 (basic-case.ts), on a generic
 * JSON event. https://www.rfc-editor.org/rfc/rfc7617
 */
import { basicCase } from '../../test/verify/providers/basic-case.ts';
import type { ProviderCase } from '../../test/verify/providers/provider-case.ts';
import { samplePayload } from '../../test/verify/providers/timed-case.ts';

export const basicAuthCase: ProviderCase = {
  ...basicCase('basic-auth', () => samplePayload('basic-auth', 'generic-event.json'), 'order.shipped'),
  secret: 'basic-auth-webhook-password',
  wrongSecret: 'basic-auth-wrong-password',
  // Any sender's HTTP Basic, switchboard's own preset: the RFC's check proves it, not a provider's.
  proof: 'switchboard',
};
