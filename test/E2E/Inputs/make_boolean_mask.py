"""Writes a TorchScript module that drops all-zero rows with a boolean mask,
as SmolVLM drops padding images (`pixel_values[real_images_inds]`, keeping
the first row when all are zero), traced on two batches: one with 3 of 5
rows real (rows 0 and 2 zero), one with all rows zero.

usage: make_boolean_mask.py OUTDIR
"""

import sys

import torch
from safetensors.torch import save_file


class DropPadding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.w = torch.nn.Parameter(torch.randn(4, 3))

    def forward(self, x):
        keep = (x == 0).sum(-1) != x.shape[-1]
        keep[0] |= ~torch.any(keep)
        return ((x[keep] + 1) @ self.w).pow(2).mean()


out = sys.argv[1]
torch.manual_seed(1)
x = torch.randn(5, 4, dtype=torch.float64)
x[0] = 0
x[2] = 0
for name, batch in (("mask", {"x": x}), ("padding", {"x": torch.zeros(5, 4, dtype=torch.float64)})):
    traced = torch.jit.trace(DropPadding().double(), tuple(batch.values()), check_trace=False)
    traced.save(f"{out}/{name}.pt")
    save_file(batch, f"{out}/{name}.batch.safetensors")
