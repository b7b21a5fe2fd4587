"""Checks that a program recomputes: OP occurs more often in MORE.mlir than
in FEWER.mlir (glimmer-train --emit-mlir of the same model with and without
--ac=full). Prints both counts; exits non-zero otherwise.

usage: count_op.py OP FEWER.mlir MORE.mlir
"""

import re
import sys

op, fewer, more = sys.argv[1:4]
pattern = re.compile(r"\b" + re.escape(op) + r"\b")
counts = [len(pattern.findall(open(path).read())) for path in (fewer, more)]
print(f"{op}: {counts[0]} -> {counts[1]}")
if counts[1] <= counts[0]:
    sys.exit(f"{more} has no more '{op}' than {fewer}")
