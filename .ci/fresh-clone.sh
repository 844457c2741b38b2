#!/usr/bin/env bash
# Fresh clone: the tests must pass in a clone that has nothing beside it, so no
# test can lean on a sibling directory (the published vectors once lived in ../shared/vectors).
# Clones the committed HEAD (not the working tree) into an empty temp directory, runs npm ci there,
# then the tests that read vendored files (test/vectors) and the client package's tests.
# FRESH_CLONE_FULL=1 runs the whole `npm test` in the clone instead (about as long as the main run).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
git clone --quiet --no-local "$src" "$tmp/repo"
cd "$tmp/repo"
echo "fresh clone at $tmp/repo (siblings: $(ls -A "$tmp" | tr '\n' ' '))"

# Static guard: no source, test, bench or script names a path outside the repository.
if grep -rnE --include='*.ts' --include='*.mjs' --include='*.js' --include='*.sh' "\.\./\.\./\.\./|/work/|shared/vectors" src test bench scripts packages 2>/dev/null \
    | grep -v '^test/vectors/' | grep -v '^test/reliability/fuzz.ts'; then
  echo "fresh-clone: the lines above reach outside the repository" >&2
  exit 1
fi

npm ci --no-audit --no-fund
if [ "${FRESH_CLONE_FULL:-0}" = 1 ]; then
  npm test
else
  # shellcheck disable=SC2046
  node --import tsx --test --test-concurrency=1 $(find test/tlog test/protocol test/crypto test/client -name '*.test.ts' | sort)
fi
echo "fresh clone: ok"
