#!/usr/bin/env bash
# CTest's hitbox_ts_client_test (client/ts/CMakeLists.txt): installs the
# pinned dependencies with npm ci only when node_modules is missing or came
# from another package-lock.json, builds when a source is newer than the last
# build, and runs the test files side by side (they wait on hitboxd more than
# they compute), each with node --test; the logs are printed in turn.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ../../scripts/npm-ci-once.sh
if [ ! -f dist/.built ] || [ -n "$(find src test examples bench scripts tsconfig.json package.json \
    package-lock.json ../../proto -type f -newer dist/.built -not -path 'src/gen/*' -print -quit)" ]; then
  npm run --silent build
  touch dist/.built
fi
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
pids=()
files=(dist/test/*.test.js)
for f in "${files[@]}"; do
  node --test "$f" > "$logs/$(basename "$f").log" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!files[@]}"; do
  if wait "${pids[$i]}"; then status=passed; else status=FAILED; rc=1; fi
  echo "=== ${files[$i]}: $status"
  if [ "$status" = FAILED ] || [ -n "${HITBOX_TS_VERBOSE:-}" ]; then cat "$logs/$(basename "${files[$i]}").log"; fi
  grep -E '^# (tests|pass|fail|skipped) ' "$logs/$(basename "${files[$i]}").log" | tr '\n' ' '
  echo
done
exit "$rc"
