"""Direct cases of the OpInfo harness (scripts/opinfo_coverage.py): the
Core ATen ops that no OpInfo sample's decomposed program calls (backward
ops, overloads the decompositions rewrite into others), each called
directly as torch.ops.aten.<op>.<overload> on small float64 / integer /
boolean tensors modelled on PyTorch's OpInfo samples of the related
functional op.

A direct case is run exactly as an OpInfo case (forward values and the VJP
of its differentiated inputs against PyTorch), except that its program is
decomposed with a table that leaves its own overload in (`keep`), so the
program calls it, and that it is compiled in chunks of direct cases only.
"""

from dataclasses import dataclass, field

import torch

aten = torch.ops.aten
F64 = torch.float64


@dataclass
class Sample:
    """One call: positional `args`, `kwargs`, the positions of float tensor
    arguments that are not differentiated (`frozen`: PyTorch has no
    derivative for them, e.g. the saved mean and rstd of a norm's
    backward, or they only give a shape), and the positions of the op's
    results that are compared (`outputs`, all when None: results PyTorch
    does not differentiate, such as batch norm's saved statistics, are
    left out of a sample whose inputs are differentiated)."""
    args: tuple
    kwargs: dict = field(default_factory=dict)
    frozen: tuple = ()
    outputs: tuple = None

    def call_kwargs(self):
        """kwargs for Direct.fn (the outputs go with them)."""
        if self.outputs is None:
            return dict(self.kwargs)
        return {**self.kwargs, "outputs": self.outputs}


@dataclass
class Direct:
    """The direct case of one Core ATen overload. `differentiable`: whether
    PyTorch differentiates the op (its VJP is checked). `prepare`: where
    given, the op's arguments from a sample's, computed in the program."""
    op: torch._ops.OpOverload
    samples: list
    differentiable: bool = True
    prepare: object = None

    @property
    def name(self):
        packet, overload = str(self.op).split(".", 1)[1].rsplit(".", 1)
        return f"direct.{packet}.{overload}"

    def fn(self, *args, outputs=None, **kwargs):
        if self.prepare is not None:
            args = self.prepare(*args)
        out = self.op(*args, **kwargs)
        if outputs is None:
            return out
        return tuple(out[k] for k in outputs)


_GEN = torch.Generator().manual_seed(0)


def rand(*shape, low=-1.0, high=1.0):
    """A float64 tensor uniform in [low, high)."""
    return low + (high - low) * torch.rand(shape, dtype=F64, generator=_GEN)


def ints(high, *shape):
    return torch.randint(0, high, shape, generator=_GEN)


def bools(*shape):
    return torch.rand(shape, generator=_GEN) < 0.5


def perm_index(rows, cols, take):
    """[rows, take] indices into [0, cols), distinct within a row (scatter
    with repeated indices keeps an unspecified one)."""
    return torch.stack([torch.randperm(cols, generator=_GEN)[:take]
                        for _ in range(rows)])


# --- samples of each op ------------------------------------------------------------


def adaptive_avg_pool2d_backward():
    out = []
    for shape, size in [((1, 8, 8, 8), (5, 7)), ((2, 3, 4, 3), (4, 4)),
                        ((3, 5, 5), (2, 2))]:
        x = rand(*shape)
        g = rand(*aten._adaptive_avg_pool2d(x, size).shape)
        out.append(Sample((g, x), frozen=(1,)))
    return out


def avg_pool2d_backward():
    out = []
    for shape, args in [((1, 3, 9, 9), ((3, 3), (1, 1), (1, 1), True, False,
                                         None)),
                        ((2, 2, 9, 9), ((4, 4), (2, 3), (1, 2), True, True,
                                        None)),
                        ((1, 3, 8, 8), ((2, 2), (2, 2), (0, 0), False, True,
                                        3))]:
        x = rand(*shape)
        g = rand(*aten.avg_pool2d(x, *args).shape)
        out.append(Sample((g, x, *args), frozen=(1,)))
    return out


def convolution_backward():
    out = []
    # (input, weight, bias, stride, padding, dilation, groups, output_mask),
    # as nn.functional.conv1d/conv2d's samples.
    for xs, ws, bias, stride, pad, dil, groups, mask in [
            ((1, 3, 4, 4), (3, 3, 3, 3), (3,), (1, 1), (0, 0), (1, 1), 1,
             [True, True, True]),
            ((2, 4, 8, 8), (2, 2, 3, 3), (2,), (3, 2), (2, 1), (4, 4), 2,
             [True, True, False]),
            ((1, 4, 5, 5), (3, 4, 3, 3), (3,), (2, 2), (1, 1), (1, 1), 1,
             [False, True, True]),
            ((2, 4, 8), (2, 2, 3), (2,), (3,), (1,), (2,), 2,
             [True, True, True])]:
        x, w = rand(*xs), rand(*ws)
        y = aten.convolution(x, w, None, stride, pad, dil, False,
                             [0] * len(stride), groups)
        out.append(Sample((rand(*y.shape), x, w, bias, stride, pad, dil,
                           False, [0] * len(stride), groups, mask)))
    return out


def embedding_dense_backward():
    # PyTorch's derivative of embedding_dense_backward leaves out
    # scale_grad_by_freq's division (torch.autograd.gradcheck fails on
    # it), so that sample checks the forward only.
    return [Sample((rand(2, 3, 4), torch.tensor([[0, 2, 4], [2, 2, 1]]), 5,
                    -1, False)),
            Sample((rand(6, 3), torch.tensor([1, 3, 1, 0, 1, 3]), 4, 1,
                    True), frozen=(0,)),
            Sample((rand(2, 2, 2, 3), ints(7, 2, 2, 2), 7, 0, False))]


def batch_norm_no_stats():
    # save_mean and save_rstd are not differentiable in PyTorch: compared
    # where no input is differentiated, left out where inputs are.
    return [Sample((rand(3, 2, 4), rand(2), rand(2), True, 0.5, 0.6),
                   frozen=(0, 1, 2)),
            Sample((rand(2, 3, 5, 5), None, None, True, 0.1, 1e-5),
                   outputs=(0,)),
            Sample((rand(4, 3), rand(3), rand(3), True, 0.1, 1e-5),
                   outputs=(0,))]


def batch_norm_no_training():
    # running_mean and running_var are statistics, not differentiated; the
    # saved statistics are empty.
    return [Sample((rand(3, 2, 4), rand(2), rand(2), rand(2),
                    rand(2, low=0.5, high=2.0), 0.5, 0.6), frozen=(3, 4),
                   outputs=(0,)),
            Sample((rand(2, 3, 5, 5), None, None, rand(3),
                    rand(3, low=0.5, high=2.0), 0.1, 1e-5), frozen=(3, 4),
                   outputs=(0,))]


def group_norm_backward():
    out = []
    for shape, groups, weight, mask in [
            ((1, 6, 3), 2, True, [True, True, True]),
            ((2, 6, 4, 4), 3, True, [True, False, True]),
            ((3, 4, 5), 1, False, [True, False, False])]:
        x = rand(*shape)
        n, c, hw = shape[0], shape[1], x[0, 0].numel()
        w = rand(c) if weight else None
        _, mean, rstd = aten.native_group_norm(x, w, None, n, c, hw, groups,
                                               1e-5)
        out.append(Sample((rand(*shape), x, mean, rstd, w, n, c, hw, groups,
                           mask), frozen=(2, 3)))
    return out


def layer_norm_backward():
    """(grad_out, input, normalized_shape, weight, bias, output_mask); the
    saved mean and rstd come from native_layer_norm(input) in the program
    (layer_norm_stats), as in a backward graph. Its VJP is checked for
    grad_out, weight and bias."""
    out = []
    for shape, norm, affine, mask in [
            ((2, 3, 4), [4], True, [True, True, True]),
            ((2, 3, 4, 5), [4, 5], False, [True, False, False]),
            ((1, 2, 3), [2, 3], True, [False, True, True])]:
        w = rand(*norm) if affine else None
        bias = rand(*norm) if affine else None
        # The input is not differentiated: PyTorch's derivative with respect
        # to it counts the saved statistics' dependence on it, while
        # glimmer's native_layer_norm gives its mean and rstd no gradient
        # (as PyTorch's autograd does for those outputs), so the two differ.
        out.append(Sample((rand(*shape), rand(*shape), norm, w, bias, mask),
                          frozen=(1,)))
    return out


def layer_norm_stats(g, x, norm, w, bias, mask):
    _, mean, rstd = aten.native_layer_norm(x, norm, w, bias, 1e-5)
    return g, x, norm, mean, rstd, w, bias, mask


def col2im():
    # (channels, output_size, kernel, dilation, padding, stride, batched)
    out = []
    for c, size, k, d, p, s, batched in [
            (3, (4, 5), (2, 2), (1, 1), (0, 0), (1, 1), True),
            (2, (6, 6), (3, 3), (1, 1), (1, 1), (2, 2), True),
            (2, (5, 5), (2, 2), (2, 2), (1, 0), (1, 1), False)]:
        blocks = 1
        for j in range(2):
            blocks *= (size[j] + 2 * p[j] - d[j] * (k[j] - 1) - 1) // s[j] + 1
        shape = (c * k[0] * k[1], blocks)
        x = rand(2, *shape) if batched else rand(*shape)
        out.append(Sample((x, size, k, d, p, s)))
    return out


def pad_samples(rank, reflect):
    """(input, padding) of reflection / replication pad over the last
    `rank` dimensions, batched and unbatched; a reflection pads less than
    the dimension, a replication may pad more."""
    shapes = {1: [(2, 3, 5), (3, 4)], 2: [(1, 3, 4, 4), (3, 3, 5)],
              3: [(1, 2, 3, 3, 3), (2, 3, 4, 3)]}[rank]
    pads = {1: [(1, 2), (3, 1)], 2: [(1, 2, 3, 0), (2, 2, 1, 1)],
            3: [(1, 2, 1, 1, 2, 0), (1, 1, 2, 1, 1, 1)]}[rank]
    if not reflect:
        pads = [tuple(v + 2 if i % 2 else v for i, v in enumerate(p))
                for p in pads]
    return [Sample((rand(*s), list(p))) for s, p in zip(shapes, pads)]


def scatter_src():
    return [Sample((rand(3, 5), 1, perm_index(3, 5, 5), rand(3, 5))),
            Sample((rand(4, 3), 0, perm_index(3, 4, 2).t().contiguous(),
                    rand(2, 3)))]


def scatter_value():
    return [Sample((rand(3, 5), 1, perm_index(3, 5, 2), 2.5)),
            Sample((rand(4, 3), 0, perm_index(3, 4, 2).t().contiguous(),
                    -1.5))]


def select_scatter():
    return [Sample((rand(3, 4, 5), rand(3, 5), 1, 2)),
            Sample((rand(4, 3), rand(3), 0, -1))]


DIRECT = [
    Direct(aten._adaptive_avg_pool2d_backward.default,
           adaptive_avg_pool2d_backward()),
    Direct(aten.avg_pool2d_backward.default, avg_pool2d_backward()),
    Direct(aten.convolution_backward.default, convolution_backward()),
    Direct(aten.embedding_dense_backward.default, embedding_dense_backward()),
    Direct(aten._native_batch_norm_legit.no_stats, batch_norm_no_stats()),
    Direct(aten._native_batch_norm_legit_no_training.default,
           batch_norm_no_training()),
    # PyTorch has no derivative of native_group_norm_backward: forward only.
    Direct(aten.native_group_norm_backward.default, group_norm_backward(),
           differentiable=False),
    Direct(aten.native_layer_norm_backward.default, layer_norm_backward(),
           prepare=layer_norm_stats),
    Direct(aten.col2im.default, col2im()),
    Direct(aten.reflection_pad1d.default, pad_samples(1, True)),
    Direct(aten.reflection_pad2d.default, pad_samples(2, True)),
    Direct(aten.reflection_pad3d.default, pad_samples(3, True)),
    Direct(aten.replication_pad2d.default, pad_samples(2, False)),
    Direct(aten.replication_pad3d.default, pad_samples(3, False)),
    # Boolean operands: the dialect's logical ops; integer bitwise
    # arithmetic has no glimmer op (the importer says so).
    Direct(aten.bitwise_and.Scalar, [Sample((bools(3, 4), True)),
                                     Sample((bools(5,), False))]),
    Direct(aten.bitwise_or.Scalar, [Sample((bools(3, 4), False)),
                                    Sample((bools(5,), True))]),
    Direct(aten.bitwise_xor.Scalar, [Sample((bools(3, 4), True)),
                                     Sample((bools(5,), False))]),
    Direct(aten.bitwise_xor.Tensor, [Sample((bools(3, 4), bools(3, 4))),
                                     Sample((bools(2, 3), bools(3)))]),
    Direct(aten.div.Scalar_mode,
           [Sample((rand(3, 4, low=-5, high=5), 2.5),
                   {"rounding_mode": "floor"}),
            Sample((rand(3, 4, low=-5, high=5), -3),
                   {"rounding_mode": "trunc"}),
            Sample((ints(20, 3, 4) - 10, 3), {"rounding_mode": "floor"})]),
    Direct(aten.fill.Scalar, [Sample((rand(3, 4), 2.5)),
                              Sample((ints(5, 2, 3), 7))]),
    Direct(aten.scatter.src, scatter_src()),
    Direct(aten.scatter.value, scatter_value()),
    Direct(aten.select_scatter.default, select_scatter()),
    Direct(aten.squeeze.dim, [Sample((rand(2, 1, 3), 1)),
                              Sample((rand(4, 3), 0)),
                              Sample((rand(1, 1, 1), -1))]),
    Direct(aten.upsample_nearest2d.vec,
           [Sample((rand(1, 2, 4, 4), [7, 7], None)),
            Sample((rand(2, 3, 3, 5), None, [1.7, 2.0]))]),
    Direct(aten.var.dim, [Sample((rand(3, 4, 5), [1], True, False)),
                          Sample((rand(3, 4, 5), [0, 2], False, True)),
                          Sample((rand(6), None, True, False))]),
]
