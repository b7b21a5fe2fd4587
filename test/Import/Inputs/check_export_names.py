#!/usr/bin/env python3
"""Checks an imported program's argument names against the exported
program's signature.

    python check_export_names.py ARCHIVE.pt2 PROGRAM.mlir

The function's arguments must be the signature's user inputs (glimmer.input,
by name), then its parameters and buffers (glimmer.param / glimmer.buffer,
by state_dict name), each in the signature's order. Prints "NAMES MATCH (N
arguments)" or the first difference, and exits non-zero on one.
"""

import re
import sys

import torch
from torch.export.graph_signature import InputKind


def main(archive, mlir):
    program = torch.export.load(archive)
    inputs, state = [], []
    for spec in program.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            inputs.append(("glimmer.input", spec.arg.name))
        elif spec.kind == InputKind.PARAMETER:
            state.append(("glimmer.param", spec.target))
        elif spec.kind == InputKind.BUFFER:
            state.append(("glimmer.buffer", spec.target))
    expected = inputs + state
    text = open(mlir).read()
    header = re.search(r"func\.func @\w+\((.*?)\) ->", text, re.S).group(1)
    found = re.findall(r'\{(glimmer\.(?:input|param|buffer)) = "([^"]*)"\}', header)
    for i, (want, got) in enumerate(zip(expected, found)):
        if want != got:
            sys.exit(f"argument {i}: expected {want}, got {got}")
    if len(expected) != len(found):
        sys.exit(f"{len(found)} arguments, the signature has {len(expected)}")
    print(f"NAMES MATCH ({len(found)} arguments)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
