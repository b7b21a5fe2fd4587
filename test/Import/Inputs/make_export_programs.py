#!/usr/bin/env python3
"""Example inputs and extra archives for the torch.export importer's tests.

    python make_export_programs.py OUTDIR

writes into OUTDIR, beside the archives of make_export_fixtures.py:

  mlp.batch.safetensors      x: 2x4 f32, the shape mlp.pt2 was exported with
  mlp.wide.safetensors       x: 3x4 f32 (mlp.pt2's batch dimension is static)
  dynamic.batch7.safetensors x: 7x6 f32, idx: [0, 2] (dynamic.pt2's batch
                             dimension is torch.export.Dim in [2, 64])
  dynamic.batch80.safetensors
                             x: 80x6 f32, outside that range
  custom_op.pt2              a module calling a custom operator
                             (glimmer_test::scale, defined here with
                             torch.library), which LibTorch's dispatcher does
                             not know when the importer runs
  custom_op.batch.safetensors
  derived.pt2                two inputs whose batch dimensions are b and 2*b
                             (a derived torch.export.Dim)
  derived.batch.safetensors
  derived.bad.safetensors    x: 3x4, y: 5x4 (y's batch must be 6)
  masked.pt2                 x[mask], whose size torch.export records as
                             data-dependent (an unbacked symbol)
  masked.batch.safetensors
  mlp.f64.safetensors        x: 2x4 f64 (mlp.pt2 was exported with f32)
  mlp.rank3.safetensors      x: 2x4x1 f32
  shared.pt2                 x and y of one dynamic batch size b
  shared.bad.safetensors     x: 3x4, y: 4x4 (disagree on b)
  cond.batch.safetensors     x: 3 f32 for cond.pt2 (torch.cond)
"""

import os
import sys

import torch
from safetensors.torch import save_file


@torch.library.custom_op("glimmer_test::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@scale.register_fake
def _(x):
    return torch.empty_like(x)


class CustomOp(torch.nn.Module):
    def forward(self, x):
        return scale(x) + 1  # the unsupported op


class Masked(torch.nn.Module):
    def forward(self, x, mask):
        return x[mask].sum()


class Shared(torch.nn.Module):
    def forward(self, x, y):
        return x + y


class Derived(torch.nn.Module):
    def forward(self, x, y):
        return torch.cat([x, x]) + y


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    out = lambda name: os.path.join(outdir, name)
    torch.manual_seed(0)
    save_file({"x": torch.randn(2, 4)}, out("mlp.batch.safetensors"))
    save_file({"x": torch.randn(3, 4)}, out("mlp.wide.safetensors"))
    idx = torch.tensor([0, 2])
    save_file({"x": torch.randn(7, 6), "idx": idx}, out("dynamic.batch7.safetensors"))
    save_file({"x": torch.randn(80, 6), "idx": idx}, out("dynamic.batch80.safetensors"))
    x = torch.randn(2, 3)
    program = torch.export.export(CustomOp(), (x,), strict=False)
    torch.export.save(program, out("custom_op.pt2"))
    save_file({"x": x}, out("custom_op.batch.safetensors"))
    b = torch.export.Dim("b", min=2, max=32)
    x, y = torch.randn(3, 4), torch.randn(6, 4)
    program = torch.export.export(
        Derived(), (x, y), dynamic_shapes={"x": {0: b}, "y": {0: 2 * b}},
        strict=False)
    torch.export.save(program, out("derived.pt2"))
    save_file({"x": x, "y": y}, out("derived.batch.safetensors"))
    save_file({"x": x, "y": torch.randn(5, 4)}, out("derived.bad.safetensors"))
    x, mask = torch.randn(4, 3), torch.tensor([True, False, True, True])
    program = torch.export.export(Masked(), (x, mask), strict=False)
    torch.export.save(program, out("masked.pt2"))
    save_file({"x": x, "mask": mask}, out("masked.batch.safetensors"))
    save_file({"x": torch.randn(2, 4, dtype=torch.float64)}, out("mlp.f64.safetensors"))
    save_file({"x": torch.randn(2, 4, 1)}, out("mlp.rank3.safetensors"))
    b = torch.export.Dim("b", min=2, max=32)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    program = torch.export.export(
        Shared(), (x, y), dynamic_shapes={"x": {0: b}, "y": {0: b}}, strict=False)
    torch.export.save(program, out("shared.pt2"))
    save_file({"x": x, "y": torch.randn(4, 4)}, out("shared.bad.safetensors"))
    save_file({"x": torch.randn(3)}, out("cond.batch.safetensors"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
