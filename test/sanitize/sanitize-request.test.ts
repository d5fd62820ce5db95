import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EVENT_REQUEST_QUERY_LIMITS } from '../../generated/constants.ts';
import { arrivalRequest, clipText, sanitizeQuery } from '../../src/sanitize/sanitize-request.ts';

describe('sanitizeQuery', () => {
  it('replaces the value of every parameter whose name looks like a secret, in any case or encoding', () => {
    expect(
      sanitizeQuery(
        'a=1&token=t&access_token=t&apiKey=k&api%2Dkey=k&key=k&client_secret=s&X-Signature=s&sig=s&password=p&passwd=p' +
          '&pwd=p&auth=a&Authorization=a&code=c&credentials=c&session=s&jwt=j&hub.verify_token=v&nonce=n&otp=1&b=2',
      ),
    ).toBe(
      'a=1&token=[redacted]&access_token=[redacted]&apiKey=[redacted]&api%2Dkey=[redacted]&key=[redacted]' +
        '&client_secret=[redacted]&X-Signature=[redacted]&sig=[redacted]&password=[redacted]&passwd=[redacted]' +
        '&pwd=[redacted]&auth=[redacted]&Authorization=[redacted]&code=[redacted]&credentials=[redacted]' +
        '&session=[redacted]&jwt=[redacted]&hub.verify_token=[redacted]&nonce=[redacted]&otp=[redacted]&b=2',
    );
  });

  it('keeps everything else exactly as sent, flags and empty values included', () => {
    expect(sanitizeQuery('')).toBe('');
    expect(sanitizeQuery('team=core&x=%20y+z&debug&empty=&=v&&')).toBe('team=core&x=%20y+z&debug&empty=&=v&&');
    // Malformed percent-encoding is matched as it was sent.
    expect(sanitizeQuery('token%zz=1')).toBe('token%zz=[redacted]');
  });

  it('redacts a bare value that is not a short word: it may be the secret itself', () => {
    expect(sanitizeQuery('sk_live_51HqzXYZabc123&debug&a=1')).toBe('[redacted]&debug&a=1');
  });

  it('cuts a long query to the contract’s length, after redacting', () => {
    const long = `token=${'s'.repeat(5000)}&q=${'x'.repeat(5000)}`;
    const clipped = sanitizeQuery(long);
    expect(clipped.length).toBe(EVENT_REQUEST_QUERY_LIMITS.maxLength);
    expect(clipped.startsWith('token=[redacted]&q=xxx')).toBe(true);
    expect(clipped.endsWith('…')).toBe(true);
    expect(clipped).not.toContain('sss');
  });

  it('never lets a value of a secret-named parameter through (property)', () => {
    const secretName = fc.constantFrom('token', 'api_key', 'Secret', 'sig', 'password', 'code', 'AUTH');
    const value = fc.stringMatching(/^[A-Za-z0-9]{12,40}$/);
    fc.assert(
      fc.property(
        secretName,
        value,
        fc.array(fc.stringMatching(/^[a-z]{1,6}=[a-z0-9]{0,6}$/)),
        (name, secret, rest) => {
          const query = [...rest, `${name}=SECRET${secret}`, ...rest].join('&');
          expect(sanitizeQuery(query)).not.toContain(`SECRET${secret}`);
        },
      ),
    );
  });
});

describe('clipText and arrivalRequest', () => {
  it('never splits a surrogate pair when cutting', () => {
    expect(clipText('ab👋cd', 4)).toBe('ab…');
    expect(clipText('abc', 3)).toBe('abc');
  });

  it('builds the stored request from what Koa saw', () => {
    expect(arrivalRequest({ method: 'POST', path: '/hooks/ci', querystring: 'token=x&ref=main' }, 401)).toEqual({
      method: 'POST',
      path: '/hooks/ci',
      query: 'token=[redacted]&ref=main',
      responseStatus: 401,
    });
  });
});
