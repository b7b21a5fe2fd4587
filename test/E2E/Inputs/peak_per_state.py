"""Prints a run's peak memory as a multiple of its parameters' bytes.

usage: peak_per_state.py METRICS.jsonl WEIGHTS.safetensors BYTES_PER_ELEMENT

Reads the largest `peak_device_bytes` of the --metrics file and counts the
parameters in the safetensors file's header (the training dtype's element
size given, since the file may store another).
"""

import json
import struct
import sys

metrics, weights, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
steps = [json.loads(line) for line in open(metrics) if line.strip()]
if not steps:
    sys.exit(f"{metrics}: no steps")
peak = max(int(s["peak_device_bytes"]) for s in steps)
with open(weights, "rb") as f:
    (length,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(length))
count = 0
for name, entry in header.items():
    if name == "__metadata__":
        continue
    n = 1
    for d in entry["shape"]:
        n *= d
    count += n
print(f"peak {peak / (count * size):.1f}x the parameters' bytes")
