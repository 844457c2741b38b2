// WITNESSES, WITNESS_QUORUM, WITNESS_INTERVAL_MS (docs/witnessing.md): which witnesses the log
// submits its checkpoints to (c2sp.org/tlog-witness) and how many cosignatures a checkpoint needs
// before GET /v1/log/checkpoint serves it. Pure: parsed once with the rest of the config.
import { parseWitnessKey } from '@escrow-settlement/protocol/tlog/cosignature';

export interface WitnessConfig {
  /** The witness's verifier key, as configured (c2sp.org/signed-note form; Ed25519 type 0x04 or ML-DSA-44 type 0x06). */
  vkey: string;
  /** Its key name (the name on its cosignature lines). */
  name: string;
  /** Submission URL prefix, without a trailing slash: requests go to `<url>/add-checkpoint`. */
  url: string;
}

export interface WitnessSettings {
  witnesses: WitnessConfig[];
  /** Cosignatures from distinct configured witnesses a checkpoint needs (0 when none are configured). */
  witnessQuorum: number;
  witnessIntervalMs: number;
}

type Fail = (variable: string, message: string) => Error;

// An entry is split where its URL begins ("=http://" or "=https://"), not at the first "=": an
// ML-DSA-44 vkey's base64 (1313 bytes) ends in "=" padding, an Ed25519 one's (33 bytes) has none.
// Base64 has no ":", so a URL of another scheme is found too, and refused below by name.
const URL_START = /=(?=https?:\/\/)/i;
const ANY_SCHEME = /=(?=[a-z][a-z0-9+.-]*:)/i;
const shown = (s: string) => JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s);

function witnessEntry(item: string, fail: Fail): WitnessConfig {
  const m = URL_START.exec(item) ?? ANY_SCHEME.exec(item);
  if (!m)
    throw fail(
      'WITNESSES',
      `each entry must be <witness vkey>=<submission URL prefix>, the URL starting with http:// or https://, got ${shown(item)}`,
    );
  const eq = m.index;
  const vkey = item.slice(0, eq);
  let name: string;
  try {
    name = parseWitnessKey(vkey).name;
  } catch (e) {
    throw fail(
      'WITNESSES',
      `${shown(vkey)} is not a witness verifier key (name+hash+base64 of a type 0x04 Ed25519 or 0x06 ML-DSA-44 key): ${(e as Error).message}`,
    );
  }
  let url: URL | null;
  try {
    url = new URL(item.slice(eq + 1));
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash) {
    throw fail(
      'WITNESSES',
      `the submission prefix of ${name} must be an absolute http(s) URL without credentials, query or fragment, got ${JSON.stringify(item.slice(eq + 1, eq + 201))}`,
    );
  }
  return { vkey, name, url: url.href.replace(/\/+$/, '') };
}

/** Parses the witness variables; `fail` builds the one-line configuration error naming the variable. */
export function parseWitnessSettings(env: Record<string, string | undefined>, fail: Fail): WitnessSettings {
  const raw = (env.WITNESSES ?? '').trim();
  const witnesses: WitnessConfig[] = [];
  for (const item of raw === '' ? [] : raw.split(',').map((s) => s.trim())) {
    const w = witnessEntry(item, fail);
    if (witnesses.some((x) => x.vkey === w.vkey)) throw fail('WITNESSES', `${w.name} is listed twice`);
    witnesses.push(w);
  }
  const q = env.WITNESS_QUORUM?.trim();
  let witnessQuorum = witnesses.length;
  if (q !== undefined && q !== '') {
    if (witnesses.length === 0) throw fail('WITNESS_QUORUM', 'is set but WITNESSES names no witness');
    if (!/^[1-9][0-9]*$/.test(q) || Number(q) > witnesses.length)
      throw fail('WITNESS_QUORUM', `must be a whole number from 1 to the ${witnesses.length} witnesses listed, got ${JSON.stringify(q)}`);
    witnessQuorum = Number(q);
  }
  const i = env.WITNESS_INTERVAL_MS?.trim();
  let witnessIntervalMs = 1000;
  if (i !== undefined && i !== '') {
    if (!/^[0-9]+$/.test(i) || Number(i) < 10 || Number(i) > 3_600_000)
      throw fail('WITNESS_INTERVAL_MS', `must be a whole number of ms from 10 to 3600000, got ${JSON.stringify(i)}`);
    witnessIntervalMs = Number(i);
  }
  return { witnesses, witnessQuorum, witnessIntervalMs };
}
