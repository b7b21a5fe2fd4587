#!/usr/bin/env python3
"""Core ATen coverage of the torch.export front end, measured against
PyTorch on its OpInfo samples: forward values and VJPs.

    PYTHONPATH=build/python:<expecttest> .venv/bin/python \\
        scripts/opinfo_coverage.py [--only NAME,...] [--samples N] \\
        [--out docs/CoreAtenCoverage.md] [--check]

For every OpInfo of torch.testing._internal.common_methods_invocations.op_db
(or those --only names), up to --samples float64 CPU samples become one
case: a module whose floating-point inputs that PyTorch differentiates are
parameters (the other inputs buffers) and whose loss is
sum_j <w_j, out_j> over the op's outputs, with fixed random parameters w_j.
Cases are exported with torch.export, decomposed to the Core ATen opset
(run_decompositions()), batched into one program per chunk, compiled by
glimmer.compile (f64, SGD with lr 1, no weight decay) and trained one step
on the CPU runtime. The step's parameter update is the gradient: for w_j it
is the op's output out_j (the forward check), for an input it is the VJP
with cotangent w_j (the VJP check); both are compared with PyTorch's
autograd on the same module. Each program compiles and runs in a child
process (--jobs at a time); a chunk that fails to compile or run (or
crashes) is split until the failing case is alone, which then reports its
error.

Core ATen ops no OpInfo sample reaches have direct cases
(scripts/opinfo_direct.py, named direct.<op>.<overload>): the op called
directly, exported with a decomposition table that leaves it in, compiled
in chunks of their own and checked the same way. A full run includes
them; --only=direct selects them all (the export front end only).

A Core ATen op (an ATen overload tagged torch.Tag.core) passes forward when
a case whose program calls it passes forward; it is differentiable when a
node calling it has a floating-point result and a floating-point operand
that depends on a trainable input, and passes its VJP when such a case
passes its VJP check. Ops outside the scope (OUT_OF_SCOPE) are listed with
the reason. The table goes to --out (Markdown); --check exits 1 unless
every case passed (the test suite's subset).
"""

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
import torch.utils._pytree as pytree

# Forward values and VJPs are compared in f64: |glimmer - torch| <= ATOL +
# RTOL * |torch|, elementwise. The gradient read back from an SGD step
# (p - (p - g)) is exact to an ulp of max(|p|, |g|), far below these.
RTOL, ATOL = 1e-7, 1e-9
SEED = 0

# Core ATen ops outside the scope, with the reason; the importer refuses
# each with its reason (lib/Import/Converters/OutOfScope.cpp).
OUT_OF_SCOPE = {
    "aten._fft_c2r.default": "complex",
    "aten._fft_r2c.default": "complex",
    "aten._fft_c2c.default": "complex",
    "aten.rand.default": "in-graph RNG",
    "aten.randn.default": "in-graph RNG",
    "aten.randperm.default": "in-graph RNG",
    "aten.native_dropout.default": "in-graph RNG",
    "aten.bernoulli.p": "in-graph RNG",
    "aten.nonzero.default": "data-dependent shape",
    "aten._local_scalar_dense.default": "data-dependent shape",
    "aten.sym_size.int": "symbolic size",
    "aten.sym_numel.default": "symbolic size",
    "aten.sym_stride.int": "symbolic size",
    "aten.sym_storage_offset.default": "symbolic size",
    "aten.as_strided.default": "memory layout",
    "aten.empty_strided.default": "memory layout",
    # Overloads no functional program calls: torch.export functionalizes
    # them into others.
    "aten.atan2.out": "out= overload: writes a caller's tensor; exported "
                      "programs call atan2.default",
    "aten._native_batch_norm_legit.default":
        "updates running_mean / running_var in place; exported programs "
        "call _native_batch_norm_legit_functional (decomposed) instead",
}

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


# --- cases ---------------------------------------------------------------------


class Case(torch.nn.Module):
    """Samples of one OpInfo: each sample's tensors are parameters
    (`s<i>_x<k>`, the inputs PyTorch differentiates) or buffers
    (`s<i>_b<k>`), its outputs are weighted by parameters `s<i>_w<j>`.
    `keep`: the ops its program's decomposition leaves in (a direct case's
    own op)."""

    def __init__(self, name, fn, samples, keep=()):
        super().__init__()
        self.name, self.fn, self.specs = name, fn, []
        self.keep = tuple(keep)
        for i, (args, kwargs, trainable, outs) in enumerate(samples):
            leaves, spec = pytree.tree_flatten((args, kwargs))
            slots = []
            for k, leaf in enumerate(leaves):
                if not isinstance(leaf, torch.Tensor):
                    slots.append(None)
                elif k in trainable:
                    slots.append(f"s{i}_x{k}")
                    self.register_parameter(slots[-1],
                                            torch.nn.Parameter(leaf.clone()))
                else:
                    slots.append(f"s{i}_b{k}")
                    self.register_buffer(slots[-1], leaf.clone())
            for j, out in enumerate(outs):
                g = torch.Generator().manual_seed(SEED + 97 * i + j)
                w = torch.randn(out.shape, dtype=torch.float64, generator=g)
                self.register_parameter(f"s{i}_w{j}", torch.nn.Parameter(w))
            self.specs.append((spec, leaves, slots, len(outs)))

    def forward(self):
        loss = 0
        for i, (spec, leaves, slots, n) in enumerate(self.specs):
            values = [getattr(self, s) if s else leaf
                      for leaf, s in zip(leaves, slots)]
            args, kwargs = pytree.tree_unflatten(values, spec)
            outs = tensor_outputs(self.fn(*args, **kwargs))
            for j in range(n):
                w = getattr(self, f"s{i}_w{j}")
                loss = loss + (w * outs[j].to(torch.float64)).sum()
        return loss


class Batch(torch.nn.Module):
    """Cases side by side; the loss is their sum (times the one user input,
    a [1] tensor of ones, which a program needs)."""

    def __init__(self, cases):
        super().__init__()
        for k, case in enumerate(cases):
            self.add_module(f"c{k}", case)

    def forward(self, one):
        return sum(case() for case in self.children()) * one.sum()


def tensor_outputs(out):
    return [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


ONE = {"one": torch.ones(1, dtype=torch.float64)}


def sample_of(info, sample):
    """(args, kwargs, trainable leaf indices, outputs) of one sample, or
    None when it is out of scope or its reference is not finite."""
    return call_of(info.op, (sample.input, *sample.args),
                   dict(sample.kwargs), info.supports_autograd)


def call_of(op, args, kwargs, differentiable, frozen=()):
    """sample_of for op(*args, **kwargs); the float tensors among `frozen`
    (positions in args) are not differentiated."""
    leaves, spec = pytree.tree_flatten((args, kwargs))
    tensors = [t for t in leaves if isinstance(t, torch.Tensor)]
    if not tensors or any(t.is_complex() or t.layout != torch.strided or
                          t.is_quantized for t in tensors):
        return None
    leaves = [t.detach().clone().contiguous() if isinstance(t, torch.Tensor)
              else t for t in leaves]
    fixed = {id(t) for k in frozen for t in pytree.tree_leaves(args[k])}
    floats = [k for k, (t, orig) in enumerate(
        zip(leaves, pytree.tree_leaves((args, kwargs))))
        if isinstance(t, torch.Tensor) and t.is_floating_point()
        and id(orig) not in fixed]
    for k in floats:
        leaves[k].requires_grad_(differentiable)
    a, kw = pytree.tree_unflatten(leaves, spec)
    outs = tensor_outputs(op(*a, **kw))
    if not outs or any(o.is_complex() or o.layout != torch.strided
                       for o in outs):
        return None
    if not all(torch.isfinite(o.detach().to(torch.float64)).all()
               for o in outs):
        return None
    trainable = set()
    diff = [o for o in outs if o.requires_grad]
    if differentiable and diff:
        g = torch.Generator().manual_seed(SEED)
        loss = sum((torch.randn(o.shape, dtype=torch.float64, generator=g) *
                    o).sum() for o in diff)
        grads = torch.autograd.grad(loss, [leaves[k] for k in floats],
                                    allow_unused=True)
        for k, grad in zip(floats, grads):
            if grad is not None:
                if not torch.isfinite(grad).all():
                    return None
                trainable.add(k)
    leaves = [t.detach() if isinstance(t, torch.Tensor) else t for t in leaves]
    a, kw = pytree.tree_unflatten(leaves, spec)
    return a, kw, trainable, [o.detach() for o in outs]


def case_of(info, samples):
    """The Case of up to `samples` float64 samples of `info`, or None."""
    made, it = [], iter(info.sample_inputs("cpu", torch.float64))
    try:
        for sample in it:
            s = sample_of(info, sample)
            if s is not None:
                made.append(s)
            if len(made) == samples:
                break
    finally:
        # A sample generator runs under no_grad, which must not be left
        # open while export traces.
        if hasattr(it, "close"):
            it.close()
    if not made:
        return None
    name = info.name + ("." + info.variant_test_name
                        if info.variant_test_name else "")
    return Case(name, info.op, made)


def direct_case(direct):
    """The Case of a direct case (scripts/opinfo_direct.py), or None."""
    made = [call_of(direct.fn, s.args, s.call_kwargs(),
                    direct.differentiable, s.frozen)
            for s in direct.samples]
    if any(m is None for m in made):
        return None
    return Case(direct.name, direct.fn, made, keep=[direct.op])


def export(cases):
    program = torch.export.export(Batch(cases), (), ONE, strict=False)
    keep = {op for case in cases for op in case.keep}
    if not keep:
        return program.run_decompositions()
    # Core ATen ops have decompositions too (into other Core ATen ops); a
    # direct case's op must stay in its program.
    table = torch.export.default_decompositions()
    for op in keep:
        table.pop(op, None)
    return program.run_decompositions(table)


def calls(program, core):
    """(core ops called, core ops called differentiably) of a program:
    differentiably, by a node with a floating-point result and a
    floating-point operand that depends on a trainable input."""
    sig = program.graph_signature
    params = {spec.arg.name for spec in sig.input_specs
              if spec.kind == torch.export.graph_signature.InputKind.PARAMETER
              and "_x" in spec.target.rsplit(".", 1)[-1]}
    varied, called, diff = set(params), set(), set()
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        inputs = node.all_input_nodes
        if any(a.name in varied for a in inputs):
            varied.add(node.name)
        target = str(node.target)
        if target not in core:
            continue
        called.add(target)
        val = node.meta.get("val")
        results = [v for v in pytree.tree_leaves(val)
                   if isinstance(v, torch.Tensor)]
        if not any(v.is_floating_point() for v in results):
            continue
        if any(a.name in varied and isinstance(a.meta.get("val"), torch.Tensor)
               and a.meta["val"].is_floating_point() for a in inputs):
            diff.add(target)
    return called, diff


def direct_cases(only, core, cases_ops, found):
    """The direct cases (scripts/opinfo_direct.py) that `only` selects (all
    without it, or its "direct" entry), their ops recorded in `cases_ops`
    and their names (and "direct") in `found`. A case that cannot be
    exported or whose program does not call its op raises RuntimeError."""
    from opinfo_direct import DIRECT
    made = []
    for d in DIRECT:
        if only and "direct" not in only and d.name not in only:
            continue
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                case = direct_case(d)
                if case is None:
                    raise RuntimeError("a sample's reference is not finite")
                program = export([case])
        except Exception as e:  # noqa: BLE001: the case itself is wrong
            raise RuntimeError(f"direct case {d.name}: {e}") from e
        called, diff = calls(program, core)
        if str(d.op) not in called:
            raise RuntimeError(f"direct case {d.name}: its decomposed "
                               f"program does not call {d.op}")
        found.update({d.name, "direct"})
        made.append(case)
        cases_ops[case.name] = (called, diff)
    return made


# --- running a chunk ----------------------------------------------------------------


def first_error(text):
    for line in text.splitlines():
        if "error: " in line:
            return line.split("error: ", 1)[1].strip()
    return text.strip().splitlines()[0] if text.strip() else "failed"


def compare(got, want):
    """The largest violation of the tolerance (0 when within), or a reason."""
    if got.shape != want.shape:
        return f"shape {list(got.shape)} instead of {list(want.shape)}"
    if not np.isfinite(got).all():
        return "non-finite values"
    excess = np.abs(got - want) - (ATOL + RTOL * np.abs(want))
    return float(max(excess.max(initial=0.0), 0.0))


# torch.export and autograd run one at a time; compiling and running a
# program release the GIL, so chunks compile in parallel (--jobs).
TORCH_LOCK = threading.Lock()


def train_step(program, cache_dir, out):
    """In a child process (--train-step): compiles `program` (a .pt2 or .pt) as
    glimmer.compile does (f64, SGD with lr 1, no weight decay), trains one
    step on the CPU runtime and saves the parameters before and after it to
    `out` (.npz, `before/NAME`, `after/NAME`). A failure is printed, exit 1."""
    import glimmer
    try:
        with glimmer.SpmdContext():
            compiled = glimmer.compile(program, ONE, dtype="f64",
                                       optimizer="sgd", lr=1.0,
                                       weight_decay=0.0, cache_dir=cache_dir)
            before = compiled.parameters()
            compiled.train(ONE, steps=1)
            after = compiled.parameters()
    except Exception as e:  # noqa: BLE001: CompileError, RuntimeError
        print(first_error(str(e)) if str(e) else type(e).__name__,
              file=sys.stderr)
        return 1
    np.savez(out, **{f"before/{k}": v for k, v in before.items()},
             **{f"after/{k}": v for k, v in after.items()})
    return 0


def save_program(cases, path, front_end):
    """The chunk's program file for `front_end`: a torch.export archive
    decomposed to Core ATen (.pt2), or a TorchScript trace (.pt) of the same
    module, whose ATen ops the TorchScript front end converts."""
    if front_end == "torchscript":
        traced = torch.jit.trace(Batch(cases), (ONE["one"],), check_trace=False)
        torch.jit.save(traced, path + ".pt")
        return path + ".pt"
    torch.export.save(export(cases), path + ".pt2")
    return path + ".pt2"


def run_chunk(cases, cache_dir, tmp, results, log, front_end="export"):
    """Compiles and runs `cases` as one program, in a child process (a
    compiler or runtime crash fails that program only); records per case
    {'forward': err, 'vjp': err} (None: passed), splitting on failure."""
    path = os.path.join(tmp, f"chunk-{id(cases)}")
    try:
        with TORCH_LOCK:
            program = save_program(cases, path, front_end)
        run = subprocess.run(
            [sys.executable, __file__, "--train-step", program,
             "--cache-dir", cache_dir, "--out", path + ".npz"],
            capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(
                run.stderr.strip().splitlines()[-1] if run.returncode > 0 and
                run.stderr.strip() else
                f"the compiler or runtime crashed (exit {run.returncode})")
        with np.load(path + ".npz") as saved:
            before = {k[len("before/"):]: saved[k] for k in saved.files
                      if k.startswith("before/")}
            after = {k[len("after/"):]: saved[k] for k in saved.files
                     if k.startswith("after/")}
    except Exception as e:  # noqa: BLE001: export, compile or run
        if len(cases) > 1:
            half = len(cases) // 2
            run_chunk(cases[:half], cache_dir, tmp, results, log, front_end)
            run_chunk(cases[half:], cache_dir, tmp, results, log, front_end)
            return
        message = str(e) or type(e).__name__
        log(f"  {cases[0].name}: {message}")
        results[cases[0].name] = {"forward": message, "vjp": message}
        return
    with TORCH_LOCK:
        for case in cases:
            case.zero_grad(set_to_none=True)
        Batch(cases)(**ONE).backward()
        grads = {(k, name): (p.grad.numpy(force=True).copy()
                             if p.grad is not None else np.zeros(p.shape))
                 for k, case in enumerate(cases)
                 for name, p in case.named_parameters()}
    for k, case in enumerate(cases):
        worst = {"forward": 0.0, "vjp": 0.0}
        for name, p in case.named_parameters():
            key = f"c{k}.{name}"
            kind = "forward" if "_w" in name else "vjp"
            if key not in before:
                worst[kind] = f"parameter '{name}' is missing"
                continue
            got = before[key] - after[key]
            want = grads[(k, name)]
            err = compare(got, want)
            if isinstance(err, str):
                worst[kind] = f"{kind} of {name}: {err}"
            elif isinstance(worst[kind], float):
                worst[kind] = max(worst[kind], err)
        for kind, err in worst.items():
            if isinstance(err, float) and err > 0:
                worst[kind] = f"{kind} differs beyond the tolerance " \
                              f"(by {err:.3g})"
            elif isinstance(err, float):
                worst[kind] = None
        results[case.name] = worst


# --- the table ------------------------------------------------------------------------


def verdicts(core, cases_ops, results, import_errors):
    """Per core op: (forward, vjp, reason, OpInfos)."""
    table = {}
    for op in sorted(core):
        users = [(name, called, diff) for name, (called, diff)
                 in cases_ops.items() if op in called]
        if op in OUT_OF_SCOPE:
            table[op] = ("out of scope", "n.a.", OUT_OF_SCOPE[op],
                         [u[0] for u in users][:3])
            continue
        if not users:
            table[op] = ("not reached", "n.a.", "", [])
            continue
        fwd = [u for u in users if results[u[0]]["forward"] is None]
        diff_users = [u for u in users if op in u[2]]
        vjp_ok = [u for u in diff_users if results[u[0]]["vjp"] is None]
        forward = "pass" if fwd else "fail"
        vjp = ("n.a." if not diff_users else "pass" if vjp_ok else "fail")
        reason = ""
        if forward == "fail":
            # The case whose program calls the fewest core ops is the one
            # the op most likely fails by itself.
            name = min(users, key=lambda u: len(u[1]))[0]
            reason = f"{name}: {results[name]['forward']}"
        elif vjp == "fail":
            name = min(diff_users, key=lambda u: len(u[1]))[0]
            reason = f"{name}: {results[name]['vjp']}"
        shown = [u[0] for u in (fwd or users)][:3]
        table[op] = (forward, vjp, reason, shown)
    return table


def write_table(out, table, stats):
    scope = [op for op, v in table.items() if v[0] != "out of scope"]
    reached = [op for op in scope if table[op][0] != "not reached"]
    fwd = [op for op in reached if table[op][0] == "pass"]
    diff = [op for op in reached if table[op][1] != "n.a."]
    vjp = [op for op in diff if table[op][1] == "pass"]
    pct = lambda a, b: f"{100.0 * len(a) / max(len(b), 1):.1f}%"
    print("# Core ATen coverage of the torch.export front end\n", file=out)
    print("Generated by `scripts/opinfo_coverage.py` (PyTorch "
          f"{torch.__version__}). Each OpInfo of PyTorch's `op_db` with a "
          f"float64 CPU sample gives a case of up to {stats['samples']} "
          "samples, exported with torch.export, decomposed to the Core ATen "
          "opset, compiled by `glimmer.compile` (f64) and run on the CPU "
          "runtime; its forward outputs and the VJP of its differentiable "
          "inputs (the cotangent: fixed random weights of the outputs) are "
          "compared with PyTorch's autograd elementwise within "
          f"`|glimmer - torch| <= {ATOL:g} + {RTOL:g} * |torch|`. An op "
          "passes forward when a case whose program calls it passes; it is "
          "differentiable when it is called with a floating-point result on "
          "a floating-point operand that depends on a differentiated input, "
          "and passes its VJP when such a case passes its VJP check. A Core "
          "ATen op no sample reaches has a direct case "
          "(`scripts/opinfo_direct.py`, `direct.<op>.<overload>`): the op "
          "called directly, its program decomposed with the op left in.\n",
          file=out)
    print(f"- OpInfo cases: {stats['cases'] - stats['direct']}, direct "
          f"cases: {stats['direct']} ({stats['passed']} pass forward and "
          f"VJP); run time {stats['seconds']:.0f} s", file=out)
    print(f"- Core ATen ops: {len(table)}; out of scope: "
          f"{len(table) - len(scope)}; in scope: {len(scope)}, of which "
          f"{len(reached)} are reached by a sample", file=out)
    print(f"- Forward: {len(fwd)} / {len(reached)} reached in-scope ops pass "
          f"({pct(fwd, reached)}; {pct(fwd, scope)} of all in-scope ops)",
          file=out)
    print(f"- VJP: {len(vjp)} / {len(diff)} differentiable ops pass "
          f"({pct(vjp, diff)})\n", file=out)
    print("## Scope\n", file=out)
    print("Out of scope, refused by the importer with an error naming the "
          "op, its Python line and the reason: complex tensors (`_fft_*`), "
          "in-graph random number generation (`rand`, `randn`, `randperm`, "
          "`native_dropout`, `bernoulli`: a Glimmer program is a "
          "deterministic function of its inputs), sizes that depend on "
          "tensor values (`nonzero`, `_local_scalar_dense`) or are symbolic "
          "(`sym_*`), and ops on memory layout (`as_strided`, "
          "`empty_strided`). Sparse and quantized tensors have no Core ATen "
          "op of their own; their samples are skipped.\n", file=out)
    print("## Ops\n", file=out)
    print("| op | forward | VJP | tolerance (rtol, atol) | OpInfo cases "
          "| reason |", file=out)
    print("| --- | --- | --- | --- | --- | --- |", file=out)
    for op, (forward, vjp, reason, users) in table.items():
        reason = reason.replace("|", "/").replace("\n", " ")
        if forward == "not reached":
            reason = "no case's decomposed program calls it"
        tol = f"{RTOL:g}, {ATOL:g}" if forward in ("pass", "fail") else ""
        print(f"| `{op}` | {forward} | {vjp} | {tol} | {', '.join(users)} | "
              f"{reason} |", file=out)


def write_case_table(out, results, stats):
    """The cases through the TorchScript front end: each OpInfo case's
    samples traced with torch.jit.trace instead of exported."""
    print("# OpInfo cases through the TorchScript front end\n", file=out)
    print("Generated by `scripts/opinfo_coverage.py --front-end=torchscript` "
          f"(PyTorch {torch.__version__}): the cases of the Core ATen table, "
          "each traced with `torch.jit.trace` instead of exported, compiled "
          "and checked the same way (forward values and VJPs against "
          f"autograd within `{ATOL:g} + {RTOL:g} * |torch|`).\n", file=out)
    print(f"- Cases: {stats['cases']}; {stats['passed']} pass forward and "
          f"VJP; run time {stats['seconds']:.0f} s\n", file=out)
    print("| OpInfo case | forward | VJP |", file=out)
    print("| --- | --- | --- |", file=out)
    for name, r in sorted(results.items()):
        cell = lambda e: "pass" if e is None else e.replace("|", "/")
        print(f"| {name} | {cell(r['forward'])} | {cell(r['vjp'])} |",
              file=out)


# --- main -----------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="",
                    help="comma-separated OpInfo names (default: all)")
    ap.add_argument("--samples", type=int, default=3,
                    help="samples per OpInfo")
    ap.add_argument("--chunk", type=int, default=24,
                    help="cases compiled into one program")
    ap.add_argument("--jobs", type=int, default=2,
                    help="chunks compiled at once")
    ap.add_argument("--out", default="", help="Markdown table (default: stdout)")
    ap.add_argument("--cache-dir", default="",
                    help="compiled program cache (default: glimmer's)")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 unless every case passes")
    ap.add_argument("--front-end", choices=["export", "torchscript"],
                    default="export",
                    help="compile each chunk from its torch.export archive "
                    "(the Core ATen table) or from a TorchScript trace of the "
                    "same cases (a table of the cases)")
    ap.add_argument("--train-step", default="", help=argparse.SUPPRESS)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    if a.train_step:
        return train_step(a.train_step, a.cache_dir, a.out)
    torch.manual_seed(SEED)
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except ImportError as e:
        # 77: a skip for ctest (SKIP_RETURN_CODE).
        print(f"error: PyTorch's OpInfo database needs expecttest "
              f"(pip install expecttest): {e}", file=sys.stderr)
        return 77

    start = time.time()
    log = lambda m: print(m, file=sys.stderr, flush=True)
    only = set(filter(None, a.only.split(",")))
    core = core_ops()
    cases, cases_ops, seen, found = [], {}, set(), set()
    for info in op_db:
        if only and info.name not in only:
            continue
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                case = case_of(info, a.samples)
                if case is None or case.name in seen:
                    continue
                program = export([case])
        except Exception:  # noqa: BLE001: samples PyTorch cannot export
            continue
        called, diff = calls(program, core)
        if not called:
            continue
        seen.add(case.name)
        found.add(info.name)
        cases.append(case)
        cases_ops[case.name] = (called, diff)
    direct = []
    if a.front_end == "export":
        try:
            direct = direct_cases(only, core, cases_ops, found)
        except RuntimeError as e:
            log(f"error: {e}")
            return 1
    log(f"{len(cases)} OpInfo and {len(direct)} direct cases exported in "
        f"{time.time() - start:.0f} s")
    missing = only - found
    if missing:
        log(f"error: no case for {', '.join(sorted(missing))}")
        return 1
    results = {}
    # Direct cases are chunked apart: their programs keep ops that the
    # OpInfo cases' decompositions rewrite.
    chunks = [group[i:i + a.chunk] for group in (cases, direct)
              for i in range(0, len(group), a.chunk)]
    cases = cases + direct

    def run(k):
        log(f"chunk {k + 1} / {len(chunks)}: {len(chunks[k])} cases "
            f"({time.time() - start:.0f} s)")
        run_chunk(chunks[k], a.cache_dir, tmp, results, log, a.front_end)

    with tempfile.TemporaryDirectory() as tmp, \
            ThreadPoolExecutor(max_workers=a.jobs) as pool:
        list(pool.map(run, range(len(chunks))))
    stats = dict(samples=a.samples, cases=len(cases), direct=len(direct),
                 passed=sum(1 for r in results.values()
                            if r["forward"] is None and r["vjp"] is None),
                 seconds=time.time() - start)
    with (open(a.out, "w") if a.out else contextlib.nullcontext(sys.stdout)) \
            as out:
        if a.front_end == "torchscript":
            write_case_table(out, results, stats)
        else:
            write_table(out, verdicts(core, cases_ops, results, {}), stats)
    failed = {n: r for n, r in results.items()
              if r["forward"] is not None or r["vjp"] is not None}
    log(f"{stats['passed']} / {len(cases)} cases pass "
        f"({stats['seconds']:.0f} s)")
    if a.check and failed:
        for name, r in sorted(failed.items()):
            log(f"FAIL {name}: forward {r['forward'] or 'ok'}; "
                f"vjp {r['vjp'] or 'ok'}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
