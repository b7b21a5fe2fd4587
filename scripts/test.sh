#!/usr/bin/env bash
# All tests: installs what is missing, builds, then runs lit (FileCheck and
# GoogleTest cases) and pytest through ctest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
log "running tests (ctest)"
cd "$BUILD"
ctest --output-on-failure
# Then the unit tests under ASan + UBSan and a short run of each fuzz target,
# in the clang build build-sanitize/ (docs/Sanitizers.md);
# GLIMMER_TEST_SANITIZE=0 skips them.
if [ "${GLIMMER_TEST_SANITIZE:-1}" != 0 ]; then
  bash "$ROOT/scripts/sanitize.sh" ci
fi
