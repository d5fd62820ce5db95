/**
 * Square's own signature check (the square package's WebhooksHelper, which only verifies). Only the
 * helper is loaded: the whole SDK takes seconds to import.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

export const { WebhooksHelper: square } = require(
  join(dirname(require.resolve('square')), 'wrapper/WebhooksHelper.js'),
) as {
  WebhooksHelper: {
    verifySignature(input: {
      requestBody: string;
      signatureHeader: string;
      signatureKey: string;
      notificationUrl: string;
    }): Promise<boolean>;
  };
};
