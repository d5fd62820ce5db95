/**
 * Credentials a sender presents as they are, compared in constant time against every configured
 * one (rotation): HTTP Basic (`basic-auth`, and Postmark and Chargebee, which send the user name
 * and password put in their webhook URL), and a passcode carried in the JSON body (Figma).
 * Nothing is signed, so nothing binds the body or a time: these prove only who sent it.
 */
import { headerValue } from '../headers.ts';
import { malformedHeader, MISSING_SECRET, missingHeader, usableSecrets } from '../hmac.ts';
import { isRecord, resolveJsonPointer } from '../identify.ts';
import { findMatchingKey } from '../timing-safe.ts';
import type { SignInput, VerifyInput, VerifyOutcome } from '../preset-types.ts';
import type { SchemeParts } from './hmac-scheme.ts';

const BASIC = /^Basic[ \t]+([A-Za-z0-9+/]+={0,2})[ \t]*$/i;

function matched(kind: string, where: string, values: readonly string[], offered: string): VerifyOutcome {
  const index = findMatchingKey(values, [offered], (value) => value);
  if (index === -1) return { ok: false, reason: 'token_mismatch', detail: `${kind} mismatch (${where})` };
  const rotation = values.length > 1 ? `; credential ${index + 1} of ${values.length}` : '';
  return { ok: true, detail: `${kind} matched (${where})${rotation}` };
}

/**
 * HTTP Basic (RFC 7617): `Authorization: Basic base64(user:password)`, against the configured
 * `username:password` pairs (presets/preset-options.ts credentialValues).
 */
function verifyBasic(input: VerifyInput): VerifyOutcome {
  const pairs = usableSecrets(input.secrets);
  if (pairs.length === 0) return MISSING_SECRET;
  const authorization = headerValue(input.headers, 'authorization')?.trim();
  if (authorization === undefined) return missingHeader('Authorization');
  const match = BASIC.exec(authorization);
  if (match?.[1] === undefined) return malformedHeader('Authorization', 'Basic <base64 user:password>');
  const offered = Buffer.from(match[1], 'base64').toString('utf8');
  if (!offered.includes(':')) return malformedHeader('Authorization', 'Basic <base64 user:password>');
  return matched('basic credentials', 'Authorization: Basic', pairs, offered);
}

const signBasic = (input: SignInput): Record<string, string> => ({
  authorization: `Basic ${Buffer.from(input.secret, 'utf8').toString('base64')}`,
});

export function createBasicScheme(): SchemeParts {
  return {
    requiredHeaders: ['authorization'],
    sensitiveHeaders: ['authorization'],
    verify: verifyBasic,
    sign: signBasic,
  };
}

/** The passcode at the pointer of a JSON body, or null. */
function passcodeOf(body: Buffer, pointer: string): string | null {
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return null;
  }
  const value = isRecord(json) ? resolveJsonPointer(json, pointer) : undefined;
  return typeof value === 'string' && value !== '' ? value : null;
}

/** A passcode in the JSON body (Figma's `passcode`), against the configured tokens. */
export function createPasscodeScheme(pointer: string): Omit<SchemeParts, 'sign'> {
  return {
    requiredHeaders: [],
    sensitiveHeaders: [],
    verify: (input) => {
      const tokens = usableSecrets(input.secrets);
      if (tokens.length === 0) return MISSING_SECRET;
      const offered = passcodeOf(input.body, pointer);
      if (offered === null)
        return { ok: false, reason: 'missing_header', detail: `no passcode at ${pointer} in the body` };
      return matched('passcode', `body ${pointer}`, tokens, offered);
    },
  };
}
