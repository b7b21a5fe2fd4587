"""Compile time and memory of glimmer-train for the reference VLM at growing
depth.

usage: .venv/bin/python bench/compile_time.py [--layers=8,64,128] [--spmd=]
           [--dtype=f32]

For each depth: the reference VLM (examples/models/reference_vlm.py, its
tiny default widths, `n_layers` decoder blocks) is traced to TorchScript,
then compiled as users compile it, `glimmer-train MODEL --data=BATCH
--steps=0` with an empty program cache (so the C++ build is timed too).
Prints, per depth: the wall time of the whole compile, its stages as
glimmer-train reports them (import; compile pipeline and lowering to C++;
the C++ build), the generated C++'s size, the number of functions the
repeated layers were outlined into, and the peak resident memory of
glimmer-train and the compiler it runs; then the ratio of each depth's
time to the shallowest one's.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(os.environ.get("GLIMMER_BUILD_DIR", os.path.join(ROOT, "build")), "bin")
sys.path.insert(0, os.path.join(ROOT, "examples", "models"))


def run(cmd):
    """Runs cmd; returns (seconds, its stderr, peak RSS in bytes of it and
    the processes it waited for)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err}")
    return seconds, err, usage.ru_maxrss * 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", default="8,64,128")
    parser.add_argument("--spmd", default="")
    parser.add_argument("--dtype", default="f32")
    args = parser.parse_args()

    import torch
    from safetensors.torch import save_file
    import reference_vlm as ref

    print(f"reference VLM, --dtype={args.dtype}"
          + (f", --spmd={args.spmd}" if args.spmd else ", unsharded"))
    print(f"{'layers':>6}  {'total s':>8}  {'import s':>8}  {'passes+emit s':>13}  "
          f"{'c++ s':>6}  {'C++ lines':>9}  {'layer fns':>9}  {'peak RSS':>9}")
    first = None
    rows = []
    for layers in [int(x) for x in args.layers.split(",")]:
        cfg = ref.VLMConfig(n_layers=layers)
        model = ref.build_model(cfg)
        batch = ref.make_batch(cfg, batch=2, seq_len=16, images_per_sample=1, seed=0)
        names = ["tokens", "labels", "positions", "images"]
        with tempfile.TemporaryDirectory() as tmp:
            with torch.no_grad():
                traced = torch.jit.trace(model, tuple(batch[n] for n in names),
                                         check_trace=False)
            pt = os.path.join(tmp, "model.pt")
            torch.jit.save(traced, pt)
            data = os.path.join(tmp, "batch.safetensors")
            save_file({n: batch[n].contiguous() for n in names}, data)
            cpp = os.path.join(tmp, "program.cpp")
            cmd = [os.path.join(BIN, "glimmer-train"), pt, f"--data={data}", "--steps=0",
                   f"--dtype={args.dtype}", f"--cache-dir={os.path.join(tmp, 'cache')}",
                   f"--emit-cpp={cpp}"]
            if args.spmd:
                cmd.append(f"--spmd={args.spmd}")
            total, err, peak = run(cmd)
            imported = float(re.search(r"imported in ([0-9.]+) s", err).group(1))
            built = float(re.search(r"compiled in ([0-9.]+) s", err).group(1))
            source = open(cpp).read()
            lines = source.count("\n")
            outlined = len(set(re.findall(r"static void (\w+_layer\d+)\(", source)))
        first = first or total
        rows.append((layers, total))
        print(f"{layers:>6}  {total:>8.2f}  {imported:>8.2f}  {total - imported - built:>13.2f}  "
              f"{built:>6.2f}  {lines:>9}  {outlined:>9}  {peak / 2**30:>7.2f} G", flush=True)
    print()
    for layers, total in rows[1:]:
        print(f"{layers} layers: {total / rows[0][1]:.2f}x the time of {rows[0][0]}")


if __name__ == "__main__":
    main()
