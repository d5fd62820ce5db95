/**
 * Mailgun: `signature.signature` in the JSON body (or the legacy form fields of the same names),
 * hex HMAC-SHA256 with the signing key of `signature.timestamp` + `signature.token`. The event data
 * is not covered, so the token is single-use while the signature is fresh (ingest claims the
 * nonce), and the timestamp is held to tolerance_seconds.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { usableSecrets } from '../hmac.ts';
import { isRecord } from '../identify.ts';
import type { SignInput, VerifyInput, VerifyOutcome } from '../preset-types.ts';
import { jsonOf, passed, text } from '../schemes/body-signature-scheme.ts';
import { findMatchingKey } from '../timing-safe.ts';
import { floorToSecondMs, freshnessFailure, parseUnixSeconds } from '../timestamp.ts';
import { MISSING_SECRET, malformedBody, missingInBody, signatureMismatch } from '../verdicts.ts';
import { defineEngine } from './engine.ts';

function verifyMailgun(input: VerifyInput, keys: string[]): VerifyOutcome {
  const json = jsonOf(input.body);
  let fields: { timestamp?: string | undefined; token?: string | undefined; signature?: string | undefined } = {};
  if (isRecord(json) && isRecord(json['signature'])) {
    const s = json['signature'];
    fields = { timestamp: text(s['timestamp']), token: text(s['token']), signature: text(s['signature']) };
  } else if (json === undefined) {
    // Mailgun's legacy webhooks post form fields of the same names.
    const form = new URLSearchParams(input.body.toString('utf8'));
    fields = {
      timestamp: form.get('timestamp') ?? undefined,
      token: form.get('token') ?? undefined,
      signature: form.get('signature') ?? undefined,
    };
  }
  const { timestamp, token, signature } = fields;
  if (timestamp === undefined || token === undefined || signature === undefined) {
    return missingInBody('no signature.timestamp, signature.token and signature.signature in the body');
  }
  const seconds = parseUnixSeconds(timestamp);
  if (seconds === null) return malformedBody('malformed signature.timestamp in the body (expected unix seconds)');
  const index = findMatchingKey(keys, [signature.toLowerCase()], (key) =>
    createHmac('sha256', key).update(timestamp).update(token).digest('hex'),
  );
  if (index === -1) return signatureMismatch('body signature');
  // Mailgun signs timestamp + token, not the event data: the token is single-use while the
  // signature is fresh, or one signature would vouch for any body (ingest claims it).
  const nonce = { token, expiresAtMs: (seconds + input.toleranceSeconds) * 1000 };
  const ok: VerifyOutcome = { ...passed('body signature', index, keys.length), nonce };
  const stale = freshnessFailure(
    seconds * 1000,
    floorToSecondMs(input.nowMs),
    input.toleranceSeconds,
    'body signature.timestamp',
  );
  return stale ?? ok;
}

/** The body with a fresh timestamp, token and signature inside, as Mailgun sends it (trigger's samples). */
function signMailgun(input: SignInput): Buffer {
  const json = jsonOf(input.body);
  if (!isRecord(json)) return input.body;
  const timestamp = String(Math.floor(input.nowMs / 1000));
  const token = randomBytes(25).toString('hex');
  const signature = createHmac('sha256', input.secret).update(timestamp).update(token).digest('hex');
  json['signature'] = { timestamp, token, signature };
  return Buffer.from(JSON.stringify(json), 'utf8');
}

export const mailgunSignatureEngine = defineEngine<'mailgun-signature'>({
  kind: 'mailgun-signature',
  build: () => ({
    requiredHeaders: [],
    sensitiveHeaders: [],
    verify: (input) => {
      const keys = usableSecrets(input.secrets);
      return keys.length === 0 ? MISSING_SECRET : verifyMailgun(input, keys);
    },
    signBody: signMailgun,
    readsSignatureFromBody: true,
  }),
  docs: {
    scheme: () => 'HMAC-SHA256 hex of `signature.timestamp` + `signature.token` (in the body)',
    headers: () => 'body `signature`',
    timestamped: () => true,
  },
});
