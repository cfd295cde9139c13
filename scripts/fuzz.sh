#!/usr/bin/env bash
# Builds the libFuzzer targets (ASan + UBSan, via `scripts/hitbox.sh fuzz-build`)
# and fuzzes each for SECONDS_PER_TARGET (default 60), one target at a time,
# at `nice -n 19`. See fuzz/README.md.
#
#   bash scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# TARGET: collider_set, wire, service, scene_file, case_file, geometry, import (default: all).
# Each target's growing corpus is fuzz/work/<target>/ (the seeds in
# fuzz/corpus/<target>/ are read, never written); crashes, leaks, timeouts
# and OOMs are saved to fuzz/findings/<target>/; logs to fuzz/work/logs/.
# Both folders are git-ignored. Prints executions, coverage and findings per
# target. Exit 1 when a target found something.
# libFuzzer runs in fork mode (-fork=1, one worker process), so a finding is
# saved and fuzzing goes on until the time is up.
# Environment: FUZZ_BUILD_DIR (default ./build-fuzz), FUZZ_NO_BUILD=1 (use the
# existing build), FUZZ_ARGS (extra libFuzzer flags).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
if [ "${#TARGETS[@]}" -eq 0 ]; then
  TARGETS=(collider_set wire service scene_file case_file geometry import)
fi

declare -A MAX_LEN=([collider_set]=4096 [wire]=2048 [service]=16384 [scene_file]=16384
                    [case_file]=16384 [geometry]=8192 [import]=16384)

if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  FUZZ_BUILD_DIR="$FUZZ_BUILD_DIR" nice -n 19 bash "$ROOT/scripts/hitbox.sh" fuzz-build
fi

mkdir -p "$ROOT/fuzz/work/logs" "$ROOT/fuzz/findings"
found=0
summary=()
for t in "${TARGETS[@]}"; do
  bin="$FUZZ_BUILD_DIR/bin/${t}_fuzzer"
  if [ ! -x "$bin" ]; then
    echo "[fuzz] no $bin" >&2
    exit 2
  fi
  work="$ROOT/fuzz/work/$t"
  findings="$ROOT/fuzz/findings/$t"
  log="$ROOT/fuzz/work/logs/$t-$(date -u +%Y%m%dT%H%M%SZ).log"
  mkdir -p "$work" "$findings"
  before=$(find "$findings" -type f | wc -l)
  echo "[fuzz] $t for ${SECONDS_PER_TARGET}s (log: $log)"
  start=$SECONDS
  # shellcheck disable=SC2086
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" nice -n 19 "$bin" \
    -max_total_time="$SECONDS_PER_TARGET" -max_len="${MAX_LEN[$t]:-4096}" \
    -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -artifact_prefix="$findings/" ${FUZZ_ARGS:-} \
    "$work" "$ROOT/fuzz/corpus/$t" >"$log" 2>&1 || true
  elapsed=$((SECONDS - start))
  after=$(find "$findings" -type f | wc -l)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(echo "$last" | grep -oE '^#[0-9]+' | tr -d '#')
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | awk '{print $2}')
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | awk '{print $2}')
  corp=$(echo "$last" | grep -o 'corp: [0-9]*' | awk '{print $2}')
  new=$((after - before))
  if [ "$new" -gt 0 ]; then found=1; fi
  summary+=("$(printf '%-13s %6ss  execs %-11s cov %-6s ft %-6s corpus %-6s new findings %s' \
    "$t" "$elapsed" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$new")")
  if [ "$new" -gt 0 ]; then
    grep -E 'ERROR|runtime error|invariant failed|SUMMARY' "$log" | head -5 || true
  fi
done
echo
echo "[fuzz] summary"
printf '  %s\n' "${summary[@]}"
exit "$found"
