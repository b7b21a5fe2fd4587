"""Prints a checkpoint's metadata, one `key = value` line per entry, sorted.

usage: checkpoint_metadata.py CHECKPOINT.safetensors
"""

import sys

from safetensors import safe_open

with safe_open(sys.argv[1], framework="pt") as f:
    for key, value in sorted((f.metadata() or {}).items()):
        print(f"{key} = {value}")
