"""Writes a copy of a batch with one image of pixel_values replaced.

usage: set_image.py BATCH.safetensors SAMPLE SLOT VALUE OUT.safetensors

Fills pixel_values[SAMPLE, SLOT] with VALUE: 0 makes a real image a
padding one, anything else a padding image a real one; the batch keeps its
dtypes and shapes.
"""

import sys

from safetensors.torch import load_file, save_file

batch = load_file(sys.argv[1])
pixels = batch["pixel_values"].clone()
pixels[int(sys.argv[2]), int(sys.argv[3])] = float(sys.argv[4])
batch["pixel_values"] = pixels
save_file(batch, sys.argv[5])
