"""torch.vmap in a torch.export program, traced out into ordinary ATen ops.

Non-strict export records `torch.vmap` as calls into functorch
(`torch._functorch.predispatch`: `_vmap_increment_nesting`,
`_add_batch_dim`, the vmapped body on per-element values,
`_remove_batch_dim`, `_vmap_decrement_nesting`), which the archive format
cannot hold. Re-tracing the program below vmap (`run_decompositions` with
an empty table: no op is decomposed, vmap's batching rules run and leave
the batched ATen ops) removes them, but the recorded calls name each vmap
level by the number it had while exporting (`_add_batch_dim(x, 0, 3)`)
rather than by the `_vmap_increment_nesting` that opened it, so the
re-trace, where the levels are numbered otherwise, fails ("your tensor may
have escaped from inside a function being vmapped").

`trace_out_vmap(program)` first binds each `_add_batch_dim` and
`_remove_batch_dim` to the level its enclosing `_vmap_increment_nesting`
returns (the innermost one open there, which is where torch.vmap makes
those calls), then re-traces. A program without vmap is returned as it is.
"""

import torch
from torch._functorch import predispatch

__all__ = ["trace_out_vmap"]

_VMAP_CALLS = ("_vmap_increment_nesting", "_vmap_decrement_nesting",
               "_add_batch_dim", "_remove_batch_dim",
               "lazy_load_decompositions")


def _call(node):
    """The name of the functorch call `node` makes, or None. (By name: the
    graph holds the function the export saw, which need not be the one
    this module imports.)"""
    target = node.target
    if (node.op == "call_function"
            and getattr(target, "__module__", None) == predispatch.__name__
            and getattr(target, "__name__", None) in _VMAP_CALLS):
        return target.__name__
    return None


def _bind_levels(graph):
    """Replaces the recorded level numbers by the nesting nodes' results;
    refuses a graph whose numbers do not follow its nesting."""
    open_levels = []  # (increment node, recorded level)
    for node in graph.nodes:
        call = _call(node)
        if call == "_vmap_increment_nesting":
            open_levels.append([node, None])
        elif call == "_vmap_decrement_nesting":
            open_levels.pop()
        elif call in ("_add_batch_dim", "_remove_batch_dim"):
            # _add_batch_dim(self, batch_dim, level),
            # _remove_batch_dim(self, level, batch_size, out_dim)
            at = 2 if call == "_add_batch_dim" else 1
            level = node.args[at]
            if not open_levels:
                raise ValueError(f"{node.name}: a vmap level outside any "
                                 "_vmap_increment_nesting")
            top = open_levels[-1]
            if top[1] not in (None, level):
                raise ValueError(f"{node.name}: vmap level {level} where its "
                                 f"nesting recorded level {top[1]}")
            top[1] = level
            args = list(node.args)
            args[at] = top[0]
            node.args = tuple(args)


def has_vmap(program):
    return any(_call(n) for n in program.graph_module.graph.nodes)


def trace_out_vmap(program):
    """The program with torch.vmap traced out, as the module docstring
    says (`program` itself when it has none)."""
    if not has_vmap(program):
        return program
    _bind_levels(program.graph_module.graph)
    program.graph_module.recompile()
    return program.run_decompositions({})
