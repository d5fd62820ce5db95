import { BlockList } from 'node:net';
import { ConfigError } from '../../config/config-error.ts';
import { refused } from '../delivery-failure.ts';
import { normaliseHost, normaliseIp, parseCidr, type Cidr, type IpFamily } from './ip-address.ts';

export interface TargetPolicyOptions {
  /** `outbound.allow`: host names, IPs and CIDRs (IPv4 and IPv6) reachable besides loopback. */
  allow: readonly string[];
  /**
   * Whether 127.0.0.0/8 and ::1 are allowed without being listed. Only tests (and operators who
   * want to pin deliveries to one loopback address) turn this off.
   */
  allowLoopbackDefault?: boolean;
}

type RefusalRule = 'link-local-metadata' | 'not-allowed' | 'not-an-ip';

type PolicyVerdict =
  | { allowed: true; address: string; family: IpFamily }
  | { allowed: false; rule: RefusalRule; address: string; detail: string };

export interface TargetPolicy {
  /**
   * Decides one resolved address. `hostname` is what the target named (a name or the IP literal
   * itself); it matters only for host-name allow entries and for the refusal message.
   */
  check(hostname: string, address: string): PolicyVerdict;
  /** Same as check(), but throws a refusal (DeliveryFailure, target_not_allowed) instead of returning it. */
  assertAllowed(hostname: string, address: string): { address: string; family: IpFamily };
}

interface NeverAllowedRange {
  cidr: string;
  why: string;
}

/**
 * Refused whatever a host-name or broad CIDR entry says: link-local carries the cloud metadata
 * services (169.254.169.254, 169.254.170.2, fd00:ec2::254), which hand out credentials.
 */
const NEVER_ALLOWED: readonly NeverAllowedRange[] = [
  { cidr: '169.254.0.0/16', why: 'IPv4 link-local, home of cloud metadata services' },
  { cidr: 'fe80::/10', why: 'IPv6 link-local' },
  { cidr: 'fd00:ec2::254/128', why: 'AWS IPv6 instance metadata' },
  // 169.254.0.0/16 seen through the NAT64 well-known prefix: on a NAT64 network this reaches the
  // same metadata service, so it would otherwise be a way round the IPv4 rule.
  { cidr: '64:ff9b::a9fe:0/112', why: 'IPv4 link-local through NAT64' },
];

const LOOPBACK: readonly string[] = ['127.0.0.0/8', '::1/128'];

const ipType = (family: IpFamily): 'ipv4' | 'ipv6' => (family === 4 ? 'ipv4' : 'ipv6');

function mustParseCidr(text: string): Cidr {
  const cidr = parseCidr(text);
  if (!cidr) throw new Error(`target-policy: built-in range ${text} does not parse`);
  return cidr;
}

function addCidr(list: BlockList, cidr: Cidr): void {
  list.addSubnet(cidr.address, cidr.prefix, ipType(cidr.family));
}

/**
 * An IP/CIDR entry "names" a never-allowed range only when it lies entirely inside it. So
 * `169.254.169.254` or `169.254.0.0/16` unlock metadata on purpose, while `0.0.0.0/0` (or any
 * other wide net cast for a different reason) does not unlock it by accident.
 */
function insideNeverAllowed(entry: Cidr, ranges: readonly { parsed: Cidr; only: BlockList }[]): boolean {
  // Any address of the entry plus a prefix at least as long as the range's means containment.
  return ranges.some(
    ({ parsed, only }) =>
      parsed.family === entry.family &&
      entry.prefix >= parsed.prefix &&
      only.check(entry.address, ipType(entry.family)),
  );
}

// The refusal rules in the order they are checked, over the parsed allow list they share.
export function createTargetPolicy(options: TargetPolicyOptions): TargetPolicy {
  const loopbackDefault = options.allowLoopbackDefault ?? true;
  const neverRanges = NEVER_ALLOWED.map((r) => {
    const parsed = mustParseCidr(r.cidr);
    const only = new BlockList();
    addCidr(only, parsed);
    return { ...r, parsed, only };
  });

  const never = new BlockList();
  for (const r of neverRanges) addCidr(never, r.parsed);

  const allowedNets = new BlockList();
  const unlocked = new BlockList();
  const allowedNames = new Set<string>();
  if (loopbackDefault) for (const c of LOOPBACK) addCidr(allowedNets, mustParseCidr(c));

  for (const entry of options.allow) {
    const cidr = parseCidr(entry);
    if (cidr) {
      addCidr(allowedNets, cidr);
      if (insideNeverAllowed(cidr, neverRanges)) addCidr(unlocked, cidr);
      continue;
    }
    const host = entry.includes('/') ? undefined : normaliseHost(entry);
    if (host?.kind !== 'name') {
      throw new ConfigError(`outbound.allow: entry "${entry}" is not a host name, IP address or CIDR`);
    }
    allowedNames.add(host.name);
  }

  const notAllowedSuffix = loopbackDefault ? ' (loopback only by default)' : '';

  function check(hostname: string, address: string): PolicyVerdict {
    const target = normaliseHost(hostname);
    const ip = normaliseIp(address);
    const subject = (addr: string): string =>
      target?.kind === 'name' ? `${target.name} resolves to ${addr},` : `${addr} is`;

    if (!ip) {
      return {
        allowed: false,
        rule: 'not-an-ip',
        address,
        detail: `${hostname} resolved to "${address}", which is not an IP address`,
      };
    }

    const type = ipType(ip.family);
    if (never.check(ip.address, type)) {
      if (unlocked.check(ip.address, type)) return { allowed: true, ...ip };
      const range = neverRanges.find((r) => r.only.check(ip.address, type));
      return {
        allowed: false,
        rule: 'link-local-metadata',
        address: ip.address,
        detail:
          `${subject(ip.address)} a link-local/metadata address${range ? ` (${range.cidr}: ${range.why})` : ''}; ` +
          'only an IP or CIDR entry on outbound.allow that names it can permit it',
      };
    }

    if (allowedNets.check(ip.address, type)) return { allowed: true, ...ip };
    if (target?.kind === 'name' && allowedNames.has(target.name)) return { allowed: true, ...ip };

    return {
      allowed: false,
      rule: 'not-allowed',
      address: ip.address,
      detail:
        target?.kind === 'name'
          ? `${target.name} resolves to ${ip.address}, and neither is on outbound.allow${notAllowedSuffix}`
          : `${ip.address} is not on outbound.allow${notAllowedSuffix}`,
    };
  }

  return {
    check,
    assertAllowed(hostname, address) {
      const verdict = check(hostname, address);
      if (!verdict.allowed) throw refused('target_not_allowed', verdict.detail);
      return { address: verdict.address, family: verdict.family };
    },
  };
}
