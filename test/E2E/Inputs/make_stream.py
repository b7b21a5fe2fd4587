"""Writes a stream of distinct batches of the reference VLM as shards.

usage: make_stream.py OUTDIR COUNT [--break KIND:INDEX ...]

Shard k (OUTDIR/shard-00k.safetensors) is reference_vlm.make_batch with
seed k: two samples of 16 tokens, with the fixtures' 3 images (a bank of 12
patch rows, what the compiled program's vision encoder makes) split 1 + 2
or 2 + 1 between the samples by the shard's parity, at random places in the
sequences, with their own pixels and text. So every shard fits the program
compiled for examples/fixtures/reference_vlm*.batch.safetensors, and no two
are alike.

--break KIND:INDEX writes shard INDEX broken instead: `shape` (labels cut to
8 positions) or `dtype` (float32 tokens).
"""

import argparse
import os
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples" / "models"))

import reference_vlm as R  # noqa: E402

SEQ_LEN = 16


def make_shard(index):
    counts = [1, 2] if index % 2 == 0 else [2, 1]
    return R.make_batch(R.VLMConfig(), 2, SEQ_LEN, counts, seed=index,
                        placement="random")


def broken(batch, kind):
    batch = dict(batch)
    if kind == "shape":
        batch["labels"] = batch["labels"][:, :8].contiguous()
    elif kind == "dtype":
        batch["tokens"] = batch["tokens"].float()
    else:
        sys.exit(f"unknown --break kind '{kind}' (shape, dtype)")
    return batch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("outdir")
    parser.add_argument("count", type=int)
    parser.add_argument("--break", dest="breaks", action="append", default=[])
    args = parser.parse_args()
    breaks = {}
    for spec in args.breaks:
        kind, _, index = spec.partition(":")
        breaks[int(index)] = kind
    os.makedirs(args.outdir, exist_ok=True)
    seen = set()
    for k in range(args.count):
        batch = make_shard(k)
        key = tuple(batch["tokens"].flatten().tolist())
        assert key not in seen, f"shard {k} repeats an earlier one's tokens"
        seen.add(key)
        if k in breaks:
            batch = broken(batch, breaks[k])
        path = os.path.join(args.outdir, f"shard-{k:03d}.safetensors")
        save_file(batch, path)


if __name__ == "__main__":
    main()
