#!/usr/bin/env python3
"""Which Core ATen ops the torch.export front end imports, measured on
PyTorch's OpInfo samples.

    .venv/bin/python scripts/opinfo_coverage.py [--limit N] > docs/CoreAtenCoverage.md

For every OpInfo of torch.testing._internal.common_methods_invocations.op_db
with a float32 sample on the CPU, the first sample becomes a module (its
tensor arguments are the forward inputs, the rest constants), exported with
torch.export.export(strict=False), decomposed to the Core ATen opset
(run_decompositions()) and saved; `glimmer-translate --import-export` then
imports it with the sample's tensors as example inputs. Each Core ATen op
(an ATen overload tagged torch.Tag.core) that some sample's program calls
is listed as imported when a program calling it imports, otherwise with the
first error the importer gave for a program calling it, and ops no sample
reaches as such. This measures the import (conversion) only; numerics are
checked by the test suite on the programs it trains.
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[1]
TRANSLATE = ROOT / "build" / "bin" / "glimmer-translate"


def core_ops():
    ops = set()
    for name in dir(torch.ops.aten):
        packet = getattr(torch.ops.aten, name, None)
        if not isinstance(packet, torch._ops.OpOverloadPacket):
            continue
        for overload in packet.overloads():
            op = getattr(packet, overload)
            if torch.Tag.core in op.tags:
                ops.add(str(op))
    return ops


class Sample(torch.nn.Module):
    def __init__(self, fn, args, kwargs, names):
        super().__init__()
        self.fn, self.args, self.kwargs, self.names = fn, args, kwargs, names

    def forward(self, *tensors):
        it = iter(tensors)
        args = [next(it) if i in self.names else a for i, a in enumerate(self.args)]
        return self.fn(*args, **self.kwargs)


def program_of(info):
    """(module, example tensors) of the first float32 CPU sample, or None."""
    try:
        samples = iter(info.sample_inputs("cpu", torch.float32))
        sample = next(samples)
        # Closed now: a sample generator runs under no_grad, which must not
        # be left open while export traces.
        if hasattr(samples, "close"):
            samples.close()
    except Exception:
        return None
    args = [sample.input, *sample.args]
    names = {i for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
    tensors = [args[i] for i in sorted(names)]
    # Out of scope: complex, sparse and other layouts.
    if not tensors or any(t.is_complex() or t.layout != torch.strided
                          for t in tensors):
        return None
    tensors = [t.contiguous() for t in tensors]
    return Sample(info.op, args, sample.kwargs, names), tensors


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=0, help="first N OpInfos only")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    from torch.testing._internal.common_methods_invocations import op_db

    core = core_ops()
    imported, failed = set(), {}
    tried = 0
    with tempfile.TemporaryDirectory() as tmp:
        for info in op_db[: a.limit or None]:
            try:
                made = program_of(info)
            except Exception:
                made = None
            if made is None:
                continue
            module, tensors = made
            try:
                program = torch.export.export(module, tuple(tensors), strict=False)
                program = program.run_decompositions()
                path = os.path.join(tmp, "op.pt2")
                torch.export.save(program, path)
            except Exception:
                continue
            tried += 1
            called = {str(n.target) for n in program.graph.nodes
                      if n.op == "call_function"} & core
            names = [s.arg.name for s in program.graph_signature.input_specs
                     if s.kind == torch.export.graph_signature.InputKind.USER_INPUT]
            batch = os.path.join(tmp, "batch.safetensors")
            save_file(dict(zip(names, tensors)), batch)
            run = subprocess.run([str(TRANSLATE), "--import-export", path,
                                  f"--example-inputs={batch}", "-o", os.devnull],
                                 capture_output=True, text=True)
            if run.returncode == 0:
                imported |= called
            else:
                error = next((l.split("error: ", 1)[1] for l in run.stderr.splitlines()
                              if "error: " in l), run.stderr.strip()[:200])
                for op in called:
                    failed.setdefault(op, (info.name, error))
    failed = {op: v for op, v in failed.items() if op not in imported}
    reached = imported | set(failed)
    print("# Core ATen coverage of the torch.export front end\n")
    print("Generated by `scripts/opinfo_coverage.py` (PyTorch "
          f"{torch.__version__}): the first float32 sample of each OpInfo, "
          "exported, decomposed to the Core ATen opset and imported with "
          "`glimmer-translate --import-export`. Import only: numerics are the "
          "test suite's.\n")
    print(f"- OpInfos whose sample exported: {tried}")
    print(f"- Core ATen ops: {len(core)}; reached by a sample: {len(reached)}; "
          f"imported: {len(imported)}; failing: {len(failed)}\n")
    print("## Imported\n")
    print(", ".join(f"`{op}`" for op in sorted(imported)) + "\n")
    print("## Failing (the first error of a program calling the op)\n")
    print("| op | OpInfo | error |\n| --- | --- | --- |")
    for op in sorted(failed):
        name, error = failed[op]
        print(f"| `{op}` | {name} | {error.replace('|', '/')} |")
    print("\n## Not reached by any sample\n")
    print(", ".join(f"`{op}`" for op in sorted(core - reached)))


if __name__ == "__main__":
    main()
