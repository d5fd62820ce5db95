/**
 * The JWT HS256 scheme's edges, beyond what each provider's case proves: only HS256 (an unsigned
 * token or another algorithm is refused), the issuer, QStash's subject URL, rotation, and the
 * Bearer form. Tokens are made with jsonwebtoken, independently of src/.
 */
import { createHash } from 'node:crypto';
import jsonwebtoken from 'jsonwebtoken';
import { describe, expect, it } from 'vitest';
import { expectFail, expectOk, input, NOW_MS, NOW_S, presetOf } from './fixtures.ts';

const BODY = Buffer.from('{"type":"report.requested","id":"1"}');
const URL = 'https://hooks.example.com/hooks/q';
const qstash = presetOf({ preset: 'upstash-qstash', public_url: URL });
const vonage = presetOf({ preset: 'vonage' });
const netlify = presetOf({ preset: 'netlify' });

const b64url = (body: Buffer): string => createHash('sha256').update(body).digest('base64url');
const hex = (body: Buffer): string => createHash('sha256').update(body).digest('hex');

function qstashToken(secret: string, claims: Record<string, unknown> = {}): string {
  const base = { iss: 'Upstash', sub: URL, iat: NOW_S, nbf: NOW_S, exp: NOW_S + 300, body: b64url(BODY) };
  return jsonwebtoken.sign({ ...base, ...claims }, secret, { algorithm: 'HS256' });
}

describe('jwt-hs256 scheme', () => {
  it('accepts a token signed by the second configured key (rotation) and says which', () => {
    const outcome = qstash.verify(input(BODY, { 'upstash-signature': qstashToken('next') }, ['current', 'next']));
    expectOk(outcome);
    expect(outcome.detail).toContain('secret 2 of 2');
  });

  it('refuses an unsigned token (alg none) and a token of another algorithm', () => {
    const unsigned = jsonwebtoken.sign({ iss: 'netlify', sha256: hex(BODY) }, '', { algorithm: 'none' });
    expect(netlify.verify(input(BODY, { 'x-webhook-signature': unsigned }, ['s']))).toMatchObject({ ok: false });
    expectFail(netlify.verify(input(BODY, { 'x-webhook-signature': `${unsigned}x` }, ['s'])), 'bad_signature');
    const hs512 = jsonwebtoken.sign({ iss: 'netlify', sha256: hex(BODY) }, 's', { algorithm: 'HS512' });
    expectFail(netlify.verify(input(BODY, { 'x-webhook-signature': hs512 }, ['s'])), 'bad_signature');
  });

  it('refuses a token from another issuer even when the key signed it', () => {
    const token = jsonwebtoken.sign({ iss: 'someone', sha256: hex(BODY) }, 's', { algorithm: 'HS256' });
    const outcome = netlify.verify(input(BODY, { 'x-webhook-signature': token }, ['s']));
    expectFail(outcome, 'bad_signature');
    expect(outcome.detail).toContain('not issued by netlify');
  });

  it('refuses a QStash token signed for another URL, and one that has expired or is not yet valid', () => {
    const other = qstashToken('k', { sub: 'https://elsewhere.example.com/x' });
    const mismatch = qstash.verify(input(BODY, { 'upstash-signature': other }, ['k']));
    expectFail(mismatch, 'bad_signature');
    // The URL it checked against, so a public_url that is not the one QStash was given stands out.
    expect(mismatch.detail).toBe(`token signed for another URL (Upstash-Signature sub; checked against ${URL})`);
    const expired = qstashToken('k', { iat: NOW_S - 1000, nbf: NOW_S - 1000, exp: NOW_S - 700 });
    expectFail(qstash.verify(input(BODY, { 'upstash-signature': expired }, ['k'])), 'stale_timestamp');
    const early = qstashToken('k', { nbf: NOW_S + 700, exp: NOW_S + 1000 });
    expectFail(qstash.verify(input(BODY, { 'upstash-signature': early }, ['k'])), 'stale_timestamp');
    const noExp = jsonwebtoken.sign({ iss: 'Upstash', sub: URL, body: b64url(BODY) }, 'k', { algorithm: 'HS256' });
    expectFail(qstash.verify(input(BODY, { 'upstash-signature': noExp }, ['k'])), 'malformed_header');
  });

  it('checks the URL with the query the provider called', () => {
    const token = qstashToken('k', { sub: `${URL}?tenant=7` });
    expectOk(qstash.verify({ ...input(BODY, { 'upstash-signature': token }, ['k']), query: 'tenant=7' }));
    expectFail(qstash.verify(input(BODY, { 'upstash-signature': token }, ['k'])), 'bad_signature');
  });

  it('wants Vonage’s token as a Bearer token with an iat within tolerance', () => {
    const claims = { iss: 'Vonage', iat: NOW_S, payload_hash: hex(BODY) };
    const token = jsonwebtoken.sign(claims, 'v', { algorithm: 'HS256' });
    expectOk(vonage.verify(input(BODY, { authorization: `Bearer ${token}` }, ['v'])));
    expectFail(vonage.verify(input(BODY, { authorization: token }, ['v'])), 'malformed_header');
    const future = jsonwebtoken.sign({ ...claims, iat: NOW_S + 3600 }, 'v', { algorithm: 'HS256' });
    expectFail(vonage.verify(input(BODY, { authorization: `Bearer ${future}` }, ['v'])), 'stale_timestamp');
  });

  it('re-signs with the first secret, and the token binds the body', () => {
    const sign = qstash.sign;
    if (sign === undefined) throw new Error('upstash-qstash must sign');
    const headers = sign({ body: BODY, secret: 'first', nowMs: NOW_MS });
    expectOk(qstash.verify(input(BODY, headers, ['first'])));
    expectFail(qstash.verify(input(Buffer.from('{}'), headers, ['first'])), 'bad_signature');
    expectFail(qstash.verify(input(BODY, headers, ['second'])), 'bad_signature');
  });
});
