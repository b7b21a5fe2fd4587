#!/usr/bin/env bash
# All tests: installs what is missing, builds, then runs lit (FileCheck and
# GoogleTest cases) and pytest through ctest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
log "running tests (ctest)"
cd "$BUILD"
ctest --output-on-failure
