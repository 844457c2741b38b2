// The log's trust policy as a C2SP tlog-policy file (c2sp.org/tlog-policy): the log's keys, the
// witnesses and the quorum a checkpoint needs, so a verifier can pin all of it at once (docs/witnessing.md).
import type { WitnessConfig } from '../config/witness.ts';

/**
 * `log` lines for every issuer key era (a bundle made before a rotation carries a checkpoint signed
 * by an older key), a `witness` line per witness with its submission prefix, and the quorum: a
 * single witness by name, a `group` with the threshold, or `none` without witnesses.
 */
export function tlogPolicy(opts: { logVkeys: string[]; logUrl: string; witnesses: WitnessConfig[]; quorum: number }): string {
  const lines = ['# Transparency log policy (c2sp.org/tlog-policy) of this escrow-settlement service.', ''];
  for (const v of opts.logVkeys) lines.push(`log ${v} ${opts.logUrl}`);
  // Policy names are local to the file: the witness's key name, unless two share it (or it is "none").
  const used = new Set<string>(['none']);
  const names = opts.witnesses.map((w, i) => {
    const name = used.has(w.name) || !/^[\x21-\x7e]+$/.test(w.name) ? `witness-${i + 1}` : w.name;
    used.add(name);
    return name;
  });
  if (opts.witnesses.length > 0) lines.push('');
  opts.witnesses.forEach((w, i) => lines.push(`witness ${names[i]} ${w.vkey} ${w.url}`));
  if (opts.witnesses.length === 0) {
    lines.push('', 'quorum none');
  } else if (opts.witnesses.length === 1) {
    lines.push('', `quorum ${names[0]}`);
  } else {
    let group = 'witnesses';
    while (used.has(group)) group = `${group}-group`;
    const k = opts.quorum === opts.witnesses.length ? 'all' : String(opts.quorum);
    lines.push('', `group ${group} ${k} ${names.join(' ')}`, `quorum ${group}`);
  }
  return `${lines.join('\n')}\n`;
}
