import { describe, expect, it } from 'vitest';
import { looksLikeCredential } from '../../src/shared/credential-names.ts';
import { sanitizeHeaders, REDACTED } from '../../src/sanitize/sanitize-headers.ts';
import { genericSummary } from '../../src/verify/summary.ts';

describe('credential-like names (issue 37.3)', () => {
  it('one matcher for a header name and a JSON key, whatever the case and separators', () => {
    for (const name of ['api_key', 'apiKey', 'api-key', 'X-Api-Key', 'APIKey', 'API_KEY', 'api_key_2']) {
      expect(looksLikeCredential(name), name).toBe(true);
    }
    for (const name of ['password', 'userPassword', 'token', 'access_token', 'X-Gitlab-Token', 'refreshToken']) {
      expect(looksLikeCredential(name), name).toBe(true);
    }
    for (const name of ['client_secret', 'x-hub-signature-256', 'Cookie', 'authorization', 'basic_auth', 'jwt']) {
      expect(looksLikeCredential(name), name).toBe(true);
    }
    // What counts, names or merely resembles a credential is not one.
    for (const name of [
      'x-token-count',
      'total_tokens',
      'token_type',
      'author',
      'signal',
      'issue',
      'key',
      'file_key',
    ]) {
      expect(looksLikeCredential(name), name).toBe(false);
    }
    // An idempotency key is a delivery id (Twilio's I-Twilio-Idempotency-Token).
    expect(looksLikeCredential('Idempotency-Key')).toBe(false);
    expect(looksLikeCredential('I-Twilio-Idempotency-Token')).toBe(false);
  });

  it('decides the same for a stored header and a summarised field of the same name', () => {
    const names = ['X-Api-Key', 'X-Session-Id', 'X-Passphrase', 'X-Token-Count', 'X-Event'];
    const headers = sanitizeHeaders(names.flatMap((name) => [name, 'value-1']));
    const summary = genericSummary(Object.fromEntries(names.map((name) => [name, 'value-1']))) ?? '';
    for (const name of names) {
      const hidden = headers[name.toLowerCase()] === REDACTED;
      expect(hidden, name).toBe(looksLikeCredential(name));
      expect(summary.includes(`${name}: value-1`), name).toBe(!hidden);
    }
  });
});
