"""Checks how a --cuda-graph run's steps ran, from its metrics: step 1
warms up (runs as without a graph), step 2 is captured, every later step
replays the graph. Prints each step's; exits non-zero otherwise.

usage: graph_steps.py METRICS.jsonl
"""

import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
bad = []
for r in rows:
    step, how = r["step"], r.get("cuda_graph")
    print(f"step {step}: {how}")
    want = "warm-up" if step == 1 else "captured" if step == 2 else "replayed"
    if how != want:
        bad.append(step)
if len(rows) < 3 or bad:
    sys.exit(f"steps not run as expected: {bad or 'fewer than 3 steps'}")
