#!/usr/bin/env bash
# Prints the Debian packages that own the shared libraries the given programs
# link (as resolved by ldd), one per line, sorted.
#
#   bash docker/runtime-deps.sh BINARY...                 list the packages
#   bash docker/runtime-deps.sh --check LIST BINARY...    exit 1 when a needed
#                                                         package is not in LIST
#
# Used by docker/Dockerfile's build stage and by tests/deploy to keep
# docker/runtime-packages.txt (the runtime image's packages) complete.
set -euo pipefail

check=""
if [ "${1:-}" = "--check" ]; then
  check="${2:?--check needs a package list file}"
  shift 2
fi
if [ "$#" -eq 0 ]; then
  echo "usage: runtime-deps.sh [--check LIST] BINARY..." >&2
  exit 2
fi

owner() {
  # dpkg records one spelling of a path; with merged /usr, ldd may report another.
  local lib="$1" real
  real="$(readlink -f "$lib")"
  local candidates=("$lib" "$real" "/usr$lib" "/usr$real" "${lib#/usr}" "${real#/usr}")
  for p in "${candidates[@]}"; do
    if out="$(dpkg -S "$p" 2>/dev/null)"; then
      echo "${out%%:*}" | sed 's/,.*//'
      return 0
    fi
  done
  echo "runtime-deps: no Debian package owns $lib" >&2
  return 1
}

libs=()
for bin in "$@"; do
  if [ ! -x "$bin" ]; then
    echo "runtime-deps: $bin is not an executable (build it first)" >&2
    exit 1
  fi
  if ldd "$bin" | grep -q "not found"; then
    echo "runtime-deps: $bin has unresolved libraries:" >&2
    ldd "$bin" | grep "not found" >&2
    exit 1
  fi
  while read -r lib; do libs+=("$lib"); done \
    < <(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
done

mapfile -t packages < <(for l in "${libs[@]}"; do owner "$l"; done | sort -u)

if [ -z "$check" ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! grep -v '^\s*#' "$check" | grep -qx "\s*$p\s*"; then missing+=("$p"); fi
done
if [ "${#missing[@]}" -ne 0 ]; then
  echo "runtime-deps: $check lacks: ${missing[*]}" >&2
  exit 1
fi
echo "runtime-deps: $check covers ${#packages[@]} packages"
