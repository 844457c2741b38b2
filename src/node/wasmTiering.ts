// How V8 compiles PGlite's WebAssembly in a service process (Node edge; PGlite stores only).
//
// PGlite's Postgres is 9 MB of WebAssembly. V8 compiles it with its baseline compiler (Liftoff),
// then recompiles the functions that run often with its optimizing one (TurboFan), and an idle
// sandbox never gives that memory back. With Liftoff only (`--liftoff-only`), measured on this
// code (2026-11-25, 2-vCPU AMD VM, `npm run bench` memory run, two alternating pairs):
//  - idle RSS of `DATA_DIR=:memory:` under tsx, 3 s after listening: 235–240 MB against 301–308 MB;
//  - the price, under sustained load on the sandbox: lifecycles/s 78.7, 84.4 against 92.4, 87.9 at
//    c=1 and 98.0, 103.6 against 117.7, 110.1 at c=16 (8–16% fewer; a lifecycle at c=1 is ~1 ms longer).
// A sandbox spends its life mostly idle, so the memory is what counts; a Postgres deployment
// (DATABASE_URL) never loads PGlite and is not affected. The flag must be set before PGlite compiles
// its module, when V8 reads it. An operator who chose a tiering flag of their own on the command line
// or in NODE_OPTIONS (`node --no-liftoff-only …` for the faster sandbox) keeps it.

const TIERING_FLAG = /^--(no-)?(liftoff|liftoff-only|wasm-tier-up|wasm-dynamic-tiering|wasm-tiering-budget)(=|$)/;

/** Whether this process should set `--liftoff-only` before opening PGlite: unless its own node flags already say how to tier. */
export function liftoffOnlyWanted(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  const flags = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].map((f) => f.replace(/_/g, '-'));
  return !flags.some((f) => TIERING_FLAG.test(f));
}
