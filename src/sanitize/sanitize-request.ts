/**
 * The original request as it may be stored: the method, the path and the query string a sender
 * used, with the value of every query parameter that looks like a secret replaced. Senders (and
 * the people who configure them) put tokens in URLs: `?token=…`, `?api_key=…`, `?sig=…`. Those
 * must never reach the database, where every token holder can read them back.
 */
import {
  EVENT_REQUEST_METHOD_LIMITS,
  EVENT_REQUEST_PATH_LIMITS,
  EVENT_REQUEST_QUERY_LIMITS,
} from '../../generated/constants.ts';
import { REDACTED } from './sanitize-headers.ts';

/**
 * Parameter names that look like they carry a secret, matched anywhere in the decoded name and in
 * any case: access_token, apiKey, client_secret, X-Signature, sig, password, passwd, pwd, auth,
 * authorization, code (OAuth codes), credentials, session, jwt. Redacting an innocent `zipcode` is
 * the price of never keeping a `hub.verify_token`.
 */
const SECRET_NAME = /token|key|secret|sig|pass|pwd|auth|code|cred|session|jwt|bearer|nonce|otp/i;

/** A bare parameter (no `=`) kept as it is: a short word such as `debug`. Anything else could be a secret. */
const PLAIN_FLAG = /^[A-Za-z][A-Za-z_-]{0,31}$/;

function decodedName(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    // Malformed percent-encoding: match on the raw text, which still shows the letters.
    return raw;
  }
}

/**
 * Cut to `max` characters, ending in … when cut, without splitting a surrogate pair.
 */
export function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  let cut = text.slice(0, max - 1);
  if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  return `${cut}…`;
}

/**
 * The query string (without its `?`) with the value of each secret-looking parameter replaced by
 * [redacted], everything else exactly as sent, and cut to the contract's length.
 */
export function sanitizeQuery(querystring: string): string {
  if (querystring === '') return '';
  const parts = querystring.split('&').map((part) => {
    const eq = part.indexOf('=');
    if (eq === -1) return part === '' || PLAIN_FLAG.test(part) ? part : REDACTED;
    const name = part.slice(0, eq);
    return SECRET_NAME.test(decodedName(name)) ? `${name}=${REDACTED}` : part;
  });
  return clipText(parts.join('&'), EVENT_REQUEST_QUERY_LIMITS.maxLength);
}

/**
 * The HTTP request a webhook arrived in, as its sender made it, and the status switchboard
 * answered it with. The query is already redacted: no secret may reach this point.
 */
export interface ArrivalRequest {
  method: string;
  path: string;
  query: string;
  responseStatus: number;
}

/** What ingest stores about the request a delivery arrived in, and the status it answers. */
export function arrivalRequest(
  request: { method: string; path: string; querystring: string },
  responseStatus: number,
): ArrivalRequest {
  return {
    method: clipText(request.method, EVENT_REQUEST_METHOD_LIMITS.maxLength),
    path: clipText(request.path, EVENT_REQUEST_PATH_LIMITS.maxLength),
    query: sanitizeQuery(request.querystring),
    responseStatus,
  };
}
