#!/usr/bin/env python3
"""Per-operator TorchScript fixtures for the importer lit tests.

    python make_op_fixtures.py OUTDIR NAME [NAME ...]

writes OUTDIR/NAME.pt (a traced or scripted module) and OUTDIR/NAME.safetensors
(its example inputs, keyed by forward argument name) for each named fixture.
`python make_op_fixtures.py --list` prints the registry; `--locate NAME`
prints FILE:LINE of the line marked `# the unsupported op` in NAME's module.

Every fixture names the TorchScript node kinds it exists to exercise; after
saving, the archive is loaded back, `forward` is inlined, and the script
fails if one of them is missing from the graph (e.g. because tracing
evaluated it in Python). The operands of the op depend on forward arguments,
so the importer converts the node instead of folding it into a constant
(creation ops, which only take host values, use outputs above the
importer's 2^22-element folding limit instead).
"""

import inspect
import os
import sys
import warnings
from typing import Tuple

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

FIXTURES = {}


class Fixture:
    def __init__(self, name, ops, make, inputs, script):
        self.name, self.ops, self.make = name, ops, make
        self.inputs, self.script = inputs, script


def _fn_module(f):
    """A module whose forward has the parameter names of `f` and calls it."""
    names = list(inspect.signature(f).parameters)
    ns = {}
    exec(
        "def forward(self, {0}):\n    return self.f({0})".format(", ".join(names)),
        ns,
    )
    cls = type("Fn", (torch.nn.Module,), {"forward": ns["forward"]})
    m = cls()
    m.f = f
    return m


def fn(name, ops, f, **inputs):
    """A traced fixture computing f(**inputs)."""
    FIXTURES[name] = Fixture(name, ops, lambda: _fn_module(f), inputs, False)


def mod(name, ops, make, script=False, **inputs):
    """A fixture from a module factory (traced, or scripted if `script`)."""
    FIXTURES[name] = Fixture(name, ops, make, inputs, script)


def scripted(name, ops, **inputs):
    """Class decorator: a scripted fixture."""

    def deco(cls):
        mod(name, ops, cls, script=True, **inputs)
        return cls

    return deco


# Example-input factories (called with a fixed seed).
def f32(*s):
    return lambda: torch.randn(s)


def f64(*s):
    return lambda: torch.randn(s, dtype=torch.float64)


def bf16(*s):
    return lambda: torch.randn(s).to(torch.bfloat16)


def f16(*s):
    return lambda: torch.randn(s).to(torch.float16)


def pos(*s):
    return lambda: torch.rand(s) + 0.5


def i64(*s, hi=8):
    return lambda: torch.randint(0, hi, s, dtype=torch.int64)


def i32(*s, hi=8):
    return lambda: torch.randint(0, hi, s, dtype=torch.int32)


def mask(*s):
    return lambda: torch.rand(s) > 0.5


#===----------------------------------------------------------------------===#
# Elementwise arithmetic and unary math
#===----------------------------------------------------------------------===#

fn("add", ["aten::add"],
   lambda x, y, i: (x + y, torch.add(x, y, alpha=2), i + y),
   x=f32(2, 3), y=f32(3), i=i64(2, 3))


@scripted("add_scalar_alpha_int", ["aten::add"], x=i64(2, 3))
class AddScalarAlphaInt(torch.nn.Module):
    def forward(self, x):
        return torch.add(x, 2, alpha=3)  # add.Scalar: x + 6, still int64


fn("add_inplace", ["aten::add_"], lambda x, y: x.clone().add_(y),
   x=f32(2, 3), y=f32(2, 1))
fn("sub_zero_dim", ["aten::sub"], lambda x, s: x - s, x=f32(2, 3), s=f32())
fn("rsub", ["aten::rsub"], lambda x: (1 - x, torch.rsub(x, 2.0, alpha=3)),
   x=f32(2, 3))
fn("mul", ["aten::mul"], lambda x, y, i: (x * y, i * 2.5), x=i32(2, 3),
   y=i64(2, 3), i=i64(2, 3))
fn("mul_inplace", ["aten::mul_"], lambda x, y: x.clone().mul_(y),
   x=f32(2, 3), y=f32(3))
fn("div", ["aten::div"], lambda i, j, x: (i / j, x / 4), i=i64(2, 3),
   j=i64(3), x=f64(2, 3))
fn("reciprocal_int", ["aten::reciprocal"], lambda x: torch.reciprocal(x),
   x=i64(2, 3))
fn("neg", ["aten::neg"], lambda x, i: (-x, -i), x=f32(2, 3), i=i32(2, 3))
fn("pow", ["aten::pow"],
   lambda x, y, i: (x ** y, x ** 2, i ** 2.0, i ** 3, 2 ** x),
   x=pos(2, 3), y=f32(3), i=i64(2, 3))
fn("floor_divide_tensor", ["aten::floor_divide"],
   lambda x: torch.floor_divide(x, 2), x=i64(2, 3))
fn("floor_divide_float", ["aten::floor_divide"],
   lambda x: torch.floor_divide(x, 2),  # the unsupported op
   x=f32(2, 3))
fn("maximum_bcast", ["aten::maximum"], lambda x, y: torch.maximum(x, y),
   x=f32(2, 3), y=f32(2, 1))
fn("minimum_promote", ["aten::minimum"], lambda x, y: torch.minimum(x, y),
   x=i64(2, 3), y=f32(3))
fn("clamp", ["aten::clamp"], lambda x, i: (x.clamp(-0.5, 0.5), i.clamp(min=0.5)),
   x=f32(2, 3), i=i64(2, 3))
fn("clamp_min", ["aten::clamp_min"], lambda x: torch.clamp_min(x, 0.1),
   x=f32(2, 3))
fn("clamp_max", ["aten::clamp_max"], lambda x: torch.clamp_max(x, 2),
   x=i64(2, 3))
fn("unary_float",
   ["aten::exp", "aten::log", "aten::sqrt", "aten::rsqrt", "aten::tanh",
    "aten::erf", "aten::sigmoid", "aten::silu", "aten::relu", "aten::sin",
    "aten::cos"],
   lambda x: (x.exp(), x.log(), x.sqrt(), x.rsqrt(), x.tanh(), torch.erf(x),
              x.sigmoid(), F.silu(x), F.relu(x), x.sin(), x.cos()),
   x=pos(2, 3))
fn("unary_other", ["aten::exp", "aten::sqrt", "aten::sigmoid", "aten::relu",
                   "aten::tanh", "aten::rsqrt"],
   lambda i, h: (i.exp(), i.sqrt(), i.sigmoid(), torch.relu(i), h.tanh(),
                 h.rsqrt()),
   i=i64(2, 3), h=bf16(4))

#===----------------------------------------------------------------------===#
# Comparisons, logical ops, select
#===----------------------------------------------------------------------===#

fn("compare", ["aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt",
               "aten::ge"],
   lambda i, j, a, b, x, s, k, d: (i == j, a != b, i < 2.5, x <= s, x > 0,
                                   k >= d),
   i=i64(2, 3), j=i64(3), a=mask(2, 3), b=mask(2, 3), x=f32(2, 3), s=f32(),
   k=i32(2, 3), d=f64(2, 3))
fn("not", ["aten::logical_not", "aten::bitwise_not"],
   lambda x, m: (torch.logical_not(x), ~m), x=f32(2, 3), m=mask(2, 3))
fn("bitwise_not_int", ["aten::bitwise_not"], lambda x: ~x, x=i64(2, 3))
fn("and", ["aten::logical_and", "aten::__and__", "aten::bitwise_and"],
   lambda x, m, a, b: (torch.logical_and(x, m), a & b,
                       torch.bitwise_and(a, b[:, :1])),
   x=f32(2, 3), m=mask(3), a=mask(2, 3), b=mask(2, 3))
fn("bitwise_and_int", ["aten::bitwise_and"],
   lambda x, y: torch.bitwise_and(x, y), x=i64(2, 3), y=i64(2, 3))
fn("or", ["aten::logical_or", "aten::__or__", "aten::bitwise_or"],
   lambda i, a, b: (torch.logical_or(i, a), a | b, torch.bitwise_or(a, a)),
   i=i64(2, 3), a=mask(2, 3), b=mask(3))


def _or_and_inplace(a, b):
    c = a.clone()
    c[0] |= b[0]  # through a select: the write reaches c
    d = a.clone()
    d &= b
    return c, d


fn("or_and_inplace", ["aten::__ior__", "aten::__iand__"], _or_and_inplace,
   a=mask(2, 3), b=mask(2, 3))
fn("resolve_conj_neg", ["aten::resolve_conj", "aten::resolve_neg"],
   lambda x: (x.resolve_conj() * 2, x.resolve_neg() + 1), x=f32(2, 3))
fn("where", ["aten::where"],
   lambda c, x, y, m, i: (torch.where(c, x, y), torch.where(m, i, 0.0)),
   c=mask(2, 1), x=f32(2, 3), y=f32(3), m=mask(2, 3), i=i64(2, 3))
fn("masked_fill", ["aten::masked_fill", "aten::masked_fill_"],
   lambda x, m, i, n: (x.masked_fill(m, float("-inf")),
                       i.clone().masked_fill_(n, 7)),
   x=f32(2, 3), m=mask(2, 1), i=i64(2, 3), n=mask(2, 3))
fn("masked_scatter_rows", ["aten::masked_scatter"],
   lambda e, m, src: e.masked_scatter(m.unsqueeze(-1).expand_as(e), src),
   e=f32(2, 3, 4), m=lambda: torch.tensor([[True, False, True],
                                           [False, True, False]]),
   src=f32(3, 4))

#===----------------------------------------------------------------------===#
# Casts and identities
#===----------------------------------------------------------------------===#

fn("to", ["aten::to"],
   lambda x, i, y: (x.to(torch.float64), i.float(), x.to(y), x.to("cpu"),
                    x.bool()),
   x=f32(2, 3), i=i64(2, 3), y=bf16(1))
fn("type_as", ["aten::type_as"], lambda x, y: x.type_as(y), x=i64(2, 3),
   y=f16(1))


@scripted("identities", ["aten::contiguous", "aten::clone", "aten::detach",
                         "aten::alias", "aten::lift_fresh"], x=f32(2, 3))
class Identities(torch.nn.Module):
    def forward(self, x):
        return (x.t().contiguous(), x.clone().detach(),
                torch.ops.aten.alias(x) + torch.ops.aten.lift_fresh(x))


fn("dropout_eval", ["aten::dropout", "aten::feature_dropout"],
   lambda x, y: (F.dropout(x, 0.5, False), F.dropout2d(y, 0.5, False)),
   x=f32(2, 3), y=f32(2, 3, 4, 4))
fn("dropout_train", ["aten::dropout"], lambda x: F.dropout(x, 0.5, True),
   x=f32(2, 3))

#===----------------------------------------------------------------------===#
# Shapes
#===----------------------------------------------------------------------===#


@scripted("view_reshape", ["aten::view", "aten::reshape",
                           "aten::_reshape_alias"], x=f32(2, 3, 4))
class ViewReshape(torch.nn.Module):
    def forward(self, x):
        return (x.view(-1, 4), x.reshape(4, 6),
                torch.ops.aten._reshape_alias(x, [3, 8], [8, 1]))


fn("view_as", ["aten::view_as", "aten::reshape_as"],
   lambda x, y, z: (x.view_as(y), x.reshape_as(z)), x=f32(2, 6), y=f32(3, 4),
   z=f32(4, 3))
fn("flatten", ["aten::flatten"], lambda x: (x.flatten(1, -1), x.flatten(1, 2)),
   x=f32(2, 3, 4, 5))
fn("unflatten_infer", ["aten::unflatten"], lambda x: x.unflatten(-1, (2, -1)),
   x=f32(3, 8))
fn("squeeze", ["aten::unsqueeze", "aten::squeeze"],
   lambda x, y: (x.unsqueeze(-1), y.squeeze(), y.squeeze(-2)),
   x=f32(2, 3), y=f32(1, 3, 1, 4))
fn("transpose", ["aten::transpose", "aten::t", "aten::permute"],
   lambda x, m: (x.transpose(-1, 0), m.t(), x.permute(2, 0, -2)),
   x=f32(2, 3, 4), m=f32(2, 3))
fn("expand", ["aten::expand", "aten::expand_as"],
   lambda x, y, z: (x.expand(2, -1, 4), y.expand_as(z)),
   x=f32(3, 1), y=f32(1, 3), z=f32(2, 3))
fn("repeat_extra_dim", ["aten::repeat"], lambda x: x.repeat(2, 1, 3),
   x=f32(2, 3))
fn("slice", ["aten::slice"], lambda x, y: (x[:, 1:-1], y[..., -4::2]),
   x=f32(2, 5), y=f32(2, 7))
fn("narrow_neg", ["aten::narrow"], lambda x: x.narrow(1, -3, 2), x=f32(2, 5))
fn("select_neg", ["aten::select"], lambda x: x[:, -1], x=f32(2, 3, 4))
fn("unbind", ["aten::unbind"], lambda x: x.unbind(1), x=f32(2, 3))
fn("chunk_uneven", ["aten::chunk"], lambda x: x.chunk(2, -1), x=f32(2, 5))
fn("split", ["aten::split", "aten::split_with_sizes"],
   lambda x, y: (x.split(2, 0), y.split([1, 3], 1)), x=f32(5, 3), y=f32(2, 4))
fn("cat_neg_promote", ["aten::cat"], lambda x, y: torch.cat([x, y], -1),
   x=i64(2, 3), y=f32(2, 2))
fn("stack", ["aten::stack"],
   lambda x, y, i, z: (torch.stack([x, y], -1), torch.stack([i, z])),
   x=f32(2, 3), y=f32(2, 3), i=i32(3), z=f32(3))
fn("pad", ["aten::pad"],
   lambda x, y: (F.pad(x, (1, 2), value=3.5), F.pad(y, (0, 1, 2, 0))),
   x=f32(2, 3), y=f32(2, 3, 4))
fn("constant_pad_nd", ["aten::constant_pad_nd"],
   lambda x: torch.constant_pad_nd(x, [1, 1, 0, 2], -1.0), x=f32(2, 3))

#===----------------------------------------------------------------------===#
# Reductions and scans
#===----------------------------------------------------------------------===#

fn("sum", ["aten::sum"],
   lambda x, m: (x.sum(), x.sum(-1, keepdim=True), x.sum((0, 2)), m.sum(1),
                 x.sum(dtype=torch.float64)),
   x=f32(2, 3, 4), m=mask(2, 3))
fn("mean", ["aten::mean"],
   lambda x, h: (x.mean((-1, 0)), x.mean(1, keepdim=True), h.mean(),
                 x.mean(dtype=torch.float64)),
   x=f32(2, 3, 4), h=bf16(2, 3))
fn("amax_amin", ["aten::amax", "aten::amin"],
   lambda x, i: (x.amax(-1, keepdim=True), i.amin((0, 1))),
   x=f32(2, 3), i=i64(2, 3, 4))
fn("any_all", ["aten::any", "aten::all"],
   lambda x, i: ((x > 0).any(), (i != 0).all(dim=1), x.any(dim=0, keepdim=True)),
   x=f32(2, 3), i=i64(2, 4, hi=3))
fn("cumsum", ["aten::cumsum"],
   lambda i, x: (i.cumsum(-1), x.cumsum(0, dtype=torch.float64)),
   i=i32(2, 3), x=f32(2, 3))

#===----------------------------------------------------------------------===#
# Creation (converted, not folded: outputs exceed 2^22 elements, or *_like
# of forward arguments)
#===----------------------------------------------------------------------===#

BIG = (2049, 1025)  # x.size(0) * 2049 * 1025 > 2^22 for x.size(0) >= 2

fn("big_fills", ["aten::zeros", "aten::ones", "aten::full"],
   lambda x: (torch.zeros(x.size(0), *BIG),
              torch.ones(x.size(0), *BIG, dtype=torch.int32),
              torch.full((x.size(0), *BIG), 1.5),
              torch.full((x.size(0), *BIG), 7)),
   x=f32(2))


@scripted("full_bool", ["aten::full"], x=f32(2))
class FullBool(torch.nn.Module):
    def forward(self, x):
        return torch.full([x.size(0), 2049, 1025], True)


# A 2 GiB fill that only a reduction reads: the importer must learn its size
# without allocating it (import-fold-memory.test measures the peak memory).
@scripted("huge_fill", ["aten::zeros"], x=f32(2))
class HugeFill(torch.nn.Module):
    def forward(self, x):
        return x + torch.zeros([x.size(0), 1 << 28]).sum()


fn("like", ["aten::zeros_like", "aten::ones_like", "aten::full_like"],
   lambda i, x, d: (torch.zeros_like(i),
                    torch.ones_like(x, dtype=torch.bfloat16),
                    torch.full_like(d, 2.5)),
   i=i64(2, 3), x=f32(2, 3), d=f64(2, 3))
fn("new", ["aten::new_zeros", "aten::new_ones", "aten::new_full"],
   lambda i, h, x: (i.new_zeros(4, 2), h.new_ones((2, 5)),
                    x.new_full((3,), -1.0)),
   i=i32(3), h=f16(3), x=f32(2))
fn("arange", ["aten::arange"],
   lambda x: (torch.arange(x.size(0) * 2100000),
              torch.arange(1.0, x.size(0) * 1050000.0, 0.5)),
   x=f32(2))

#===----------------------------------------------------------------------===#
# Model ops
#===----------------------------------------------------------------------===#


class Linears(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.a = torch.nn.Linear(4, 5)
        self.b = torch.nn.Linear(4, 6, bias=False)

    def forward(self, x, v):
        return self.a(x), self.b(v)


mod("linear", ["aten::linear"], Linears, x=f32(2, 3, 4), v=f32(4))
fn("matmul", ["aten::matmul"],
   lambda a, b, c, d, v, w: (a @ b, torch.matmul(c, d), torch.matmul(v, w),
                             torch.matmul(v, d)),
   a=f32(2, 3, 4), b=f32(4, 5), c=f32(3, 4), d=f32(2, 4, 5), v=f32(4),
   w=f32(4))
fn("mm_bmm", ["aten::mm", "aten::bmm"],
   lambda a, b, c, d: (torch.mm(a, b), torch.bmm(c, d)),
   a=f32(2, 3), b=f32(3, 4), c=f32(2, 3, 4), d=f32(2, 4, 5))


def _seeded(make):
    def wrapped():
        torch.manual_seed(1)
        return make()

    return wrapped


mod("embedding_2d_ids", ["aten::embedding"],
    _seeded(lambda: torch.nn.Embedding(10, 4, padding_idx=0)),
    input=i64(2, 3, hi=10))
fn("gather", ["aten::index", "aten::index_select"],
   lambda x, i, y, j: (x[i], torch.index_select(y, -2, j)),
   x=f32(5, 3, 2), i=i64(2, 4, hi=5), y=f32(5, 3), j=i64(4, hi=5))
fn("gather_multi_index", ["aten::index"],
   lambda x, b, q, r: (x[b, q], x[:, q, r]),
   x=f32(2, 3, 4), b=i64(2, 1, hi=2), q=i64(5, hi=3), r=i64(5, hi=4))
fn("gather_integer_rows", ["aten::index"],
   lambda ids, b, q: ids[b, q],
   ids=i64(2, 6, hi=3), b=i64(2, 1, hi=2), q=i64(6, hi=6))
fn("gather_bool_mask", ["aten::index"],
   lambda x, m, y, m2: (x[m], y[:, m2]),
   x=f32(4, 3), m=lambda: torch.tensor([True, False, True, True]),
   y=f32(2, 2, 3, 2), m2=lambda: torch.tensor([[True, False, True], [False, False, True]]))
fn("gather_bool_mask_const", ["aten::index"],
   lambda x: x[torch.arange(4) % 2 == 0], x=f32(4, 3))
fn("gather_bool_mask_empty", ["aten::index"],
   lambda x, m: x[m],  # the unsupported op
   x=f32(4, 3), m=lambda: torch.zeros(4, dtype=torch.bool))
fn("gather_bool_mask_and_index", ["aten::index"],
   lambda x, m, j: x[m, j],  # the unsupported op
   x=f32(4, 3), m=lambda: torch.tensor([True, False, True, True]), j=i64(3, hi=3))
fn("gather_non_adjacent", ["aten::index"],
   lambda x, b, r: x[b, :, r],  # the unsupported op
   x=f32(2, 3, 4), b=i64(5, hi=2), r=i64(5, hi=4))


class LayerNorms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(1)
        self.ln = torch.nn.LayerNorm(4, eps=1e-6)

    def forward(self, x, h):
        return self.ln(x), F.layer_norm(h, (4,))


class RmsNorms(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rms = torch.nn.RMSNorm(4, eps=1e-5)

    def forward(self, x, h):
        return self.rms(x), F.rms_norm(h, (4,))


mod("layer_norm", ["aten::layer_norm"], LayerNorms, x=f32(2, 3, 4),
    h=bf16(2, 4))
mod("rms_norm", ["aten::rms_norm"], RmsNorms, x=f32(2, 3, 4), h=f16(2, 4))
class _BothOf(torch.nn.Module):
    """Two modules applied to the same input."""

    def __init__(self, a, b):
        super().__init__()
        self.a, self.b = a, b

    def forward(self, input):
        return self.a(input), self.b(input)


mod("conv_traced", ["aten::_convolution"],
    _seeded(lambda: torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)),
    input=f32(1, 3, 8, 7))
mod("conv2d_scripted", ["aten::conv2d"],
    _seeded(lambda: torch.nn.Conv2d(3, 2, (3, 2), bias=False)), script=True,
    input=f32(2, 3, 5, 6))
mod("conv_mode", ["aten::_convolution_mode"],
    _seeded(lambda: _BothOf(torch.nn.Conv2d(3, 4, 3, padding="same"),
                          torch.nn.Conv2d(3, 2, (2, 3), stride=2,
                                          padding="valid", bias=False))),
    input=f32(1, 3, 6, 5))
mod("conv_mode_same_even", ["aten::_convolution_mode"],
    _seeded(lambda: torch.nn.Conv2d(3, 4, 2, padding="same")),  # the unsupported op
    input=f32(1, 3, 6, 5))
mod("conv3d_patches", ["aten::_convolution"],
    _seeded(lambda: torch.nn.Conv3d(3, 8, (2, 4, 4), stride=(2, 4, 4))),
    input=f32(6, 3, 2, 4, 4))
mod("conv3d_windows", ["aten::_convolution"],
    _seeded(lambda: torch.nn.Conv3d(3, 8, (2, 4, 4), stride=(2, 4, 4))),  # the unsupported op
    input=f32(1, 3, 4, 8, 8))
fn("avg_pool2d", ["aten::avg_pool2d"],
   lambda x, y: (F.avg_pool2d(x, 2), F.avg_pool2d(y, (1, 3))),
   x=f32(1, 3, 4, 6), y=f32(2, 4, 6))
fn("avg_pool2d_overlapping", ["aten::avg_pool2d"],
   lambda x: F.avg_pool2d(x, 3, stride=1),
   x=f32(1, 3, 4, 6))
fn("sdpa", ["aten::scaled_dot_product_attention"],
   lambda q, k, v, q3, k5, v5: (
       F.scaled_dot_product_attention(q, k, v, is_causal=True),
       F.scaled_dot_product_attention(q3, k5, v5, scale=0.5),
       F.scaled_dot_product_attention(
           q, k, v, attn_mask=torch.ones(4, 4, dtype=torch.bool).tril()),
       F.scaled_dot_product_attention(
           q, k, v, attn_mask=torch.full((4, 4), float("-inf")).triu(1))),
   q=f32(1, 2, 4, 8), k=f32(1, 2, 4, 8), v=f32(1, 2, 4, 8),
   q3=f32(1, 2, 3, 8), k5=f32(1, 2, 5, 8), v5=f32(1, 2, 5, 8))
fn("sdpa_bias_mask", ["aten::scaled_dot_product_attention"],
   lambda q, k, v: F.scaled_dot_product_attention(
       q, k, v, attn_mask=torch.ones(4, 4).tril()),
   q=f32(1, 2, 4, 8), k=f32(1, 2, 4, 8), v=f32(1, 2, 4, 8))
fn("softmax", ["aten::softmax", "aten::log_softmax"],
   lambda x, y: (x.softmax(-1), F.softmax(x, 0, dtype=torch.float64),
                 F.log_softmax(y, dim=1)),
   x=f32(2, 3), y=f32(2, 3, 4))
fn("cross_entropy", ["aten::cross_entropy_loss"],
   lambda logits, labels, logits3, labels3: (
       F.cross_entropy(logits, labels),
       F.cross_entropy(logits3, labels3, reduction="sum", ignore_index=0)),
   logits=f32(4, 5), labels=i64(4, hi=5), logits3=f32(2, 5, 3),
   labels3=i64(2, 3, hi=5))
fn("gelu", ["aten::gelu"], lambda x: (F.gelu(x), F.gelu(x, approximate="tanh")),
   x=f32(2, 3))

#===----------------------------------------------------------------------===#
# Host values: sizes, lists, tuples, attributes, scalar arithmetic
#===----------------------------------------------------------------------===#

fn("traced_sizes", ["aten::size", "prim::NumToTensor", "aten::Int",
                    "prim::ListConstruct", "aten::floor_divide",
                    "prim::ListUnpack"],
   lambda x, y: (x.view(x.size(0), -1), y.reshape(y.size(0) // 2, y.size(1) * 2),
                 y.chunk(2)[1]),
   x=f32(2, 3, 4), y=f32(4, 3))


class _Pair(torch.nn.Module):
    def forward(self, x) -> Tuple[torch.Tensor, int]:
        return x, x.size(0)


@scripted("script_tuples", ["prim::TupleConstruct", "prim::TupleUnpack",
                            "prim::TupleIndex", "prim::GetAttr"], x=f32(3, 6))
class ScriptTuples(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pair = _Pair()
        self.scale = 3

    def forward(self, x):
        t = self.pair(x)
        a, n = t
        b = t[0]
        # A run-time index keeps TupleIndex (and the TupleUnpack of its
        # result) from being lowered away before conversion.
        pairs = ((x, 2), (x * 2, 3))
        c, m = pairs[x.size(0) - 3]
        return a.view(n * self.scale, -1), b, c.view(m, -1)


@scripted("script_sizes", ["aten::size", "aten::__getitem__", "aten::len",
                           "aten::dim", "aten::numel", "aten::slice",
                           "prim::ListUnpack", "prim::device", "prim::dtype"],
          x=f32(2, 3, 4), y=i64(2, 3))
class ScriptSizes(torch.nn.Module):
    def forward(self, x, y):
        s = x.shape
        last = s[-1]
        a, b = s[1:]
        return (x.reshape(len(s) * x.dim() - 7, x.numel() // 2), last, a * b,
                len(x), y.to(device=x.device, dtype=x.dtype))


@scripted("script_scalars", ["aten::add", "aten::sub", "aten::mul",
                             "aten::div", "aten::floordiv", "aten::neg",
                             "aten::pow", "aten::Float", "aten::gt",
                             "aten::eq", "aten::__and__", "prim::NumToTensor",
                             "aten::item", "aten::ScalarImplicit"],
          x=f32(6, 4), i=i64(2, 3))
class ScriptScalars(torch.nn.Module):
    def forward(self, x, i):
        n = x.size(0)
        m = x.size(-1)
        q = (n + m - 1) * 2 // 4      # (6 + 4 - 1) * 2 // 4 = 4
        f = float(n) / 4              # 1.5
        h = -n // 4                   # floor(-1.5) = -2
        p = m ** 2                    # 16.0 (pow.int returns float)
        z = float(m) // 3             # 1.0 (a float)
        both = (n == 6) & (m > 5)     # False (__and__ of host booleans)
        t = torch.ops.prim.NumToTensor(i.size(1))
        return (x.view(q, -1) * f, h, p, n > m, z, both, i * t.item(),
                i + torch.ops.aten.ScalarImplicit(t))


#===----------------------------------------------------------------------===#
# Sorting, bags of embeddings, grid sampling
#===----------------------------------------------------------------------===#

def sorted_f32(*s):
    return lambda: torch.sort(torch.randn(s)).values


fn("sort", ["aten::sort"],
   lambda x, i: (torch.sort(x, dim=0, descending=True),
                 torch.sort(i, stable=True)),
   x=f32(3, 4), i=i64(6))
fn("msort_isin", ["aten::msort", "aten::isin"],
   lambda x, e, t: (torch.msort(x), torch.isin(e, t),
                    torch.isin(e, t, invert=True)),
   x=f32(3, 4), e=i64(2, 3), t=i64(4))
fn("topk", ["aten::topk"],
   lambda x: (torch.topk(x, 2, dim=0), torch.topk(x, 3, largest=False)),
   x=f32(3, 4))
fn("topk_zero", ["aten::topk"], lambda x: torch.topk(x, 0), x=f32(3, 4))
fn("searchsorted", ["aten::searchsorted"],
   lambda s, v, r, w: (torch.searchsorted(s, v),
                       torch.searchsorted(s, v, right=True, out_int32=True),
                       torch.searchsorted(r, w)),
   s=sorted_f32(5), v=f32(2, 3), r=sorted_f32(2, 4), w=f32(2, 3))
fn("masked_scatter_elements", ["aten::masked_scatter"],
   lambda x, m, c, src: (x.masked_scatter(m, src), x.masked_scatter(c, src)),
   x=f32(3, 4), m=mask(3, 4), c=lambda: torch.tensor([True, False, True, True]),
   src=f32(12))
fn("pdist_one_row", ["aten::pdist"], lambda x: F.pdist(x),
   x=f32(1, 3))
fn("embedding_bag", ["aten::embedding_bag"],
   lambda w, i, o, p: (
       F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
       F.embedding_bag(i, w, o, mode="mean", padding_idx=0),
       F.embedding_bag(i, w, o, mode="max", include_last_offset=True)),
   w=f32(6, 3), i=i64(5, hi=6), o=lambda: torch.tensor([0, 2, 2]), p=f32(5))
fn("embedding_bag_freq", ["aten::embedding_bag"],
   lambda w, i, o: F.embedding_bag(i, w, o, scale_grad_by_freq=True),
   w=f32(6, 3), i=i64(5, hi=6), o=lambda: torch.tensor([0, 2]))
fn("grid_sample", ["aten::grid_sampler"],
   lambda x, g: (
       F.grid_sample(x, g, mode="bilinear", padding_mode="zeros",
                     align_corners=False),
       F.grid_sample(x, g, mode="nearest", padding_mode="border",
                     align_corners=False),
       F.grid_sample(x, g, mode="bilinear", padding_mode="reflection",
                     align_corners=True)),
   x=f32(1, 2, 3, 4), g=lambda: torch.rand(1, 2, 2, 2) * 2.4 - 1.2)
fn("grid_sample_bicubic", ["aten::grid_sampler"],
   lambda x, g: F.grid_sample(x, g, mode="bicubic", align_corners=False),
   x=f32(1, 2, 3, 4), g=f32(1, 2, 2, 2))


#===----------------------------------------------------------------------===#
# Unsupported operators (error tests)
#===----------------------------------------------------------------------===#

class UnsupportedCumprod(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return torch.cumprod(y, dim=1)  # the unsupported op


mod("unsupported_cumprod", ["aten::cumprod"], UnsupportedCumprod, script=True,
    x=f32(2, 3))
mod("unsupported_cumprod_traced", ["aten::cumprod"], UnsupportedCumprod,
    x=f32(2, 3))


#===----------------------------------------------------------------------===#
# Driver
#===----------------------------------------------------------------------===#

def _graph_kinds(module):
    g = module.forward.graph.copy()
    torch._C._jit_pass_inline(g)
    kinds = set()

    def walk(block):
        for node in block.nodes():
            kinds.add(node.kind())
            for b in node.blocks():
                walk(b)

    walk(g)
    return kinds


def build(fixture, outdir):
    torch.manual_seed(0)
    inputs = {k: make() for k, make in fixture.inputs.items()}
    module = fixture.make().eval()
    names = list(inspect.signature(module.forward).parameters)
    missing = [n for n in names if n not in inputs]
    if missing or len(names) != len(inputs):
        raise SystemExit(f"{fixture.name}: forward takes {names}, inputs are "
                         f"{list(inputs)}")
    if fixture.script:
        compiled = torch.jit.script(module)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = torch.jit.trace(module, tuple(inputs[n] for n in names),
                                       check_trace=False)
    pt = os.path.join(outdir, fixture.name + ".pt")
    compiled.save(pt)
    kinds = _graph_kinds(torch.jit.load(pt))
    absent = [op for op in fixture.ops if op not in kinds]
    if absent:
        raise SystemExit(f"{fixture.name}: {absent} not in the saved graph "
                         f"(it has {sorted(kinds)})")
    save_file({k: v.contiguous() for k, v in inputs.items()},
              os.path.join(outdir, fixture.name + ".safetensors"))


def locate(name):
    """FILE:LINE of the line marked `# the unsupported op` in a fixture's
    module source (what an import error must point at)."""
    cls = FIXTURES[name].make
    lines, first = inspect.getsourcelines(cls)
    for i, line in enumerate(lines):
        if "# the unsupported op" in line:
            return f"{os.path.basename(inspect.getsourcefile(cls))}:{first + i}"
    raise SystemExit(f"{name}: no line marked '# the unsupported op'")


def main(argv):
    if argv[1:] == ["--list"]:
        for f in FIXTURES.values():
            print(f.name, " ".join(f.ops))
        return
    if len(argv) == 3 and argv[1] == "--locate":
        print("expected location:", locate(argv[2]))
        return
    if len(argv) < 3:
        raise SystemExit(__doc__)
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    unknown = [n for n in argv[2:] if n not in FIXTURES]
    if unknown:
        raise SystemExit(f"unknown fixtures: {unknown}")
    for name in argv[2:]:
        build(FIXTURES[name], outdir)


if __name__ == "__main__":
    main(sys.argv)
