#!/usr/bin/env bash
# Builds the seed corpora of the fuzz targets (fuzz/) under OUT (default
# build-sanitize/fuzz-corpus) from files already in the tree, so no corpus
# binaries are committed:
#   spmd-parser  every --spmd= / layout= value in the tests and docs
#   safetensors  the fixtures' example batches and buffers
#   manifest     fuzz/seeds/manifest (manifests of compiled fixture programs)
#   torchscript  the fixture archives of distinct models (reference_vlm,
#                hf_llava, hf_llava_gqa; their 4-layer and tied variants
#                add no new ops, only memory to every execution)
#   glimmer-opt  every .mlir of the lit suite and examples, one file per
#                `// -----` section
# Each seed is named by its content hash, so re-running adds nothing twice.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:-$ROOT/build-sanitize/fuzz-corpus}"
cd "$ROOT"

# put DIR < content: stores stdin as DIR/<sha1>.
put() {
  local tmp sum
  tmp="$(mktemp "$1/.seed.XXXXXX")"
  cat > "$tmp"
  if [ -s "$tmp" ]; then
    sum="$(sha1sum "$tmp" | cut -c1-40)"
    mv "$tmp" "$1/$sum"
  else
    rm -f "$tmp"
  fi
}

mkdir -p "$OUT"/{spmd-parser,safetensors,manifest,torchscript,glimmer-opt}

grep -rhoE -- "--spmd=[^ )\`]*|layout=[^ }\`)]*|GLIMMER_SPMD=[^ ]*" \
    test docs README.md python_bindings/tests runtime/tests/python |
  sed -E "s/^(--spmd=|layout=|GLIMMER_SPMD=)//; s/^['\"]//; s/['\":,.]*$//" |
  sort -u | while IFS= read -r layout; do
    printf '%s' "$layout" | put "$OUT/spmd-parser"
  done

for f in examples/fixtures/*.batch.safetensors \
         examples/fixtures/*.buffers.safetensors; do
  put "$OUT/safetensors" < "$f"
done

for f in fuzz/seeds/manifest/*; do
  put "$OUT/manifest" < "$f"
done

for f in examples/fixtures/{reference_vlm,hf_llava,hf_llava_gqa}.pt; do
  put "$OUT/torchscript" < "$f"
done

# Sections as -split-input-file cuts them; RUN/CHECK comments stay in, they
# are comments to the parser.
find test examples -name '*.mlir' | sort | while IFS= read -r f; do
  awk -v dir="$OUT/glimmer-opt" '
    /^\/\/ -----/ { n++; next }
    { sections[n] = sections[n] $0 "\n" }
    END { for (i = 0; i <= n; i++) if (i in sections) printf "%s%c", sections[i], 0 }
  ' "$f" | while IFS= read -r -d '' section; do
    printf '%s' "$section" | put "$OUT/glimmer-opt"
  done
done

for d in "$OUT"/*/; do
  printf '%s: %s seeds\n' "$(basename "$d")" "$(find "$d" -type f | wc -l)"
done
