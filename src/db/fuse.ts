// A command's writes as ONE statement: every INSERT/UPDATE/DELETE of its write set becomes a
// data-modifying CTE of a single statement (docs/statements.md).
//
// Why a CTE built here rather than a SQL function per command: the statements stay where each
// aggregate builds them (no second copy of every command's SQL in a migration to keep in step with
// the TypeScript), any mix of them fuses (a delivery's closing, a sweep's, a ruling's), and PGlite
// runs the same text. The server parses and plans one statement instead of n, and postgres.js
// sends one Parse/Bind/Execute instead of n.
//
// What a caller must know (Postgres, "Data-Modifying Statements in WITH"):
//   - Every part runs to completion, whatever the others do, all with ONE snapshot: a part does not
//     see another part's rows. A part that needs them (the tenants of an escrow inserted in the
//     same write) must say so in its own SQL, as one part with its own WITH.
//   - No two parts may modify the same row.
//   - Constraints are unchanged: unique violations fail the statement (so the transaction), and
//     foreign keys are checked at the end of the statement, so a child inserted beside its parent
//     passes.
//   - The rows a part returns are not returned: fuse write sets, not reads.
import type { Stmt } from './types.ts';

interface Split {
  ctes: Array<{ name: string; body: string }>;
  main: string;
}

/** Index just past the parenthesis that closes the one at `open`, skipping quoted text. */
function closeParen(s: string, open: number): number {
  let depth = 0;
  let quote: string | null = null;
  for (let i = open; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === quote) quote = null;
      continue;
    }
    if (c === "'" || c === '"') quote = c;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i + 1;
  }
  throw new Error(`fuse: unbalanced parentheses in ${s.slice(0, 60)}`);
}

/** A statement's own leading WITH list, if it has one, and its main statement. */
function split(text: string): Split {
  let s = text.trim();
  const ctes: Split['ctes'] = [];
  if (!/^WITH\s/i.test(s)) return { ctes, main: s };
  s = s.slice(4);
  for (;;) {
    const m = /^\s*([a-z_][a-z0-9_]*)\s+AS\s*\(/i.exec(s);
    if (!m) throw new Error(`fuse: cannot read the WITH list of ${text.slice(0, 60)}`);
    const open = m[0].length - 1;
    const end = closeParen(s, open);
    ctes.push({ name: m[1], body: s.slice(open + 1, end - 1) });
    s = s.slice(end).trimStart();
    if (s.startsWith(',')) {
      s = s.slice(1);
      continue;
    }
    return { ctes, main: s };
  }
}

/** Renumbers $n outside quotes by `offset`. */
function shiftParams(sql: string, offset: number): string {
  if (offset === 0) return sql;
  let out = '';
  let quote: string | null = null;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i];
    if (quote) {
      if (c === quote) quote = null;
      out += c;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      out += c;
      continue;
    }
    if (c === '$' && /[0-9]/.test(sql[i + 1] ?? '')) {
      let j = i + 1;
      while (/[0-9]/.test(sql[j] ?? '')) j++;
      out += `$${Number(sql.slice(i + 1, j)) + offset}`;
      i = j - 1;
      continue;
    }
    out += c;
  }
  return out;
}

const MODIFYING = /^(INSERT|UPDATE|DELETE)\s/i;

/**
 * The statements as one: each part's own CTEs renamed apart (w<part>_<name>), its parameters
 * renumbered after the previous parts', its main statement one more CTE. One statement is
 * returned unchanged. Throws (a programming error) on a part that is not a write.
 *
 * `select`, if given, is the statement's main query and so its answer (its CTEs keep their names,
 * its parameters come first): a check that must fail the whole write (a division by zero) goes
 * there. Postgres runs the CTEs the main query reads as it reads them, and the others after it: a
 * check that fails first stops the writes before they run.
 */
export function fuse(stmts: Stmt[], opts: { select?: Stmt } = {}): Stmt {
  if (stmts.length === 1 && !opts.select) return stmts[0];
  // The text depends only on the parts' texts and parameter counts: built once per command shape.
  // Splitting, renaming and renumbering each part was 1.5–2% of the service's CPU under load
  // (docs/performance.md §4.3).
  let key = opts.select ? `${opts.select.text}\u0000${opts.select.params?.length ?? 0}` : '';
  for (const s of stmts) key += `\u0001${s.text}\u0000${s.params?.length ?? 0}`;
  let text = fusedTexts.get(key);
  if (text === undefined) {
    text = fusedText(stmts, opts.select);
    if (fusedTexts.size >= FUSED_TEXTS_MAX) fusedTexts.clear();
    fusedTexts.set(key, text);
  }
  const params: unknown[] = [...(opts.select?.params ?? [])];
  for (const s of stmts) if (s.params) for (const p of s.params) params.push(p);
  return { text, params };
}

/** Fused texts by their parts' texts and parameter counts. Bounded: past the bound it starts over (a miss only costs a build). */
const fusedTexts = new Map<string, string>();
const FUSED_TEXTS_MAX = 1_000;

function fusedText(stmts: Stmt[], select: Stmt | undefined): string {
  const ctes: string[] = [];
  let offset = 0;
  let last = `SELECT ${stmts.length} AS fused`;
  if (select) {
    const { ctes: own, main } = split(select.text);
    if (!/^SELECT\s/i.test(main)) throw new Error(`fuse: select is not a SELECT: ${main.slice(0, 60)}`);
    for (const c of own) {
      if (/^w[0-9]/.test(c.name)) throw new Error(`fuse: the name ${c.name} is fuse's own`);
      ctes.push(`${c.name} AS (${c.body})`);
    }
    last = main;
    offset += select.params?.length ?? 0;
  }
  stmts.forEach((stmt, i) => {
    const { ctes: own, main } = split(stmt.text);
    if (!MODIFYING.test(main)) throw new Error(`fuse: not a write: ${main.slice(0, 60)}`);
    const rename = (sql: string) =>
      own.reduce(
        // A CTE's name as a relation (not a column qualified by something else, nor part of a word).
        (acc, c) => acc.replace(new RegExp(`(?<![\\w.$])${c.name}(?![\\w])`, 'g'), `w${i}_${c.name}`),
        shiftParams(sql, offset),
      );
    for (const c of own) ctes.push(`w${i}_${c.name} AS (${rename(c.body)})`);
    ctes.push(`w${i} AS (${rename(main)})`);
    offset += stmt.params?.length ?? 0;
  });
  return `WITH ${ctes.join(',\n')}\n${last}`;
}
