#!/usr/bin/env bash
# CTest's hitbox_ts_client_test (client/ts/CMakeLists.txt): installs the
# pinned dependencies with npm ci only when node_modules is missing or came
# from another package-lock.json, builds, and runs every test file.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=node_modules/.hitbox-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi
npm run --silent build
exec node --test dist/test/*.test.js
