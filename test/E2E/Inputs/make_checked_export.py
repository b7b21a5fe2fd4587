"""Exports a tiny model whose loss checks its input's values, as
transformers' torch_compilable_check does under export, with the check
made savable by glimmer's export_assertions (loaded from the source tree).

usage: make_checked_export.py SRC_ROOT OUTDIR

Writes OUTDIR/checked.pt2, OUTDIR/good.safetensors (two tokens equal 3, as
the check wants) and OUTDIR/bad.safetensors (one).
"""

import importlib.util
import os
import sys

import torch
from safetensors.torch import save_file

src, out = sys.argv[1:3]
spec = importlib.util.spec_from_file_location(
    "export_assertions",
    os.path.join(src, "python_bindings", "glimmer", "export_assertions.py"))
passes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(passes)


class Checked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.linspace(0.5, 1.5, 4))

    def forward(self, ids, x):
        torch._check_tensor_all((ids == 3).sum() == 2)
        return ((x * self.w) ** 2).mean()


torch.manual_seed(0)
good = {"ids": torch.tensor([3, 1, 3, 2]), "x": torch.randn(4)}
bad = {"ids": torch.tensor([3, 1, 0, 2]), "x": good["x"]}
program = torch.export.export(Checked(), (), good, strict=False)
program, count = passes.lift_scalar_assertions(program)
assert count == 1, count
os.makedirs(out, exist_ok=True)
torch.export.save(program, os.path.join(out, "checked.pt2"))
save_file(good, os.path.join(out, "good.safetensors"))
save_file(bad, os.path.join(out, "bad.safetensors"))
