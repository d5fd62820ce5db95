import { describe, expect, it } from 'vitest';
import { credentialNeedles, redactCredentials } from '../../src/outbound/redact-credentials.ts';
import { responseExcerpt } from '../../src/outbound/send-request.ts';

describe('credentials in a response excerpt (26.1)', () => {
  const token = 'tok_0123456789abcdef';
  const hex = 'a'.repeat(20) + 'b'.repeat(44);
  const needles = credentialNeedles([token, 'whsec_signing-secret'], [`Bearer ${token}`, `t=1700000000,v1=${hex}`]);

  it('replaces each credential, its parts and their JSON or URL spellings, wherever they appear', () => {
    const excerpt = [
      `authorization: Bearer ${token}`,
      `got v1=${hex}`,
      `just the hex ${hex}`,
      JSON.stringify({ secret: 'whsec_signing-secret' }),
      `url=${encodeURIComponent(`t=1700000000,v1=${hex}`)}`,
    ].join('\n');
    const redacted = redactCredentials(excerpt, needles) ?? '';
    for (const secret of [token, hex, 'whsec_signing-secret']) expect(redacted).not.toContain(secret);
    // The whole header value goes first; its parts go wherever they appear alone.
    expect(redacted).toContain('authorization: [redacted]');
    expect(redacted).toContain('got [redacted]');
    expect(redacted).toContain('just the hex [redacted]');
  });

  it('redacts the start of a credential cut off by the excerpt end', () => {
    expect(redactCredentials(`token is ${token.slice(0, 9)}…`, needles)).toBe('token is [redacted]…');
    // Not cut: a matching tail is just text.
    expect(redactCredentials(`token is ${token.slice(0, 9)}`, needles)).toBe(`token is ${token.slice(0, 9)}`);
  });

  it('works the needles out only for an excerpt long enough to hold one', () => {
    let made = 0;
    const make = (): string[] => {
      made += 1;
      return needles;
    };
    // Shorter than any needle and any cut prefix: nothing to redact, so nothing is worked out.
    for (const short of ['ok', '{}', 'to…', '']) expect(redactCredentials(short, make)).toBe(short);
    expect(made).toBe(0);
    expect(redactCredentials(`${token.slice(0, 4)}…`, make)).toBe('[redacted]…');
    expect(redactCredentials(`echo ${token}`, make)).toBe('echo [redacted]');
    expect(made).toBe(2);
  });
});

describe('an HTTP Basic credential in a response excerpt (issue 37.6)', () => {
  const password = 'pw-9c1e44b0';
  const header = `Basic ${Buffer.from(`relay:${password}`).toString('base64')}`;

  it('redacts the password alone, the user:password pair and the header value, configured or only sent', () => {
    const echoed = [
      `wrong password: ${password}`,
      `pair relay:${password}`,
      `got ${header}`,
      JSON.stringify({ password }),
    ];
    for (const needles of [
      credentialNeedles([`relay:${password}`], [header]),
      credentialNeedles([], [header]),
      credentialNeedles([`relay:${password}`], []),
    ]) {
      const redacted = redactCredentials(echoed.join('\n'), needles) ?? '';
      expect(redacted).not.toContain(password);
      expect(redacted).toContain('wrong password: [redacted]');
    }
    // The user name alone is not a secret.
    expect(redactCredentials('hello relay', credentialNeedles([`relay:${password}`], [header]))).toBe('hello relay');
  });

  it('redacts the start of a password cut off by the excerpt end', () => {
    const needles = credentialNeedles([`relay:${password}`], [header]);
    expect(redactCredentials(`wrong password: ${password.slice(0, 5)}…`, needles)).toBe('wrong password: [redacted]…');
  });
});

describe('storable excerpts (26.2)', () => {
  it('writes NUL as \\u0000 and each byte that is not UTF-8 as \\xNN, keeping the valid text', () => {
    const head = Buffer.concat([Buffer.from('ok\u0000é'), Buffer.from([0xff, 0xc3, 0x28]), Buffer.from('€ done')]);
    expect(responseExcerpt(head, false)).toBe('ok\\u0000é\\xff\\xc3(€ done');
  });

  it('drops a character the cut split, and escapes one the answer itself left unfinished', () => {
    const euro = Buffer.from('€');
    const cut = Buffer.concat([Buffer.from([0xff]), Buffer.from('a'), euro.subarray(0, 2)]);
    expect(responseExcerpt(cut, true)).toBe('\\xffa…');
    expect(responseExcerpt(cut, false)).toBe('\\xffa\\xe2\\x82');
    // Surrogates and overlong forms are not UTF-8 either.
    expect(responseExcerpt(Buffer.from([0xed, 0xa0, 0x80, 0xc0, 0xaf]), false)).toBe('\\xed\\xa0\\x80\\xc0\\xaf');
  });
});
