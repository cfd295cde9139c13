#!/usr/bin/env bash
# Builds the hitboxd image and smoke-tests it with a real Docker engine:
#   1. a debian:bookworm-slim base (pulled, or made with debootstrap and
#      imported when no registry is reachable),
#   2. DOCKER_BUILDKIT=1 docker build -f docker/Dockerfile,
#   3. a container with an admin token from a mounted secret, waited on until
#      healthy (the time is printed),
#   4. `hitboxctl check` of a case file against it, from the host through the
#      published port (protected mode is off because credentials are set),
#   5. `docker stop` within the shutdown grace, exit code 0,
#   6. persistence: the container keeps its sessions on a mounted data dir
#      (HITBOX_DATA_DIR); a session loaded before the stop is there, with the
#      same revision and colliders, after `docker start`, and a second stop
#      is graceful too.
#
#   bash scripts/docker-smoke.sh [CASE_FILE]     (default ../shared/cases/mixed.json)
#
# Environment: DOCKER (default: /usr/bin/docker when present, Debian's client,
# which builds with BuildKit without the buildx plugin), IMAGE (hitbox:dev),
# KEEP_IMAGE=1 skips the build when the image exists. Needs a running dockerd
# and root (or the docker group); debootstrap only when no base can be pulled.
# Not part of .ci/run (CI has no Docker engine).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOCKER="${DOCKER:-$([ -x /usr/bin/docker ] && echo /usr/bin/docker || echo docker)}"
IMAGE="${IMAGE:-hitbox:dev}"
BASE="debian:bookworm-slim"
CASE="${1:-$ROOT/../shared/cases/mixed.json}"
NAME="hitbox-smoke-$$"
WORK="$(mktemp -d)"

log() { printf '[docker-smoke] %s\n' "$*"; }
# Seconds since a `date +%s.%N` stamp, to the millisecond.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }
cleanup() {
  "$DOCKER" rm -f "$NAME" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

[ -f "$CASE" ] || { echo "no case file: $CASE" >&2; exit 2; }
"$DOCKER" info >/dev/null 2>&1 || { echo "no Docker engine reachable (start dockerd)" >&2; exit 2; }

# 1. Base image.
if ! "$DOCKER" image inspect "$BASE" >/dev/null 2>&1; then
  if ! "$DOCKER" pull "$BASE" >/dev/null 2>&1; then
    log "no registry reachable: making $BASE with debootstrap"
    command -v debootstrap >/dev/null || { echo "install debootstrap" >&2; exit 2; }
    debootstrap --variant=minbase bookworm "$WORK/rootfs" http://deb.debian.org/debian >/dev/null
    tar -C "$WORK/rootfs" -c . | "$DOCKER" import - "$BASE" >/dev/null
  fi
fi

# 2. The image.
if [ "${KEEP_IMAGE:-0}" = 1 ] && "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1; then
  log "using the existing $IMAGE"
else
  log "building $IMAGE"
  start=$(date +%s)
  DOCKER_BUILDKIT=1 "$DOCKER" build -q -f "$ROOT/docker/Dockerfile" -t "$IMAGE" "$ROOT" >/dev/null
  log "built in $(( $(date +%s) - start )) s"
fi

# 3. A container with an admin token, published on the host's loopback.
mkdir -p "$WORK/secrets"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$WORK/secrets/admin-token"
chmod 0644 "$WORK/secrets/admin-token"
# The data dir (a bind mount, owned by the image's uid 10001).
mkdir -p "$WORK/data"
chown 10001:10001 "$WORK/data" 2>/dev/null || chmod 0777 "$WORK/data"
# wait_healthy WHAT: until the container's health check passes.
wait_healthy() {
  local status=""
  for _ in $(seq 1 300); do
    status=$("$DOCKER" inspect -f '{{.State.Health.Status}}' "$NAME")
    [ "$status" = healthy ] && break
    [ "$("$DOCKER" inspect -f '{{.State.Running}}' "$NAME")" = true ] || break
    sleep 0.1
  done
  if [ "$status" != healthy ]; then
    "$DOCKER" logs "$NAME" >&2 || true
    echo "the container did not turn healthy (status: $status)" >&2
    exit 1
  fi
  log "healthy $(since "$started") s after $1"
  port=$("$DOCKER" port "$NAME" 50051/tcp | head -n1 | sed 's/.*://')
}
# ctl ARGS...: the image's own hitboxctl, on the host network so that it
# reaches the published port, with the admin token.
ctl() {
  "$DOCKER" run --rm --network host -v "$(cd "$(dirname "$CASE")" && pwd):/cases:ro" \
    -e HITBOX_TOKEN="$(cat "$WORK/secrets/admin-token")" --entrypoint hitboxctl "$IMAGE" \
    --address "127.0.0.1:$port" --quiet "$@"
}
# stop_graceful: docker stop within the grace, exit code 0.
stop_graceful() {
  local stop_start took code
  stop_start=$(date +%s.%N)
  "$DOCKER" stop -t 10 "$NAME" >/dev/null
  took=$(since "$stop_start")
  code=$("$DOCKER" inspect -f '{{.State.ExitCode}}' "$NAME")
  log "docker stop took ${took} s, exit code $code"
  [ "$code" = 0 ] || { "$DOCKER" logs "$NAME" >&2; echo "hitboxd exited with $code" >&2; exit 1; }
}
started=$(date +%s.%N)
"$DOCKER" run -d --name "$NAME" -p 127.0.0.1::50051 \
  -v "$WORK/secrets:/run/secrets/hitbox:ro" \
  -v "$WORK/data:/var/lib/hitbox" -e HITBOX_DATA_DIR=/var/lib/hitbox \
  -e HITBOX_ADMIN_TOKEN_FILE=/run/secrets/hitbox/admin-token \
  -e HITBOX_SHUTDOWN_GRACE_MS=3000 "$IMAGE" >/dev/null
wait_healthy "docker run"

# 4. hitboxctl check from the host.
ctl check "/cases/$(basename "$CASE")"
# A session to find again after the restart.
ctl load smoke-persist "/cases/$(basename "$CASE")" --create >/dev/null
before=$(ctl --json sessions get smoke-persist | grep -oE '"(revision|collider_count)": *"?[0-9]+' | tr -d ' "')
log "session smoke-persist before the restart: $(echo $before)"

# 5. A graceful stop.
stop_graceful

# 6. Persistence: start the same container again (same data dir).
started=$(date +%s.%N)
"$DOCKER" start "$NAME" >/dev/null
wait_healthy "docker start"
after=$(ctl --json sessions get smoke-persist | grep -oE '"(revision|collider_count)": *"?[0-9]+' | tr -d ' "')
log "session smoke-persist after the restart: $(echo $after)"
[ -n "$before" ] && [ "$before" = "$after" ] || { "$DOCKER" logs "$NAME" >&2; echo "the session did not survive the restart" >&2; exit 1; }
stop_graceful
log "ok"
