#!/usr/bin/env python3
"""The reference VLM at 7 B scale, exported on the meta device.

    python export_reference_7b.py OUTDIR

writes OUTDIR/reference_7b.pt2 (torch.export.export(strict=False) of
examples/models/reference_vlm.py with dim 4096, 32 layers, 32 heads / 8 KV
heads, SwiGLU 11008, vocabulary 32000 and a 24-layer 1024-wide vision tower
of 16 heads on 224x224 images in 14x14 patches; 6.26 B parameters, built on
the meta device, so the archive holds no weight data) and
OUTDIR/reference_7b.batch.safetensors (one sample of 512 tokens, one image).
"""

import os
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "examples" / "models"))

import reference_vlm as R  # noqa: E402


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    cfg = R.VLMConfig(vocab_size=32000, dim=4096, n_layers=32, n_heads=32,
                      n_kv_heads=8, ffn_hidden_dim=11008, image_token_id=31999,
                      image_size=224, patch_size=14, vision_dim=1024,
                      n_vision_layers=24, n_vision_heads=16, vision_mlp_dim=4096)
    batch = R.make_batch(cfg, 1, 512, 1, seed=0, placement=[[0]])
    with torch.device("meta"):
        model = R.ReferenceVLM(cfg)
    model.train()
    program = torch.export.export(
        model, (), {k: v.to("meta") for k, v in batch.items()}, strict=False)
    torch.export.save(program, os.path.join(outdir, "reference_7b.pt2"))
    save_file({k: v.contiguous() for k, v in batch.items()},
              os.path.join(outdir, "reference_7b.batch.safetensors"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
