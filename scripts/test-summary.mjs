// A node:test reporter that writes a short summary for a person: the counts, each failing test under
// its file, why tests were skipped, and the slowest files. scripts/test.mjs runs it beside the TAP
// reporter and prints what it wrote after the TAP (and after c8's coverage table), so the end of a
// run of ~1,500 tests says what happened without scrolling back through it.
import { relative } from 'node:path';

const ROOT = process.cwd();
const rel = (file) => (file ? relative(ROOT, file) : '(outside any file)');

/**
 * The first line of a failure's cause: the assertion message, not the stack. Whatever a test threw
 * arrives here (deserialised from the file's process): a reporter that threw on it would end the
 * whole run, so anything unreadable is reported as such.
 */
function cause(error) {
  try {
    let e = error;
    // node:test wraps the thrown value: { failureType, cause }.
    while (e?.cause && (e.code === 'ERR_TEST_FAILURE' || e.failureType)) e = e.cause;
    const message = e && typeof e === 'object' && typeof e.message === 'string' ? e.message : typeof e === 'string' ? e : JSON.stringify(e);
    const text = String(message ?? '')
      .trim()
      .split('\n')[0];
    return text.length > 160 ? `${text.slice(0, 157)}...` : text;
  } catch {
    return '(a thrown value that cannot be printed)';
  }
}

// Each file's events arrive together (each file runs in its own process). A test declared by a helper
// (test/harness.ts's per-store suites) carries the helper's path, so it is counted under the last test
// file seen; a file that failed to load is reported under its own path as the test's name.
const TEST_FILE = /\.test\.[cm]?[jt]s$/;
let current;
function fileOf(data) {
  const file = data.file ?? (TEST_FILE.test(data.name) ? data.name : undefined);
  if (file && TEST_FILE.test(file)) current = rel(file);
  return current ?? rel(file);
}

export default async function* summary(source) {
  const counts = {};
  const failures = new Map(); // file -> [name: cause]
  const skips = new Map(); // reason -> count
  const fileMs = new Map(); // file -> sum of its top-level tests' durations
  for await (const { type, data } of source) {
    if (type === 'test:diagnostic' && data.nesting === 0) {
      const m = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) ([\d.]+)$/.exec(data.message);
      if (m) counts[m[1]] = Number(m[2]);
    } else if (type === 'test:pass' || type === 'test:fail') {
      const file = fileOf(data);
      if (data.nesting === 0) fileMs.set(file, (fileMs.get(file) ?? 0) + (data.details?.duration_ms ?? 0));
      if (data.skip !== undefined) {
        const why = typeof data.skip === 'string' ? data.skip : '(no reason given)';
        skips.set(why, (skips.get(why) ?? 0) + 1);
      }
      if (type !== 'test:fail') continue;
      // A suite or parent fails because a child did: list the child, not the parent as well.
      const failureType = data.details?.error?.failureType;
      if (data.details?.type === 'suite' || failureType === 'subtestsFailed') continue;
      if (!failures.has(file)) failures.set(file, []);
      failures.get(file).push(`${data.name}: ${cause(data.details?.error)}`);
    }
  }
  const out = [];
  const n = (k) => counts[k] ?? 0;
  out.push(
    `tests ${n('tests')}: ${n('pass')} passed, ${n('fail')} failed, ${n('skipped')} skipped, ${n('cancelled')} cancelled, ${n('todo')} todo`,
  );
  if (skips.size) {
    out.push('skipped:');
    for (const [why, k] of [...skips].sort((a, b) => b[1] - a[1])) out.push(`  ${k} × ${why}`);
  }
  if (failures.size) {
    out.push(`FAILED in ${failures.size} file${failures.size === 1 ? '' : 's'}:`);
    for (const [file, list] of failures) {
      out.push(`  ${file}`);
      for (const line of list.slice(0, 10)) out.push(`    ✗ ${line}`);
      if (list.length > 10) out.push(`    … and ${list.length - 10} more`);
    }
  }
  const slow = [...fileMs].sort((a, b) => b[1] - a[1]).slice(0, 5);
  if (slow.length) out.push(`slowest files: ${slow.map(([f, ms]) => `${f} ${(ms / 1000).toFixed(1)} s`).join(', ')}`);
  yield `${out.join('\n')}\n`;
}
