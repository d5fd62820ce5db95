import { refused, type DeliveryFailure } from '../delivery-failure.ts';
import { normaliseHost } from './ip-address.ts';

const refuse = (detail: string): DeliveryFailure => refused('bad_target', detail);

/**
 * Validates a delivery target without touching the network: no DNS, no connection. Which target
 * (a replay call's own, replay.default_target, a forward rule's `to`) is the caller's choice.
 *
 * Stricter than `new URL()` on purpose: WHATWG quietly repairs `http:/host`, `http:\\host`, and
 * strips tabs/newlines inside the host, which lets a string that looks like one host to a human
 * (or to a log reader) address another. Such input is refused rather than repaired.
 */
export function parseTarget(target: string): URL {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u0020\u007f]/.test(target)) {
    throw refuse('the URL is malformed (it contains whitespace or control characters)');
  }

  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw refuse('the URL is malformed');
  }

  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw refuse(`scheme ${url.protocol} is not http or https`);
  }

  const authority = /^https?:\/\/([^/?#\\]*)/i.exec(target)?.[1];
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
