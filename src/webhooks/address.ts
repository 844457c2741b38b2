// Classifies IP addresses (v4 and v6) as public or not, for the webhook SSRF guard (docs/protocol.md §14.4). Pure.

/** Why an address is not a public destination, or 'public'. */
export type AddressClass = 'public' | 'unspecified' | 'loopback' | 'private' | 'link-local' | 'cgnat' | 'multicast' | 'ula' | 'reserved';

export type ParsedIp = { version: 4; bytes: Uint8Array } | { version: 6; bytes: Uint8Array };

const V4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

function parseV4(s: string): Uint8Array | null {
  if (!V4.test(s)) return null;
  return Uint8Array.from(s.split('.').map(Number));
}

/** RFC 4291 §2.2 text forms: full, "::"-compressed, and with a dotted IPv4 tail. Zone ids are dropped. */
function parseV6(input: string): Uint8Array | null {
  let s = input.toLowerCase();
  const zone = s.indexOf('%');
  if (zone !== -1) s = s.slice(0, zone);
  if (!/^[0-9a-f:.]+$/.test(s)) return null;
  let tail: Uint8Array | null = null;
  if (s.includes('.')) {
    const i = s.lastIndexOf(':');
    if (i === -1) return null;
    tail = parseV4(s.slice(i + 1));
    if (!tail) return null;
    s = s.slice(0, i + 1);
    if (!s.endsWith('::')) s = s.slice(0, -1);
  }
  const want = tail ? 6 : 8;
  const parts = s.split('::');
  if (parts.length > 2) return null;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const head = groups(parts[0]);
  const rest = parts.length === 2 ? groups(parts[1]) : [];
  let words: string[];
  if (parts.length === 1) {
    if (head.length !== want) return null;
    words = head;
  } else {
    // "::" stands for at least one group of zeros.
    if (head.length + rest.length > want - 1) return null;
    words = [...head, ...Array<string>(want - head.length - rest.length).fill('0'), ...rest];
  }
  if (words.some((w) => !/^[0-9a-f]{1,4}$/.test(w))) return null;
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    const n = parseInt(w, 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
  });
  if (tail) out.set(tail, 12);
  return out;
}

/** The address as bytes, or null when the text is not an IP literal (a host name, say). Brackets allowed. */
export function parseIp(text: string): ParsedIp | null {
  if (typeof text !== 'string') return null;
  const s = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const v4 = parseV4(s);
  if (v4) return { version: 4, bytes: v4 };
  if (!s.includes(':')) return null;
  const v6 = parseV6(s);
  return v6 ? { version: 6, bytes: v6 } : null;
}

export const isIp = (text: string) => parseIp(text) !== null;

const inV4 = (b: Uint8Array, net: [number, number, number, number], bits: number) => {
  for (let i = 0; i < 4; i++) {
    const take = Math.max(0, Math.min(8, bits - i * 8));
    const mask = take === 0 ? 0 : (0xff << (8 - take)) & 0xff;
    if ((b[i] & mask) !== (net[i] & mask)) return false;
  }
  return true;
};

// IANA IPv4 Special-Purpose Address Registry (RFC 6890 and successors): blocks that are not
// globally reachable unicast. Order matters only for the label given.
const V4_TABLE: Array<[[number, number, number, number], number, AddressClass]> = [
  [[0, 0, 0, 0], 8, 'unspecified'], // "this network" (RFC 791); 0.0.0.0 reaches the local host on Linux
  [[10, 0, 0, 0], 8, 'private'], // RFC 1918
  [[100, 64, 0, 0], 10, 'cgnat'], // RFC 6598 shared address space
  [[127, 0, 0, 0], 8, 'loopback'],
  [[169, 254, 0, 0], 16, 'link-local'], // includes cloud metadata 169.254.169.254
  [[172, 16, 0, 0], 12, 'private'],
  [[192, 0, 0, 0], 24, 'reserved'], // IETF protocol assignments
  [[192, 0, 2, 0], 24, 'reserved'], // TEST-NET-1
  [[192, 88, 99, 0], 24, 'reserved'], // 6to4 relay anycast (deprecated)
  [[192, 168, 0, 0], 16, 'private'],
  [[198, 18, 0, 0], 15, 'reserved'], // benchmarking
  [[198, 51, 100, 0], 24, 'reserved'], // TEST-NET-2
  [[203, 0, 113, 0], 24, 'reserved'], // TEST-NET-3
  [[224, 0, 0, 0], 4, 'multicast'],
  [[240, 0, 0, 0], 4, 'reserved'], // future use and 255.255.255.255 broadcast
];

function classifyV4(b: Uint8Array): AddressClass {
  for (const [net, bits, cls] of V4_TABLE) if (inV4(b, net, bits)) return cls;
  return 'public';
}

const startsWith = (b: Uint8Array, prefix: number[]) => prefix.every((v, i) => b[i] === v);
const zeros = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0);

function classifyV6(b: Uint8Array): AddressClass {
  if (zeros(b, 0, 16)) return 'unspecified';
  if (zeros(b, 0, 15) && b[15] === 1) return 'loopback';
  // Forms that carry an IPv4 address: judged by that address, since that is where a packet ends up.
  // ::ffff:a.b.c.d IPv4-mapped (RFC 4291 §2.5.5.2); ::a.b.c.d IPv4-compatible (see below);
  // ::ffff:0:a.b.c.d IPv4-translated (RFC 2765); 64:ff9b::/96 NAT64 well-known prefix (RFC 6052).
  if (zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return classifyV4(b.subarray(12));
  if (zeros(b, 0, 12)) {
    // IPv4-compatible is deprecated (RFC 4291 §2.5.5.1) and outside global unicast: never public.
    const v4 = classifyV4(b.subarray(12));
    return v4 === 'public' ? 'reserved' : v4;
  }
  if (zeros(b, 0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(b, 10, 12)) return classifyV4(b.subarray(12));
  if (startsWith(b, [0x00, 0x64, 0xff, 0x9b]) && zeros(b, 4, 12)) return classifyV4(b.subarray(12));
  // 6to4 (RFC 3056): 2002:AABB:CCDD::/48 tunnels to the IPv4 address AA.BB.CC.DD.
  if (startsWith(b, [0x20, 0x02])) return classifyV4(b.subarray(2, 6));
  if (b[0] === 0xff) return 'multicast';
  if ((b[0] & 0xfe) === 0xfc) return 'ula'; // fc00::/7 (RFC 4193)
  if (b[0] === 0xfe && (b[1] & 0xc0) === 0x80) return 'link-local'; // fe80::/10
  if (b[0] === 0xfe && (b[1] & 0xc0) === 0xc0) return 'private'; // fec0::/10 site-local (deprecated)
  // Only global unicast 2000::/3 is routable on the internet; inside it, a few special blocks.
  if ((b[0] & 0xe0) !== 0x20) return 'reserved';
  if (startsWith(b, [0x20, 0x01, 0x0d, 0xb8])) return 'reserved'; // documentation (RFC 3849)
  if (startsWith(b, [0x20, 0x01, 0x00, 0x00])) return 'reserved'; // Teredo (RFC 4380): embeds an obfuscated IPv4
  if (startsWith(b, [0x20, 0x01]) && b[2] === 0x00 && (b[3] & 0xf0) === 0x10) return 'reserved'; // ORCHID 2001:10::/28
  if (startsWith(b, [0x20, 0x01]) && b[2] === 0x00 && (b[3] & 0xf0) === 0x20) return 'reserved'; // ORCHIDv2 2001:20::/28
  return 'public';
}

/** The class of an IP literal. Malformed is a throw: a non-IP text is a caller error (check with isIp). */
export function addressClass(text: string): AddressClass {
  const ip = parseIp(text);
  if (!ip) throw new TypeError(`not an IP address: ${JSON.stringify(text)}`);
  return ip.version === 4 ? classifyV4(ip.bytes) : classifyV6(ip.bytes);
}

/** True for every address a webhook must not reach with WEBHOOK_ALLOW_PRIVATE off (docs/protocol.md §14.4). */
export function isPrivateAddress(text: string): boolean {
  return addressClass(text) !== 'public';
}

/** Host names that mean this machine without asking DNS (RFC 6761 §6.3: localhost and *.localhost). */
export function isLocalhostName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}
