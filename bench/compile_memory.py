"""Compile memory and time of glimmer-train for large reference VLMs.

usage: .venv/bin/python bench/compile_memory.py [--models=7b,1.2b]
           [--seq=8192] [--dtype=bf16] [--spmd=]

Compiling needs the graph and its shapes, not the weights nor any training
state: `glimmer-train MODEL --data=BATCH --steps=0 --emit-cpp=FILE` writes
no weights and allocates no parameters, gradients or optimizer state. For
each model this compiles it as users do, with an empty program cache (so
the C++ build is timed too), and prints the wall time, its stages as
glimmer-train reports them, and the peak resident memory of glimmer-train
and the compiler it runs, beside the size of the model's f32 weights.

  7b    the reference VLM (examples/models/reference_vlm.py) at 7 B scale:
        dim 4096, 32 layers, 32 / 8 heads, SwiGLU 11008, vocabulary 32000,
        a 24-layer 1024-wide vision tower (16 heads, MLP 4096) on 224x224
        images in 14x14 patches; 6.26 B parameters. Built on the meta device
        and exported with torch.export (strict=False): the archive holds no
        weight data.
  1.2b  dim 2048, 16 layers, 16 / 8 heads, SwiGLU 5632, the same vision
        tower; 1.20 B parameters. Built with random weights and traced to
        TorchScript on a short batch (the archive holds the f32 weights,
        which the import reads).

The batch: one sample of --seq tokens, images covering half of them.
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

VISION = dict(image_size=224, patch_size=14, vision_dim=1024, n_vision_layers=24,
              n_vision_heads=16, vision_mlp_dim=4096)
MODELS = {
    "7b": dict(vocab_size=32000, dim=4096, n_layers=32, n_heads=32, n_kv_heads=8,
               ffn_hidden_dim=11008, image_token_id=31999, **VISION),
    "1.2b": dict(vocab_size=32000, dim=2048, n_layers=16, n_heads=16, n_kv_heads=8,
                 ffn_hidden_dim=5632, image_token_id=31999, **VISION),
}
NAMES = ["tokens", "labels", "positions", "images"]


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


def write_model(name, cfg, batch, tmp):
    """The model file: a meta-device torch.export archive for 7b, a traced
    TorchScript archive otherwise. Returns (path, parameter count)."""
    import torch
    import reference_vlm as ref

    if name == "7b":
        with torch.device("meta"):
            model = ref.ReferenceVLM(cfg)
        model.train()
        program = torch.export.export(
            model, (), {k: v.to("meta") for k, v in batch.items()}, strict=False)
        path = os.path.join(tmp, "model.pt2")
        torch.export.save(program, path)
    else:
        # The trace records ops, not sizes (glimmer-train takes every shape
        # from --data): a short batch traces the program for T tokens.
        model = ref.build_model(cfg)
        short = ref.make_batch(cfg, batch=1, seq_len=2 * cfg.patches_per_image,
                               images_per_sample=1, seed=0, placement="random")
        with torch.no_grad():
            traced = torch.jit.trace(model, tuple(short[n] for n in NAMES),
                                     check_trace=False)
        path = os.path.join(tmp, "model.pt")
        torch.jit.save(traced, path)
        del traced
    count = sum(p.numel() for p in model.parameters())
    return path, count


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="7b,1.2b")
    parser.add_argument("--seq", type=int, default=8192)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--spmd", default="")
    args = parser.parse_args()

    import reference_vlm as ref
    from safetensors.torch import save_file

    print(f"glimmer-train --steps=0 --dtype={args.dtype} --emit-cpp, T = {args.seq}"
          + (f", --spmd={args.spmd}" if args.spmd else ", unsharded"))
    print(f"{'model':>5}  {'params':>7}  {'f32 weights':>11}  {'total s':>7}  {'import s':>8}  "
          f"{'passes+emit s':>13}  {'c++ s':>6}  {'C++ lines':>9}  {'peak RSS':>9}")
    for name in args.models.split(","):
        cfg = ref.VLMConfig(**MODELS[name])
        images = max(1, args.seq // 2 // cfg.patches_per_image)
        batch = ref.make_batch(cfg, batch=1, seq_len=args.seq, images_per_sample=images,
                               seed=0, placement="random")
        with tempfile.TemporaryDirectory() as tmp:
            model, params = write_model(name, cfg, batch, tmp)
            data = os.path.join(tmp, "batch.safetensors")
            save_file({n: batch[n].contiguous() for n in NAMES}, data)
            cpp = os.path.join(tmp, "program.cpp")
            cmd = [os.path.join(BIN, "glimmer-train"), model, f"--data={data}", "--steps=0",
                   f"--dtype={args.dtype}", f"--cache-dir={os.path.join(tmp, 'cache')}",
                   f"--emit-cpp={cpp}"]
            if args.spmd:
                cmd.append(f"--spmd={args.spmd}")
            total, err, peak = run(cmd)
            imported = float(re.search(r"imported in ([0-9.]+) s", err).group(1))
            built = float(re.search(r"compiled in ([0-9.]+) s", err).group(1))
            lines = open(cpp).read().count("\n")
        print(f"{name:>5}  {params / 1e9:>6.2f}B  {params * 4 / 2**30:>9.2f} G  {total:>7.2f}  "
              f"{imported:>8.2f}  {total - imported - built:>13.2f}  {built:>6.2f}  "
              f"{lines:>9}  {peak / 2**30:>7.2f} G", flush=True)


if __name__ == "__main__":
    main()
