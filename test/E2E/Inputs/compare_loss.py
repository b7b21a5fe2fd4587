"""Compares glimmer-train's loss line with the oracle's loss.

usage: compare_loss.py GLIMMER_OUTPUT ORACLE_OUTPUT REL_TOL

Prints the two losses and their relative difference; exits non-zero when
the difference exceeds REL_TOL.
"""

import re
import sys

from finite import rel_diff

glimmer_text = open(sys.argv[1]).read()
oracle_text = open(sys.argv[2]).read()
tol = float(sys.argv[3])
match = re.search(r"loss ([-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|nan|inf))",
                  glimmer_text, re.IGNORECASE)
if not match:
    sys.exit(f"no loss in glimmer output:\n{glimmer_text}")
ours = float(match.group(1))
theirs = float(oracle_text.strip().splitlines()[-1])
rel = rel_diff(ours, theirs, "loss")
print(f"glimmer {ours!r} torch {theirs!r} rel {rel:.3e} tol {tol:.0e}")
if not rel <= tol:
    sys.exit(f"loss differs from PyTorch by {rel:.3e} (> {tol:.0e})")
print("MATCH")
