/**
 * A JWT (JWS compact, HS256) keyed with the secret, whose claims carry a hash of the body: Netlify
 * (`sha256`, hex), Upstash QStash (`body`, base64url, with `sub` the URL it called and exp/nbf),
 * Vonage (`payload_hash`, hex, with `iat`). The token itself is checked by jsonwebtoken (the
 * library Vonage's own @vonage/jwt uses): HS256 only, so `alg: none` or an RS256 token keyed with
 * the secret as a "public key" is refused. The body hash is what ties the token to these bytes.
 */
import { createHash, randomUUID } from 'node:crypto';
import jsonwebtoken from 'jsonwebtoken';
import type { JwtPayload } from 'jsonwebtoken';
import type { JwtScheme } from '../../../generated/types.ts';
import { headerValue } from '../headers.ts';
import { usableSecrets } from '../hmac.ts';
import {
  MISSING_SECRET,
  badSignature,
  malformedHeader,
  outsideTolerance,
  missingHeader,
  rotationNote,
  signatureMismatch,
} from '../verdicts.ts';
import { constantTimeEqual } from '../timing-safe.ts';
import { effectiveTolerance, freshnessFailure } from '../timestamp.ts';
import type { SignInput, VerifyInput, VerifyOutcome } from '../preset-types.ts';
import { calledUrl, shownUrl, type SchemeParts } from './hmac-scheme.ts';

const { JsonWebTokenError, NotBeforeError, TokenExpiredError } = jsonwebtoken;

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** How long a re-signed token that carries exp is valid, as QStash's own tokens are. */
const RESIGNED_LIFETIME_SECONDS = 300;

interface Compiled {
  scheme: JwtScheme;
  /** The URL the provider calls (QStash's `sub`), when one is configured. */
  url: string | undefined;
}

function bodyHash(body: Buffer, encoding: JwtScheme['body_hash']['encoding']): string {
  return createHash('sha256').update(body).digest(encoding);
}

/** The token from the header, or the outcome that ends the check. */
function readToken(c: Compiled, input: VerifyInput): string | VerifyOutcome {
  const { header } = c.scheme;
  const raw = headerValue(input.headers, header)?.trim();
  if (raw === undefined) return missingHeader(header);
  let token = raw;
  if (c.scheme.bearer === true) {
    const match = BEARER.exec(raw);
    if (match?.[1] === undefined) return malformedHeader(header, 'Bearer <jwt>');
    token = match[1];
  }
  return COMPACT_JWS.test(token) ? token : malformedHeader(header, 'a JWT');
}

type KeyResult = { kind: 'passed'; payload: JwtPayload } | { kind: 'failed'; outcome: VerifyOutcome } | { kind: 'no' };

/**
 * One key against the token: the signature (and the issuer, exp and nbf, which the library checks
 * after the signature), then the claims that bind the token to this delivery.
 */
function tryKey(c: Compiled, token: string, key: string, input: VerifyInput): KeyResult {
  const tolerance = effectiveTolerance(input.toleranceSeconds);
  let payload: JwtPayload;
  try {
    const decoded = jsonwebtoken.verify(token, key, {
      algorithms: ['HS256'],
      ...(c.scheme.issuer === undefined ? {} : { issuer: c.scheme.issuer }),
      clockTimestamp: Math.floor(input.nowMs / 1000),
      clockTolerance: tolerance,
      ignoreExpiration: c.scheme.expires !== true,
      ignoreNotBefore: c.scheme.expires !== true,
    });
    if (typeof decoded === 'string') return { kind: 'failed', outcome: malformedHeader(c.scheme.header, 'JWT claims') };
    payload = decoded;
  } catch (err) {
    // The library checks the signature first: an expiry or issuer error means this key signed it.
    if (err instanceof TokenExpiredError || err instanceof NotBeforeError) {
      const claim = err instanceof TokenExpiredError ? 'exp' : 'nbf';
      return { kind: 'failed', outcome: outsideTolerance('token', tolerance, `${c.scheme.header} ${claim}`) };
    }
    if (err instanceof JsonWebTokenError && err.message.startsWith('jwt issuer invalid')) {
      const detail = `token not issued by ${c.scheme.issuer ?? ''} (${c.scheme.header})`;
      return { kind: 'failed', outcome: badSignature(detail) };
    }
    return { kind: 'no' };
  }
  return { kind: 'passed', payload };
}

/** The claims that tie a token this key signed to this delivery: body hash, URL, issue time. */
function claimsOutcome(c: Compiled, payload: JwtPayload, input: VerifyInput): VerifyOutcome | null {
  const { header, body_hash: hash } = c.scheme;
  const claimed = payload[hash.claim] as unknown;
  if (typeof claimed !== 'string') return malformedHeader(header, `a token with the ${hash.claim} claim`);
  const strip = (v: string): string => (hash.encoding === 'hex' ? v.toLowerCase() : v.replace(/=+$/, ''));
  if (!constantTimeEqual(strip(claimed), strip(bodyHash(input.body, hash.encoding)))) {
    return badSignature(`body does not match the token's ${hash.claim} (${header})`);
  }
  const url = calledUrl(c.url, input.query);
  if (c.scheme.subject_url === true && url !== undefined && payload.sub !== url) {
    const checked = c.url === undefined ? '' : `; checked against ${shownUrl(c.url, input.query)}`;
    return badSignature(`token signed for another URL (${header} sub${checked})`);
  }
  if (c.scheme.expires === true && typeof payload.exp !== 'number') {
    return malformedHeader(header, 'a token with exp');
  }
  if (c.scheme.issued_at === true) {
    if (typeof payload.iat !== 'number') return malformedHeader(header, 'a token with iat');
    return freshnessFailure(payload.iat * 1000, input.nowMs, input.toleranceSeconds, `${header} iat`);
  }
  return null;
}

/**
 * Every configured secret is tried (rotation: QStash's current and next signing keys), with no
 * early exit, so timing does not tell which one matched. A token one key signed is then held to
 * its claims; a failure there is reported rather than "mismatch", since the signature was good.
 */
function verifyJwt(c: Compiled, input: VerifyInput): VerifyOutcome {
  const keys = usableSecrets(input.secrets);
  if (keys.length === 0) return MISSING_SECRET;
  const token = readToken(c, input);
  if (typeof token !== 'string') return token;
  const results = keys.map((key) => tryKey(c, token, key, input));
  const index = results.findIndex((r) => r.kind === 'passed');
  const passed = results[index];
  if (passed?.kind === 'passed') {
    const failure = claimsOutcome(c, passed.payload, input);
    if (failure !== null) return failure;
    const rotation = rotationNote('secret', index, keys.length);
    return { ok: true, detail: `jwt-hs256 valid (${c.scheme.header})${rotation}` };
  }
  const failed = results.find((r) => r.kind === 'failed');
  if (failed?.kind === 'failed') return failed.outcome;
  return signatureMismatch(c.scheme.header);
}

/** A token as the provider would issue it for these bytes: its issuer, the body hash, and its times. */
function signJwt(c: Compiled, input: SignInput): Record<string, string> {
  const now = Math.floor(input.nowMs / 1000);
  const url = calledUrl(c.url, input.query);
  const timed = c.scheme.expires === true || c.scheme.issued_at === true;
  const claims: JwtPayload = {
    ...(c.scheme.issuer === undefined ? {} : { iss: c.scheme.issuer }),
    ...(c.scheme.subject_url === true && url !== undefined ? { sub: url } : {}),
    ...(timed ? { iat: now, jti: randomUUID() } : {}),
    ...(c.scheme.expires === true ? { nbf: now, exp: now + RESIGNED_LIFETIME_SECONDS } : {}),
    [c.scheme.body_hash.claim]: bodyHash(input.body, c.scheme.body_hash.encoding),
  };
  // noTimestamp drops iat altogether; a timed claim set carries its own iat, which sign() keeps.
  const token = jsonwebtoken.sign(claims, input.secret, { algorithm: 'HS256', noTimestamp: !timed });
  return { [c.scheme.header.toLowerCase()]: c.scheme.bearer === true ? `Bearer ${token}` : token };
}

export interface JwtOptions {
  /** The URL the provider calls, for a scheme whose token names it (QStash's sub). */
  publicUrl?: string | undefined;
}

export function createJwtScheme(scheme: JwtScheme, options: JwtOptions = {}): SchemeParts {
  const compiled: Compiled = { scheme, url: options.publicUrl };
  const header = scheme.header.toLowerCase();
  return {
    requiredHeaders: [header],
    sensitiveHeaders: [header],
    verify: (input) => verifyJwt(compiled, input),
    sign: (input) => signJwt(compiled, input),
  };
}
