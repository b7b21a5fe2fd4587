#!/usr/bin/env bash
# Installs what Glimmer needs on a fresh Debian 12 machine, then configures
# and builds incrementally into build/. Sourced by demo.sh and test.sh; safe
# to re-run (each step is skipped when already done).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GLIMMER_BUILD_DIR:-$ROOT/build}"
VENV="${GLIMMER_VENV:-$ROOT/.venv}"

source "$ROOT/scripts/common.sh"

# Debian packages (LLVM/MLIR 22 live in bookworm-security).
APT_PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
              ninja-build cmake g++ pybind11-dev libgtest-dev python3-venv
              nlohmann-json3-dev libxxhash-dev libtomlplusplus-dev
              universal-ctags)
install_debian_packages "${APT_PACKAGES[@]}"

# Python packages, pinned, in a project virtualenv.
if [ ! -x "$VENV/bin/python" ]; then
  log "creating virtualenv $VENV"
  python3 -m venv "$VENV"
fi
REQ="$ROOT/requirements.txt"
STAMP="$VENV/.requirements.sha256"
if [ ! -f "$STAMP" ] || ! sha256sum --status -c "$STAMP" 2>/dev/null; then
  log "installing Python packages from requirements.txt"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r "$REQ"
  sha256sum "$REQ" > "$STAMP"
fi

# Configure once, then build incrementally. The runtime's CUDA + NCCL
# backend is compiled and linked when the CUDA toolkit is installed (no GPU
# is needed to build it).
CUDA_ARGS=()
if [ -x /usr/local/cuda/bin/nvcc ]; then
  CUDA_ARGS=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
  # cudnn-frontend's headers for cuDNN's fused attention (only the headers
  # are used, hence --no-deps).
  CUDA_REQ="$ROOT/requirements-cuda.txt"
  CUDA_STAMP="$VENV/.requirements-cuda.sha256"
  if [ ! -f "$CUDA_STAMP" ] || ! sha256sum --status -c "$CUDA_STAMP" 2>/dev/null; then
    log "installing build-time packages from requirements-cuda.txt"
    "$VENV/bin/python" -m pip install -q --no-deps -r "$CUDA_REQ"
    sha256sum "$CUDA_REQ" > "$CUDA_STAMP"
  fi
  SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  CUDA_ARGS+=(-DGLIMMER_CUDNN_FRONTEND_INCLUDE_DIR="$SITE/include")
fi
if [ ! -f "$BUILD/build.ninja" ]; then
  log "configuring $BUILD"
  cmake -G Ninja -S "$ROOT" -B "$BUILD" "${CUDA_ARGS[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DPython3_EXECUTABLE="$VENV/bin/python" >&2
fi
log "building (ninja -C $BUILD)"
ninja -C "$BUILD" >&2
