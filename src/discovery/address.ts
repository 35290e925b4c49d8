// Classifies IP addresses for SSRF vetting: public, local (loopback/private/reserved) or never-fetched (link-local, metadata).
import { BlockList, isIP } from 'node:net';

/** `public`: fetchable; `local`: only with allowLocal; `link-local`: never (cloud metadata services live there). */
export type AddressClass = 'public' | 'local' | 'link-local';

const NEVER: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['169.254.0.0', 16, 'ipv4'], // link-local: AWS, GCP, Azure, OpenStack metadata at 169.254.169.254
  ['100.100.100.200', 32, 'ipv4'], // Alibaba Cloud metadata (inside 100.64/10)
  ['168.63.129.16', 32, 'ipv4'], // Azure platform wire server
  ['fe80::', 10, 'ipv6'], // link-local
  ['fd00:ec2::254', 128, 'ipv6'], // AWS metadata over IPv6 (inside fc00::/7)
];

const LOCAL: Array<[string, number, 'ipv4' | 'ipv6']> = [
  ['0.0.0.0', 8, 'ipv4'], // "this network"; 0.0.0.0 reaches the local host
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], // carrier-grade NAT
  ['127.0.0.0', 8, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'], // IETF protocol assignments
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'], // benchmarking
  ['224.0.0.0', 4, 'ipv4'], // multicast
  ['240.0.0.0', 4, 'ipv4'], // reserved, broadcast
  ['::', 128, 'ipv6'],
  ['::1', 128, 'ipv6'],
  ['fc00::', 7, 'ipv6'], // unique local
  ['fec0::', 10, 'ipv6'], // deprecated site-local
  ['ff00::', 8, 'ipv6'], // multicast
];

function blockList(entries: Array<[string, number, 'ipv4' | 'ipv6']>): BlockList {
  const list = new BlockList();
  for (const [network, prefix, family] of entries) list.addSubnet(network, prefix, family);
  return list;
}

const never = blockList(NEVER);
const local = blockList(LOCAL);

/** The eight 16-bit groups of an IPv6 address (no zone id), or null when it is not one. */
function ipv6Groups(address: string): number[] | null {
  if (isIP(address) !== 6) return null;
  let text = address;
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (isIP(tail) === 4) {
    const [a, b, c, d] = tail.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.includes('::') ? (text.split('::') as [string, string]) : [text, undefined];
  const headGroups = head ? head.split(':') : [];
  const restGroups = rest ? rest.split(':') : [];
  const fill = rest === undefined ? 0 : 8 - headGroups.length - restGroups.length;
  const groups = [...headGroups, ...Array<string>(fill).fill('0'), ...restGroups].map((g) => parseInt(g, 16));
  return groups.length === 8 ? groups : null;
}

function ipv4FromGroups(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/** IPv4 addresses carried inside an IPv6 one: mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), NAT64 (64:ff9b::/96), 6to4 (2002::/16). */
function embeddedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  if (!g) return null;
  const zeros = (from: number, to: number): boolean => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return ipv4FromGroups(g[6]!, g[7]!);
  if (zeros(0, 6) && (g[6] !== 0 || g[7]! > 1)) return ipv4FromGroups(g[6]!, g[7]!);
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return ipv4FromGroups(g[6]!, g[7]!);
  if (g[0] === 0x2002) return ipv4FromGroups(g[1]!, g[2]!);
  return null;
}

/** Classifies one literal IP address; anything that is not an IP address is treated as never fetchable. */
export function classifyAddress(address: string): AddressClass {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 0) return 'link-local';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (never.check(bare, type)) return 'link-local';
  const inner = family === 6 ? embeddedIpv4(bare) : null;
  if (inner !== null) {
    const innerClass = classifyAddress(inner);
    if (innerClass !== 'public') return innerClass;
  }
  if (local.check(bare, type)) return 'local';
  return 'public';
}
