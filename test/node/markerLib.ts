// A shared library that says when it is loaded: its constructor (run by the dynamic loader at
// dlopen, before any symbol is looked up) writes a marker file. Built with gcc for the tests that
// show no request, database row or start-up source makes the service load a library of its choosing.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface MarkerLib {
  /** The library's path. */
  path: string;
  /** Whether any process has loaded it (its constructor ran). */
  loaded(): boolean;
}

/** Builds the marker library into a fresh directory. Throws when gcc is missing (it is on CI and on the dev image). */
export function markerLib(): MarkerLib {
  const dir = mkdtempSync(join(tmpdir(), 'marker-lib-'));
  const marker = join(dir, 'loaded');
  const src = join(dir, 'marker.c');
  writeFileSync(
    src,
    `#include <stdio.h>
__attribute__((constructor)) static void marker(void) {
  FILE *f = fopen(${JSON.stringify(marker)}, "w");
  if (f) { fputs("loaded\\n", f); fclose(f); }
}
`,
  );
  const path = join(dir, 'libmarker.so');
  execFileSync('gcc', ['-shared', '-fPIC', '-o', path, src]);
  return { path, loaded: () => existsSync(marker) };
}
