"""Checks that the imported function's parameter/buffer arguments are named
exactly by the model's state_dict keys, in state_dict order.

usage: check_state_dict_names.py IMPORTED.mlir MODEL.pt ORIGINAL.weights.safetensors

The TorchScript module's state_dict (what the archive holds) must equal the
imported names exactly. The original eager model's state_dict (saved by the
fixture generator) must be contained in them; TorchScript does not record
whether a buffer is persistent, so the only extra names allowed are buffers.
"""

import re
import sys

import torch
from safetensors import safe_open

mlir_path, model_path, weights_path = sys.argv[1:4]
text = open(mlir_path).read()
signature = text[text.index("func.func @forward("):]
signature = signature[: signature.index(") -> ")]
named = re.findall(r'\{glimmer\.(param|buffer) = "([^"]+)"\}', signature)
names = [n for _, n in named]
buffers = {n for kind, n in named if kind == "buffer"}

module = torch.jit.load(model_path)
expected = list(module.state_dict().keys())
if names != expected:
    sys.exit(f"imported names differ from the TorchScript state_dict:\n"
             f"  imported: {names}\n  expected: {expected}")

with safe_open(weights_path, "pt") as f:
    original = set(f.keys())
missing = original - set(names)
extra = set(names) - original
if missing:
    sys.exit(f"original state_dict keys not imported: {sorted(missing)}")
if not extra <= buffers:
    sys.exit(f"imported names that are not original keys nor buffers: "
             f"{sorted(extra - buffers)}")
params = dict(module.named_parameters())
for kind, n in named:
    if (kind == "param") != (n in params):
        sys.exit(f"'{n}' is marked {kind} but is "
                 f"{'a parameter' if n in params else 'not a parameter'}")
print(f"OK {len(names)} names ({len(buffers)} buffers, "
      f"{len(extra)} non-persistent)")
