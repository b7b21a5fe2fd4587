"""Checks that one run's peak memory is below another's.

usage: compare_peak.py SMALLER.jsonl LARGER.jsonl

Reads the `peak_device_bytes` of every step in two --metrics files and exits
non-zero unless the first run's largest peak is below the second's.
"""

import json
import sys


def peak(path):
    steps = [json.loads(line) for line in open(path) if line.strip()]
    if not steps:
        sys.exit(f"{path}: no steps")
    return max(int(s["peak_device_bytes"]) for s in steps)


small, large = peak(sys.argv[1]), peak(sys.argv[2])
print(f"peak {small} bytes against {large} bytes "
      f"({small / large:.2f} of it)")
if not 0 < small < large:
    sys.exit("NOT LOWER")
print("LOWER")
