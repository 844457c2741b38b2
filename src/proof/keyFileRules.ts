// The rules a key file meets on every edge (docs/keys.md "Key files"): what may be opened and read as
// a `file:` source, and the refusal a request's source gets. Reading is the edge's (node:fs, Deno).

/** A key file holds at most this many bytes; no more is ever read. */
export const MAX_KEY_FILE_BYTES = 64 * 1024;

/** Trees of the kernel's and devices' files: never a key file, never opened (a read there may not end). */
const SYSTEM_TREES = ['/proc', '/sys', '/dev'];

/** The system tree `path` (absolute, normalised) is in, or undefined. */
export const systemTree = (path: string): string | undefined => SYSTEM_TREES.find((t) => path === t || path.startsWith(`${t}/`));

/** The uniform refusal of a request's file: the rules, whichever one was broken. */
export const NOT_USABLE =
  "is not usable as a key file: a key file must be a regular file of at most 64 KiB that the service can read, owned by the service's user or root, that group and others cannot read (mode 0600 or 0400), outside /proc, /sys and /dev";

/** What an open key file is, as both edges' stat calls report it. */
export interface KeyFileStat {
  uid: number | null;
  mode: number;
  size: number;
}

/** The rule an opened regular file breaks, as a line for the operator (after its path), or undefined. */
export function keyFileProblem(st: KeyFileStat, serviceUid: number | null, path: string): string | undefined {
  if (serviceUid !== null && st.uid !== null && st.uid !== serviceUid && st.uid !== 0)
    return `is owned by uid ${st.uid}: a key file must be owned by the service's user (uid ${serviceUid}) or root`;
  const mode = st.mode & 0o777;
  if ((mode & 0o077) !== 0) return `has mode 0${mode.toString(8)}: group or others may read it; chmod 600 ${path}`;
  if (st.size > MAX_KEY_FILE_BYTES) return `is larger than 64 KiB (${st.size} bytes): a key file holds one key`;
  return undefined;
}
