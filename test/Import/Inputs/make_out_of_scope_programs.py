#!/usr/bin/env python3
"""torch.export archives calling Core ATen ops outside the importer's scope
(docs/CoreAtenCoverage.md), for export-out-of-scope.test.

    python make_out_of_scope_programs.py OUTDIR

writes rand.pt2 (torch.rand inside forward: in-graph random numbers),
strided.pt2 (Tensor.as_strided: memory layout) and x.safetensors (x: 4x4
f32), and prints each archive's out-of-scope line as `NAME: FILE:LINE`.
"""

import inspect
import os
import sys

import torch
from safetensors.torch import save_file


class Rand(torch.nn.Module):
    def forward(self, x):
        return x + torch.rand(4, 4)  # out of scope


class Strided(torch.nn.Module):
    def forward(self, x):
        return x.as_strided((2, 2), (1, 2)).sum()  # out of scope


def line_of(cls):
    lines, start = inspect.getsourcelines(cls.forward)
    at = next(i for i, l in enumerate(lines) if "# out of scope" in l)
    return f"{os.path.basename(__file__)}:{start + at}"


def main(outdir):
    x = torch.randn(4, 4)
    save_file({"x": x}, os.path.join(outdir, "x.safetensors"))
    for name, cls in (("rand", Rand), ("strided", Strided)):
        program = torch.export.export(cls(), (), {"x": x}, strict=False)
        program = program.run_decompositions()
        torch.export.save(program, os.path.join(outdir, f"{name}.pt2"))
        print(f"{name}: {line_of(cls)}")


if __name__ == "__main__":
    main(sys.argv[1])
