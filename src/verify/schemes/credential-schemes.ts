/**
 * Credentials a sender presents as they are, compared in constant time against every configured
 * one (rotation): HTTP Basic (`basic-auth`, and Postmark and Chargebee, which send the user name
 * and password put in their webhook URL), and a passcode carried in the JSON body (Figma).
 * Nothing is signed, so nothing binds the body or a time: these prove only who sent it.
 */
import { headerValue } from '../headers.ts';
import { usableSecrets } from '../hmac.ts';
import {
  credentialMismatch,
  MISSING_SECRET,
  malformedHeader,
  missingHeader,
  missingInBody,
  rotationNote,
} from '../verdicts.ts';
import { findMatchingKey } from '../timing-safe.ts';
import type { Preset, SignInput, VerifyInput, VerifyOutcome } from '../preset-types.ts';
import type { SchemeParts } from './hmac-scheme.ts';
import { jsonValueRanges, replaceRanges } from './json-value-ranges.ts';

/** `Authorization: Basic <base64 of user:password>` (RFC 7617), the base64 captured. */
export const BASIC_AUTHORIZATION = /^Basic[ \t]+([A-Za-z0-9+/]+={0,2})[ \t]*$/i;

function matched(kind: string, where: string, values: readonly string[], offered: string): VerifyOutcome {
  const index = findMatchingKey(values, [offered], (value) => value);
  if (index === -1) return credentialMismatch(kind, where);
  const rotation = rotationNote('credential', index, values.length);
  return { ok: true, detail: `${kind} matched (${where})${rotation}` };
}

/**
 * HTTP Basic (RFC 7617): `Authorization: Basic base64(user:password)`, against the configured
 * `username:password` pairs (verify/preset-options.ts credentialValues).
 */
function verifyBasic(input: VerifyInput): VerifyOutcome {
  const pairs = usableSecrets(input.secrets);
  if (pairs.length === 0) return MISSING_SECRET;
  const authorization = headerValue(input.headers, 'authorization')?.trim();
  if (authorization === undefined) return missingHeader('Authorization');
  const match = BASIC_AUTHORIZATION.exec(authorization);
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

/** The value a consumer reads at the pointer (the last, if the key repeats), when it is a non-empty string. */
function passcodeOf(body: Buffer, pointer: string): string | null {
  const ranges = jsonValueRanges(body, pointer);
  const last = ranges?.at(-1);
  if (last === undefined) return null;
  const value: unknown = JSON.parse(body.subarray(last.start, last.end).toString('utf8'));
  return typeof value === 'string' && value !== '' ? value : null;
}

const BLANK = Buffer.from('""');

/**
 * A passcode in the JSON body (Figma's `passcode`), against the configured passcodes (rotation).
 * It is a credential, not a signature: it travels in the clear inside what is stored, so the stored
 * bytes have it blanked (every value at the pointer becomes `""`, nothing else changes), and a
 * replay of an event that passed its check gets the configured passcode put back (restore).
 */
export function createPasscodeScheme(
  pointer: string,
): Omit<SchemeParts, 'sign'> & Required<Pick<Preset, 'bodyCredential' | 'signBody'>> {
  const restore = (body: Buffer, passcode: string): Buffer => {
    const ranges = jsonValueRanges(body, pointer);
    return ranges === null ? body : replaceRanges(body, ranges, Buffer.from(JSON.stringify(passcode), 'utf8'));
  };
  // Shape repeat by intent: a scheme whose credential is in the body has no required or secret
  // headers, as body-signature-scheme.ts's has none; each verifies in its own way (no logic to share).
  return {
    requiredHeaders: [],
    sensitiveHeaders: [],
    verify: (input) => {
      const passcodes = usableSecrets(input.secrets);
      if (passcodes.length === 0) return MISSING_SECRET;
      const offered = passcodeOf(input.body, pointer);
      if (offered === null) return missingInBody(`no passcode at ${pointer} in the body`);
      return matched('passcode', `body ${pointer}`, passcodes, offered);
    },
    bodyCredential: {
      name: `passcode (${pointer} in the JSON body)`,
      present: (body) => passcodeOf(body, pointer) !== null,
      redact: (body) => {
        const ranges = jsonValueRanges(body, pointer);
        return ranges === null ? body : replaceRanges(body, ranges, BLANK);
      },
      restore,
    },
    // switchboard trigger: the sample carries the passcode as Figma's own delivery would.
    signBody: (input) => restore(input.body, input.secret),
  };
}
