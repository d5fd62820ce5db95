/**
 * Whose budget a rejected delivery is recorded against. An IPv4 address is one source; an IPv6
 * host usually holds a whole /64 (SLAAC, privacy addresses) and can rotate through it for free, so
 * the /64 is the source there. IPv4-mapped IPv6 is the IPv4 address it maps.
 */
import { isIPv4, isIPv6 } from 'node:net';

export function rejectSourceKey(ip: string | null): string {
  if (ip === null) return 'unknown';
  const bare = ip.split('%')[0] ?? ip;
  if (isIPv4(bare) || !isIPv6(bare)) return bare;
  const groups = ipv6Groups(bare.toLowerCase());
  const [a, b, c, d, e, f, g, h] = groups;
  // ::ffff:a.b.c.d, however it was written.
  if (a === 0 && b === 0 && c === 0 && d === 0 && e === 0 && f === 0xffff && g !== undefined && h !== undefined) {
    return [g >> 8, g & 0xff, h >> 8, h & 0xff].join('.');
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (isIPv6 checked), an embedded IPv4 tail included. */
function ipv6Groups(address: string): number[] {
  let text = address;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4 !== null) {
    const [p, q, r, s] = v4.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, v4.index)}${((p << 8) | q).toString(16)}:${((r << 8) | s).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const zeros = tail === undefined ? [] : Array<string>(8 - front.length - back.length).fill('0');
  return [...front, ...zeros, ...back].map((group) => parseInt(group, 16));
}
