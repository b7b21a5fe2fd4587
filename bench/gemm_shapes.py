"""The medium model's GEMMs through glimmer's runtime beside PyTorch's, in
one run on one GPU.

    PYTHONPATH=RT/python python3 bench/gemm_shapes.py [--seq 32768] \
        [--vision-tokens 16384] [--kernels]

RT is a runtime build with `-DGLIMMER_RT_PYTHON=ON` and CUDA. For every
linear layer of bench/gpu_step_time.py's medium model (decoder
projections at `--seq` tokens, vision-encoder and projector layers, with
their biases, at `--vision-tokens`, the LM head) it times the three bf16
products a training step runs: the forward `linear` (x W^T + b), the input
gradient dY W and the weight gradient dY^T X (`matmul` with the first
operand transposed), each through the runtime (`linear` / `matmul` of its
Python module: cuBLASLt by default, `GLIMMER_CUDA_GEMM=cublas` for
cublasGemmStridedBatchedEx) and through PyTorch (`F.linear`, `@`). Each
figure is the median of three trials of ten calls queued back to back
between two device synchronizations, in ms per call; the last line adds
them up with each layer's count per step. `--kernels` also names the
kernels each ran (PyTorch's profiler sees the runtime's launches too).
"""

import argparse
import sys

import numpy as np
import torch
import torch.nn.functional as F

from glimmer import _runtime as rt

from device_timing import sync, timed


def kernel_names(fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        sync()
    return ", ".join(e.key[:70] for e in prof.key_averages() if e.device_time_total > 0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seq", type=int, default=32768)
    p.add_argument("--vision-tokens", type=int, default=16384)
    p.add_argument("--kernels", action="store_true")
    args = p.parse_args()
    if not torch.cuda.is_available() or rt.cuda_device_count() == 0:
        sys.exit("gemm_shapes.py: needs a CUDA device")
    T, Tv = args.seq, args.vision_tokens
    D, Dkv, Fh, V, Dv, Mv = 1024, 512, 2816, 32000, 1024, 4096
    # (layer, rows, out features, in features, bias, layers of it per step)
    layers = [("wq", T, D, D, False, 8), ("wk, wv", T, Dkv, D, False, 16),
              ("wo", T, D, D, False, 8), ("w1, w3", T, Fh, D, False, 16),
              ("w2", T, D, Fh, False, 8), ("lm head", T, V, D, False, 1),
              ("vision qkvo", Tv, Dv, Dv, True, 16), ("vision fc1", Tv, Mv, Dv, True, 4),
              ("vision fc2", Tv, Dv, Mv, True, 4), ("projector", Tv, D, Dv, True, 2)]
    gen = torch.Generator(device="cuda").manual_seed(0)

    def rnd(*shape):
        return torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=gen) * 0.05

    def to_rt(t):
        x = rt.Tensor(np.ascontiguousarray(t.float().cpu().numpy())).to("cuda")
        return rt.convert(x, rt.DType.BF16)

    print(f"{torch.cuda.get_device_name()}: bf16 GEMMs of the medium model, {T} tokens, "
          f"{Tv} vision tokens; ms per call, median of 3 trials of 10 calls\n")
    print("| layer | product | M x N x K | per step | glimmer ms | TFLOP/s | PyTorch ms | TFLOP/s |")
    print("|---|---|---|---|---|---|---|---|")
    total = {"glimmer": 0.0, "PyTorch": 0.0}
    for name, M, N, K, bias, count in layers:
        x, w, dy = rnd(M, K), rnd(N, K), rnd(M, N)
        b = rnd(N) if bias else None
        gx, gw, gdy = to_rt(x), to_rt(w), to_rt(dy)
        gb = to_rt(b) if bias else None
        products = [
            ("x W^T" + (" + b" if bias else ""), (M, N, K),
             lambda: rt.linear(gx, gw, gb), lambda: F.linear(x, w, b)),
            ("dY W", (M, K, N), lambda: rt.matmul(gdy, gw), lambda: dy @ w),
            ("dY^T X", (N, K, M), lambda: rt.matmul(gdy, gx, True, False), lambda: dy.t() @ x),
        ]
        for label, (m, n, k), g, t in products:
            flop = 2 * m * n * k
            tg, tt = timed(g, 10, 3, 2), timed(t, 10, 3, 2)
            total["glimmer"] += tg * count
            total["PyTorch"] += tt * count
            print(f"| {name} | {label} | {m} x {n} x {k} | {count} | {tg:.3f} | "
                  f"{flop / tg / 1e9:.0f} | {tt:.3f} | {flop / tt / 1e9:.0f} |", flush=True)
            if args.kernels:
                print(f"|  | kernels | | | {kernel_names(g)} | | {kernel_names(t)} | |")
        del x, w, dy, gx, gw, gdy
    print(f"\nper step (ms): glimmer {total['glimmer']:.2f}, PyTorch {total['PyTorch']:.2f}")


if __name__ == "__main__":
    main()
