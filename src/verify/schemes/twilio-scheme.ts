/**
 * Twilio: `X-Twilio-Signature`, base64 HMAC (SHA-1 with the Auth Token, or SHA-256 with a shared
 * key when `X-Twilio-Webhooks-Signature-Settings` says `algorithm=HMAC_SHA256`) over the URL Twilio
 * called followed by every form field, sorted by name, written name then value (a repeated name's
 * distinct values sorted). A JSON body is not in the signature: Twilio puts its SHA-256 (hex) in the
 * URL as `bodySHA256`, so the URL signs the body. As the twilio package does, the URL is tried as
 * configured and with its default port added or removed, since proxies differ on the port.
 */
import { createHash, createHmac } from 'node:crypto';
import { invalidArgument } from '../../errors/app-error.ts';
import { headerValue } from '../headers.ts';
import { usableSecrets } from '../hmac.ts';
import { MISSING_SECRET, badSignature, malformedHeader, missingHeader, rotationNote } from '../verdicts.ts';
import { constantTimeEqual, findMatchingKey } from '../timing-safe.ts';
import type { SignInput, VerifyInput, VerifyOutcome } from '../preset-types.ts';
import { calledUrl, mismatchDetail, type SchemeParts } from './hmac-scheme.ts';

export const SIGNATURE_HEADER = 'X-Twilio-Signature';
const SETTINGS_HEADER = 'X-Twilio-Webhooks-Signature-Settings';
const BODY_HASH_PARAM = 'bodySHA256';
const FORM_BODY = /^[\w%+.~*=&!'()-]*$/;

type Algorithm = 'sha1' | 'sha256';

/** The algorithm the settings header names: none (or no algorithm=) is the Auth Token's SHA-1. */
function algorithmOf(settings: string | undefined): Algorithm | null {
  for (const part of (settings ?? '').split(',')) {
    const eq = part.indexOf('=');
    if (eq === -1 || part.slice(0, eq).trim() !== 'algorithm') continue;
    const name = part
      .slice(eq + 1)
      .trim()
      .toUpperCase();
    if (name === '' || name === 'HMAC_SHA1') return 'sha1';
    return name === 'HMAC_SHA256' ? 'sha256' : null;
  }
  return 'sha1';
}

/** The form fields as Twilio signs them: sorted names, each followed by its value(s). */
function formData(body: Buffer): string | null {
  const text = body.toString('utf8');
  if (!FORM_BODY.test(text)) return null;
  const fields = new Map<string, Set<string>>();
  for (const [name, value] of new URLSearchParams(text)) {
    const values = fields.get(name) ?? new Set<string>();
    values.add(value);
    fields.set(name, values);
  }
  return [...fields.keys()]
    .sort()
    .map((name) => [...(fields.get(name) ?? [])].sort().reduce((acc, value) => acc + name + value, ''))
    .join('');
}

/** The URL with the scheme's default port added, or removed when it has one (twilio's addPort/removePort). */
function portVariant(url: string): string {
  const match = /^(https?:\/\/)([^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)(:\d+)?(.*)$/i.exec(url);
  if (match === null) return url;
  const [, scheme = '', user = '', host = '', port, rest = ''] = match;
  if (port !== undefined) return `${scheme}${user}${host}${rest}`;
  return `${scheme}${user}${host}${scheme.toLowerCase() === 'https://' ? ':443' : ':80'}${rest}`;
}

const sha256Hex = (body: Buffer): string => createHash('sha256').update(body).digest('hex');

interface Signed {
  /** What the HMAC is over, for each URL tried. */
  data: string[];
  /** A JSON body's hash check, when the URL carries bodySHA256. */
  bodyHashOk: boolean | null;
}

function signedData(url: string, body: Buffer): Signed | VerifyOutcome {
  const query = url.includes('?') ? new URLSearchParams(url.slice(url.indexOf('?') + 1)) : undefined;
  const bodyHash = query?.get(BODY_HASH_PARAM) ?? null;
  const urls = [url, portVariant(url)];
  if (bodyHash !== null) return { data: urls, bodyHashOk: constantTimeEqual(bodyHash, sha256Hex(body)) };
  const form = formData(body);
  if (form === null) {
    return badSignature(
      `body is neither form fields nor covered by ${BODY_HASH_PARAM} in the URL (${SIGNATURE_HEADER})`,
    );
  }
  return { data: urls.map((u) => u + form), bodyHashOk: null };
}

function verifyTwilio(publicUrl: string, input: VerifyInput): VerifyOutcome {
  const keys = usableSecrets(input.secrets);
  if (keys.length === 0) return MISSING_SECRET;
  const signature = headerValue(input.headers, SIGNATURE_HEADER)?.trim();
  if (signature === undefined) return missingHeader(SIGNATURE_HEADER);
  const algorithm = algorithmOf(headerValue(input.headers, SETTINGS_HEADER));
  if (algorithm === null) return malformedHeader(SETTINGS_HEADER, 'algorithm=HMAC_SHA1 or HMAC_SHA256');
  const signed = signedData(calledUrl(publicUrl, input.query) ?? publicUrl, input.body);
  if ('ok' in signed) return signed;
  let matched = -1;
  for (const data of signed.data) {
    const index = findMatchingKey(keys, [signature], (key) => createHmac(algorithm, key).update(data).digest('base64'));
    if (index !== -1 && matched === -1) matched = index;
  }
  if (matched === -1) {
    return badSignature(mismatchDetail(SIGNATURE_HEADER, publicUrl, input.query));
  }
  if (signed.bodyHashOk === false) {
    return badSignature(`body does not match ${BODY_HASH_PARAM} (${SIGNATURE_HEADER})`);
  }
  const rotation = rotationNote('secret', matched, keys.length);
  return { ok: true, detail: `hmac-${algorithm} valid (${SIGNATURE_HEADER})${rotation}` };
}

/**
 * The signature Twilio would send for these bytes at the public URL: over the form fields, or, for
 * a body that is not a form, over the URL with the body's bodySHA256 (replacing any it carried).
 * SHA-1, as with an Auth Token, unless the stored delivery named SHA-256.
 */
function signTwilio(publicUrl: string, input: SignInput): Record<string, string> {
  const settings = input.headers === undefined ? undefined : headerValue(input.headers, SETTINGS_HEADER);
  const algorithm = algorithmOf(settings) ?? 'sha1';
  let url = calledUrl(publicUrl, input.query) ?? publicUrl;
  const form = formData(input.body);
  let data: string;
  if (form !== null && !url.includes(`${BODY_HASH_PARAM}=`)) {
    data = url + form;
  } else {
    const [base = url, query = ''] = url.split('?', 2);
    const params = new URLSearchParams(query);
    params.set(BODY_HASH_PARAM, sha256Hex(input.body));
    url = `${base}?${params.toString()}`;
    data = url;
  }
  const out: Record<string, string> = {
    'x-twilio-signature': createHmac(algorithm, input.secret).update(data).digest('base64'),
  };
  if (settings !== undefined) out['x-twilio-webhooks-signature-settings'] = settings;
  return out;
}

export function createTwilioScheme(where: string, publicUrl: string | undefined): SchemeParts {
  if (publicUrl === undefined) {
    throw invalidArgument(`${where}: signs the URL it calls, so public_url (or server.public_url) is required`);
  }
  return {
    requiredHeaders: [SIGNATURE_HEADER.toLowerCase()],
    sensitiveHeaders: [SIGNATURE_HEADER.toLowerCase()],
    verify: (input) => verifyTwilio(publicUrl, input),
    sign: (input) => signTwilio(publicUrl, input),
  };
}
