"""Causal-attention work per context-parallel rank, head-tail vs contiguous.

usage: PYTHONPATH=build/python .venv/bin/python bench/cp_attention_work.py [--seq=8192]

For each C in 2, 4, 8 and each balancer, the sequence positions are put
through the runtime's cp_permute kernel (the one partitioned programs call)
and cut into C contiguous slices (what local_shard does on each rank). A
rank's causal-attention work is the number of (query, key) pairs it scores:
for each of its query positions p, the keys at positions <= p (keys are
all-gathered, so every rank sees all of them). Prints max and mean work per
rank and the imbalance max/mean.
"""

import argparse
import sys

import numpy as np

import glimmer._runtime as rt


def work_per_rank(seq, cp, balancer):
    positions = np.arange(seq, dtype=np.int64).reshape(1, seq)
    permuted = rt.cp_permute(positions, 1, cp, balancer, False).numpy()[0]
    local = seq // cp
    return [int(np.sum(permuted[r * local:(r + 1) * local] + 1)) for r in range(cp)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seq", type=int, default=8192)
    args = parser.parse_args()
    print(f"causal attention, T = {args.seq}: (query, key) pairs per rank")
    print(f"{'C':>2}  {'balancer':<10}  {'max':>12}  {'mean':>12}  {'max/mean':>8}")
    for cp in (2, 4, 8):
        for name, balancer in (("contiguous", rt.Balancer.Contiguous),
                               ("head_tail", rt.Balancer.HeadTail)):
            work = work_per_rank(args.seq, cp, balancer)
            mean = sum(work) / cp
            print(f"{cp:>2}  {name:<10}  {max(work):>12}  {mean:>12.0f}  {max(work) / mean:>8.3f}")


if __name__ == "__main__":
    sys.exit(main())
