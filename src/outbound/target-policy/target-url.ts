import { invalidArgument, type AppError } from '../../errors/app-error.ts';
import { normaliseHost } from './ip-address.ts';

const refuse = (rule: string): AppError => invalidArgument(`replay target refused: ${rule}`);

const isBlank = (value: string | undefined): value is undefined => value === undefined || value.trim() === '';

/**
 * Picks and validates the replay target without touching the network: no DNS, no connection.
 * `raw` is the call's target_url, `defaultTarget` is `replay.default_target`.
 *
 * Stricter than `new URL()` on purpose: WHATWG quietly repairs `http:/host`, `http:\\host`, and
 * strips tabs/newlines inside the host, which lets a string that looks like one host to a human
 * (or to a log reader) address another. Such input is refused rather than repaired.
 */
export function parseReplayTarget(raw: string | undefined, defaultTarget: string | undefined): URL {
  const chosen = isBlank(raw) ? defaultTarget : raw;
  if (isBlank(chosen)) {
    throw refuse('no target_url was given and replay.default_target is not configured');
  }

  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u0020\u007f]/.test(chosen)) {
    throw refuse('the URL is malformed (it contains whitespace or control characters)');
  }

  let url: URL;
  try {
    url = new URL(chosen);
  } catch {
    throw refuse('the URL is malformed');
  }

  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refuse(`scheme ${url.protocol} is not http or https`);
  }

  const authority = /^https?:\/\/([^/?#\\]*)/i.exec(chosen)?.[1];
  if (authority === undefined || authority === '') {
    throw refuse('the URL is malformed (expected http://host or https://host)');
  }
  if (authority.includes('@') || url.username !== '' || url.password !== '') {
    throw refuse('the URL carries credentials (user:pass@); put them in the consumer, not the target');
  }

  if (url.hostname === '' || normaliseHost(url.hostname) === undefined) {
    throw refuse(`the URL is malformed (host "${url.hostname}" is not a valid host name or IP address)`);
  }

  // A fragment never goes on the wire; dropping it keeps the audit log equal to what was sent.
  url.hash = '';
  return url;
}
