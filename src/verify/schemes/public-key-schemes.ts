/**
 * Asymmetric schemes: Ed25519 (Discord, Telnyx) and ECDSA P-256 (SendGrid). switchboard holds only
 * the provider's public key, so it can check a delivery but never sign one: replay and forwarding
 * send such an event with its original signature headers, and only when it passed its check. The
 * signature headers are therefore not secrets here, and are stored as received.
 */
import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import type { EcdsaScheme, Ed25519Scheme } from '../../../generated/types.ts';
import { headerValue } from '../headers.ts';
import { malformedHeader, missingHeader, noCredential, rotationNote, signatureMismatch } from '../verdicts.ts';
import { freshnessFailure, floorToSecondMs, parseUnixSeconds } from '../timestamp.ts';
import type { VerifyInput, VerifyOutcome } from '../preset-types.ts';
import { DecodedKeys } from './keys.ts';
import { parseSignedTemplate, signedBytes, type SignedPart } from './template.ts';

// The DER prefix of an Ed25519 SubjectPublicKeyInfo; the 32 raw key bytes follow it.
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** A provider's Ed25519 key as it publishes it (32 raw bytes, hex or base64), or null. */
export function ed25519Key(text: string, encoding: Ed25519Scheme['public_key_encoding']): KeyObject | null {
  const trimmed = text.trim();
  const valid = encoding === 'hex' ? /^[0-9a-fA-F]{64}$/.test(trimmed) : /^[A-Za-z0-9+/]{43}=$/.test(trimmed);
  if (!valid) return null;
  const raw = Buffer.from(trimmed, encoding);
  try {
    return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  } catch {
    return null;
  }
}

/** SendGrid's verification key: base64 of a P-256 SubjectPublicKeyInfo (DER), or null. */
function p256Key(text: string): KeyObject | null {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) return null;
  try {
    const key = createPublicKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'spki' });
    return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1' ? key : null;
  } catch {
    return null;
  }
}

export interface PublicKeyScheme {
  requiredHeaders: string[];
  originalHeaders: string[];
  verify: (input: VerifyInput) => VerifyOutcome;
  /** Null when the configured value is a usable key, else what is wrong with it. */
  checkPublicKey: (value: string) => string | null;
}

interface Compiled {
  algorithm: 'ed25519' | 'ecdsa-p256';
  signatureHeader: string;
  timestampHeader: string;
  parts: SignedPart[];
  /** The configured public keys, parsed once per preset (a KeyObject from DER is not free). */
  keys: DecodedKeys<KeyObject>;
  decodeSignature: (text: string) => Buffer | null;
  keyHelp: string;
}

function verifyWithKeys(c: Compiled, input: VerifyInput): VerifyOutcome {
  const keys = c.keys.usable(input.publicKeys);
  if (keys.length === 0) {
    return noCredential('public key');
  }
  const signatureText = headerValue(input.headers, c.signatureHeader);
  if (signatureText === undefined) return missingHeader(c.signatureHeader);
  const timestamp = headerValue(input.headers, c.timestampHeader)?.trim();
  if (timestamp === undefined) return missingHeader(c.timestampHeader);
  const signature = c.decodeSignature(signatureText.trim());
  if (signature === null) return malformedHeader(c.signatureHeader, `an ${c.algorithm} signature`);
  const seconds = parseUnixSeconds(timestamp);
  if (seconds === null) return malformedHeader(c.timestampHeader, 'unix seconds');
  const message = signedBytes(c.parts, { body: input.body, timestamp, headers: new Map() });
  // Ed25519 hashes internally; ECDSA P-256 signs a SHA-256 digest (OpenSSL's name for it).
  const hash = c.algorithm === 'ed25519' ? null : 'SHA256';
  // Every key is tried, so timing does not tell which one (if any) matched.
  let index = -1;
  keys.forEach((key, i) => {
    let good = false;
    try {
      good = verify(hash, message, key, signature);
    } catch {
      good = false;
    }
    if (good && index === -1) index = i;
  });
  if (index === -1) return signatureMismatch(c.signatureHeader);
  const rotation = rotationNote('key', index, keys.length);
  const passed: VerifyOutcome = { ok: true, detail: `${c.algorithm} valid (${c.signatureHeader})${rotation}` };
  return (
    freshnessFailure(seconds * 1000, floorToSecondMs(input.nowMs), input.toleranceSeconds, c.timestampHeader) ?? passed
  );
}

function scheme(c: Compiled): PublicKeyScheme {
  return {
    requiredHeaders: [c.signatureHeader.toLowerCase(), c.timestampHeader.toLowerCase()],
    originalHeaders: [c.signatureHeader.toLowerCase(), c.timestampHeader.toLowerCase()],
    verify: (input) => verifyWithKeys(c, input),
    checkPublicKey: (value) => (c.keys.get(value) === null ? c.keyHelp : null),
  };
}

export function createEd25519Scheme(s: Ed25519Scheme, where: string): PublicKeyScheme {
  const signatureLength = s.encoding === 'hex' ? /^[0-9a-fA-F]{128}$/ : /^[A-Za-z0-9+/]{86}==$/;
  return scheme({
    algorithm: 'ed25519',
    signatureHeader: s.signature_header,
    timestampHeader: s.timestamp_header,
    parts: parseSignedTemplate(s.signed, `${where}.signed`),
    keys: new DecodedKeys((text) => ed25519Key(text, s.public_key_encoding)),
    decodeSignature: (text) => (signatureLength.test(text) ? Buffer.from(text, s.encoding) : null),
    keyHelp: `not an Ed25519 public key (32 bytes in ${s.public_key_encoding})`,
  });
}

export function createEcdsaScheme(s: EcdsaScheme, where: string): PublicKeyScheme {
  return scheme({
    algorithm: 'ecdsa-p256',
    signatureHeader: s.signature_header,
    timestampHeader: s.timestamp_header,
    parts: parseSignedTemplate(s.signed, `${where}.signed`),
    keys: new DecodedKeys(p256Key),
    decodeSignature: (text) => (/^[A-Za-z0-9+/]+={0,2}$/.test(text) ? Buffer.from(text, 'base64') : null),
    keyHelp: 'not a P-256 public key (base64 of its DER SubjectPublicKeyInfo, as SendGrid shows it)',
  });
}
