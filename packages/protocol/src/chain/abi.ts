// Just enough of the Solidity ABI for the escrow contract: keccak-256, function selectors, event
// topics, and head-only encoding/decoding of static words (bytes32, address, uint). Web APIs only.
import { keccak_256 } from '@noble/hashes/sha3.js';
import { fromHex, toHex, utf8 } from '../crypto/bytes.ts';

export type Hex = `0x${string}`;

/** keccak-256 of bytes (or of a string's UTF-8), as 0x-hex. */
export function keccakHex(data: Uint8Array | string): Hex {
  return `0x${toHex(keccak_256(typeof data === 'string' ? utf8(data) : data))}`;
}

/** The 4-byte function selector of a canonical signature such as `settle(bytes32,uint256,uint256)`. */
export const selector = (signature: string): Hex => keccakHex(signature).slice(0, 10) as Hex;

/** The topic0 of an event signature such as `Paid(bytes32,address,uint256,address,uint256)`. */
export const eventTopic = (signature: string): Hex => keccakHex(signature);

/** 0x-hex without its prefix, lowercase; throws naming `name` when it is not hex of `bytes` bytes (any length when omitted). */
export function strip(hex: string, name: string, bytes?: number): string {
  if (typeof hex !== 'string' || !/^0x[0-9a-fA-F]*$/.test(hex)) throw new TypeError(`${name} must be 0x-prefixed hex`);
  const h = hex.slice(2).toLowerCase();
  if (bytes !== undefined && h.length !== bytes * 2) throw new TypeError(`${name} must be ${bytes} bytes of hex`);
  return h;
}

export type Word = { bytes32: string } | { address: string } | { uint: bigint };

const MAX_UINT = (1n << 256n) - 1n;

function word(w: Word): string {
  if ('bytes32' in w) return strip(w.bytes32, 'bytes32', 32);
  if ('address' in w) return strip(w.address, 'address', 20).padStart(64, '0');
  if (w.uint < 0n || w.uint > MAX_UINT) throw new RangeError(`uint256 out of range: ${w.uint}`);
  return w.uint.toString(16).padStart(64, '0');
}

/** Calldata: selector followed by one 32-byte word per static argument. */
export function encodeCall(signature: string, args: Word[] = []): Hex {
  return `${selector(signature)}${args.map(word).join('')}`;
}

/** Splits return data (or log data) into 32-byte words; throws when it is not whole words. */
export function words(data: string, name = 'return data'): string[] {
  const h = strip(data, name);
  if (h.length % 64 !== 0) throw new TypeError(`${name} is not a whole number of 32-byte words`);
  return Array.from({ length: h.length / 64 }, (_, i) => h.slice(i * 64, i * 64 + 64));
}

export const wordToUint = (w: string): bigint => BigInt(`0x${w}`);
export const wordToAddress = (w: string): Hex => `0x${w.slice(24)}`;

/** Decodes a standard `Error(string)` or a custom error selector from revert data, for a readable journal line. */
export function revertReason(data: string | undefined, customErrors: ReadonlyArray<string>): string | undefined {
  if (!data || !/^0x[0-9a-fA-F]{8}/.test(data)) return undefined;
  const sel = data.slice(0, 10).toLowerCase();
  if (sel === selector('Error(string)')) {
    try {
      const w = words(`0x${data.slice(10)}`);
      const len = Number(wordToUint(w[1]));
      return new TextDecoder().decode(
        fromHex(
          w
            .slice(2)
            .join('')
            .slice(0, len * 2),
        ),
      );
    } catch {
      return 'Error(string)';
    }
  }
  return customErrors.find((sig) => selector(sig) === sel)?.replace(/\(.*$/, '');
}
