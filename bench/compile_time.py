"""Compile time of the whole pipeline for the reference VLM at 8, 32 and 128
decoder layers.

usage: PYTHONPATH=build/python .venv/bin/python bench/compile_time.py
           [--layers=8,32,128] [--spmd=cp=2] [--cxx-max-layers=32]

For each depth: the reference VLM (examples/models/reference_vlm.py, tiny
widths, `n_layers` decoder blocks) is traced to TorchScript, then timed
stage by stage with the project's tools, as glimmer-train runs them:
  import     glimmer-translate --import-torchscript
  pipeline   glimmer-opt: recognize-vision-merge, canonicalize, cse,
             the SPMD pipeline (glimmer-spmd-pipeline for --spmd: prepare the
             batch and CP inputs, seed, propagate, shard parameters, partition),
             autodiff (AdamW), canonicalize, cse
  emit       glimmer-translate --emit-cpp
  c++        c++ -O0 of the generated program (the driver's flags), up to
             --cxx-max-layers layers
Prints seconds per stage and the sizes of the IR and C++.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(os.environ.get("GLIMMER_BUILD_DIR", os.path.join(ROOT, "build")), "bin")
sys.path.insert(0, os.path.join(ROOT, "examples", "models"))


def timed(cmd):
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", default="8,32,128")
    parser.add_argument("--spmd", default="cp=2")
    parser.add_argument("--cxx-max-layers", type=int, default=128)
    args = parser.parse_args()

    import torch
    from safetensors.torch import save_file
    import reference_vlm as ref

    print(f"{'layers':>6}  {'import s':>8}  {'pipeline s':>10}  {'emit s':>7}  "
          f"{'c++ s':>7}  {'IR ops':>8}  {'C++ lines':>9}")
    for layers in [int(x) for x in args.layers.split(",")]:
        cfg = ref.VLMConfig(n_layers=layers)
        model = ref.build_model(cfg)
        batch = ref.make_batch(cfg, batch=2, seq_len=16, images_per_sample=1, seed=0)
        with tempfile.TemporaryDirectory() as tmp:
            names = ["tokens", "labels", "positions", "images"]
            traced = torch.jit.trace(model, tuple(batch[n] for n in names), check_trace=False)
            pt = os.path.join(tmp, "model.pt")
            torch.jit.save(traced, pt)
            data = os.path.join(tmp, "batch.safetensors")
            save_file({n: batch[n].contiguous() for n in names}, data)
            mlir, opt, cpp, so = (os.path.join(tmp, f) for f in
                                  ("m.mlir", "o.mlir", "p.cpp", "p.so"))
            t_import = timed([os.path.join(BIN, "glimmer-translate"), "--import-torchscript",
                              pt, f"--example-inputs={data}", "-o", mlir])
            t_pipe = timed([os.path.join(BIN, "glimmer-opt"), mlir,
                            "--glimmer-recognize-vision-merge", "--canonicalize", "--cse",
                            f"--spmd={args.spmd}", "--glimmer-spmd-pipeline",
                            "--canonicalize", "--glimmer-autodiff",
                            "--canonicalize", "--cse", "-o", opt])
            t_emit = timed([os.path.join(BIN, "glimmer-translate"), "--emit-cpp", opt, "-o", cpp])
            ops = sum(1 for line in open(opt) if " = glimmer." in line or "glimmer." in line.strip()[:9])
            lines = sum(1 for _ in open(cpp))
            t_cxx = float("nan")
            if layers <= args.cxx_max_layers:
                t_cxx = timed(["c++", "-std=c++17", "-O0", "-fPIC", "-shared", "-w",
                               "-I", os.path.join(ROOT, "runtime", "include"),
                               "-I", os.path.join(ROOT, "include"), cpp, "-o", so])
        print(f"{layers:>6}  {t_import:>8.2f}  {t_pipe:>10.2f}  {t_emit:>7.2f}  "
              f"{t_cxx:>7.2f}  {ops:>8}  {lines:>9}", flush=True)


if __name__ == "__main__":
    main()
