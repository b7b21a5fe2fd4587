"""Data-dependent run-time assertions of a torch.export program, as tensor
assertions that `torch.export.save` can write.

A check on tensor values in the model (`torch._check_tensor_all(cond)`, as
transformers' `torch_compilable_check` does under export) reads the value
on the host (`cond._is_all_true().item()`), which export records as an
unbacked symbol `u0` and an assertion on it, `_assert_scalar(Eq(u0, 1))`.
Export spells the bool-to-int cast of `u0` with a Python function
(`cast_symbool_to_symint_guardless`) that the archive format cannot hold,
so `torch.export.save` fails on such a program.

`lift_scalar_assertions(program)` rewrites each `_assert_scalar` whose
condition is computed only from `.item()` values, Python numbers and the
integer and boolean operators (`==`, `!=`, `<`, `<=`, `>`, `>=`, `+`, `-`,
`*`, `sym_not`, `sym_ite` and that cast) into the same computation on the
0-d tensors the values were read from, checked by `aten._assert_async.msg`:
the program asserts the same condition on the same values, PyTorch running
the saved program still raises when it is false, and a consumer sees a
tensor check instead of host scalars. No assertion is dropped: one whose
condition reads anything else (a size, another operator) is left as it is,
and an `.item()` that the program also reads elsewhere (as a size) stays.
"""

import operator

import torch
from torch.fx.experimental.symbolic_shapes import (
    cast_symbool_to_symint_guardless)

__all__ = ["lift_scalar_assertions"]

aten = torch.ops.aten

# Python operator -> (ATen op with a tensor right operand, with a scalar one).
_BINARY = {
    operator.eq: (aten.eq.Tensor, aten.eq.Scalar),
    operator.ne: (aten.ne.Tensor, aten.ne.Scalar),
    operator.lt: (aten.lt.Tensor, aten.lt.Scalar),
    operator.le: (aten.le.Tensor, aten.le.Scalar),
    operator.gt: (aten.gt.Tensor, aten.gt.Scalar),
    operator.ge: (aten.ge.Tensor, aten.ge.Scalar),
    operator.add: (aten.add.Tensor, aten.add.Scalar),
    operator.sub: (aten.sub.Tensor, aten.sub.Scalar),
    operator.mul: (aten.mul.Tensor, aten.mul.Scalar),
}
_NUMBER = (bool, int, float)


class _NotLiftable(Exception):
    pass


def _symbols(value):
    """The symbols of a node's value (sizes of a tensor, or a SymInt)."""
    if isinstance(value, (torch.SymBool, torch.SymInt, torch.SymFloat)):
        # _expr: before the shape environment's substitutions (an
        # asserted u0 == 1 would make the value read `True`).
        return getattr(value.node, "_expr", value.node.expr).free_symbols
    if isinstance(value, torch.Tensor):
        out = set()
        for d in (*value.shape, *value.stride(), value.storage_offset()):
            out |= _symbols(d)
        return out
    if isinstance(value, (list, tuple)):
        return set().union(*map(_symbols, value)) if value else set()
    return set()


class _Lifter:
    """Builds 0-d tensor nodes that compute a scalar node's value."""

    def __init__(self, graph):
        self.graph = graph
        self.lifted = {}
        self.symbols = {}  # "u0" -> that tensor, where a node names u0

    def _add(self, target, args, kwargs=None):
        node = self.graph.call_function(target, tuple(args), kwargs or {})
        metas = [a.meta["val"] if isinstance(a, torch.fx.Node) else a
                 for a in args]
        node.meta["val"] = target(*metas, **(kwargs or {}))
        return node

    def lift(self, value):
        """A 0-d tensor node for a scalar node, or a Python number as is."""
        if isinstance(value, _NUMBER):
            return value
        if not isinstance(value, torch.fx.Node):
            raise _NotLiftable
        if value in self.lifted:
            return self.lifted[value]
        out = self._lift_node(value)
        self.lifted[value] = out
        return out

    def _lift_node(self, node):
        if node.op != "call_function":
            raise _NotLiftable
        args = node.args
        if node.target is aten.item.default:
            source = args[0]
            if source.meta["val"].numel() != 1:
                raise _NotLiftable
            for sym in _symbols(node.meta["val"]):
                self.symbols[str(sym)] = source.name
            return self._add(aten.reshape.default, (source, []))
        if node.target is cast_symbool_to_symint_guardless:
            tensor = self.lift(args[0])
            return self._add(aten._to_copy.default, (tensor,),
                             {"dtype": torch.int64})
        if node.target is torch.sym_not:
            return self._add(aten.logical_not.default, (self.lift(args[0]),))
        if node.target is torch.sym_ite:
            cond, a, b = (self.lift(a) for a in args)
            if not isinstance(cond, torch.fx.Node):
                return a if cond else b
            if not isinstance(a, torch.fx.Node):
                a = self._add(aten.scalar_tensor.default, (a,))
            if not isinstance(b, torch.fx.Node):
                b = self._add(aten.scalar_tensor.default, (b,))
            return self._add(aten.where.self, (cond, a, b))
        if node.target in _BINARY and len(args) == 2:
            a, b = (self.lift(a) for a in args)
            tensor_op, scalar_op = _BINARY[node.target]
            if isinstance(a, torch.fx.Node):
                op = tensor_op if isinstance(b, torch.fx.Node) else scalar_op
                return self._add(op, (a, b))
            if isinstance(b, torch.fx.Node):
                # number OP tensor: the number as a 0-d tensor.
                a = self._add(aten.scalar_tensor.default, (a,))
                return self._add(tensor_op, (a, b))
            return node.target(a, b)
        raise _NotLiftable


def _erase_unused(graph, node, lifted):
    """Erases `node` and the scalar nodes it read, where the lifted ones
    are no longer used (an .item() used elsewhere stays). Only these: a
    general dead-code pass would also drop calls kept for their effect
    that fx does not know as such (torch.vmap's nesting calls)."""
    work = [node]
    while work:
        n = work.pop()
        if isinstance(n, torch.fx.Node) and n in lifted and not n.users:
            inputs = list(n.all_input_nodes)
            graph.erase_node(n)
            work += inputs


def lift_scalar_assertions(program):
    """Rewrites `program` (a torch.export.ExportedProgram) in place, as the
    module docstring says, and returns it with the number of assertions
    rewritten."""
    gm = program.graph_module
    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not (
                aten._assert_scalar.default):
            continue
        cond, message = node.args
        lifter = _Lifter(graph)
        with graph.inserting_before(node):
            try:
                tensor = lifter.lift(cond)
            except _NotLiftable:
                continue
            if not isinstance(tensor, torch.fx.Node):
                continue  # a constant condition stays the scalar assertion
            if tensor.meta["val"].dtype != torch.bool:
                tensor = lifter._add(aten.ne.Scalar, (tensor, 0))
            where = ", ".join(f"{s} = {n}.item()"
                              for s, n in sorted(lifter.symbols.items()))
            check = graph.call_function(
                aten._assert_async.msg, (tensor, f"{message} ({where})"))
            check.meta.update({k: v for k, v in node.meta.items()
                               if k in ("stack_trace", "nn_module_stack")})
            check.meta["val"] = None
        graph.erase_node(node)
        _erase_unused(graph, cond, set(lifter.lifted))
        count += 1
    if count:
        gm.recompile()
        # The symbols of the .item() calls that went with them.
        live = set()
        for n in graph.nodes:
            live |= _symbols(n.meta.get("val"))
        for sym in list(program.range_constraints):
            if sym not in live:
                del program.range_constraints[sym]
    return program, count
