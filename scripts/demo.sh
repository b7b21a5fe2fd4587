#!/usr/bin/env bash
# Main job: train the bundled reference VLM unsharded and under a default
# SPMD layout (FSDP x context parallelism, dp_shard=2,cp=2: four ranks as
# threads on the CPU) and compare them step by step; writes demo-loss.png.
# GLIMMER_SPMD overrides the layout.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
SPMD="${GLIMMER_SPMD:-dp_shard=2,cp=2}"
log "training the reference VLM unsharded and with --spmd=$SPMD"
"$VENV/bin/python" "$ROOT/examples/demo.py" --spmd="$SPMD" "$@"
