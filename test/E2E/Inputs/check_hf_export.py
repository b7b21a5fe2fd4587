"""Checks a glimmer-train --export-weights directory.

usage: check_hf_export.py EXPORT_DIR REFERENCE_DIR CHECKPOINT

REFERENCE_DIR is what transformers' save_pretrained wrote for the same model
(examples/fixtures/hf_llava.pretrained): the export's index must have the
same weight_map keys and metadata.total_size, and every tensor the same
name, shape and dtype. CHECKPOINT is glimmer-train's --save of the same run:
each exported tensor must equal its trained parameter bit for bit. The
export is also read back as save_pretrained's reader does (the index's
weight_map, one safetensors file per shard) and checked to hold finite
values. Prints "EXPORT MATCHES (N tensors, K shards)" or exits non-zero.
"""

import json
import os
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file

INDEX = "model.safetensors.index.json"


def shapes(directory):
    """name -> (shape, dtype) over every shard the index names."""
    index = json.load(open(os.path.join(directory, INDEX)))
    out = {}
    for shard in sorted(set(index["weight_map"].values())):
        with safe_open(os.path.join(directory, shard), "pt") as f:
            assert f.metadata() == {"format": "pt"}, (shard, f.metadata())
            for name in f.keys():
                t = f.get_slice(name)
                out[name] = (tuple(t.get_shape()), t.get_dtype())
                assert index["weight_map"][name] == shard, name
    return index, out


def main():
    export, reference, checkpoint = sys.argv[1:4]
    got_index, got = shapes(export)
    ref_index, ref = shapes(reference)
    problems = []
    if set(got_index["weight_map"]) != set(ref_index["weight_map"]):
        problems.append("weight_map keys differ: "
                        f"{sorted(set(got_index['weight_map']) ^ set(ref_index['weight_map']))}")
    if got_index["metadata"]["total_size"] != ref_index["metadata"]["total_size"]:
        problems.append(f"total_size {got_index['metadata']['total_size']} != "
                        f"{ref_index['metadata']['total_size']}")
    for name in sorted(set(got) & set(ref)):
        if got[name] != ref[name]:
            problems.append(f"{name}: {got[name]} != {ref[name]}")
    trained = load_file(checkpoint)
    state = {}
    for shard in sorted(set(got_index["weight_map"].values())):
        state.update(load_file(os.path.join(export, shard)))
    for name, tensor in state.items():
        if not torch.isfinite(tensor).all():
            problems.append(f"{name}: not finite")
        if name not in trained or not torch.equal(trained[name], tensor):
            problems.append(f"{name}: differs from the trained parameter")
    if problems:
        sys.exit("EXPORT DIFFERS\n" + "\n".join(problems))
    shards = len(set(got_index["weight_map"].values()))
    print(f"EXPORT MATCHES ({len(state)} tensors, {shards} shards)")


if __name__ == "__main__":
    main()
