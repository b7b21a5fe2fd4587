"""Compile the reference VLM and train it from Python, end to end.

    PYTHONPATH=build/python .venv/bin/python examples/train_vlm.py

glimmer.compile() imports the TorchScript fixture, runs the pipeline (with
autodiff and the AdamW update compiled into @apply_step), emits C++ and
compiles it into a shared library (cached by content in the per-user cache,
$GLIMMER_CACHE_DIR or ~/.cache/glimmer), then trains in-process on the CPU: the same compiled
code paths as `glimmer-train`, so the numbers are the same too.
"""

import sys
from pathlib import Path

import numpy as np

import glimmer

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MODEL = FIXTURES / "reference_vlm.pt"
BATCH = FIXTURES / "reference_vlm.batch.safetensors"
WATCHED = "output.weight"


def main():
    # Compiling happens under the active SPMD layout; the default (one rank)
    # is the one that runs today.
    with glimmer.SpmdContext():
        program = glimmer.compile(MODEL, BATCH)
    print(f"compiled {MODEL.name}: {program.mlir.count(chr(10))} lines of "
          f"MLIR, {program.cpp.count(chr(10))} lines of C++")

    before = np.linalg.norm(program.parameter(WATCHED))
    results = program.train(
        BATCH, steps=5, optimizer="adamw", lr=1e-3,
        callback=lambda r: print(f"step {r['step']} | loss {r['loss']:.6f} | "
                                 f"grad_norm {r['grad_norm']:.6f} | "
                                 f"{r['seconds'] * 1e3:.1f} ms"))
    after = np.linalg.norm(program.parameter(WATCHED))
    print(f"|{WATCHED}|: {before:.6f} -> {after:.6f}")
    print(f"loss after training: {program.forward(BATCH):.6f}")

    if not results[-1]["loss"] < results[0]["loss"] or before == after:
        sys.exit("training did not make progress")


if __name__ == "__main__":
    main()
