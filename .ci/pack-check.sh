#!/usr/bin/env bash
# The client package as a consumer gets it (README.md "The client package"): npm pack in packages/protocol and packages/client, the tarball
# installed into an empty temp directory, its CLI run on a bundle the service issued in-process
# (pinned key, issuer document, no trust, --trust-bundle-keys), and a .ts consumer compiled with
# tsc --strict against the installed declarations. The steps live in test/client/packCheck.ts,
# which test/client/pack.test.ts also runs.
set -euo pipefail
cd "$(dirname "$0")/.."
node --import tsx test/client/packCheckRun.ts
