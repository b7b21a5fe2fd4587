#!/usr/bin/env bash
# Main job: compile the bundled reference VLM step under a default SPMD
# layout and print the resulting IR.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup.sh"
SPMD="${GLIMMER_SPMD:-dp_shard=2,cp=2}"
log "glimmer-opt --spmd=$SPMD on examples/mlir/vlm_forward.mlir"
"$BUILD/bin/glimmer-opt" "$ROOT/examples/mlir/vlm_forward.mlir" \
  --spmd="$SPMD" --glimmer-attach-spmd --glimmer-materialize-mesh \
  --canonicalize
