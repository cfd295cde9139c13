#!/usr/bin/env bash
# Hitbox developer entry point: installs what is missing, builds, then runs or tests.
#
#   bash scripts/hitbox.sh run     install deps, build, start hitboxd --demo on the arena map (extra args go to hitboxd)
#   bash scripts/hitbox.sh test    install deps, build everything with warnings as errors,
#                                  run every test (CTest), then build the fuzz targets and
#                                  run their smoke (fuzz-test)
#   bash scripts/hitbox.sh deps    only install missing Debian packages
#   bash scripts/hitbox.sh build   deps + build (Release, into ./build; warnings stay warnings)
#   bash scripts/hitbox.sh sanitize-test  deps, build the tests with ASan + UBSan (into
#                                  ./build-sanitize), run every test there
#   bash scripts/hitbox.sh fuzz-build  clang + libFuzzer packages, build the fuzz targets
#                                  (into ./build-fuzz, sanitizers on; see fuzz/README.md)
#   bash scripts/hitbox.sh fuzz-test   fuzz-build, then a few seconds of each target (CTest)
#
# Environment: BUILD_DIR (default ./build), BUILD_TYPE (default Release),
# JOBS (default nproc), HITBOX_CMAKE_ARGS (extra cmake arguments),
# HITBOX_WERROR (ON|OFF; default ON for `test`, OFF for `build` and `run`),
# HITBOX_BUILD_TESTS / HITBOX_BUILD_BENCHMARKS (ON|OFF; unset: the CMake
# default, ON), HITBOX_TARGETS (space-separated targets to build; unset: all),
# FUZZ_BUILD_DIR (default ./build-fuzz), HITBOX_FUZZ_SMOKE (0: `test` skips the
# fuzz smoke), HITBOX_FUZZ_SMOKE_SECONDS (default 10 per target),
# SANITIZE_BUILD_DIR (default ./build-sanitize).
# The Dockerfile's build stage runs this same script, so it is the one source of
# truth for dependencies.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
BUILD_TYPE="${BUILD_TYPE:-Release}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

# Build-time packages (Debian bookworm). Runtime-only images need just the
# shared libraries these pull in (see docker/Dockerfile).
BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libspdlog-dev libcli11-dev nlohmann-json3-dev zlib1g-dev
  libcpp-httplib-dev  # server: the Prometheus endpoint (--metrics-listen)
  libgtest-dev libgmock-dev libbenchmark-dev
  libqhull-dev  # core: convex hulls (reentrant libqhull_r)
  libtinygltf-dev libtinyobjloader-dev  # import/: glTF and OBJ level files
  libexpat1-dev  # tests: the SVG of `hitboxctl view` is parsed as XML
  python3  # tests/deploy: static checks of docker/ and the k8s manifests
  openssl  # tests: TLS test certificates are generated at test time
  libssl-dev  # server: SHA-256 of map files (libcrypto; gRPC links it already)
  libpng-dev  # tests: screenshots of `view` pictures are decoded
)

# Only for `test`: a real browser renders the `view` pictures
# (tests/view/browser_render_test.cc), with a font for their captions.
TEST_PACKAGES=(chromium fonts-dejavu-core)

# Only for the fuzz targets (fuzz-build, fuzz-test and so `test`): Debian's
# clang and its compiler-rt (libFuzzer, ASan and UBSan runtimes).
FUZZ_PACKAGES=(clang libclang-rt-14-dev)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# install_missing PACKAGE...: apt-get install of those not installed yet.
install_missing() {
  local missing=()
  for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    echo "[hitbox] all packages present: $*"
    return
  fi
  echo "[hitbox] installing: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

deps() { install_missing "${BUILD_PACKAGES[@]}"; }

configure() {
  local launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  local options=()
  if [ -n "${HITBOX_BUILD_TESTS:-}" ]; then
    options+=(-DHITBOX_BUILD_TESTS="$HITBOX_BUILD_TESTS")
  fi
  if [ -n "${HITBOX_BUILD_BENCHMARKS:-}" ]; then
    options+=(-DHITBOX_BUILD_BENCHMARKS="$HITBOX_BUILD_BENCHMARKS")
  fi
  # Always passed, so the cached value follows the command (test: ON).
  options+=(-DHITBOX_WERROR="${HITBOX_WERROR:-$WERROR_DEFAULT}")
  # shellcheck disable=SC2086
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    "${launcher[@]}" "${options[@]}" ${HITBOX_CMAKE_ARGS:-}
}

build() {
  deps
  configure
  local targets=()
  if [ -n "${HITBOX_TARGETS:-}" ]; then
    # shellcheck disable=SC2206
    targets=(--target ${HITBOX_TARGETS})
  fi
  cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
}

# Warnings are errors for `test` (CI), where the compiler is the one the tree
# is kept clean for (Debian bookworm's gcc 12). `build` and `run` only warn: a
# newer compiler's new warnings must not stop someone from running the service.
WERROR_DEFAULT=OFF

SANITIZE_BUILD_DIR="${SANITIZE_BUILD_DIR:-$ROOT/build-sanitize}"

# The whole test suite with AddressSanitizer (and LeakSanitizer) and
# UndefinedBehaviorSanitizer on every target of ours (hitboxd and hitboxctl,
# run by the tests, included); any report fails its test. -O2 with line
# tables, assertions on; no benchmarks. Warnings are checked by the plain
# build (gcc's -O2 warnings under ASan instrumentation include false alarms).
sanitize_test() {
  deps
  local launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  # shellcheck disable=SC2086
  cmake -S "$ROOT" -B "$SANITIZE_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
    "-DCMAKE_CXX_FLAGS=-O2 -g1" "${launcher[@]}" \
    -DHITBOX_BUILD_TESTS=ON -DHITBOX_BUILD_BENCHMARKS=OFF -DHITBOX_BUILD_FUZZERS=OFF \
    -DHITBOX_SANITIZE=address,undefined -DHITBOX_WERROR="${HITBOX_WERROR:-OFF}" \
    ${HITBOX_CMAKE_ARGS:-} >/dev/null
  cmake --build "$SANITIZE_BUILD_DIR" -j "$JOBS"
  (cd "$SANITIZE_BUILD_DIR" &&
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
    ctest --output-on-failure -j "$JOBS" --timeout 1800)
}

FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"

# The libFuzzer targets of fuzz/: clang, ASan + UBSan on our libraries and the
# targets, coverage instrumentation (-fsanitize=fuzzer-no-link) on our
# libraries. Only the fuzz targets (and their libraries) are built.
fuzz_build() {
  deps
  install_missing "${FUZZ_PACKAGES[@]}"
  local launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$FUZZ_BUILD_DIR" -G Ninja \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Fuzz "-DCMAKE_CXX_FLAGS=-O2 -gline-tables-only" "${launcher[@]}" \
    -DHITBOX_BUILD_TESTS=OFF -DHITBOX_BUILD_BENCHMARKS=OFF -DHITBOX_BUILD_FUZZERS=ON \
    -DHITBOX_SANITIZE=address,undefined \
    -DHITBOX_FUZZ_SMOKE_SECONDS="${HITBOX_FUZZ_SMOKE_SECONDS:-10}" >/dev/null
  cmake --build "$FUZZ_BUILD_DIR" -j "$JOBS" --target hitbox_fuzzers
}

fuzz_test() {
  fuzz_build
  (cd "$FUZZ_BUILD_DIR" && ctest --output-on-failure -j "$JOBS" -L fuzz --timeout 300)
}

case "${1:-}" in
  deps) deps ;;
  build) build ;;
  test)
    install_missing "${TEST_PACKAGES[@]}"
    WERROR_DEFAULT=ON
    build
    (cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" --timeout 900)
    if [ "${HITBOX_FUZZ_SMOKE:-1}" != 0 ]; then
      fuzz_test
    fi
    ;;
  fuzz-build) fuzz_build ;;
  fuzz-test) fuzz_test ;;
  sanitize-test) sanitize_test ;;
  run)
    build
    shift || true
    # Ctrl-C (SIGINT) or SIGTERM stops it gracefully. The demo session is on
    # the shared map examples/maps/arena.glb (scripts/make_demo_map.py).
    exec "$BUILD_DIR/bin/hitboxd" --demo --maps "$ROOT/examples/maps" "$@"
    ;;
  *)
    echo "usage: bash scripts/hitbox.sh run|test|deps|build|fuzz-build|fuzz-test|sanitize-test" >&2
    exit 2
    ;;
esac
