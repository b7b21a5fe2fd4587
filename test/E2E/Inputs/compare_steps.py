"""Compares glimmer-train's step lines with the training oracle's.

usage: compare_steps.py GLIMMER_OUTPUT ORACLE_OUTPUT LOSS_TOL NORM_TOL
           [--floor PERTURBED_ORACLE_OUTPUT...]

Relative tolerances. Prints the worst differences; exits non-zero when a step
is missing or exceeds a tolerance.

--floor: outputs of the same oracle trained from weights perturbed far
below bf16's resolution (torch_train_oracle.py, GLIMMER_ORACLE_PERTURB).
Their worst difference from the oracle, per quantity, is its noise floor:
how far the oracle's own training moves under rounding it cannot resolve.
A quantity passes when glimmer is within the tolerance or within that
floor, and the floor is printed beside it, so a chaotic trajectory is
named as such instead of being hidden by a wider tolerance.
"""

import re
import sys

from finite import rel_diff

# Numbers as glimmer and the oracles print them, "nan" and "inf" included
# (rejected below, never skipped).
NUM = r"([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf|infinity))"
LINE = re.compile(r"step (\d+) \| loss " + NUM + r" \| grad_norm " + NUM, re.IGNORECASE)


def read(path):
    return {int(m.group(1)): (float(m.group(2)), float(m.group(3)))
            for m in LINE.finditer(open(path).read())}


def worst(ours, theirs, who):
    """The largest relative differences (loss, grad norm) over the steps."""
    if not theirs or sorted(ours) != sorted(theirs):
        sys.exit(f"steps differ: {who} {sorted(ours)} oracle {sorted(theirs)}")
    loss = norm = 0.0
    for step in sorted(theirs):
        (l1, n1), (l2, n2) = ours[step], theirs[step]
        loss = max(loss, rel_diff(l1, l2, f"step {step} loss"))
        norm = max(norm, rel_diff(n1, n2, f"step {step} grad norm"))
    return loss, norm


args = sys.argv[1:]
floors = []
if "--floor" in args:
    i = args.index("--floor")
    args, floors = args[:i], args[i + 1:]
    if not floors:
        sys.exit("--floor needs at least one perturbed oracle output")
if len(args) != 4:
    sys.exit(__doc__)
theirs = read(args[1])
worst_loss, worst_norm = worst(read(args[0]), theirs, "glimmer")
loss_tol, norm_tol = float(args[2]), float(args[3])
floor_loss = floor_norm = 0.0
for path in floors:
    l, n = worst(read(path), theirs, f"perturbed oracle {path}")
    floor_loss, floor_norm = max(floor_loss, l), max(floor_norm, n)
floor = (f", oracle's floor loss {floor_loss:.3e} grad_norm {floor_norm:.3e}"
         if floors else "")
print(f"{len(theirs)} steps: max rel diff loss {worst_loss:.3e} (tol {loss_tol:.0e}), "
      f"grad_norm {worst_norm:.3e} (tol {norm_tol:.0e}){floor}")
if worst_loss > max(loss_tol, floor_loss) or worst_norm > max(norm_tol, floor_norm):
    sys.exit("MISMATCH")
print("MATCH" if worst_loss <= loss_tol and worst_norm <= norm_tol
      else "MATCH (within the oracle's noise floor, beyond the tolerance)")
