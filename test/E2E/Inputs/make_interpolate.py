"""Writes a tiny model whose loss goes through F.interpolate (bilinear, as
LLaVA-OneVision shrinks a large image's features, and the other 2-D modes:
antialiased bilinear and bicubic, bicubic, nearest, nearest-exact), and a
batch for it;
and scripted modules whose resizing the importer refuses (a 3-D input, one
scale factor for two axes, an empty output size).

The feature map [2, 3, 5, 7] comes from a convolution (so the resizing's
gradient reaches parameters); it is shrunk to a size (to 3x4, the ratios
not integers), grown by scale factors (1.5 and 2.0: PyTorch takes its
sampling step from the factors), resized with align_corners and kept at
its size along one axis (the identity there); then shrunk with
antialiasing, resized bicubically (with and without antialiasing) and by
nearest neighbours.

usage: make_interpolate.py OUTDIR
"""

import sys

import torch
import torch.nn.functional as F
from safetensors.torch import save_file


class Resize(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.head = torch.nn.Linear(4 * 3 + 7 * 14 + 4 * 9 + 5 * 4 + 12 + 36 + 6 + 15 + 12, 5)

    def forward(self, pixels, labels):
        f = self.conv(pixels)                                       # [2, 3, 5, 7]
        down = F.interpolate(f, [3, 4], mode="bilinear")
        up = F.interpolate(f, scale_factor=(1.5, 2.0), mode="bilinear")
        corners = F.interpolate(f, [4, 9], mode="bilinear", align_corners=True)
        keep_h = F.interpolate(f, [5, 4], mode="bilinear")
        # The other modes: antialiased shrinking, bicubic (whose weights go
        # negative), nearest.
        aa = F.interpolate(f, [3, 4], mode="bilinear", antialias=True)
        cubic = F.interpolate(f, [4, 9], mode="bicubic")
        cubic_aa = F.interpolate(f, [2, 3], mode="bicubic", antialias=True)
        nearest = F.interpolate(f, [3, 5], mode="nearest")
        exact = F.interpolate(f, [4, 3], mode="nearest-exact")
        feats = torch.cat([t.flatten(2) for t in (down, up, corners, keep_h, aa, cubic,
                                                  cubic_aa, nearest, exact)], -1)
        return F.cross_entropy(self.head(feats).flatten(0, 1), labels.flatten())


class Resize3d(torch.nn.Module):
    def forward(self, x):
        return torch.ops.aten.upsample_bilinear2d(x, [2, 2], False, None)


class OneScale(torch.nn.Module):
    def forward(self, x):
        return torch.ops.aten.upsample_bilinear2d(x[None], None, False, [2.0])


class EmptySize(torch.nn.Module):
    def forward(self, x):
        return torch.ops.aten.upsample_bilinear2d(x[None], [0, 2], False, None)


out = sys.argv[1]
gen = torch.Generator().manual_seed(1)
batch = {"pixels": torch.randn(2, 2, 5, 7, generator=gen),
         "labels": torch.randint(0, 5, (2, 3), generator=gen)}
torch.jit.trace(Resize(), tuple(batch.values()), check_trace=False).save(f"{out}/resize.pt")
save_file(batch, f"{out}/resize.batch.safetensors")
save_file({"x": torch.randn(2, 4, 4, generator=gen)}, f"{out}/resize3d.batch.safetensors")
torch.jit.script(Resize3d()).save(f"{out}/resize3d.pt")
torch.jit.script(OneScale()).save(f"{out}/one_scale.pt")
torch.jit.script(EmptySize()).save(f"{out}/empty_size.pt")
