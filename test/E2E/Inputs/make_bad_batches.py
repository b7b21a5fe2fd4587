"""Writes broken variants of a batch for the data-error tests.

usage: make_bad_batches.py BATCH.safetensors OUTDIR
"""

import os
import sys

import torch
from safetensors.torch import load_file, save_file

batch = load_file(sys.argv[1])
out = sys.argv[2]
os.makedirs(out, exist_ok=True)

missing = dict(batch)
del missing["positions"]
save_file(missing, os.path.join(out, "missing.safetensors"))

wrong_dtype = dict(batch)
wrong_dtype["tokens"] = batch["tokens"].float()
save_file(wrong_dtype, os.path.join(out, "wrong_dtype.safetensors"))

wrong_shape = dict(batch)
wrong_shape["labels"] = batch["labels"][:, :8].contiguous()
save_file(wrong_shape, os.path.join(out, "wrong_shape.safetensors"))

extra = dict(batch)
extra["attention_mask"] = torch.ones_like(batch["tokens"])
save_file(extra, os.path.join(out, "extra.safetensors"))

bad_token = dict(batch)
bad_token["tokens"] = batch["tokens"].clone()
bad_token["tokens"][0, 6] = 1000  # a text position, outside the 64-entry vocabulary
save_file(bad_token, os.path.join(out, "bad_token.safetensors"))

bad_label = dict(batch)
bad_label["labels"] = batch["labels"].clone()
bad_label["labels"][1, 3] = 70  # outside the 64 classes, not the ignored -100
save_file(bad_label, os.path.join(out, "bad_label.safetensors"))

image_token = 63
extra_image = dict(batch)
extra_image["tokens"] = batch["tokens"].clone()
text = (extra_image["tokens"] != image_token).nonzero()[0]
extra_image["tokens"][text[0], text[1]] = image_token
save_file(extra_image, os.path.join(out, "extra_image_token.safetensors"))

missing_image = dict(batch)
missing_image["tokens"] = batch["tokens"].clone()
image = (missing_image["tokens"] == image_token).nonzero()[0]
missing_image["tokens"][image[0], image[1]] = 5
save_file(missing_image, os.path.join(out, "missing_image_token.safetensors"))

data = open(sys.argv[1], "rb").read()
open(os.path.join(out, "truncated.safetensors"), "wb").write(data[: len(data) // 2])
