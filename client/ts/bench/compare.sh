#!/usr/bin/env bash
# The arena tick through the TypeScript client and through the C++ client,
# back to back on the same machine (timings on a shared machine drift: rerun).
#
#   bash client/ts/bench/compare.sh [BUILD_DIR]   (default ./build; needs
#   BUILD_DIR/bin/hitboxd and hitbox-arena-bench, and client/ts built)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../../.." && pwd)"
BUILD="${1:-$ROOT/build}"
TICKS="${TICKS:-2000}"
cd "$ROOT/client/ts"
for by_id in "" --by-id; do
  HITBOXD="$BUILD/bin/hitboxd" node dist/bench/arena_bench.js --ticks "$TICKS" --json $by_id
done
"$BUILD/bin/hitbox-arena-bench" --benchmark_filter='ArenaTickService/by_id:./buffers:0' \
  --benchmark_min_time=2 2>/dev/null | grep ArenaTickService
