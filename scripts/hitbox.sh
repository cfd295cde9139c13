#!/usr/bin/env bash
# Hitbox's entry point: installs missing Debian packages, builds, then runs or tests.
#
#   bash scripts/hitbox.sh run            build, then hitboxd --demo on examples/maps
#                                         (extra arguments go to hitboxd)
#   bash scripts/hitbox.sh test           build, run every test (CTest), then the fuzz smoke
#   bash scripts/hitbox.sh build          build only (Release, into ./build)
#   bash scripts/hitbox.sh deps           install missing packages only
#   bash scripts/hitbox.sh sanitize-test  ASan + UBSan build into ./build-sanitize, every test
#   bash scripts/hitbox.sh fuzz-build     clang libFuzzer targets into ./build-fuzz (fuzz/README.md)
#   bash scripts/hitbox.sh fuzz-test      fuzz-build, then a few seconds of each target
#
# run, test and build configure ./build identically, so one never recompiles
# what the other built. docs/build.md lists the environment variables.
# The Dockerfile's build stage runs this script too: one list of dependencies.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"                 # the plain build: run, test, build
BUILD_TYPE="${BUILD_TYPE:-Release}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"        # parallel compiles and tests
# Warnings are errors for every command that configures ./build: the script
# installs Debian bookworm's gcc 12, under which the tree is kept free of
# warnings, and one setting means `run` and `test` share one build.
# HITBOX_WERROR=OFF (set for every command alike) is for other compilers.
WERROR="${HITBOX_WERROR:-ON}"
SANITIZE_BUILD_DIR="${SANITIZE_BUILD_DIR:-$ROOT/build-sanitize}"
FUZZ_BUILD_DIR="${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"

# Build-time packages (Debian bookworm). Runtime-only images need just the
# shared libraries these pull in (see docker/Dockerfile).
BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache git ca-certificates
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libspdlog-dev libcli11-dev nlohmann-json3-dev zlib1g-dev
  libcpp-httplib-dev  # server: the HTTP endpoint (--http-listen: metrics, inspector)
  libjs-three  # server: three.js of the inspector page, embedded in hitboxd
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
# (tests/view/browser_render_test.cc), with a font for their captions, and
# runs the inspector page (tests/inspector, driven by playwright-core); the
# Python client's tests (client/python) run on Debian's grpcio and protobuf.
TEST_PACKAGES=(chromium fonts-dejavu-core
               python3-grpcio python3-protobuf python3-numpy python3-pytest)

# Only for the fuzz targets (fuzz-build, fuzz-test and so `test`): Debian's
# clang and its compiler-rt (libFuzzer, ASan and UBSan runtimes).
FUZZ_PACKAGES=(clang libclang-rt-14-dev)

# Runs a command as root: directly when we are root, else through sudo.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# apt-get installs those of the named packages that are not installed yet.
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

# Prints the cmake arguments that put ccache in front of the compilers, when
# ccache is installed (rebuilds of unchanged files then cost a cache lookup).
launcher_args() {
  if command -v ccache >/dev/null 2>&1; then
    echo "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache"
  fi
}

# Configures ./build. Every command passes the same arguments, so the second
# of `run` and `test` finds the first one's build up to date.
configure() {
  local options=()
  if [ -n "${HITBOX_BUILD_TESTS:-}" ]; then
    options+=(-DHITBOX_BUILD_TESTS="$HITBOX_BUILD_TESTS")
  fi
  if [ -n "${HITBOX_BUILD_BENCHMARKS:-}" ]; then
    options+=(-DHITBOX_BUILD_BENCHMARKS="$HITBOX_BUILD_BENCHMARKS")
  fi
  # shellcheck disable=SC2046,SC2086
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    $(launcher_args) -DHITBOX_WERROR="$WERROR" "${options[@]}" ${HITBOX_CMAKE_ARGS:-}
}

# deps, configure, then builds HITBOX_TARGETS (space-separated; unset: all).
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

# The whole test suite under AddressSanitizer (leaks included) and
# UndefinedBehaviorSanitizer, hitboxd and hitboxctl included; any report fails
# its test. -O2 with line tables, no benchmarks. Warnings stay warnings here:
# gcc's -O2 warnings under ASan include false alarms (./build checks them).
sanitize_test() {
  deps
  # shellcheck disable=SC2046,SC2086
  cmake -S "$ROOT" -B "$SANITIZE_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize \
    "-DCMAKE_CXX_FLAGS=-O2 -g1" $(launcher_args) \
    -DHITBOX_BUILD_TESTS=ON -DHITBOX_BUILD_BENCHMARKS=OFF -DHITBOX_BUILD_FUZZERS=OFF \
    -DHITBOX_SANITIZE=address,undefined -DHITBOX_WERROR="${HITBOX_WERROR:-OFF}" \
    ${HITBOX_CMAKE_ARGS:-} >/dev/null
  cmake --build "$SANITIZE_BUILD_DIR" -j "$JOBS"
  (cd "$SANITIZE_BUILD_DIR" &&
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1}" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}" \
    ctest --output-on-failure -j "$JOBS" --timeout 1800)
}

# The libFuzzer targets of fuzz/ and their libraries only: clang, ASan + UBSan,
# coverage instrumentation (-fsanitize=fuzzer-no-link) on our libraries.
fuzz_build() {
  deps
  install_missing "${FUZZ_PACKAGES[@]}"
  # shellcheck disable=SC2046
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$FUZZ_BUILD_DIR" -G Ninja \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Fuzz "-DCMAKE_CXX_FLAGS=-O2 -gline-tables-only" $(launcher_args) \
    -DHITBOX_BUILD_TESTS=OFF -DHITBOX_BUILD_BENCHMARKS=OFF -DHITBOX_BUILD_FUZZERS=ON \
    -DHITBOX_SANITIZE=address,undefined \
    -DHITBOX_FUZZ_SMOKE_SECONDS="${HITBOX_FUZZ_SMOKE_SECONDS:-10}" >/dev/null
  cmake --build "$FUZZ_BUILD_DIR" -j "$JOBS" --target hitbox_fuzzers
}

# fuzz_build, then HITBOX_FUZZ_SMOKE_SECONDS (default 10) of each target (CTest label fuzz).
fuzz_test() {
  fuzz_build
  (cd "$FUZZ_BUILD_DIR" && ctest --output-on-failure -j "$JOBS" -L fuzz --timeout 300)
}

case "${1:-}" in
  deps) deps ;;
  build) build ;;
  test)
    install_missing "${TEST_PACKAGES[@]}"
    # The TypeScript client's test (client/ts) and the inspector's browser test
    # (tests/inspector/browser): Debian's node and npm when there are none.
    if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
      install_missing nodejs npm
    fi
    build
    (cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" --timeout 900)
    if [ "${HITBOX_FUZZ_SMOKE:-1}" != 0 ]; then  # HITBOX_FUZZ_SMOKE=0 skips it
      fuzz_test
    fi
    ;;
  fuzz-build) fuzz_build ;;
  fuzz-test) fuzz_test ;;
  sanitize-test) sanitize_test ;;
  run)
    build
    shift || true
    # The demo session is on the shared map examples/maps/arena.glb
    # (scripts/make_demo_map.py). Ctrl-C or SIGTERM stops hitboxd gracefully.
    exec "$BUILD_DIR/bin/hitboxd" --demo --maps "$ROOT/examples/maps" "$@"
    ;;
  *)
    echo "usage: bash scripts/hitbox.sh run|test|deps|build|fuzz-build|fuzz-test|sanitize-test" >&2
    exit 2
    ;;
esac
