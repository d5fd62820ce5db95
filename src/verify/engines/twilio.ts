/** Twilio: HMAC-SHA1 of the URL it called and its sorted form fields, so it always signs the URL. */
import { createTwilioScheme, SIGNATURE_HEADER } from '../schemes/twilio-scheme.ts';
import { code, defineEngine } from './engine.ts';

export const twilioEngine = defineEngine<'twilio'>({
  kind: 'twilio',
  signsUrl: () => true,
  signatureHeaders: () => [SIGNATURE_HEADER],
  build: ({ where, options }) => createTwilioScheme(where, options.public_url),
  docs: {
    scheme: () => 'HMAC-SHA1 base64 of the URL and sorted form fields (JSON: `bodySHA256`)',
    headers: () => code(SIGNATURE_HEADER),
    timestamped: () => false,
  },
});
