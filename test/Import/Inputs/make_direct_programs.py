#!/usr/bin/env python3
"""torch.export archives that call Core ATen ops directly (the ops of the
OpInfo harness's direct cases, scripts/opinfo_direct.py), decomposed with
the op left in, for ops-core-aten-direct.test.

    python make_direct_programs.py OUTDIR

writes NAME.pt2 and NAME.safetensors (its example inputs) for every
program below, and batch_norm_running_training.pt, a TorchScript trace of
_native_batch_norm_legit in training with running statistics (an export
functionalizes that call into another op).
"""

import os
import sys
import warnings

import torch
from safetensors.torch import save_file

aten = torch.ops.aten
torch.manual_seed(0)


def f32(*s):
    return torch.randn(*s)


# name -> (op kept in the program, fn(**inputs), inputs)
PROGRAMS = {
    # Batch statistics (no running stats): out, save_mean, save_rstd.
    "batch_norm_no_stats": (
        aten._native_batch_norm_legit.no_stats,
        lambda x, w, b: aten._native_batch_norm_legit.no_stats(
            x, w, b, True, 0.1, 1e-5),
        dict(x=f32(2, 3, 4), w=f32(3), b=f32(3))),
    "batch_norm_no_training": (
        aten._native_batch_norm_legit_no_training.default,
        lambda x, m, v: aten._native_batch_norm_legit_no_training(
            x, None, None, m, v, 0.1, 1e-5)[0],
        dict(x=f32(2, 3, 4), m=f32(3), v=f32(3).abs())),
    "layer_norm_backward": (
        aten.native_layer_norm_backward.default,
        lambda g, x, m, r, w: aten.native_layer_norm_backward(
            g, x, [4], m, r, w, None, [True, True, False])[:2],
        dict(g=f32(2, 4), x=f32(2, 4), m=f32(2, 1), r=f32(2, 1).abs(),
             w=f32(4))),
    "group_norm_backward": (
        aten.native_group_norm_backward.default,
        lambda g, x, m, r: aten.native_group_norm_backward(
            g, x, m, r, None, 2, 4, 3, 2, [True, False, True])[::2],
        dict(g=f32(2, 4, 3), x=f32(2, 4, 3), m=f32(2, 2), r=f32(2, 2).abs())),
    # Only grad_weight (output_mask [False, True, False]).
    "conv_backward_weight": (
        aten.convolution_backward.default,
        lambda g, x, w: aten.convolution_backward(
            g, x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1,
            [False, True, False])[1],
        dict(g=f32(1, 2, 3, 3), x=f32(1, 3, 5, 5), w=f32(2, 3, 3, 3))),
    # grad_input at stride 2: grad_output spread out, padded, convolved.
    "conv_backward_input": (
        aten.convolution_backward.default,
        lambda g, x, w: aten.convolution_backward(
            g, x, w, [2], [2, 2], [1, 1], [1, 1], False, [0, 0], 1,
            [True, False, True])[::2],
        dict(g=f32(1, 2, 3, 3), x=f32(1, 3, 5, 5), w=f32(2, 3, 3, 3))),
    "conv_backward_transposed": (
        aten.convolution_backward.default,
        lambda g, x, w: aten.convolution_backward(
            g, x, w, None, [1, 1], [0, 0], [1, 1], True, [0, 0], 1,
            [True, False, False])[0],
        dict(g=f32(1, 3, 7, 7), x=f32(1, 2, 5, 5), w=f32(2, 3, 3, 3))),
    "avg_pool2d_backward": (
        aten.avg_pool2d_backward.default,
        lambda g, x: aten.avg_pool2d_backward(
            g, x, [2, 2], [2, 2], [0, 0], False, True, None),
        dict(g=f32(1, 2, 2, 3), x=f32(1, 2, 4, 6))),
    "adaptive_avg_pool2d_backward": (
        aten._adaptive_avg_pool2d_backward.default,
        lambda g, x: aten._adaptive_avg_pool2d_backward(g, x),
        dict(g=f32(1, 2, 2, 3), x=f32(1, 2, 5, 6))),
    "embedding_dense_backward": (
        aten.embedding_dense_backward.default,
        lambda g, i: aten.embedding_dense_backward(g, i, 5, 1, True),
        dict(g=f32(4, 3), i=torch.tensor([0, 1, 3, 3]))),
    "col2im": (
        aten.col2im.default,
        lambda x: aten.col2im(x, [3, 3], [2, 2], [1, 1], [0, 0], [1, 1]),
        dict(x=f32(1, 4, 4))),
    "reflection_pad2d": (
        aten.reflection_pad2d.default,
        lambda x: aten.reflection_pad2d(x, [1, 2, 0, 1]),
        dict(x=f32(1, 3, 4))),
    "replication_pad3d": (
        aten.replication_pad3d.default,
        lambda x: aten.replication_pad3d(x, [0, 0, 0, 0, 2, 1]),
        dict(x=f32(1, 2, 2, 2))),
    "select_scatter": (
        aten.select_scatter.default,
        lambda x, s: aten.select_scatter(x, s, 1, -1),
        dict(x=f32(2, 3), s=f32(2))),
    "fill": (
        aten.fill.Scalar,
        lambda x: aten.fill.Scalar(x, 2.5),
        dict(x=f32(2, 3))),
    "bitwise_scalar": (
        aten.bitwise_xor.Scalar,
        lambda a: aten.bitwise_xor.Scalar(a, True),
        dict(a=torch.tensor([True, False, True]))),
    "bitwise_int": (
        aten.bitwise_xor.Tensor,
        lambda a, b: aten.bitwise_xor.Tensor(a, b),
        dict(a=torch.tensor([1, 2, 3]), b=torch.tensor([3, 3, 3]))),
}


class Call(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, **inputs):
        return self.fn(**inputs)


class RunningStats(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(3))
        self.register_buffer("var", torch.ones(3))

    def forward(self, x):
        return aten._native_batch_norm_legit.default(
            x, None, None, self.mean, self.var, True, 0.1, 1e-5)[0]


def main(outdir):
    warnings.simplefilter("ignore")
    for name, (op, fn, inputs) in PROGRAMS.items():
        program = torch.export.export(Call(fn), (), inputs, strict=False)
        table = torch.export.default_decompositions()
        table.pop(op, None)
        program = program.run_decompositions(table)
        torch.export.save(program, os.path.join(outdir, f"{name}.pt2"))
        save_file(inputs, os.path.join(outdir, f"{name}.safetensors"))
    x = f32(2, 3, 4)
    traced = torch.jit.trace(RunningStats(), (x,), check_trace=False)
    torch.jit.save(traced, os.path.join(outdir,
                                        "batch_norm_running_training.pt"))
    save_file({"x": x}, os.path.join(
        outdir, "batch_norm_running_training.safetensors"))


if __name__ == "__main__":
    main(sys.argv[1])
