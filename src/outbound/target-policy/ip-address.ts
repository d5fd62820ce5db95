import { isIP } from 'node:net';

export type IpFamily = 4 | 6;

export interface IpAddress {
  /** Canonical text: dotted-quad for IPv4, RFC 5952 compressed for IPv6. */
  address: string;
  family: IpFamily;
}

export type NormalisedHost = ({ kind: 'ip' } & IpAddress) | { kind: 'name'; name: string };

export interface Cidr extends IpAddress {
  prefix: number;
}

const IPV4_MAX = 0xffff_ffff;

// One label of a DNS name; underscores are tolerated because internal zones use them.
const LABEL = '[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?';
const HOST_NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);

/**
 * Parses one IPv4 part the way WHATWG URL and inet_aton do (0x… hex, 0… octal, else decimal),
 * because a policy that only understood dotted-decimal could be walked around with
 * `0251.0376.0251.0376` or `0xa9fea9fe` wherever a layer other than `new URL()` hands us a host.
 * Returns undefined for "not a number at all", NaN for "number-like but invalid".
 */
function parseIpv4Part(part: string): number | undefined {
  if (/^0x[0-9a-f]*$/.test(part)) return part.length === 2 ? 0 : Number.parseInt(part.slice(2), 16);
  if (/^0[0-9]+$/.test(part)) return /^0[0-7]+$/.test(part) ? Number.parseInt(part, 8) : Number.NaN;
  if (/^[0-9]+$/.test(part)) return Number.parseInt(part, 10);
  return undefined;
}

function formatIpv4(value: number): string {
  return [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff].join('.');
}

type Ipv4Parse = { kind: 'ipv4'; value: number } | { kind: 'not-ipv4' } | { kind: 'invalid' };

/**
 * Mirrors WHATWG's "ends in a number" rule: once the last label is numeric the whole host must be
 * a valid IPv4 address, otherwise it is invalid (never a host name that a resolver might turn
 * into an address by its own, laxer rules).
 */
function parseLegacyIpv4(host: string): Ipv4Parse {
  const parts = host.split('.');
  if (parts.length > 1 && parts[parts.length - 1] === '') parts.pop();
  const last = parts[parts.length - 1] ?? '';
  if (parseIpv4Part(last) === undefined) return { kind: 'not-ipv4' };
  if (parts.length > 4) return { kind: 'invalid' };

  const numbers: number[] = [];
  for (const part of parts) {
    const value = parseIpv4Part(part);
    if (value === undefined || Number.isNaN(value)) return { kind: 'invalid' };
    numbers.push(value);
  }

  const tail = numbers.pop() ?? 0;
  if (numbers.some((n) => n > 255)) return { kind: 'invalid' };
  if (tail >= 256 ** (4 - numbers.length)) return { kind: 'invalid' };
  let value = tail;
  numbers.forEach((n, i) => {
    value += n * 256 ** (3 - i);
  });
  return value > IPV4_MAX ? { kind: 'invalid' } : { kind: 'ipv4', value };
}

/** Expands an IPv6 literal that isIP() already accepted into eight 16-bit groups. */
function ipv6Groups(text: string): number[] {
  let body = text;
  const lastColon = body.lastIndexOf(':');
  const tail = body.slice(lastColon + 1);
  if (tail.includes('.')) {
    // isIP() only accepts strict dotted-decimal here, so a plain split is enough.
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map((n) => Number.parseInt(n, 10));
    body = `${body.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }

  const toGroups = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  const [head = '', rest] = body.split('::');
  if (rest === undefined) return toGroups(head);
  const left = toGroups(head);
  const right = toGroups(rest);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

function formatIpv6(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j += 1;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  // RFC 5952: "::" only for a run of two or more zero groups.
  if (bestLength < 2) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`;
}

function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * Canonicalises an IP literal in any form a URL, a resolver or a config file might use. An
 * IPv4-mapped IPv6 address (`::ffff:a9fe:a9fe`) becomes the IPv4 address, because that is where
 * the kernel actually sends the packets. Zone ids are dropped: they choose an interface, not an
 * address, and the decision is about the address.
 */
export function normaliseIp(raw: string): IpAddress | undefined {
  let text = stripBrackets(raw.trim().toLowerCase());
  const zone = text.indexOf('%');
  if (zone !== -1 && text.includes(':')) text = text.slice(0, zone);

  if (isIP(text) === 6) {
    const groups = ipv6Groups(text);
    if (groups.length !== 8 || groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return undefined;
    const mapped = groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff;
    if (mapped) {
      const value = (groups[6] ?? 0) * 0x1_0000 + (groups[7] ?? 0);
      return { address: formatIpv4(value), family: 4 };
    }
    return { address: formatIpv6(groups), family: 6 };
  }

  if (text.includes(':')) return undefined;
  const v4 = parseLegacyIpv4(text);
  return v4.kind === 'ipv4' ? { address: formatIpv4(v4.value), family: 4 } : undefined;
}

/**
 * Normalises a URL host, resolver input or allow-list entry: lower case, brackets off, one
 * trailing dot off (an absolute name and its relative spelling must match the same allow entry),
 * every IP spelling to its canonical form. Undefined means the text is neither an IP nor a
 * plausible host name.
 */
export function normaliseHost(raw: string): NormalisedHost | undefined {
  const lowered = raw.trim().toLowerCase();
  if (lowered === '') return undefined;
  const ip = normaliseIp(lowered);
  if (ip) return { kind: 'ip', ...ip };
  if (lowered.includes(':') || lowered.startsWith('[')) return undefined;

  if (parseLegacyIpv4(lowered).kind === 'invalid') return undefined;
  const name = lowered.endsWith('.') ? lowered.slice(0, -1) : lowered;
  if (name.length > 253 || !HOST_NAME.test(name)) return undefined;
  return { kind: 'name', name };
}

/**
 * Parses `address/prefix` (or a bare address as a single-host CIDR). A mapped-IPv6 CIDR that
 * lies inside ::ffff:0:0/96 is turned into its IPv4 equivalent so it matches the normalised
 * addresses it will be compared with.
 */
export function parseCidr(raw: string): Cidr | undefined {
  const slash = raw.indexOf('/');
  const addressText = slash === -1 ? raw : raw.slice(0, slash);
  const prefixText = slash === -1 ? undefined : raw.slice(slash + 1);

  const text = stripBrackets(addressText.trim().toLowerCase());
  const family = isIP(text) === 6 ? 6 : 4;
  const ip = normaliseIp(text);
  if (!ip) return undefined;

  const declaredMax = family === 6 ? 128 : 32;
  if (prefixText !== undefined && !/^[0-9]{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? declaredMax : Number.parseInt(prefixText, 10);
  if (prefix > declaredMax) return undefined;

  if (family === 6 && ip.family === 4) {
    // A range that starts inside ::ffff:0:0/96 but is wider than it has no IPv4 meaning; refusing
    // the entry beats guessing what the operator meant.
    if (prefix < 96) return undefined;
    return { ...ip, prefix: prefix - 96 };
  }
  return { ...ip, prefix };
}
