/**
 * Key pairs for the asymmetric cases, made with node:crypto, and the public half written as each
 * provider publishes it. A case's "secret" is that public text (what config takes); signing looks
 * the private key up by it.
 */
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { unixSeconds } from './timed-case.ts';

export interface PublishedKey {
  /** The public key as config takes it. */
  text: string;
  privateKey: KeyObject;
}

const byText = new Map<string, KeyObject>();

function remember(text: string, privateKey: KeyObject): PublishedKey {
  byText.set(text, privateKey);
  return { text, privateKey };
}

/** An Ed25519 pair, the public key as its 32 raw bytes in hex (Discord) or base64 (Telnyx). */
export function ed25519Pair(encoding: 'hex' | 'base64'): PublishedKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return remember(publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString(encoding), privateKey);
}

/** A P-256 pair, the public key as base64 of its DER SubjectPublicKeyInfo (SendGrid). */
export function p256Pair(): PublishedKey {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return remember(publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), privateKey);
}

/**
 * A signature over `{timestamp}{separator}{body}` with the private half of a published key, the
 * timestamp in unix seconds as Discord, SendGrid and Telnyx send it.
 */
export function signTimestamped(publicText: string, atMs: number, body: Buffer, separator = '') {
  const timestamp = unixSeconds(atMs);
  return { timestamp, signature: signWith(publicText, Buffer.concat([Buffer.from(`${timestamp}${separator}`), body])) };
}

/** Signs with the private half of a published key: Ed25519, or ECDSA SHA-256 (DER). */
function signWith(publicText: string, message: Buffer): Buffer {
  const privateKey = byText.get(publicText);
  if (privateKey === undefined) throw new Error('no private key for that public key');
  return sign(privateKey.asymmetricKeyType === 'ed25519' ? null : 'SHA256', message, privateKey);
}
