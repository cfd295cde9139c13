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

# dpkg records one spelling of a path; with merged /usr, ldd may report another.
# Ask dpkg about every spelling of every library at once (one slow call).
mapfile -t uniq < <(printf '%s\n' "${libs[@]}" | sort -u)
spellings() {
  local lib="$1" real
  real="$(readlink -f "$lib")"
  printf '%s\n' "$lib" "$real" "/usr$lib" "/usr$real" "${lib#/usr}" "${real#/usr}"
}
mapfile -t candidates < <(for l in "${uniq[@]}"; do spellings "$l"; done | sort -u)
declare -A owner_of
while IFS= read -r line; do
  # "pkg[:arch][, pkg2[:arch]]: /path"
  path="${line##*: }"
  pkg="${line%%: /*}"
  pkg="${pkg%%,*}"
  owner_of["$path"]="${pkg%%:*}"
done < <(dpkg -S "${candidates[@]}" 2>/dev/null || true)
packages=()
for l in "${uniq[@]}"; do
  found=""
  while read -r p; do
    if [ -n "${owner_of[$p]:-}" ]; then found="${owner_of[$p]}"; break; fi
  done < <(spellings "$l")
  if [ -z "$found" ]; then
    echo "runtime-deps: no Debian package owns $l" >&2
    exit 1
  fi
  packages+=("$found")
done
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)

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
