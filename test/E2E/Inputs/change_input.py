"""Writes a copy of a batch with one element of one input changed.

usage: change_input.py BATCH.safetensors NAME OUT.safetensors

Adds 1 to the first element of NAME: the batch keeps every input's dtype
and shape, only its values differ.
"""

import sys

from safetensors.torch import load_file, save_file

batch = load_file(sys.argv[1])
changed = batch[sys.argv[2]].clone()
changed.view(-1)[0] += 1
batch[sys.argv[2]] = changed
save_file(batch, sys.argv[3])
