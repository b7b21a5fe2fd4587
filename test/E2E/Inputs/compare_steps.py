"""Compares glimmer-train's step lines with the training oracle's.

usage: compare_steps.py GLIMMER_OUTPUT ORACLE_OUTPUT LOSS_TOL NORM_TOL

Relative tolerances. Prints the worst differences; exits non-zero when a step
is missing or exceeds a tolerance.
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


ours, theirs = read(sys.argv[1]), read(sys.argv[2])
loss_tol, norm_tol = float(sys.argv[3]), float(sys.argv[4])
if not theirs or sorted(ours) != sorted(theirs):
    sys.exit(f"steps differ: glimmer {sorted(ours)} oracle {sorted(theirs)}")
worst_loss = worst_norm = 0.0
for step in sorted(theirs):
    (l1, n1), (l2, n2) = ours[step], theirs[step]
    worst_loss = max(worst_loss, rel_diff(l1, l2, f"step {step} loss"))
    worst_norm = max(worst_norm, rel_diff(n1, n2, f"step {step} grad norm"))
print(f"{len(theirs)} steps: max rel diff loss {worst_loss:.3e} (tol {loss_tol:.0e}), "
      f"grad_norm {worst_norm:.3e} (tol {norm_tol:.0e})")
if worst_loss > loss_tol or worst_norm > norm_tol:
    sys.exit("MISMATCH")
print("MATCH")
