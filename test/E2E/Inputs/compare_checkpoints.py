"""Compares the parameters of two glimmer checkpoints.

usage: compare_checkpoints.py A.safetensors B.safetensors REL_TOL

Prints the largest difference over all parameters relative to the model's
parameter scale (max |a - b| / max over all parameters of |a|): a tensor
whose exact value is zero (e.g. a bias with an identically zero gradient)
ends with rounding noise that no per-tensor relative measure can bound.
Exits non-zero above REL_TOL or when the keys differ.
"""

import sys

import torch
from safetensors.torch import load_file

from finite import require_finite

a, b = load_file(sys.argv[1]), load_file(sys.argv[2])
tol = float(sys.argv[3])
params = sorted(k for k in a if not k.startswith("optimizer."))
if params != sorted(k for k in b if not k.startswith("optimizer.")):
    sys.exit("the checkpoints hold different parameters")
for name, ckpt in (("A", a), ("B", b)):
    for k in params:
        if ckpt[k].is_floating_point() and not torch.isfinite(ckpt[k]).all():
            sys.exit(f"NON-FINITE: checkpoint {name}'s '{k}' holds NaN or "
                     "inf; a parity check never passes NaN or inf")
scale = max(a[k].abs().max().item() for k in params) or 1.0
worst, where = 0.0, ""
for k in params:
    rel = require_finite((a[k] - b[k]).abs().max().item() / scale, k)
    if rel > worst:
        worst, where = rel, k
print(f"{len(params)} parameters: max rel diff {worst:.3e} ({where or '-'}), tol {tol:.0e}")
if worst > tol:
    sys.exit("MISMATCH")
print("MATCH")
