"""Writes broken Hugging Face checkpoints of a model, for --weights errors.

usage: make_bad_checkpoints.py WEIGHTS.safetensors OUT_DIR

From the model's own state_dict (WEIGHTS) it writes, under OUT_DIR:
  misfit.safetensors  one key dropped, one unknown key added, one key with
                      another shape (all three reported in one message)
  empty/              a directory with no safetensors and no index
  lost-shard/         an index naming a shard that does not exist
  corrupt-shard/      an index whose shard is cut short
"""

import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file


def index(directory, state, shard):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0},
                   "weight_map": {k: shard for k in state}}, f)


def main():
    weights, out = sys.argv[1:3]
    state = load_file(weights)
    names = sorted(state)
    misfit = dict(state)
    del misfit[names[0]]
    misfit["extra.bias"] = torch.zeros(3)
    misfit[names[1]] = torch.zeros(7, 7)
    save_file(misfit, os.path.join(out, "misfit.safetensors"))
    os.makedirs(os.path.join(out, "empty"), exist_ok=True)
    index(os.path.join(out, "lost-shard"), state, "model-00001-of-00001.safetensors")
    corrupt = os.path.join(out, "corrupt-shard")
    index(corrupt, state, "model-00001-of-00001.safetensors")
    path = os.path.join(corrupt, "model-00001-of-00001.safetensors")
    save_file(state, path)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    print(f"dropped {names[0]}, reshaped {names[1]}")


if __name__ == "__main__":
    main()
