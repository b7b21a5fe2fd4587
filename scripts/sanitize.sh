#!/usr/bin/env bash
# The ASan + UBSan build (clang, build-sanitize/), which is also the libFuzzer
# build: every library and tool is compiled with
# -fsanitize=address,undefined and libFuzzer's coverage hooks, and fuzz/
# holds the fuzz targets (docs/Sanitizers.md, docs/Fuzzing.md).
#
#   scripts/sanitize.sh          build everything, run the whole suite
#                                (lit + pytest through ctest)
#   scripts/sanitize.sh ci       build the unit tests and fuzz targets only;
#                                run the unit tests and each fuzz target
#                                briefly on its seed corpus (scripts/test.sh)
#
# Installs clang and its sanitizer runtimes from Debian when missing; the
# rest (LLVM/MLIR, the virtualenv) comes from scripts/setup.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE="${1:-suite}"
case "$MODE" in suite|ci) ;; *) echo "usage: $0 [suite|ci]" >&2; exit 2 ;; esac
SAN_BUILD="${GLIMMER_SANITIZE_BUILD_DIR:-$ROOT/build-sanitize}"
VENV="${GLIMMER_VENV:-$ROOT/.venv}"

source "$ROOT/scripts/common.sh"

if [ ! -x "$VENV/bin/python" ] || ! dpkg -s libmlir-22-dev >/dev/null 2>&1; then
  source "$ROOT/scripts/setup.sh"
fi

# clang 22: the same LLVM release as the MLIR the project builds against.
install_debian_packages clang-22 libclang-rt-22-dev
LLVM_BIN=/usr/lib/llvm-22/bin

if [ ! -f "$SAN_BUILD/build.ninja" ]; then
  log "configuring $SAN_BUILD (clang, address+undefined, fuzzers)"
  # -O1: the usual optimisation for sanitizer builds (readable reports,
  # about half the compile time of -O3). NDEBUG as in build/, since the
  # LLVM and MLIR libraries are release builds.
  cmake -G Ninja -S "$ROOT" -B "$SAN_BUILD" \
    -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -gline-tables-only -DNDEBUG" \
    "-DCMAKE_C_FLAGS_RELEASE=-O1 -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_COMPILER="$LLVM_BIN/clang" \
    -DCMAKE_CXX_COMPILER="$LLVM_BIN/clang++" \
    -DGLIMMER_SANITIZE=address,undefined \
    -DGLIMMER_ENABLE_FUZZERS=ON \
    -DGLIMMER_ENABLE_CUDA=OFF \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DPython3_EXECUTABLE="$VENV/bin/python" >&2
fi

# Symbolized reports. The other sanitizer options are built into every
# executable (cmake/SanitizerDefaults.cpp); leak checking stays on.
export ASAN_SYMBOLIZER_PATH="$LLVM_BIN/llvm-symbolizer"
# Programs compiled and cached by build/ link build/'s runtime; keep them
# apart from this build's.
export GLIMMER_CACHE_DIR="${GLIMMER_CACHE_DIR:-$SAN_BUILD/program-cache}"

start=$SECONDS
cd "$SAN_BUILD"
if [ "$MODE" = ci ]; then
  log "building unit tests and fuzz targets ($SAN_BUILD)"
  ninja -C "$SAN_BUILD" glimmer-unittest-binaries glimmer-fuzzers >&2
  log "built in $((SECONDS - start)) s; running unit tests and fuzz smoke runs"
  ctest --output-on-failure -L 'unit|fuzz'
else
  log "building everything ($SAN_BUILD)"
  ninja -C "$SAN_BUILD" >&2
  log "built in $((SECONDS - start)) s; running the whole suite"
  # The unit tests also run through lit; -LE unit skips their second run.
  ctest --output-on-failure -LE unit
fi
log "sanitizer $MODE run: $((SECONDS - start)) s in all"
