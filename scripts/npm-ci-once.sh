#!/usr/bin/env bash
# npm ci in the current folder only when node_modules is missing or was
# installed from another package-lock.json (a stamp inside node_modules).
set -euo pipefail
stamp=node_modules/.hitbox-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
  npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi
