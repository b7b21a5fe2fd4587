"""The CUDA backend's bf16 kernels (glimmer._runtime) against PyTorch.

bf16 tensors exist only on the GPU: the CPU kernels support f32/f64, the CUDA
kernels also bf16, which they compute in f32 and round once to bf16 when
they store a result (runtime/cuda/Common.cuh). Run on a GPU machine:

    GLIMMER_TEST_DEVICE=cuda PYTHONPATH=build/python .venv/bin/python -m \
        pytest -q -p no:cacheprovider runtime/tests/python/test_kernels_bf16.py

(integration_test/kernels.test does this). Without GLIMMER_TEST_DEVICE=cuda
(or cuda:N) and a visible GPU, the whole module is skipped.

Approach. Inputs are random (seeded) float32 numpy arrays rounded to bf16
values on the host (`bf`), so the kernel and the reference see exactly the
same numbers. A test copies them to the GPU as f32 and converts them to bf16
there (`dev`: rt.convert on the CUDA tensor), runs the kernel, converts
the result back to f32 on the GPU and copies it to the host (`host`; numpy's
buffer protocol refuses bf16 tensors). The reference is PyTorch on the CPU in
float32 applied to those bf16 values, its result rounded to bf16 (`low`)
wherever the kernel's result is bf16 (attention's lse and cross_entropy's
f32 sum are f32).

Tolerances. A bf16 result is the f32 value rounded to 8 significant bits,
so kernel and reference, both computing in f32, differ by about one bf16
ulp (2^-8 relative) at most, plus what the kernel rounds on the way (the
tensor-core attention kernels round P and dS to bf16 before their second
products, conv2d_grad its patch-space gradient):
 * `close`: elementwise, |a - e| <= 1e-2 |e| + 2e-2 * scale, where the
   caller gives the output's scale when it is far from 1, and
   ||a - e|| <= 1e-2 ||e|| (a systematic error of small outputs cannot hide
   under atol);
 * `close_big`, for outputs that are sums of many products (GEMMs,
   convolutions, attention and their gradients, norm parameter gradients):
   ||a - e|| <= 1e-2 ||e|| over the whole tensor, and every row (vector
   along the last dimension) within 3e-2 of (its norm + the RMS row norm),
   so that a single wrong row or a tail tile cannot hide in the global norm.
   A bf16 simulation of the tensor-core attention gives ~3e-3 for the first
   and <= 1e-2 for the second;
 * `equal`: exact, for kernels that only move, pick or compare elements
   (shape ops, cp_permute, gathers, select, max/min, compare, conversions).
f32 results computed from bf16 inputs without rounding (lse, the f32 loss
sum) are checked to 1e-3/1e-4.

Coverage: every kernel with a bf16 path: creation (full, constant, iota),
elementwise unary/binary, compare, select, convert, reduce, sum_squares, cumsum,
softmax(+grad), reshape/transpose/broadcast_in_dim/slice/concat/pad,
cp_permute, embedding(+grad), linear, matmul, rms_norm(+grad),
layer_norm(+grad) (also of f32 inputs with bf16 results and cotangents,
as mixed precision runs them), rope, attention(+grad) on the tensor-core path (head
dims 64, 96, 128) and the SIMT path (head dims 36 and 192 in-process; every
head dim with GLIMMER_CUDA_ATTENTION=simt, which Attention.cu reads once per
process, so test_attention_forced_simt reruns the attention tests in a
subprocess), with every mask of attention_cases.py (positions, documents,
bidirectional blocks, sliding windows, context-parallel permutations), cross_entropy(+grad), conv2d(+grad), adamw_update and
sgd_update (bf16 param, grad and state; and f32 params with bf16 grads,
which test_optimizers_bf16_grad_of_f32_param checks against the widened
grad), vision_gather(+grad). vision_bank_indices is integer
only (dtype-independent, covered by test_kernels.py with
GLIMMER_TEST_DEVICE=cuda); it is only used here to build gather indices.

Plumbing check without a GPU: GLIMMER_TEST_BF16_AS_F32=1 runs every test
with f32 in place of bf16 on any device (GLIMMER_TEST_DEVICE=cpu included):
`dev` converts to F32, the reference does not round its outputs, and the
module is not skipped. That exercises the references, helpers and
tolerances on the CPU kernels (it says nothing about bf16):

    GLIMMER_TEST_BF16_AS_F32=1 GLIMMER_TEST_DEVICE=cpu PYTHONPATH=build/python \
        .venv/bin/python -m pytest -q -p no:cacheprovider \
        runtime/tests/python/test_kernels_bf16.py
"""

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from glimmer import _runtime as rt  # noqa: E402
from finite_checks import assert_allclose_finite, assert_finite  # noqa: E402,F401
import attention_cases  # noqa: E402
from attention_cases import ATTN_CASES, attn_mask, attn_ref, check_blocks_window_roundtrip, head_tail  # noqa: E402,F401

DEVICE = os.environ.get("GLIMMER_TEST_DEVICE", "cpu")
AS_F32 = os.environ.get("GLIMMER_TEST_BF16_AS_F32", "") not in ("", "0")
if not AS_F32 and not DEVICE.startswith("cuda"):
    pytest.skip("bf16 kernels exist only on the GPU: set GLIMMER_TEST_DEVICE=cuda "
                "(or GLIMMER_TEST_BF16_AS_F32=1 for a plumbing check)",
                allow_module_level=True)
if DEVICE.startswith("cuda") and rt.cuda_device_count() == 0:
    pytest.skip(f"GLIMMER_TEST_DEVICE={DEVICE} but no CUDA device is visible",
                allow_module_level=True)
if DEVICE != "cpu":
    rt.set_current_device(DEVICE)  # for full/constant/iota

# The kernels' low precision: bf16, or f32 for the plumbing check.
LOW = rt.DType.F32 if AS_F32 else rt.DType.BF16
F32 = rt.DType.F32

RTOL, ATOL = 1e-2, 2e-2  # close
NORM_TOL, ROW_TOL = 1e-2, 3e-2  # close_big


# --------------------------------------------------------------------------
# Helpers


def rng(seed):
    return np.random.default_rng(seed)


def bf(a):
    """The nearest bf16 values (round to nearest even, as the GPU's convert)
    of a float array, as float32."""
    t = torch.from_numpy(np.array(a, dtype=np.float32))
    return t.bfloat16().float().numpy()


def randb(shape, seed, scale=1.0, shift=0.0):
    """Standard normal * scale + shift, rounded to bf16 values (float32)."""
    return bf(rng(seed).standard_normal(shape) * scale + shift)


def low(t):
    """A float32 reference result (torch) rounded to the kernels' precision."""
    return t if AS_F32 else t.bfloat16().float()


def tt(a):
    """numpy -> torch (a copy)."""
    return torch.from_numpy(np.array(a))


def dev(a, dtype=None):
    """numpy -> a runtime tensor on DEVICE. Float arrays (float32 of bf16
    values) are converted to `dtype` (LOW by default) on the device; integer
    and bool arrays keep their type."""
    a = np.asarray(a)
    t = rt.Tensor(np.array(a, order="C")).to(DEVICE)
    if a.dtype.kind != "f":
        return t
    assert a.dtype == np.float32, a.dtype
    dtype = LOW if dtype is None else dtype
    if dtype == LOW:
        # The reference computes on these very values.
        np.testing.assert_array_equal(bf(a), a, err_msg="input is not bf16-representable")
    return rt.convert(t, dtype)


def host(t):
    """Runtime tensor -> numpy on the host; bf16 goes through f32, converted
    on the tensor's device (the buffer protocol has no bf16)."""
    if t.dtype == rt.DType.BF16:
        t = rt.convert(t, F32)
    return t.to("cpu").numpy()


def npy(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    if isinstance(x, np.ndarray):
        return x
    return host(x)


def _pair(actual, expected, dtype):
    if isinstance(actual, rt.Tensor):
        assert actual.dtype == dtype, (actual.describe(), dtype)
    a, e = npy(actual), npy(expected)
    assert a.shape == e.shape, (a.shape, e.shape)
    return a, e


def _check_norm(a, e, tol):
    """||a - e|| <= tol ||e|| over the finite entries of e."""
    fin = np.isfinite(e)
    d, r = a[fin].astype(np.float64) - e[fin], e[fin].astype(np.float64)
    err, ref = np.linalg.norm(d), np.linalg.norm(r)
    assert err <= tol * ref, f"||a - e|| / ||e|| = {err / max(ref, 1e-300):.3g} > {tol}"


def close(actual, expected, scale=1.0, dtype=None, rtol=RTOL, atol=ATOL):
    """Elementwise |a - e| <= rtol |e| + atol * scale, and the relative
    error norm within rtol (so a small but systematic error cannot hide
    under atol)."""
    a, e = _pair(actual, expected, LOW if dtype is None else dtype)
    assert_allclose_finite(a, e, rtol=rtol, atol=atol * scale)
    _check_norm(a, e, rtol)


def close_big(actual, expected, dtype=None):
    """Relative error norm over the tensor and per row (see the docstring)."""
    a, e = _pair(actual, expected, LOW if dtype is None else dtype)
    a, e = a.astype(np.float64), e.astype(np.float64)
    assert_finite(a, e)
    _check_norm(a, e, NORM_TOL)
    if a.ndim == 0:
        return
    cols = a.shape[-1]
    d = np.linalg.norm((a - e).reshape(-1, cols), axis=1)
    n = np.linalg.norm(e.reshape(-1, cols), axis=1)
    bound = ROW_TOL * (n + np.sqrt(np.mean(n * n)))
    bad = np.flatnonzero(d > bound)
    assert bad.size == 0, (f"{bad.size} rows off, e.g. row {bad[0]}: |a - e| = "
                           f"{d[bad[0]]:.3g}, |e| = {n[bad[0]]:.3g}, bound {bound[bad[0]]:.3g}")


def equal(actual, expected, dtype=None):
    a, e = _pair(actual, expected, LOW if dtype is None else dtype)
    np.testing.assert_array_equal(a, e)


# --------------------------------------------------------------------------
# Creation and conversion


def test_full_constant_iota():
    y = rt.full(LOW, [2, 3], 0.1)
    equal(y, low(torch.full((2, 3), 0.1)))
    vals = [0.0, 1.0, -2.5, 0.1, 300.7, 1e-3]
    equal(rt.constant(LOW, [3, 2], vals), low(torch.tensor(vals).reshape(3, 2)))
    # Integers above 256 are not all bf16 values: iota rounds them.
    for dim in range(2):
        expected = torch.arange(300 if dim == 0 else 3, dtype=torch.float32)
        expected = expected.reshape(-1, 1) if dim == 0 else expected.reshape(1, -1)
        equal(rt.iota(LOW, [300, 3], dim), low(expected.expand(300, 3)))


def test_convert_rounding_to_low():
    # f32 -> bf16 on the device: nearest even, overflow to inf, NaN, -0.
    f = np.concatenate([
        rng(1).standard_normal(500).astype(np.float32) * 100,
        np.array([1.00390625, 1.01171875, -1.00390625,  # ties to even
                  np.finfo(np.float32).max, 3.3e38, 1e-40, 1e-38, -0.0,
                  np.inf, -np.inf, np.nan], np.float32)])
    t = rt.convert(rt.Tensor(f).to(DEVICE), LOW)
    equal(t, low(tt(f)))
    # From the other types.
    d = rng(2).standard_normal(300) * 50
    equal(rt.convert(rt.Tensor(d).to(DEVICE), LOW), low(tt(d).float()))  # via f32
    i = rng(3).integers(-2**20, 2**20, 300)
    equal(rt.convert(dev(i), LOW), low(tt(i).float()))
    equal(rt.convert(dev(i.astype(np.int32)), LOW), low(tt(i).float()))
    b = rng(4).random(30) < 0.5
    equal(rt.convert(dev(b), LOW), b.astype(np.float32))


def test_convert_from_low():
    x = randb(400, 5, 300.0)
    x[:4] = [0.0, -0.0, 0.5, -0.5]
    t = dev(x)
    equal(rt.convert(t, rt.DType.F64), x.astype(np.float64), dtype=rt.DType.F64)
    equal(rt.convert(t, F32), x, dtype=F32)
    equal(rt.convert(t, rt.DType.I64), npy(tt(x).to(torch.int64)), dtype=rt.DType.I64)
    equal(rt.convert(t, rt.DType.I32), npy(tt(x).to(torch.int32)), dtype=rt.DType.I32)
    equal(rt.convert(t, rt.DType.Bool), x != 0, dtype=rt.DType.Bool)
    equal(rt.convert(t, LOW), x)  # a copy


# --------------------------------------------------------------------------
# Elementwise

UNARY = {
    "neg": (rt.neg, torch.neg, None),
    "exp": (rt.exp, torch.exp, None),
    "log": (rt.log, torch.log, "positive"),
    "sqrt": (rt.sqrt, torch.sqrt, "positive"),
    "rsqrt": (rt.rsqrt, torch.rsqrt, "positive"),
    "tanh": (rt.tanh, torch.tanh, None),
    "erf": (rt.erf, torch.erf, None),
    "sigmoid": (rt.sigmoid, torch.sigmoid, None),
    "silu": (rt.silu, F.silu, None),
    "relu": (rt.relu, torch.relu, None),
    "sin": (rt.sin, torch.sin, None),
    "cos": (rt.cos, torch.cos, None),
    "gelu": (lambda x: rt.gelu(x, False), lambda x: F.gelu(x), None),
    "gelu_tanh": (lambda x: rt.gelu(x, True), lambda x: F.gelu(x, approximate="tanh"), None),
}
EXACT_UNARY = {"neg", "relu"}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    ours, ref, domain = UNARY[name]
    x = rng(10).standard_normal((4, 300)) * 3
    x[0, :5] = [0.0, -0.0, 1e-8, -30.0, 30.0]
    if domain == "positive":
        x = np.abs(x) + 1e-3
    if name == "exp":
        x = np.clip(x, -20, 20)
    x = bf(x)
    y = ours(dev(x))
    expected = low(ref(tt(x)))
    if name in EXACT_UNARY:
        equal(y, expected)
    else:
        close(y, expected)


def test_binary():
    a, b = randb((3, 257), 11), randb((3, 257), 12)
    ta, tb = tt(a), tt(b)
    da, db = dev(a), dev(b)
    close(rt.add(da, db), low(ta + tb))
    close(rt.sub(da, db), low(ta - tb))
    close(rt.mul(da, db), low(ta * tb))
    close(rt.div(da, db), low(ta / tb))
    close(rt.pow(dev(np.abs(a)), db), low(torch.pow(ta.abs(), tb)))
    equal(rt.max(da, db), torch.maximum(ta, tb))
    equal(rt.min(da, db), torch.minimum(ta, tb))


def test_max_min_propagate_nan():
    a = np.array([1.0, np.nan, 3.0, np.nan], np.float32)
    b = np.array([np.nan, 2.0, 1.0, np.nan], np.float32)
    equal(rt.max(dev(a), dev(b)), torch.maximum(tt(a), tt(b)))
    equal(rt.min(dev(a), dev(b)), torch.minimum(tt(a), tt(b)))


def test_compare():
    # Small integers (many ties) and values equal only after rounding.
    a = rng(13).integers(0, 3, (5, 70)).astype(np.float32)
    b = rng(14).integers(0, 3, (5, 70)).astype(np.float32)
    a[0] = bf(1.0 + np.arange(70) * 1e-3)
    b[0] = 1.0
    a[1, 0] = np.nan
    ta, tb = tt(a), tt(b)
    refs = {
        rt.CompareDir.EQ: ta == tb,
        rt.CompareDir.NE: ta != tb,
        rt.CompareDir.LT: ta < tb,
        rt.CompareDir.LE: ta <= tb,
        rt.CompareDir.GT: ta > tb,
        rt.CompareDir.GE: ta >= tb,
    }
    for d, expected in refs.items():
        equal(rt.compare(d, dev(a), dev(b)), expected, dtype=rt.DType.Bool)


def test_select():
    c = rng(15).random((4, 301)) < 0.5
    a, b = randb((4, 301), 16, 5.0), randb((4, 301), 17, 5.0)
    equal(rt.select(dev(c), dev(a), dev(b)), torch.where(tt(c), tt(a), tt(b)))


# --------------------------------------------------------------------------
# Reductions, scans, softmax

REDUCE_CASES = [
    # (shape, dims, scale): small ones every way, long ones split into partials
    ((3, 4, 5), [0], 10.0),
    ((3, 4, 5), [2], 10.0),
    ((3, 4, 5), [1, 2], 10.0),
    ((3, 4, 5), [0, 1, 2], 10.0),
    ((4, 5000), [1], 1.0),
    ((5000, 3), [0], 1.0),
    ((3, 700, 5), [0, 1], 1.0),
]


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize("case", range(len(REDUCE_CASES)),
                         ids=[f"{s}-{d}" for s, d, _ in REDUCE_CASES])
def test_reduce(case, keep):
    shape, dims, scale = REDUCE_CASES[case]
    x = randb(shape, 20 + case, scale)
    tx, dx = tt(x), dev(x)
    close(rt.reduce(rt.Reduction.Sum, dx, dims, keep), low(torch.sum(tx, dims, keepdim=keep)), scale=scale)
    equal(rt.reduce(rt.Reduction.Max, dx, dims, keep), torch.amax(tx, dims, keepdim=keep))
    equal(rt.reduce(rt.Reduction.Min, dx, dims, keep), torch.amin(tx, dims, keepdim=keep))


def test_sum_squares():
    # Squares summed in f32, the total rounded once to bf16; inputs spanning
    # several chunks and more than one launch's 64.
    parts = [randb((3, 4, 5), 35, 3.0), randb((200_003,), 36, 1.0)]
    parts += [randb((k + 1,), 50 + k, 1.0) for k in range(70)]
    expected = sum(torch.sum(tt(p) ** 2) for p in parts)
    close(rt.sum_squares([dev(p) for p in parts]), low(expected), scale=float(expected))


@pytest.mark.parametrize("shape,dim,scale", [
    ((3, 4, 5), 0, 10.0), ((3, 4, 5), 1, 10.0), ((3, 4, 5), 2, 10.0),
    ((2, 3000), 1, 1.0),  # rows longer than a warp's share: block scans
    ((3000, 2), 0, 1.0),
])
def test_cumsum(shape, dim, scale):
    x = randb(shape, 30, scale)
    close(rt.cumsum(dev(x), dim), low(torch.cumsum(tt(x), dim)), scale=scale)


@pytest.mark.parametrize("shape,dim", [
    ((3, 5, 7), 0), ((3, 5, 7), 1), ((3, 5, 7), 2),
    ((4, 2000), 1),  # block rows
])
def test_softmax_and_grad(shape, dim):
    x = rng(31).standard_normal(shape) * 10
    x.reshape(-1)[: shape[-1]] += 500.0  # large logits stay finite
    x = bf(x)
    y = rt.softmax(dev(x), dim)
    close(y, low(torch.softmax(tt(x), dim)))
    # The gradient at the kernel's own (bf16) output.
    dy, ys = randb(shape, 32), host(y)
    ty = tt(ys)
    expected = ty * (tt(dy) - (tt(dy) * ty).sum(dim, keepdim=True))
    close(rt.softmax_grad(dev(dy), y, dim), low(expected))


# --------------------------------------------------------------------------
# Shapes and context parallelism (element moves: exact)


@pytest.mark.parametrize("shape", [(2, 3, 5), (4, 6, 8)])
def test_shape_ops(shape):
    x = randb(shape, 40, 5.0)
    dx = dev(x)
    equal(rt.reshape(dx, [shape[0] * shape[1], shape[2]]), x.reshape(-1, shape[2]))
    for perm in [[0, 1, 2], [2, 0, 1], [1, 2, 0], [0, 2, 1], [1, 0, 2]]:
        equal(rt.transpose(dx, perm), np.ascontiguousarray(x.transpose(perm)))
    y = np.ascontiguousarray(x[:, :1, :])
    equal(rt.broadcast_in_dim(dev(y), [5, shape[0], 3, shape[2]], [1, 2, 3]),
          np.broadcast_to(y, (5, shape[0], 3, shape[2])))
    v = np.ascontiguousarray(x[0, 0])
    equal(rt.broadcast_in_dim(dev(v), [shape[2], 3], [0]), np.broadcast_to(v[:, None], (shape[2], 3)))
    equal(rt.slice(dx, [0, 1, 0], [2, 3, shape[2]], [1, 1, 2]), x[0:2, 1:3, 0::2])
    equal(rt.slice(dx, [1, 0, 1], [2, 3, shape[2]], [1, 2, 3]), x[1:2, 0:3:2, 1::3])
    z = randb((shape[0], 5, shape[2]), 41)
    equal(rt.concat([dx, dev(z), dx], 1), np.concatenate([x, z, x], 1))
    equal(rt.concat([dx, dx], 2), np.concatenate([x, x], 2))
    equal(rt.pad(dx, [0, 1, 2], [1, 0, 3], 1.5),
          np.pad(x, [(0, 1), (1, 0), (2, 3)], constant_values=1.5))
    # The pad value is rounded like any value stored as bf16.
    fill = npy(low(torch.tensor(0.1)))
    equal(rt.pad(dx, [1, 0, 0], [0, 0, 1], 0.1), np.pad(x, [(1, 0), (0, 0), (0, 1)], constant_values=fill))


@pytest.mark.parametrize("cp", [1, 2, 3, 4])
def test_cp_permute(cp):
    T = 2 * cp * 5
    x = randb((2, T, 7), 50 + cp, 10.0)
    y = rt.cp_permute(dev(x), 1, cp)
    equal(y, head_tail(x, 1, cp))
    equal(rt.cp_permute(y, 1, cp, rt.Balancer.HeadTail, True), x)
    equal(rt.cp_permute(dev(x), 1, cp, rt.Balancer.Contiguous), x)
    z = np.ascontiguousarray(np.moveaxis(x, 1, 2))  # along the last dim
    equal(rt.cp_permute(dev(z), 2, cp), head_tail(z, 2, cp))


# --------------------------------------------------------------------------
# Embedding, vision gather


@pytest.mark.parametrize("D", [5, 64])  # odd rows move as 2-byte words
@pytest.mark.parametrize("id_dtype", [np.int64, np.int32])
def test_embedding_and_grad(D, id_dtype):
    V = 50
    table = randb((V, D), 60)
    ids = rng(61).integers(0, V, (3, 40)).astype(id_dtype)
    ids[0, :10] = 4  # repeated ids accumulate in the gradient
    equal(rt.embedding(dev(table), dev(ids)), F.embedding(tt(ids).long(), tt(table)))
    dy = randb((3, 40, D), 62)
    tw = tt(table).requires_grad_()
    (gw,) = torch.autograd.grad(F.embedding(tt(ids).long(), tw), tw, tt(dy))
    close(rt.embedding_grad(dev(dy), dev(ids), V), low(gw), scale=3.0)


IMG = 7


@pytest.mark.parametrize("D", [5, 64])
def test_vision_gather_and_grad(D):
    tokens = np.array([[1, 7, 7, 2, 3, 7, 4, 5, 7, 7], [7, 1, 2, 7, 7, 3, 4, 1, 6, 7]], np.int64)
    B, T = tokens.shape
    idx_np = np.where(tokens == IMG, np.cumsum(tokens.reshape(-1) == IMG).reshape(B, T) - 1, -1)
    idx = rt.vision_bank_indices(dev(tokens), IMG)  # integer: the same on any dtype
    equal(idx, idx_np, dtype=rt.DType.I64)
    N = int((tokens == IMG).sum())
    embeds, bank = randb((B, T, D), 70), randb((N, D), 71)
    ti = tt(idx_np)
    expected = torch.where((ti >= 0)[..., None], tt(bank)[ti.clamp(min=0)], tt(embeds))
    equal(rt.vision_gather(dev(embeds), dev(bank), idx), expected)
    # Every bank row receives exactly one token's gradient: exact.
    dy = randb((B, T, D), 72)
    de, db = rt.vision_gather_grad(dev(dy), idx, N)
    equal(de, np.where(idx_np[..., None] >= 0, 0.0, dy).astype(np.float32))
    equal(db, dy[idx_np >= 0])


# --------------------------------------------------------------------------
# Linear, matmul


@pytest.mark.parametrize("N,K", [(48, 64), (29, 37)])
def test_linear(N, K):
    x, w, b = randb((2, 3, K), 80), randb((N, K), 81), randb(N, 82)
    close_big(rt.linear(dev(x), dev(w), dev(b)), low(F.linear(tt(x), tt(w), tt(b))))
    close_big(rt.linear(dev(x), dev(w)), low(F.linear(tt(x), tt(w))))
    close_big(rt.linear(dev(x[0, 0]), dev(w)), low(F.linear(tt(x[0, 0]), tt(w))))


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul(ta, tb):
    a, b = randb((2, 3, 33, 72), 83), randb((2, 3, 72, 40), 84)
    a_in = np.ascontiguousarray(a.swapaxes(-1, -2)) if ta else a
    b_in = np.ascontiguousarray(b.swapaxes(-1, -2)) if tb else b
    close_big(rt.matmul(dev(a_in), dev(b_in), ta, tb), low(tt(a) @ tt(b)))
    a2, b2 = np.ascontiguousarray(a_in[1, 2]), np.ascontiguousarray(b_in[1, 2])
    close_big(rt.matmul(dev(a2), dev(b2), ta, tb), low(tt(a[1, 2]) @ tt(b[1, 2])))


def test_matmul_long_contraction():
    # Few outputs, long K: cuBLAS may split K (partials reduced in f32).
    a, b = randb((16, 4096), 85), randb((4096, 24), 86)
    close_big(rt.matmul(dev(a), dev(b)), low(tt(a) @ tt(b)))


# --------------------------------------------------------------------------
# Norms, RoPE


@pytest.mark.parametrize("D", [256, 1536])  # warp rows, block rows
def test_rms_norm_and_grad(D):
    eps = 1e-6
    x, w = randb((2, 5, D), 90, 3.0), randb(D, 91)
    tx, tw = tt(x).requires_grad_(), tt(w).requires_grad_()
    y = F.rms_norm(tx, (D,), tw, eps)
    close(rt.rms_norm(dev(x), dev(w), eps), low(y))
    dy = randb(x.shape, 92)
    gx, gw = torch.autograd.grad(y, (tx, tw), tt(dy))
    dx, dw = rt.rms_norm_grad(dev(dy), dev(x), dev(w), eps)
    close_big(dx, low(gx))
    close_big(dw, low(gw))


@pytest.mark.parametrize("D", [256, 1536])
def test_layer_norm_and_grad(D):
    eps = 1e-5
    x = randb((2, 5, D), 93, 3.0, shift=4.0)  # non-zero mean
    w, b = randb(D, 94), randb(D, 95)
    tx, tw, tb = (tt(a).requires_grad_() for a in (x, w, b))
    y = F.layer_norm(tx, (D,), tw, tb, eps)
    close(rt.layer_norm(dev(x), dev(w), dev(b), eps), low(y))
    dy = randb(x.shape, 96)
    gx, gw, gb = torch.autograd.grad(y, (tx, tw, tb), tt(dy))
    dx, dw, db = rt.layer_norm_grad(dev(dy), dev(x), dev(w), eps)
    close_big(dx, low(gx))
    close_big(dw, low(gw))
    close_big(db, low(gb))


@pytest.mark.parametrize("D", [256, 1536])
def test_norms_of_f32_inputs_with_low_results(D):
    """Mixed precision's norms: an f32 input (the residual stream) and f32
    parameters, the result in LOW (the f32 result rounded once: at most one
    bf16 ulp from the rounded f32 reference); the VJPs read a LOW cotangent
    and give f32 gradients (f32 accuracy)."""
    eps = 1e-5
    x = (rng(97).standard_normal((2, 5, D)) * 3.0 + 1.0).astype(np.float32)
    w, b = (rng(s).standard_normal(D).astype(np.float32) for s in (98, 99))
    dy = randb(x.shape, 100)
    tx, tw, tb = (tt(a).requires_grad_() for a in (x, w, b))
    # f32 tensors of values bf16 cannot hold (dev checks LOW inputs).
    x32, w32, b32 = (rt.Tensor(np.ascontiguousarray(a)).to(DEVICE) for a in (x, w, b))
    ulp, f32 = dict(rtol=2.0 ** -8, atol=1e-6), dict(dtype=F32, rtol=1e-4, atol=1e-4)

    y = F.rms_norm(tx, (D,), tw, eps)
    close(rt.rms_norm(x32, w32, eps, LOW), low(y), **ulp)
    gx, gw = torch.autograd.grad(y, (tx, tw), tt(dy))
    dx, dw = rt.rms_norm_grad(dev(dy), x32, w32, eps)
    close(dx, gx, **f32)
    close(dw, gw, scale=10.0, **f32)

    y = F.layer_norm(tx, (D,), tw, tb, eps)
    close(rt.layer_norm(x32, w32, b32, eps, LOW), low(y), **ulp)
    gx, gw, gb = torch.autograd.grad(y, (tx, tw, tb), tt(dy))
    dx, dw, db = rt.layer_norm_grad(dev(dy), x32, w32, eps)
    close(dx, gx, **f32)
    close(dw, gw, scale=10.0, **f32)
    close(db, gb, scale=10.0, **f32)


@pytest.mark.parametrize("D", [256, 1536])
def test_add_rms_norm_as_add_then_norm(D):
    """The fused residual add and norm against the two kernels it replaces
    (bit for bit: glimmer-fuse-residual-norms keeps every result's bits) and
    PyTorch: autocast's f32 stream plus a LOW branch (the norm written LOW
    or f32), and LOW throughout."""
    eps = 1e-5
    h = randb((2, 5, D), 101)
    x = (rng(102).standard_normal((2, 5, D)) * 3.0).astype(np.float32)
    w = rng(103).standard_normal(D).astype(np.float32)
    x32, w32 = (rt.Tensor(np.ascontiguousarray(a)).to(DEVICE) for a in (x, w))
    ref = F.rms_norm(tt(h) + tt(x), (D,), tt(w), eps)
    for out in (LOW, F32):
        s, y = rt.add_rms_norm(dev(h), x32, w32, eps, out)
        apart = rt.add(rt.convert(dev(h), F32), x32)
        np.testing.assert_array_equal(npy(s), npy(apart))
        np.testing.assert_array_equal(npy(y), npy(rt.rms_norm(apart, w32, eps, out)))
        if out == LOW:
            close(y, low(ref), rtol=2.0 ** -8, atol=1e-6)
        else:
            close(y, ref, dtype=F32, rtol=1e-5, atol=1e-5)
    hb, xb, wb = dev(h), dev(randb((2, 5, D), 104)), dev(randb(D, 105))
    s, y = rt.add_rms_norm(hb, xb, wb, eps)
    apart = rt.add(hb, xb)
    np.testing.assert_array_equal(npy(s), npy(apart))
    np.testing.assert_array_equal(npy(y), npy(rt.rms_norm(apart, wb, eps)))
    ts = low(tt(h) + tt(npy(xb)))
    close(y, low(F.rms_norm(ts, (D,), tt(npy(wb)), eps)))


def rope_ref(x, pos, theta, style, inverse=False):
    """Pairs (2i, 2i+1) or (i, i + D/2), angle pos * theta^(-2i/D); the
    angles in float64 (as the kernels), the rotation in float32."""
    D = x.shape[-1]
    half = D // 2
    freq = theta ** (-2 * torch.arange(half, dtype=torch.float64) / D)
    ang = pos.to(torch.float64)[..., None] * freq  # [B, T, D/2]
    c = torch.cos(ang)[:, :, None, :].float()
    s = torch.sin(ang)[:, :, None, :].float()
    if inverse:
        s = -s
    if style == rt.RopeStyle.Interleaved:
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2)
    x0, x1 = x[..., :half], x[..., half:]
    return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], -1)


@pytest.mark.parametrize("pos_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("style", [rt.RopeStyle.Interleaved, rt.RopeStyle.Half])
def test_rope(style, pos_dtype):
    B, T, H, D = 2, 16, 3, 64
    x = randb((B, T, H, D), 100)
    pos = rng(101).permutation(np.arange(50, 50 + B * T)).reshape(B, T).astype(pos_dtype)
    y = rt.rope(dev(x), dev(pos), 10000.0, style)
    close(y, low(rope_ref(tt(x), tt(pos), 10000.0, style)))
    # The inverse rotation (the VJP), applied to the kernel's output.
    yh = host(y)
    close(rt.rope(y, dev(pos), 10000.0, style, True), low(rope_ref(tt(yh), tt(pos), 10000.0, style, True)))
    close(rt.rope(y, dev(pos), 10000.0, style, True), x)  # round trip
    equal(rt.rope(dev(x), dev(np.zeros((B, T), pos_dtype)), 500.0, style), x)  # position 0


# --------------------------------------------------------------------------
# Attention


# 64, 96 (zero-padded to 128) and 128 take the bf16 tensor-core kernels; 36
# (not a multiple of 8) and 192 (above 128) the SIMT ones.
HEAD_DIMS = [36, 64, 96, 128, 192]




def attn_inputs(case, D):
    return attention_cases.attn_inputs(case, D, randb)


def devkw(kw):
    return {n: (dev(a) if isinstance(a, np.ndarray) else a) for n, a in kw.items()}


def check_lse(lse, ref_lse):
    """lse is f32 (for bf16 queries too), computed without bf16 rounding."""
    assert lse.dtype == F32, lse.describe()
    got, ref = host(lse), npy(ref_lse)
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("D", HEAD_DIMS)
@pytest.mark.parametrize("case", sorted(ATTN_CASES))
def test_attention(case, D):
    q, k, v, kw, mask = attn_inputs(case, D)
    scale = D ** -0.5
    out, lse = rt.attention(dev(q), dev(k), dev(v), scale=scale, **devkw(kw))
    ref_out, ref_lse = attn_ref(tt(q), tt(k), tt(v), mask, scale)
    close_big(out, low(ref_out))
    check_lse(lse, ref_lse)
    dead = np.isneginf(npy(ref_lse))  # queries without a visible key
    assert np.all(host(out)[dead] == 0)


@pytest.mark.parametrize("D", HEAD_DIMS)
@pytest.mark.parametrize("case", sorted(ATTN_CASES))
def test_attention_grad(case, D):
    q, k, v, kw, mask = attn_inputs(case, D)
    scale = 0.7 * D ** -0.5
    dout = randb(q.shape, 300 + D)
    tq, tk, tv = (tt(a).requires_grad_() for a in (q, k, v))
    ref_out, ref_lse = attn_ref(tq, tk, tv, mask, scale)
    gq, gk, gv = torch.autograd.grad(ref_out, (tq, tk, tv), tt(dout))
    dq_, dk_, dv_, dkw = dev(q), dev(k), dev(v), devkw(kw)
    out, lse = rt.attention(dq_, dk_, dv_, scale=scale, **dkw)  # the kernel's own out, lse
    dq, dk, dv = rt.attention_grad(dev(dout), dq_, dk_, dv_, out, lse, scale=scale, **dkw)
    close_big(dq, low(gq))
    close_big(dk, low(gk))
    close_big(dv, low(gv))
    dead = np.isneginf(npy(ref_lse))
    assert np.all(host(dq)[dead] == 0)


@pytest.mark.parametrize("D", [36, 64, 128])
@pytest.mark.parametrize("cp", [2, 4])
def test_attention_cp_roundtrip(cp, D):
    # q, k, v permuted head-tail on the device, attention with the permuted
    # positions, the output permuted back: causal attention in the original
    # order.
    B, H, T = 2, 4, 160
    q, k, v = (randb((B, H, T, D), 400 + s) for s in range(3))
    pos = dev(head_tail(np.tile(np.arange(T, dtype=np.int64), (B, 1)), 1, cp))
    perm = lambda a: rt.cp_permute(dev(a), 2, cp)  # noqa: E731
    out, _ = rt.attention(perm(q), perm(k), perm(v), pos, pos, causal=True, scale=D ** -0.5)
    back = rt.cp_permute(out, 2, cp, rt.Balancer.HeadTail, True)
    expected = F.scaled_dot_product_attention(tt(q), tt(k), tt(v), is_causal=True, scale=D ** -0.5)
    close_big(back, low(expected))


@pytest.mark.parametrize("D", [36, 64, 128])
@pytest.mark.parametrize("cp", [2, 4])
def test_attention_blocks_window_cp_roundtrip(cp, D):
    # Blocks and a window under the CP permutation (attention_cases), in bf16
    # against f32 on the same bf16 values, rounded to bf16.
    check_blocks_window_roundtrip(rt, cp, D, randb, dev, devkw, tt,
                                  lambda a, e: close_big(a, low(e)))


def test_attention_forced_simt():
    """Every attention test again with GLIMMER_CUDA_ATTENTION=simt, which
    sends bf16 to the SIMT kernels at every head dimension. Attention.cu
    reads the variable once per process (a function-local static), hence a
    subprocess."""
    if os.environ.get("GLIMMER_CUDA_ATTENTION") == "simt":
        pytest.skip("this process already forces the SIMT kernels")
    env = dict(os.environ, GLIMMER_CUDA_ATTENTION="simt")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
         "-k", "attention and not forced_simt"],
        env=env, capture_output=True, text=True, timeout=1800)
    report = r.stdout[-6000:] + r.stderr[-2000:]
    assert r.returncode == 0, report
    assert " passed" in r.stdout and " failed" not in r.stdout, report


# --------------------------------------------------------------------------
# Cross-entropy


@pytest.mark.parametrize("V", [13, 3000])  # warp rows, block rows
@pytest.mark.parametrize("label_dtype", [np.int64, np.int32])
def test_cross_entropy_and_grad(V, label_dtype):
    B, T = 2, 7
    logits = rng(500).standard_normal((B, T, V)) * 4
    logits[0, 0, 3] = 80.0  # a dominant logit stays finite
    logits = bf(logits)
    labels = rng(501).integers(0, V, (B, T)).astype(label_dtype)
    labels[0, 1] = labels[1, 6] = -100
    labels[0, 0] = 3
    tl = tt(logits).requires_grad_()
    ref = F.cross_entropy(tl.reshape(-1, V), tt(labels).long().reshape(-1), reduction="sum", ignore_index=-100)
    dl, dlab = dev(logits), dev(labels)
    # An f32 sum of f32 row losses: no bf16 rounding on the way.
    s, n = rt.cross_entropy(dl, dlab, -100, F32)
    close(s, ref, dtype=F32, rtol=1e-4, atol=1e-4)
    assert s.shape == () and n.dtype == rt.DType.I64 and n.item() == B * T - 2
    s16, _ = rt.cross_entropy(dl, dlab, -100, LOW)
    close(s16, low(ref.detach()), scale=10.0)
    (gl,) = torch.autograd.grad(ref * 0.75, tl)
    for gdtype in (F32, LOW):
        close(rt.cross_entropy_grad(dev(np.array(0.75, np.float32), gdtype), dl, dlab, -100), low(gl))


# --------------------------------------------------------------------------
# Convolution

CONV_CASES = [
    # (x shape, w shape, stride, padding)
    ((2, 3, 9, 10), (5, 3, 4, 3), [4, 4], [0, 0]),
    ((2, 3, 9, 10), (5, 3, 4, 3), [2, 1], [1, 2]),
    ((2, 3, 9, 10), (5, 3, 4, 3), [3, 3], [1, 0]),
    ((2, 16, 12, 12), (32, 16, 3, 3), [1, 1], [1, 1]),
]


@pytest.mark.parametrize("case", range(len(CONV_CASES)),
                         ids=[f"{x}-{w}-s{s}-p{p}" for x, w, s, p in CONV_CASES])
def test_conv2d_and_grad(case):
    xs, ws, stride, padding = CONV_CASES[case]
    x, w, b = randb(xs, 600 + case), randb(ws, 610 + case), randb(ws[0], 620 + case)
    tx, tw = tt(x).requires_grad_(), tt(w).requires_grad_()
    y = F.conv2d(tx, tw, stride=stride, padding=padding)
    close_big(rt.conv2d(dev(x), dev(w), None, stride, padding), low(y))
    close_big(rt.conv2d(dev(x), dev(w), dev(b), stride, padding),
              low(F.conv2d(tt(x), tt(w), tt(b), stride=stride, padding=padding)))
    dy = randb(tuple(y.shape), 630 + case)
    gx, gw = torch.autograd.grad(y, (tx, tw), tt(dy))
    dx, dw = rt.conv2d_grad(dev(dy), dev(x), dev(w), stride, padding)
    close_big(dx, low(gx))
    close_big(dw, low(gw))


# --------------------------------------------------------------------------
# Optimizers: param, grad and state all bf16 (the CUDA kernels take them
# in the param's type and update in f32). Each step is compared with
# torch.optim in f32 started from the kernel's previous (bf16) results, so
# rounding does not compound. lr and weight decay are large so that both
# change the parameters by far more than the tolerance.


@pytest.mark.parametrize("weight_decay", [0.0, 0.5])
def test_adamw(weight_decay):
    lr, betas, eps = 0.1, (0.9, 0.95), 1e-8
    p = randb((4, 70), 700)
    tp = torch.nn.Parameter(tt(p))
    opt = torch.optim.AdamW([tp], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    P, M, Vs = dev(p), dev(np.zeros_like(p)), dev(np.zeros_like(p))
    for step in range(1, 6):
        g = randb(p.shape, 710 + step, 10.0 ** (step % 3 - 1))
        tp.grad = tt(g)
        opt.step()
        P, M, Vs = rt.adamw_update(P, dev(g), M, Vs, dev(np.array(step, np.int64)),
                                   lr, betas[0], betas[1], eps, weight_decay)
        st = opt.state[tp]
        close(P, low(tp.detach()))
        close(M, low(st["exp_avg"]), scale=10.0 ** (step % 3 - 1))
        close(Vs, low(st["exp_avg_sq"]), scale=10.0 ** (2 * (step % 3 - 1)))
        with torch.no_grad():  # continue from the kernel's results
            tp.copy_(tt(host(P)))
            st["exp_avg"].copy_(tt(host(M)))
            st["exp_avg_sq"].copy_(tt(host(Vs)))


def test_adamw_update_list():
    # bf16 params, grads and state, sizes across vectors, chunks (16384
    # elements) and launches (32 updates): each tensor gets the bits of its
    # own adamw_update. The converts to bf16 share launches (convert_list).
    shapes = [(0,), (3,), (4, 70), (16385,), (2, 20001)] + [(k + 1,) for k in range(40)]
    P = rt.convert_list([dev(randb(s, 740 + i), F32) for i, s in enumerate(shapes)], LOW)
    G = [dev(randb(s, 800 + i, 3.0)) for i, s in enumerate(shapes)]
    M = [dev(randb(s, 860 + i)) for i, s in enumerate(shapes)]
    V = [dev(np.abs(randb(s, 920 + i))) for i, s in enumerate(shapes)]
    for p, s, i in zip(P, shapes, range(len(shapes))):
        equal(p, bf(randb(s, 740 + i)))
    step = dev(np.array(3, np.int64))
    out = rt.adamw_update_list(P, G, M, V, step, 0.1, 0.9, 0.95, 1e-8, 0.5)
    n = len(P)
    for k in range(n):
        one = rt.adamw_update(P[k], G[k], M[k], V[k], step, 0.1, 0.9, 0.95, 1e-8, 0.5)
        for j in range(3):
            equal(out[j * n + k], host(one[j]))


def test_sgd():
    p = randb(300, 720)
    tp = torch.nn.Parameter(tt(p))
    opt = torch.optim.SGD([tp], lr=0.1, weight_decay=0.5)
    P = dev(p)
    for step in range(4):
        g = randb(300, 730 + step)
        tp.grad = tt(g)
        opt.step()
        P = rt.sgd_update(P, dev(g), 0.1, 0.5)
        close(P, low(tp.detach()))
        with torch.no_grad():
            tp.copy_(tt(host(P)))


def test_optimizer_grad_scale():
    # grad_scale inside the update equals a separate bf16 mul first, bit
    # for bit (the scaled grad is rounded to bf16 either way).
    p, g, m = randb((3, 90), 750), randb((3, 90), 751), randb((3, 90), 752)
    v = np.abs(randb((3, 90), 753))
    P, G, M, Vs = dev(p), dev(g), dev(m), dev(v)
    S = dev(np.array(0.375, np.float32))  # bf16-representable
    step = dev(np.array(2, np.int64))
    scaled = rt.mul(G, rt.broadcast_in_dim(S, [3, 90], []))
    fused = rt.adamw_update(P, G, M, Vs, step, 0.1, 0.9, 0.95, 1e-8, 0.5, grad_scale=S)
    plain = rt.adamw_update(P, scaled, M, Vs, step, 0.1, 0.9, 0.95, 1e-8, 0.5)
    for a, e in zip(fused, plain):
        np.testing.assert_array_equal(host(a), host(e))
    np.testing.assert_array_equal(host(rt.sgd_update(P, G, 0.1, 0.5, grad_scale=S)),
                                  host(rt.sgd_update(P, scaled, 0.1, 0.5)))


def test_optimizers_bf16_grad_of_f32_param():
    # f32 master weights with bf16 grads (glimmer-narrow-gradients): the
    # update is that of the f32 widening of the grad, bit for bit, on the
    # vectorized and the scalar path (a ragged length); a bf16 param with an
    # f32 grad is refused.
    if AS_F32:
        pytest.skip("needs two distinct float types (bf16 on the GPU)")
    step = dev(np.array(3, np.int64))
    for n in (4096, 4099):
        p32, m32 = dev(randb(n, 740), F32), dev(randb(n, 742), F32)
        v32 = dev(np.abs(randb(n, 743)), F32)
        g = dev(randb(n, 741))
        wide = rt.convert(g, F32)
        for a, e in zip(rt.adamw_update(p32, g, m32, v32, step, 0.1, 0.9, 0.95, 1e-8, 0.5),
                        rt.adamw_update(p32, wide, m32, v32, step, 0.1, 0.9, 0.95, 1e-8, 0.5)):
            np.testing.assert_array_equal(host(a), host(e))
        np.testing.assert_array_equal(host(rt.sgd_update(p32, g, 0.1, 0.5)),
                                      host(rt.sgd_update(p32, wide, 0.1, 0.5)))
        np.testing.assert_array_equal(host(rt.sum_squares([g, p32], dtype=F32)),
                                      host(rt.sum_squares([wide, p32])))
    with pytest.raises(ValueError, match="or in bf16 for an f32 param"):
        rt.sgd_update(g, wide, 0.1, 0.0)