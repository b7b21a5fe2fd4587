"""Glimmer's CUDA attention kernels beside PyTorch's SDPA kernels, at one
shape, in one run on one GPU.

    PYTHONPATH=RT/python python3 bench/attention_kernels.py \
        [--seq 8192] [--heads 16] [--kv-heads 8] [--head-dim 64] \
        [--dtypes f32,bf16] [--iters 10] [--warmup 3]

RT is a runtime build with `-DGLIMMER_RT_PYTHON=ON` and CUDA (what
`integration_test/run-on-gpu.sh` builds). For each dtype it times causal
self-attention over [1, heads, seq, head-dim] queries and [1, kv-heads, seq,
head-dim] keys and values (grouped-query attention when they differ), the
forward alone and the forward plus the backward:

- glimmer: `attention` and `attention_grad` of the runtime's Python module,
  i.e. the runtime's own kernels (`runtime/cuda/Attention.cu`: 3xTF32
  tensor-core kernels in f32, `mma.sync` bf16 kernels; the Python module
  leaves cuDNN off, see docs/CudaBackend.md);
- PyTorch: `scaled_dot_product_attention(is_causal=True)` restricted to one
  backend: the memory-efficient kernel for f32 (the only fused one with
  f32, which is what PyTorch eager runs in the f32 benchmark of
  bench/gpu_step_time.py), and the flash, cuDNN and memory-efficient
  kernels for bf16. Keys and values are repeated to the query heads
  outside the timed region (not every backend takes grouped queries).

Each figure is the median over `--repeats` trials of `--iters` calls queued
back to back between two device synchronizations (host clock), in ms per
call, with the model TFLOP/s of causal attention (forward 2 * 2 * T^2/2 * D
per head, backward 2.5 times that). `--ncu` instead runs one warm-up call
and then one forward and one backward of glimmer's f32 kernels only, for
`ncu --kernel-name regex:attn --launch-skip ...` to read their counters.
"""

import argparse
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from glimmer import _runtime as rt

from device_timing import sync, timed


def glimmer_inputs(q, k, v, dout, dtype):
    def to_rt(t):
        x = rt.Tensor(np.ascontiguousarray(t.float().cpu().numpy())).to("cuda")
        return rt.convert(x, rt.DType.BF16) if dtype == "bf16" else x
    return tuple(to_rt(t) for t in (q, k, v, dout))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seq", type=int, default=8192)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--dtypes", default="f32,bf16")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--ncu", action="store_true")
    args = p.parse_args()
    if not torch.cuda.is_available() or rt.cuda_device_count() == 0:
        sys.exit("attention_kernels.py: needs a CUDA device")

    T, H, Hkv, D = args.seq, args.heads, args.kv_heads, args.head_dim
    if H % Hkv:
        sys.exit(f"attention_kernels.py: --heads {H} is not a multiple of --kv-heads {Hkv}")
    scale = D ** -0.5
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(1, H, T, D, generator=gen)
    k = torch.randn(1, Hkv, T, D, generator=gen)
    v = torch.randn(1, Hkv, T, D, generator=gen)
    dout = torch.randn(1, H, T, D, generator=gen)
    fwd_flop = 4 * H * T * T / 2 * D
    name = torch.cuda.get_device_name()

    if args.ncu:
        gq, gk, gv, gd = glimmer_inputs(q, k, v, dout, "f32")
        for _ in range(2):  # the first pair is the warm-up
            out, lse = rt.attention(gq, gk, gv, causal=True, scale=scale)
            rt.attention_grad(gd, gq, gk, gv, out, lse, causal=True, scale=scale)
        sync()
        return

    print(f"{name}: causal attention, B = 1, T = {T}, {H} query heads, {Hkv} key/value "
          f"heads, head dim {D}; median of {args.repeats} trials of {args.iters} calls, "
          f"after {args.warmup}\n")
    print("| dtype | kernel | forward ms | TFLOP/s | forward + backward ms | TFLOP/s | backward ms (difference) |")
    print("|---|---|---|---|---|---|---|")

    def row(dtype, label, f_ms, fb_ms):
        print(f"| {dtype} | {label} | {f_ms:.3f} | {fwd_flop / f_ms / 1e9:.1f} | {fb_ms:.3f} | "
              f"{3.5 * fwd_flop / fb_ms / 1e9:.1f} | {fb_ms - f_ms:.3f} |", flush=True)

    for dtype in [d for d in args.dtypes.split(",") if d]:
        if dtype not in ("f32", "bf16"):
            sys.exit(f"attention_kernels.py: unknown dtype '{dtype}' (f32 or bf16)")
        gq, gk, gv, gd = glimmer_inputs(q, k, v, dout, dtype)

        def g_fwd():
            return rt.attention(gq, gk, gv, causal=True, scale=scale)

        def g_both():
            out, lse = g_fwd()
            return rt.attention_grad(gd, gq, gk, gv, out, lse, causal=True, scale=scale)

        t = (lambda x: x.cuda().bfloat16()) if dtype == "bf16" else (lambda x: x.cuda())
        tq = t(q).requires_grad_()
        tk = t(k.repeat_interleave(H // Hkv, 1)).requires_grad_()
        tv = t(v.repeat_interleave(H // Hkv, 1)).requires_grad_()
        td = t(dout)
        row(dtype, "glimmer", timed(g_fwd, args.iters, args.repeats, args.warmup),
            timed(g_both, args.iters, args.repeats, args.warmup))
        backends = ([("memory-efficient", SDPBackend.EFFICIENT_ATTENTION)] if dtype == "f32" else
                    [("flash", SDPBackend.FLASH_ATTENTION), ("cuDNN", SDPBackend.CUDNN_ATTENTION),
                     ("memory-efficient", SDPBackend.EFFICIENT_ATTENTION)])
        for label, backend in backends:
            def t_fwd():
                with torch.no_grad(), sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(tq, tk, tv, is_causal=True, scale=scale)

            def t_both():
                with sdpa_kernel(backend):
                    out = F.scaled_dot_product_attention(tq, tk, tv, is_causal=True, scale=scale)
                return torch.autograd.grad(out, (tq, tk, tv), td)

            try:
                row(dtype, f"PyTorch {label}", timed(t_fwd, args.iters, args.repeats, args.warmup),
                    timed(t_both, args.iters, args.repeats, args.warmup))
            except RuntimeError as e:  # a backend that declines the shape
                print(f"| {dtype} | PyTorch {label} | not run: {str(e).splitlines()[0][:100]} |||||")


if __name__ == "__main__":
    main()
