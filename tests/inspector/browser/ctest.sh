#!/usr/bin/env bash
# CTest's hitbox_inspector_browser_test (tests/inspector/CMakeLists.txt):
# installs playwright-core with npm ci when node_modules is missing or came
# from another package-lock.json (as client/ts does), then runs the test.
set -euo pipefail
cd "$(dirname "$0")"
bash ../../../scripts/npm-ci-once.sh
exec node --test --test-reporter=spec inspector.test.mjs
