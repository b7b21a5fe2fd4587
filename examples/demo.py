"""The main demo: the bundled reference VLM trained unsharded and under an
SPMD layout (ranks as threads on the CPU), side by side.

usage: demo.py [--spmd=dp_shard=2,cp=2] [--steps=10] [--dtype=f32] [--plot=PATH]

Runs build/bin/glimmer-train twice on examples/fixtures/reference_vlm.pt
with the same batch and optimizer, prints a table of per-step loss and
grad norm with the largest difference, and writes a PNG of both runs' loss,
grad norm and tokens/s (glimmer.plot, as `glimmer plot` draws them).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("GLIMMER_BUILD_DIR", os.path.join(ROOT, "build"))
FIXTURES = os.path.join(ROOT, "examples", "fixtures")


def train(layout, steps, dtype, metrics):
    cmd = [os.path.join(BUILD, "bin", "glimmer-train"),
           os.path.join(FIXTURES, "reference_vlm.pt"),
           "--data=" + os.path.join(FIXTURES, "reference_vlm.batch.safetensors"),
           f"--steps={steps}", f"--dtype={dtype}", "--optimizer=adamw",
           "--lr=2e-3", "--max-norm=1.0", f"--metrics={metrics}"]
    if layout:
        cmd.append(f"--spmd={layout}")
    label = layout or "unsharded"
    print(f"[demo] glimmer-train {label}: compiling and training {steps} steps",
          file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        return [json.loads(line) for line in f]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spmd", default="dp_shard=2,cp=2")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    parser.add_argument("--plot", default="demo-loss.png")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        base = train("", args.steps, args.dtype, os.path.join(tmp, "base.jsonl"))
        sharded = train(args.spmd, args.steps, args.dtype,
                        os.path.join(tmp, "sharded.jsonl"))

    print()
    print(f"reference VLM, AdamW, {args.dtype}: unsharded vs --spmd={args.spmd}")
    header = (f"{'step':>4}  {'loss (1 rank)':>18}  {'loss (' + args.spmd + ')':>18}"
              f"  {'grad norm (1 rank)':>18}  {'grad norm (' + args.spmd + ')':>20}")
    print(header)
    print("-" * len(header))
    worst_loss = worst_norm = 0.0
    for a, b in zip(base, sharded):
        worst_loss = max(worst_loss, abs(a["loss"] - b["loss"]))
        worst_norm = max(worst_norm, abs(a["grad_norm"] - b["grad_norm"]))
        print(f"{a['step']:>4}  {a['loss']:>18.12f}  {b['loss']:>18.12f}"
              f"  {a['grad_norm']:>18.12f}  {b['grad_norm']:>20.12f}")
    print("-" * len(header))
    print(f"max |loss difference| = {worst_loss:.3e}, "
          f"max |grad norm difference| = {worst_norm:.3e}")

    sys.path.insert(0, os.path.join(BUILD, "python"))
    from glimmer.plot import plot_runs
    plot_runs([("unsharded", base), (f"--spmd={args.spmd}", sharded)],
              args.plot, title=f"Reference VLM, AdamW, {args.dtype}")
    print(f"loss, grad norm and tokens/s curves written to {args.plot}")


if __name__ == "__main__":
    main()
