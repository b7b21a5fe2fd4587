"""Writes a TorchScript module whose loss depends on in-place writes through
views of an integer tensor, and a batch for it, as Hugging Face's position
code writes them (`position_ids[:, b] = ...`); and one that writes through
a strided slice.

usage: make_inplace_views.py OUTDIR
"""

import sys

import torch
from safetensors.torch import save_file


class InPlaceViews(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.table = torch.nn.Parameter(torch.randn(64, 4))

    def forward(self, ids, upd):
        pos = ids.clone()            # [2, 3, 8]
        earlier = pos[:, 0]          # a view, read after the writes: sees them
        before = pos[:, 1] * 1       # read before the write: the old values
        pos[:, 1] = upd              # a write through a select
        pos[1, :, 2:5] = upd[0, :3]  # through a slice of a select, broadcast
        pos[:, 0] += 1               # an in-place add through a view
        idx = pos.sum(1) + earlier + before  # < 64 for ids, upd < 6
        return self.table[idx].pow(2).mean()


class StridedWrite(torch.nn.Module):
    def forward(self, ids, upd):
        pos = ids.clone()
        pos[:, 0, ::2] = upd[:, :4]  # every other position: not supported
        return pos


class GrowingAdd(torch.nn.Module):
    # Scripted, not traced: PyTorch would refuse to run it (an in-place add
    # cannot broadcast its operand), but the program says it.
    def forward(self, ids, upd):
        pos = ids[:, 0, :1]
        pos.add_(upd)
        return pos


out = sys.argv[1]
torch.manual_seed(1)
batch = {"ids": torch.randint(0, 6, (2, 3, 8)), "upd": torch.randint(0, 6, (2, 8))}
traced = torch.jit.trace(InPlaceViews(), tuple(batch.values()), check_trace=False)
traced.save(f"{out}/inplace_views.pt")
save_file(batch, f"{out}/inplace_views.batch.safetensors")
torch.jit.trace(StridedWrite(), tuple(batch.values()), check_trace=False).save(
    f"{out}/strided_write.pt")
torch.jit.script(GrowingAdd()).save(f"{out}/growing_add.pt")
