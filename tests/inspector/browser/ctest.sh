#!/usr/bin/env bash
# CTest's hitbox_inspector_browser_test (tests/inspector/CMakeLists.txt):
# installs playwright-core with npm ci when node_modules is missing or came
# from another package-lock.json (as client/ts does), then runs the test.
set -euo pipefail
cd "$(dirname "$0")"
stamp=node_modules/.hitbox-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi
exec node --test --test-reporter=spec inspector.test.mjs
