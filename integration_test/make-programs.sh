#!/usr/bin/env bash
# Generates the programs the GPU integration tests train, on a machine with
# the compiler (the GPU hosts have no LLVM): f32, AdamW (lr 1e-3), clipping
# at 1.0, for each fixture unsharded and for the multi-GPU layouts; and the
# bf16 mixed-precision programs (--dtype=bf16: f32 parameters, optimizer
# state and loss, bf16 compute), unsharded and cp=2, as
# <model>.bf16[.<layout>].cpp, and unsharded with autocast's precision
# (--dtype=bf16-autocast) as <model>.bf16-autocast.cpp. They bind the same
# weights and batches.
#
#   integration_test/make-programs.sh [OUTDIR]   (default: .gpu/programs)
#
# GLIMMER_EXTRA_LAYOUTS / GLIMMER_EXTRA_BF16_LAYOUTS add layouts (e.g.
# "dp_shard=2,cp=2") to the f32 / bf16 programs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/.gpu/programs}
train=${GLIMMER_TRAIN:-$root/build/bin/glimmer-train}
mkdir -p "$out"
# The runtime's header-only dependencies (Debian's nlohmann-json3-dev,
# libxxhash-dev and libtomlplusplus-dev, PyPI's nvidia-cudnn-frontend), which the GPU hosts do not have: run-on-gpu.sh builds the
# runtime with -DGLIMMER_THIRD_PARTY_INCLUDE_DIR pointing here.
third_party=$out/../include
mkdir -p "$third_party"
cp -r /usr/include/nlohmann "$third_party/"
cp /usr/include/xxhash.h "$third_party/"
cp -r /usr/include/toml++ "$third_party/"
# cudnn-frontend (header-only; scripts/setup.sh installs its wheel into the
# venv) for cuDNN's fused attention.
site=$("$root/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ -f "$site/include/cudnn_frontend.h" ]; then
  cp -r "$site/include/." "$third_party/"
fi
translate=${GLIMMER_TRANSLATE:-$root/build/bin/glimmer-translate}
# program MODEL DTYPE [LAYOUT]: <model>.<dtype>[.<layout>].cpp
program() {
  local model=$1 dtype=$2 layout=${3:-}
  local name=$model.$dtype${layout:+.${layout//[=,]/}}
  "$train" --quiet --steps=0 --max-norm=1.0 --dtype="$dtype" \
    "$root/examples/fixtures/$model.pt" \
    --data="$root/examples/fixtures/$model.batch.safetensors" \
    ${layout:+--spmd=$layout} --emit-cpp="$out/$name.cpp"
  echo "wrote $out/$name.cpp"
}
# The weights as the programs bind them (the state_dict plus buffers that
# TorchScript does not mark as non-persistent).
weights() {
  "$translate" --import-torchscript "$root/examples/fixtures/$1.pt" \
    --example-inputs="$root/examples/fixtures/$1.batch.safetensors" \
    --weights-out="$out/$1.weights.safetensors" -o /dev/null
}
for model in reference_vlm hf_llava; do
  weights "$model"
  for layout in "" cp=2 dp_shard=2 ${GLIMMER_EXTRA_LAYOUTS:-}; do
    program "$model" f32 "$layout"
  done
  for layout in "" cp=2 dp_shard=2 ${GLIMMER_EXTRA_BF16_LAYOUTS:-}; do
    program "$model" bf16 "$layout"
  done
  program "$model" bf16-autocast
done
# Masks beyond causal on one GPU: PaliGemma's prefix-LM (blocks), Gemma 3's
# image blocks and sliding window.
for model in hf_paligemma hf_gemma3; do
  weights "$model"
  program "$model" f32
  program "$model" bf16
  program "$model" bf16-autocast
done
# A layout with more ranks than the 2-GPU machine has (run-errors.test).
"$train" --quiet --steps=0 --dtype=f32 "$root/examples/fixtures/reference_vlm.pt" \
  --data="$root/examples/fixtures/reference_vlm.batch.safetensors" \
  --spmd=cp=4 --emit-cpp="$out/reference_vlm.f32.cp4.cpp"
echo "wrote $out/reference_vlm.f32.cp4.cpp"
# A stream of 8 distinct batches of the 4-layer reference VLM and its f32
# program (cuda-graph.test: a replayed step reads each step's shard).
weights reference_vlm_4l
program reference_vlm_4l f32
rm -rf "$out/stream"
"$root/.venv/bin/python" "$root/test/E2E/Inputs/make_stream.py" "$out/stream" 8
echo "wrote $out/stream"
