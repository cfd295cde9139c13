#!/usr/bin/env bash
# Hitbox against a peer's jolt_bench on one case file, side by side:
# alternating runs pinned to one core, Hitbox / peer queries a second per
# round and kind, then the median ratio of each kind.
#
#   scripts/side-by-side.sh JOLT_BENCH FILE [ROUNDS] [HITBOX_BENCH...]
#
# JOLT_BENCH is the peer program built outside the repository as
# ../shared/peers/README.md says (this script only runs it). With several
# HITBOX_BENCH binaries (default build/bin/hitbox-bench), each round runs
# them in turn, the peer between the first and the others, and every one's
# ratios are printed; a HITBOX_BENCH may carry its options, e.g.
# "build/bin/hitbox-bench --skip-started-contact". Hitbox's figure is
# qps_1_cpu (the median batch on one thread), the peer's its best of five runs.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
peer=$1
file=$2
rounds=${3:-3}
shift $(($# < 3 ? $# : 3))
benches=("$@")
[[ ${#benches[@]} -gt 0 ]] || benches=(build/bin/hitbox-bench)
core=${SIDE_BY_SIDE_CORE:-1}

hitbox_run() {
  # (hitbox-bench exits 1 on a mismatch; its count is printed below.)
  local cmd
  read -ra cmd <<<"$1"
  { taskset -c "$core" "${cmd[@]}" "$file" --min-time 1 --json --threads 1 2>/dev/null || true; } |
    tail -n 1 |
    python3 -c 'import json, sys
k = json.load(sys.stdin)["kinds"]
kinds = [k.get(n, {}) for n in ("overlap", "sweep", "raycast")]
print(*(x.get("qps_1_cpu", 0) for x in kinds), sum(x.get("mismatches", 0) for x in kinds))'
}
peer_run() {
  { taskset -c "$core" "$peer" "$file" --repeat 5 2>/dev/null || true; } | tail -n 1 |
    python3 -c 'import json, sys
d = json.load(sys.stdin)
print(*(d.get(n + "_qps", 0) for n in ("overlap", "sweep", "raycast")),
      json.dumps(d.get("mismatches"), separators=(",", ":")))'
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for ((r = 1; r <= rounds; ++r)); do
  line=("$(hitbox_run "${benches[0]}")" "$(peer_run)")
  for ((b = 1; b < ${#benches[@]}; ++b)); do line+=("$(hitbox_run "${benches[b]}")"); done
  echo "round $r (load $(cut -d' ' -f1 /proc/loadavg))"
  echo "  peer: ${line[1]}"
  for ((b = 0; b < ${#benches[@]}; ++b)); do
    idx=$((b == 0 ? 0 : b + 1))
    echo "  ${benches[b]}: ${line[idx]}"
    echo "$b ${line[idx]} ${line[1]}" >>"$results"
  done
done
python3 - "$results" "${benches[@]}" <<'EOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for b, name in enumerate(sys.argv[2:]):
    # A kind the file has no queries of gives nan.
    ratios = [[float(r[1 + k]) / float(r[5 + k]) if float(r[5 + k]) > 0 else float("nan")
               for k in range(3)] for r in rows if int(r[0]) == b]
    wrong = sum(int(r[4]) for r in rows if int(r[0]) == b)
    med = [statistics.median(x[k] for x in ratios) for k in range(3)]
    spans = ["%.2f-%.2f" % (min(x[k] for x in ratios), max(x[k] for x in ratios)) for k in range(3)]
    print("%s / peer, overlap sweep raycast: median %.2f %.2f %.2f (range %s), Hitbox mismatches %d"
          % (name, *med, " ".join(spans), wrong))
EOF
