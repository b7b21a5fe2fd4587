#!/usr/bin/env bash
# Configures a second runtime build like an existing one (its build type,
# CUDA architectures, third-party headers and NCCL, read from its
# CMakeCache.txt), with extra CMake arguments, and builds the given targets.
#
#   configure-like.sh EXISTING_BUILD NEW_BUILD "TARGETS" [cmake args...]
#
# The configure log is NEW_BUILD.configure.log.
set -euo pipefail
existing=$1 new=$2 targets=$3
shift 3
src=$(cd "$(dirname "$0")/../.." && pwd)
args=()
for var in CMAKE_BUILD_TYPE CMAKE_CUDA_ARCHITECTURES GLIMMER_THIRD_PARTY_INCLUDE_DIR \
           GLIMMER_NCCL_HOME GLIMMER_ENABLE_CUDA; do
  value=$(sed -n "s/^$var:[A-Z]*=//p" "$existing/CMakeCache.txt")
  [ -n "$value" ] && args+=("-D$var=$value")
done
cmake -S "$src/runtime" -B "$new" -G Ninja "${args[@]}" "$@" > "$new.configure.log" 2>&1 \
  || { cat "$new.configure.log"; exit 1; }
# shellcheck disable=SC2086
ninja -C "$new" $targets > "$new.build.log" 2>&1 || { tail -30 "$new.build.log"; exit 1; }
