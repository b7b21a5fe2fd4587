"""The runtime's CPU kernels (glimmer._runtime) against PyTorch.

Every kernel of runtime/include/glimmer_rt/Kernels.h is compared with its
PyTorch equivalent in float64 (to ~1e-12) and float32 (to ~1e-5); backward
kernels against torch.autograd. Run from the repository root:

    PYTHONPATH=build/python .venv/bin/python -m pytest -q \
        runtime/tests/python/test_kernels.py

With GLIMMER_TEST_DEVICE=cuda (or cuda:N) the same tests run the CUDA
backend's kernels: every operand is copied to the GPU before the call and
every result back to the host after it (integration_test/cuda runs this on
the GPU machine).
"""

import os
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from glimmer import _runtime as rt  # noqa: E402
from finite_checks import assert_allclose_finite, assert_finite  # noqa: E402,F401
from attention_cases import attn_mask, attn_ref, blocks_window_roundtrip, head_tail, mask_of  # noqa: E402


class _OnDevice:
    """glimmer._runtime with every kernel run on `device`: array and tensor
    operands (also inside lists) move there, results come back to the host.
    Types, enums and constants pass through unchanged."""

    def __init__(self, module, device):
        self._module = module
        self._device = device
        # full/constant/iota have no operand to take the device from.
        module.set_current_device(device)

    def _move(self, a):
        if isinstance(a, np.ndarray):
            # np.array keeps 0-d arrays 0-d (ascontiguousarray would not).
            return self._module.Tensor(np.array(a, order="C")).to(self._device)
        if isinstance(a, self._module.Tensor):
            return a.to(self._device)
        if isinstance(a, list):
            return [self._move(x) for x in a]
        return a

    def _back(self, r):
        if isinstance(r, self._module.Tensor):
            return r.to("cpu")
        if isinstance(r, tuple):
            return tuple(self._back(x) for x in r)
        if isinstance(r, list):
            return [self._back(x) for x in r]
        return r

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if isinstance(attr, type) or not callable(attr):
            return attr

        def call(*args, **kwargs):
            args = [self._move(a) for a in args]
            kwargs = {k: self._move(v) for k, v in kwargs.items()}
            return self._back(attr(*args, **kwargs))

        # One wrapper per name, so `op is rt.pow` holds as for the module.
        setattr(self, name, call)
        return call


DEVICE = os.environ.get("GLIMMER_TEST_DEVICE", "cpu")
if DEVICE != "cpu":
    if rt.cuda_device_count() == 0:
        pytest.skip(f"GLIMMER_TEST_DEVICE={DEVICE} but no CUDA device is "
                    "visible", allow_module_level=True)
    rt = _OnDevice(rt, DEVICE)

FLOATS = [np.float64, np.float32]
TOL = {
    np.float64: dict(rtol=1e-12, atol=1e-12),
    np.float32: dict(rtol=1e-5, atol=1e-5),
}
TORCH = {
    np.float64: torch.float64,
    np.float32: torch.float32,
    np.int64: torch.int64,
    np.int32: torch.int32,
}
RT = {
    np.float64: rt.DType.F64,
    np.float32: rt.DType.F32,
    np.int64: rt.DType.I64,
    np.int32: rt.DType.I32,
    np.bool_: rt.DType.Bool,
}


def rng(seed=0):
    return np.random.default_rng(seed)


def randn(shape, dtype, seed=0, scale=1.0):
    return (rng(seed).standard_normal(shape) * scale).astype(dtype)


def tt(a):
    """numpy -> torch (a copy, so in-place torch ops never touch `a`)."""
    return torch.from_numpy(np.array(a))


def npy(x):
    """runtime Tensor or torch tensor -> numpy."""
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    if isinstance(x, np.ndarray):
        return x
    return x.numpy()


def close(actual, expected, dtype=None, scale=1.0):
    """Compares with the dtype's tolerance (atol multiplied by `scale`)."""
    a, e = npy(actual), npy(expected) if not isinstance(expected, np.ndarray) else expected
    assert a.shape == e.shape, (a.shape, e.shape)
    assert a.dtype == e.dtype, (a.dtype, e.dtype)
    tol = dict(TOL[dtype or a.dtype.type])
    tol["atol"] *= scale
    assert_allclose_finite(a, e, **tol)


def equal(actual, expected):
    a, e = npy(actual), np.asarray(expected)
    assert a.shape == e.shape, (a.shape, e.shape)
    assert a.dtype == e.dtype, (a.dtype, e.dtype)
    np.testing.assert_array_equal(a, e)


# --------------------------------------------------------------------------
# Tensor, conversion and allocator


@pytest.mark.parametrize(
    "dtype", [np.float64, np.float32, np.float16, np.int64, np.int32, np.bool_]
)
def test_numpy_roundtrip(dtype):
    a = (rng().standard_normal((3, 4, 5)) * 10).astype(dtype)
    t = rt.Tensor(a)
    assert t.shape == (3, 4, 5) and t.numel() == 60
    equal(t, a)
    # Non-contiguous input is copied in row-major order.
    equal(rt.Tensor(a.transpose(2, 0, 1)), np.ascontiguousarray(a.transpose(2, 0, 1)))
    # np.asarray views the tensor's 64-byte aligned storage.
    assert np.asarray(t).ctypes.data % 64 == 0


def test_tensor_basics():
    t = rt.Tensor(np.arange(6, dtype=np.int64))
    assert t.describe() == "i64[6]"
    assert repr(rt.Tensor(np.zeros((2, 16), np.float32))) == "<glimmer_rt f32[2, 16]>"
    assert t.item(4) == 4.0
    v = t.view([2, 3])
    assert v.shape == (2, 3)
    np.asarray(v)[0, 0] = 42  # views share storage, clones do not
    c = t.clone()
    np.asarray(t)[1] = 7
    assert t.item(0) == 42 and c.item(0) == 42 and c.item(1) == 1
    with pytest.raises(ValueError, match="element counts differ"):
        t.view([4, 2])
    with pytest.raises(ValueError, match="out of range"):
        t.item(6)
    s = rt.Tensor(np.array(2.5))
    assert s.shape == () and s.item() == 2.5
    e = rt.Tensor(np.zeros((0, 3), np.float32))
    assert e.numel() == 0 and e.numpy().shape == (0, 3)


def test_allocator_reuse_and_empty_cache():
    rt.empty_cache()
    assert rt.allocator_stats()["cached_bytes"] == 0
    before = rt.allocator_stats()
    t = rt.full(rt.DType.F32, [1000], 1.0)  # 4000 bytes -> 4096 bucket
    del t
    cached = rt.allocator_stats()["cached_bytes"]
    assert cached >= 4096
    t = rt.full(rt.DType.F32, [900], 1.0)  # same bucket: served from the cache
    after = rt.allocator_stats()
    assert after["reuses"] == before["reuses"] + 1
    assert after["allocations"] == before["allocations"] + 1
    assert after["cached_bytes"] == cached - 4096
    del t
    rt.empty_cache()
    assert rt.allocator_stats()["cached_bytes"] == 0


def test_allocator_threads():
    # Tensors created and freed concurrently (the GIL is released between
    # bytecodes, so allocations and frees interleave across threads).
    errors = []

    def work(seed):
        try:
            for i in range(200):
                a = rt.full(rt.DType.F64, [1 + (seed * 7 + i) % 300], float(i))
                assert np.all(a.numpy() == i)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors


# --------------------------------------------------------------------------
# Creation


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_])
def test_full_constant_iota(dtype):
    equal(rt.full(RT[dtype], [2, 3], 3.0), np.full((2, 3), 3, dtype))
    vals = [0.0, 1.0, -2.0, 3.0, 0.0, 5.0]
    equal(rt.constant(RT[dtype], [3, 2], vals), np.array(vals).astype(dtype).reshape(3, 2))
    for dim in range(3):
        expected = np.broadcast_to(
            np.arange([2, 3, 4][dim]).reshape([-1 if d == dim else 1 for d in range(3)]),
            (2, 3, 4),
        ).astype(dtype)
        equal(rt.iota(RT[dtype], [2, 3, 4], dim), expected)
    with pytest.raises(ValueError, match="values for shape"):
        rt.constant(RT[dtype], [2], [1.0])
    with pytest.raises(ValueError, match="out of range"):
        rt.iota(RT[dtype], [2], 1)


def test_full_scalar_and_truncation():
    equal(rt.full(rt.DType.I64, [], -2.7), np.array(-2, np.int64))
    equal(rt.full(rt.DType.F32, [2], 0.1), np.full(2, 0.1, np.float32))


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
    "tan": (rt.tan, torch.tan, None),
    "asin": (rt.asin, torch.asin, "unit"),
    "acos": (rt.acos, torch.acos, "unit"),
    "atan": (rt.atan, torch.atan, None),
    "sinh": (rt.sinh, torch.sinh, None),
    "cosh": (rt.cosh, torch.cosh, None),
    "asinh": (rt.asinh, torch.asinh, None),
    "acosh": (rt.acosh, torch.acosh, "above1"),
    "atanh": (rt.atanh, torch.atanh, "unit"),
    "expm1": (rt.expm1, torch.expm1, None),
    "log1p": (rt.log1p, torch.log1p, "positive"),
    "abs": (rt.abs, torch.abs, None),
    "floor": (rt.floor, torch.floor, None),
    "ceil": (rt.ceil, torch.ceil, None),
    "trunc": (rt.trunc, torch.trunc, None),
    "round": (rt.round, torch.round, None),
    "gelu": (lambda x: rt.gelu(x, False), lambda x: F.gelu(x), None),
    "gelu_tanh": (lambda x: rt.gelu(x, True), lambda x: F.gelu(x, approximate="tanh"), None),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, dtype):
    ours, ref, domain = UNARY[name]
    x = randn((4, 33), dtype, scale=3.0)
    x[0, :5] = [0.0, -0.0, 1e-8, -30.0, 30.0]
    if domain == "positive":
        x = np.abs(x) + dtype(1e-3)
    elif domain == "unit":
        x = np.tanh(x) * dtype(0.99)
    elif domain == "above1":
        x = np.abs(x) + dtype(1)
    if name in ("exp", "expm1", "sinh", "cosh"):
        x = np.clip(x, -20, 20)
    if name in ("floor", "ceil", "trunc", "round"):
        # Halves (round goes to the even neighbour) and integers.
        x[1, :8] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.0, -4.0]
    expected = ref(tt(x))
    grows = name in ("exp", "expm1", "sinh", "cosh")
    close(ours(x), expected, scale=float(np.abs(npy(expected)).max()) if grows else 1.0)


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.int32])
def test_binary(dtype):
    if dtype in FLOATS:
        a, b = randn((3, 17), dtype, 1), randn((3, 17), dtype, 2)
    else:
        a = rng(1).integers(-50, 50, (3, 17)).astype(dtype)
        b = rng(2).integers(1, 9, (3, 17)).astype(dtype) * np.where(rng(3).random((3, 17)) < 0.5, -1, 1).astype(dtype)
    ta, tb = tt(a), tt(b)
    ops = {
        rt.add: ta + tb,
        rt.sub: ta - tb,
        rt.mul: ta * tb,
        rt.max: torch.maximum(ta, tb),
        rt.min: torch.minimum(ta, tb),
    }
    if dtype in FLOATS:
        ops[rt.div] = ta / tb
        ops[rt.pow] = torch.pow(ta.abs(), tb)
    else:
        ops[rt.div] = torch.div(ta, tb, rounding_mode="trunc")
    for op, expected in ops.items():
        if op is rt.pow:
            close(op(np.abs(a), b), expected)
        elif dtype in FLOATS:
            close(op(a, b), expected)
        else:
            equal(op(a, b), npy(expected))
    if dtype not in FLOATS:
        e = np.abs(b) % 4
        equal(rt.pow(a, e), npy(torch.pow(ta, tt(e))))


def test_integer_div_and_pow_errors():
    with pytest.raises(ValueError, match="division by zero"):
        rt.div(np.array([1, 2], np.int64), np.array([1, 0], np.int64))
    with pytest.raises(ValueError, match="negative integer powers"):
        rt.pow(np.array([2], np.int32), np.array([-1], np.int32))
    equal(rt.div(np.array([-7, 7, -7], np.int32), np.array([2, -2, -2], np.int32)),
          np.array([-3, -3, 3], np.int32))


def test_max_min_propagate_nan():
    a = np.array([1.0, np.nan, 3.0])
    b = np.array([np.nan, 2.0, 1.0])
    equal(rt.max(a, b), npy(torch.maximum(tt(a), tt(b))))
    equal(rt.min(a, b), npy(torch.minimum(tt(a), tt(b))))


def test_binary_errors():
    with pytest.raises(ValueError, match="glimmer.add: expects rhs like lhs"):
        rt.add(np.zeros((2, 3)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="like lhs"):
        rt.mul(np.zeros(3), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="f32 or f64"):
        rt.exp(np.zeros(3, np.int64))


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.int32, np.bool_])
def test_compare(dtype):
    a = rng(4).integers(0, 3, (5, 7)).astype(dtype)
    b = rng(5).integers(0, 3, (5, 7)).astype(dtype)
    if dtype == np.float64:
        a[0, 0] = np.nan
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    refs = {
        rt.CompareDir.EQ: ta == tb,
        rt.CompareDir.NE: ta != tb,
        rt.CompareDir.LT: ta < tb,
        rt.CompareDir.LE: ta <= tb,
        rt.CompareDir.GT: ta > tb,
        rt.CompareDir.GE: ta >= tb,
    }
    for d, expected in refs.items():
        equal(rt.compare(d, a, b), npy(expected))


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.bool_])
def test_select(dtype):
    c = rng(6).random((4, 5)) < 0.5
    a = (rng(7).standard_normal((4, 5)) * 5).astype(dtype)
    b = (rng(8).standard_normal((4, 5)) * 5).astype(dtype)
    equal(rt.select(c, a, b), npy(torch.where(tt(c), tt(a), tt(b))))
    with pytest.raises(ValueError, match="bool condition"):
        rt.select(c.astype(np.int64), a, b)


def test_convert():
    x = np.array([-2.7, -0.5, 0.0, 0.5, 2.7, 1e10, 3.0000001], np.float64)
    tx = torch.from_numpy(x)
    equal(rt.convert(x, rt.DType.I64), npy(tx.to(torch.int64)))
    equal(rt.convert(x[:5], rt.DType.I32), npy(tx[:5].to(torch.int32)))
    equal(rt.convert(x, rt.DType.Bool), npy(tx.to(torch.bool)))
    equal(rt.convert(x, rt.DType.F32), npy(tx.to(torch.float32)))
    i = np.array([-3, 0, 5, 2**40], np.int64)
    equal(rt.convert(i, rt.DType.F64), i.astype(np.float64))
    equal(rt.convert(i[:3], rt.DType.I32), i[:3].astype(np.int32))
    equal(rt.convert(np.array([True, False]), rt.DType.F32), np.array([1, 0], np.float32))
    equal(rt.convert(np.array([True, False]), rt.DType.I64), np.array([1, 0], np.int64))
    # Half precision rounding matches torch (nearest even, subnormals, inf).
    f = np.concatenate([randn(200, np.float32, 9, 100.0),
                        np.array([65504, 65519, 65520, 1e5, 6e-8, 3e-8, 1e-5, -0.0, np.inf, np.nan], np.float32)])
    tf = torch.from_numpy(f)
    for dt, tdt in [(rt.DType.F16, torch.float16), (rt.DType.BF16, torch.bfloat16)]:
        h = rt.convert(f, dt)
        got = np.array([h.item(k) for k in range(len(f))])
        np.testing.assert_array_equal(got, tf.to(tdt).to(torch.float64).numpy())
        back = rt.convert(h, rt.DType.F32)
        np.testing.assert_array_equal(npy(back), tf.to(tdt).to(torch.float32).numpy())


# --------------------------------------------------------------------------
# Reductions and scans


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.int32])
@pytest.mark.parametrize("dims", [[0], [2], [1, 2], [0, 1, 2]])
@pytest.mark.parametrize("keep", [False, True])
def test_reduce(dtype, dims, keep):
    x = (rng(10).standard_normal((3, 4, 5)) * 10).astype(dtype)
    tx = tt(x)
    kinds = {
        rt.Reduction.Sum: torch.sum(tx, dims, keepdim=keep),
        rt.Reduction.Max: torch.amax(tx, dims, keepdim=keep),
        rt.Reduction.Min: torch.amin(tx, dims, keepdim=keep),
    }
    for kind, expected in kinds.items():
        if dtype in FLOATS:
            close(rt.reduce(kind, x, dims, keep), expected, scale=10.0)
        else:
            equal(rt.reduce(kind, x, dims, keep), npy(expected).astype(dtype))  # torch sums ints in i64


def test_reduce_errors():
    with pytest.raises(ValueError, match="sorted and unique"):
        rt.reduce(rt.Reduction.Sum, np.zeros((2, 3)), [1, 0])
    with pytest.raises(ValueError, match="out of range"):
        rt.reduce(rt.Reduction.Sum, np.zeros((2, 3)), [2])
    with pytest.raises(ValueError, match="empty"):
        rt.reduce(rt.Reduction.Max, np.zeros((0, 3)), [0])
    equal(rt.reduce(rt.Reduction.Sum, np.zeros((0, 3)), [0]), np.zeros(3))


@pytest.mark.parametrize("dtype", FLOATS)
def test_sum_squares(dtype):
    # Inputs of several sizes: a scalar, an empty tensor, one spanning
    # several of the GPU kernel's 65536-element chunks, and more inputs than
    # one launch takes (64).
    parts = [randn((3, 4, 5), dtype, 30, scale=3.0), np.array(2.5, dtype),
             np.zeros((0, 3), dtype), randn((200_003,), dtype, 31)]
    parts += [randn((k + 1,), dtype, 40 + k) for k in range(70)]
    expected = sum(torch.sum(tt(p).double() ** 2) for p in parts)
    got = npy(rt.sum_squares(parts))
    assert got.shape == () and got.dtype == dtype
    # f32 sums of 200k squares in one accumulator (the CPU's row-major
    # order): a relative error near sqrt(n) * 2^-24.
    assert_allclose_finite(np.asarray(got, np.float64), np.float64(expected),
                           rtol=1e-12 if dtype == np.float64 else 2e-4, atol=0)
    # The same inputs give the same bits (a fixed summation order).
    equal(rt.sum_squares(parts), got)


def test_sum_squares_bf16_inputs_under_f32():
    # bf16 inputs (gradients left in bf16) among f32 ones sum exactly as
    # their f32 widenings: the same bits, in any mix and order.
    parts = [randn((3, 5), np.float32, 32), randn((70_001,), np.float32, 33),
             randn((9,), np.float32, 34), randn((4, 4), np.float32, 35)]
    low = [rt.convert(p, rt.DType.BF16) for p in parts]
    wide = [npy(rt.convert(b, rt.DType.F32)) for b in low]
    mixed = [low[0], parts[1], low[2], low[3]]
    widened = [wide[0], parts[1], wide[2], wide[3]]
    equal(rt.sum_squares(mixed, dtype=rt.DType.F32), npy(rt.sum_squares(widened)))
    equal(rt.sum_squares(low, dtype=rt.DType.F32), npy(rt.sum_squares(wide)))


def test_sum_squares_errors():
    with pytest.raises(ValueError, match="expects at least one input"):
        rt.sum_squares([])
    with pytest.raises(ValueError, match="input #1 .* is neither f64 nor bf16 under an f32 result"):
        rt.sum_squares([np.zeros(2), np.zeros(2, np.float32)])
    with pytest.raises(ValueError, match="input #0 .* is neither f32 nor bf16"):
        rt.sum_squares([np.zeros(2)], dtype=rt.DType.F32)
    with pytest.raises(ValueError, match="floating-point|f32|f64"):
        rt.sum_squares([np.zeros(2, np.int64)])


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.int32])
def test_argsort(dtype):
    # Few distinct values, so that ties test the stable order (descending
    # too); NaN sorts above every number, as in PyTorch.
    x = rng(12).integers(-3, 4, (3, 17, 5)).astype(dtype)
    if dtype in FLOATS:
        x[0, 3, 1] = x[2, 0, 4] = np.nan
    for dim in range(3):
        for descending in (False, True):
            expected = torch.sort(tt(x), dim=dim, descending=descending,
                                  stable=True).indices
            equal(rt.argsort(x, dim, descending), npy(expected))


def test_argsort_errors():
    with pytest.raises(ValueError, match="argsort"):
        rt.argsort(np.zeros((2, 3)), 2)


@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.int32])
def test_cumsum(dtype):
    x = (rng(11).standard_normal((3, 4, 5)) * 10).astype(dtype)
    for dim in range(3):
        expected = torch.cumsum(tt(x), dim)
        if dtype in FLOATS:
            close(rt.cumsum(x, dim), expected, scale=10.0)
        else:
            equal(rt.cumsum(x, dim), npy(expected).astype(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_and_grad(dtype):
    x = randn((3, 5, 7), dtype, 12, scale=10.0)
    x[0, 0, :] += 500.0  # large logits: max subtraction keeps this finite
    for dim in range(3):
        tx = tt(x).requires_grad_()
        y = torch.softmax(tx, dim)
        close(rt.softmax(x, dim), y)
        dy = randn(x.shape, dtype, 13)
        (gx,) = torch.autograd.grad(y, tx, tt(dy))
        close(rt.softmax_grad(dy, npy(y), dim), gx)


# --------------------------------------------------------------------------
# Shapes


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.bool_])
def test_shape_ops(dtype):
    x = (rng(14).standard_normal((2, 3, 4)) * 5).astype(dtype)
    equal(rt.reshape(x, [4, 6]), x.reshape(4, 6))
    for perm in [[0, 1, 2], [2, 0, 1], [1, 2, 0], [0, 2, 1]]:
        equal(rt.transpose(x, perm), np.ascontiguousarray(x.transpose(perm)))
    y = x[:, :1, :]  # [2, 1, 4] -> [5, 2, 3, 4] with dims [1, 2, 3]
    equal(rt.broadcast_in_dim(np.ascontiguousarray(y), [5, 2, 3, 4], [1, 2, 3]),
          np.broadcast_to(y, (5, 2, 3, 4)))
    v = np.ascontiguousarray(x[0, 0])  # [4] -> [4, 3] with dims [0]
    equal(rt.broadcast_in_dim(v, [4, 3], [0]), np.broadcast_to(v[:, None], (4, 3)))
    equal(rt.broadcast_in_dim(np.array(7, dtype), [2, 2], []), np.full((2, 2), 7, dtype))
    equal(rt.slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2]), x[0:2, 1:3, 0:4:2])
    equal(rt.slice(x, [1, 0, 1], [2, 3, 4], [1, 2, 3]), x[1:2, 0:3:2, 1:4:3])
    equal(rt.slice(x, [0, 2, 0], [2, 2, 4], [1, 1, 1]), x[:, 2:2, :])
    z = (rng(15).standard_normal((2, 5, 4)) * 5).astype(dtype)
    equal(rt.concat([x, z, x], 1), np.concatenate([x, z, x], 1))
    equal(rt.concat([x, x], 0), np.concatenate([x, x], 0))
    equal(rt.pad(x, [0, 1, 2], [1, 0, 3], 1.0),
          np.pad(x, [(0, 1), (1, 0), (2, 3)], constant_values=1).astype(dtype))


def test_microbatch_slice():
    # Piece i of n along a dimension; the index is a host scalar.
    x = np.arange(8 * 3, dtype=np.int64).reshape(8, 3)
    for i in range(4):
        equal(rt.microbatch_slice(x, np.array(i, np.int64), 4, 0), x[2 * i:2 * i + 2])
    equal(rt.microbatch_slice(x.T.copy(), np.array(1, np.int64), 2, 1), x.T[:, 4:])
    with pytest.raises(ValueError, match=r"micro-batch 4 is out of range \[0, 4\)"):
        rt.microbatch_slice(x, np.array(4, np.int64), 4, 0)
    with pytest.raises(ValueError, match="into 3 micro-batches"):
        rt.microbatch_slice(x, np.array(0, np.int64), 3, 0)


def test_pad_value_conversion():
    lab = np.array([[1, 2, 3]], np.int64)
    equal(rt.pad(lab, [0, 0], [0, 1], -100.0), np.array([[1, 2, 3, -100]], np.int64))


def test_shape_errors():
    x = np.zeros((2, 3))
    with pytest.raises(ValueError, match="cannot reshape"):
        rt.reshape(x, [4, 2])
    with pytest.raises(ValueError, match="not a permutation"):
        rt.transpose(x, [0, 0])
    with pytest.raises(ValueError, match="cannot broadcast"):
        rt.broadcast_in_dim(x, [2, 4], [0, 1])
    with pytest.raises(ValueError, match="strictly increasing"):
        rt.broadcast_in_dim(np.zeros((2, 2)), [2, 2], [1, 0])
    with pytest.raises(ValueError, match="out of bounds"):
        rt.slice(x, [0, 0], [3, 3], [1, 1])
    with pytest.raises(ValueError, match="must be positive"):
        rt.slice(x, [0, 0], [2, 3], [1, 0])
    with pytest.raises(ValueError, match="differs from input #0"):
        rt.concat([x, np.zeros((3, 3))], 1)
    with pytest.raises(ValueError, match="non-negative"):
        rt.pad(x, [0, -1], [0, 0], 0.0)


# --------------------------------------------------------------------------
# Embedding, linear, matmul


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("id_dtype", [np.int64, np.int32])
def test_embedding_and_grad(dtype, id_dtype):
    table = randn((11, 6), dtype, 16)
    ids = rng(17).integers(0, 11, (3, 5)).astype(id_dtype)
    ids[0, :3] = 4  # repeated ids accumulate in the gradient
    tw = tt(table).requires_grad_()
    y = F.embedding(tt(ids).long(), tw)
    close(rt.embedding(table, ids), y)
    dy = randn((3, 5, 6), dtype, 18)
    (gw,) = torch.autograd.grad(y, tw, tt(dy))
    close(rt.embedding_grad(dy, ids, 11), gw)


def test_embedding_of_integer_rows():
    # The importer gathers rows of integer tensors (a mask's block ids read at
    # [batch, query]) with the same kernel: the rows are copied exactly.
    table = rng(19).integers(-5, 2**40, (7, 3)).astype(np.int64)
    ids = np.array([[6, 0], [3, 3]], np.int64)
    got = rt.embedding(table, ids).numpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, table[ids])


def test_embedding_errors():
    table = np.zeros((8, 4), np.float32)
    with pytest.raises(ValueError, match=r"glimmer.embedding: id 8 at position 3 is out of range for a table of 8 rows"):
        rt.embedding(table, np.array([0, 1, 2, 8], np.int64))
    with pytest.raises(ValueError, match="id -1 .* out of range"):
        rt.embedding(table, np.array([[-1]], np.int32))
    with pytest.raises(ValueError, match="out of range"):
        rt.embedding_grad(np.zeros((2, 4), np.float32), np.array([0, 9]), 8)
    with pytest.raises(ValueError, match="i32 or i64"):
        rt.embedding(table, np.array([0.0]))
    with pytest.raises(ValueError, match="rank 2"):
        rt.embedding(np.zeros(8, np.float32), np.array([0]))


def test_check_indices():
    # The ids come back unchanged; out-of-range ones fail with the message
    # of the kernel the check stands in for (embedding ids, labels).
    ids = np.array([[0, 5], [7, 3]], np.int64)
    np.testing.assert_array_equal(rt.check_indices(ids, 8).numpy(), ids)
    with pytest.raises(ValueError, match=r"glimmer.embedding: id 8 at position 2 is out of range for a table of 8 rows"):
        rt.check_indices(np.array([0, 1, 8, 9], np.int32), 8)
    labels = np.array([3, -100, 1], np.int64)
    np.testing.assert_array_equal(
        rt.check_indices(labels, 4, ignore_index=-100, op="cross_entropy").numpy(), labels)
    with pytest.raises(ValueError, match=r"glimmer.cross_entropy: label -1 at position 1 is out of range for 4 classes \(ignore_index is -100\)"):
        rt.check_indices(np.array([3, -1], np.int64), 4, ignore_index=-100, op="cross_entropy")
    with pytest.raises(ValueError, match="i32 or i64"):
        rt.check_indices(np.array([0.0]), 4)


@pytest.mark.parametrize("dtype", FLOATS)
def test_linear(dtype):
    x, w, b = randn((2, 3, 16), dtype, 19), randn((24, 16), dtype, 20), randn(24, dtype, 21)
    close(rt.linear(x, w, b), F.linear(tt(x), tt(w), tt(b)))
    close(rt.linear(x, w), F.linear(tt(x), tt(w)))
    close(rt.linear(x[0, 0].copy(), w), F.linear(tt(x[0, 0]), tt(w)))
    # Fewer than four rows, and a width that is not a multiple of four (the
    # CPU kernel's dot-product path and its remainder).
    w23, x2 = np.ascontiguousarray(w[:23]), np.ascontiguousarray(x[0, :2])
    close(rt.linear(x2, w23, b[:23].copy()), F.linear(tt(x2), tt(w23), tt(b[:23])))
    with pytest.raises(ValueError, match="contraction mismatch"):
        rt.linear(x, randn((24, 15), dtype))
    with pytest.raises(ValueError, match="bias"):
        rt.linear(x, w, randn(23, dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_matmul(dtype, ta, tb):
    a = randn((2, 3, 7, 9), dtype, 22)
    b = randn((2, 3, 9, 5), dtype, 23)
    a_in = np.ascontiguousarray(a.swapaxes(-1, -2)) if ta else a
    b_in = np.ascontiguousarray(b.swapaxes(-1, -2)) if tb else b
    close(rt.matmul(a_in, b_in, ta, tb), tt(a) @ tt(b))
    close(rt.matmul(a[0, 0].copy(), b[0, 0].copy()), tt(a[0, 0]) @ tt(b[0, 0]))
    # Three rows (fewer than a block of four).
    a3 = np.ascontiguousarray(a[:, :, :3])
    a3_in = np.ascontiguousarray(a3.swapaxes(-1, -2)) if ta else a3
    close(rt.matmul(a3_in, b_in, ta, tb), tt(a3) @ tt(b))
    with pytest.raises(ValueError, match="batch dimensions differ"):
        rt.matmul(a, b[:1].copy())


@pytest.mark.skipif(DEVICE == "cpu", reason="TF32 is a mode of the GPU's f32 GEMMs")
def test_matmul_tf32_only_when_allowed():
    # Inputs rounded to TF32 (10 mantissa bits) lose about 1e-3 relative per
    # product; full f32 keeps 1e-5. Off by default, and off again after.
    a, b = randn((256, 512), np.float32, 26), randn((512, 128), np.float32, 27)
    exact = a.astype(np.float64) @ b.astype(np.float64)

    def error(product):
        return float(np.abs(npy(product) - exact).max() / np.abs(exact).max())

    assert not rt.allow_tf32()
    assert error(rt.matmul(a, b)) < 1e-6
    rt.set_allow_tf32(True)
    try:
        fast = error(rt.matmul(a, b))
        fast_linear = error(rt.linear(a, np.ascontiguousarray(b.T), None))
    finally:
        rt.set_allow_tf32(False)
    assert 1e-5 < fast < 1e-2 and 1e-5 < fast_linear < 1e-2, (fast, fast_linear)
    assert error(rt.matmul(a, b)) < 1e-6


# --------------------------------------------------------------------------
# Norms


@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm_and_grad(dtype):
    eps = 1e-6
    x, w = randn((2, 5, 16), dtype, 24, 3.0), randn(16, dtype, 25)
    tx, tw = tt(x).requires_grad_(), tt(w).requires_grad_()
    y = tx * torch.rsqrt(tx.pow(2).mean(-1, keepdim=True) + eps) * tw
    close(rt.rms_norm(x, w, eps), y)
    close(rt.rms_norm(x, w, eps), F.rms_norm(tt(x), (16,), tt(w), eps))
    dy = randn(x.shape, dtype, 26)
    gx, gw = torch.autograd.grad(y, (tx, tw), tt(dy))
    dx, dw = rt.rms_norm_grad(dy, x, w, eps)
    close(dx, gx)
    close(dw, gw, scale=10.0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("D", [16, 1536])  # the GPU's warp rows, block rows
def test_add_rms_norm(dtype, D):
    # The residual add and the norm of its sum in one call: the bits of
    # add and rms_norm run apart (what glimmer-fuse-residual-norms keeps),
    # and PyTorch's values.
    eps = 1e-6
    a, b = randn((2, 5, D), dtype, 40, 3.0), randn((2, 5, D), dtype, 41)
    w = randn(D, dtype, 42)
    s, y = rt.add_rms_norm(a, b, w, eps)
    apart = npy(rt.add(a, b))
    equal(s, apart)
    equal(y, npy(rt.rms_norm(apart, w, eps)))
    close(y, F.rms_norm(tt(a) + tt(b), (D,), tt(w), eps))


def test_add_rms_norm_errors():
    on = " on cuda:0" if DEVICE == "cuda" else ""
    x, w = np.zeros((2, 16), np.float32), np.ones(16, np.float32)
    with pytest.raises(ValueError, match=r"add_rms_norm: expects lhs of rhs's shape "
                       rf"\(f32\[2, 16\]{on}\), got f32\[1, 16\]{on}"):
        rt.add_rms_norm(np.zeros((1, 16), np.float32), x, w, 1e-5)
    with pytest.raises(ValueError, match=r"add_rms_norm: expects lhs of rhs's type f32 "
                       rf"\(or bf16 for an f32 rhs\), got f64\[2, 16\]{on}"):
        rt.add_rms_norm(np.zeros((2, 16)), x, w, 1e-5)
    with pytest.raises(ValueError, match="add_rms_norm: expects weight of type f32\\[16\\]"):
        rt.add_rms_norm(x, x, np.ones(8, np.float32), 1e-5)
    if DEVICE == "cpu":
        with pytest.raises(ValueError, match="add_rms_norm: adds a bf16 lhs to an f32 rhs "
                           "on GPUs only"):
            rt.add_rms_norm(rt.convert(x, rt.DType.BF16), x, w, 1e-5)


@pytest.mark.parametrize("dtype", FLOATS)
def test_layer_norm_and_grad(dtype):
    eps = 1e-5
    x = randn((2, 5, 16), dtype, 27, 3.0) + dtype(4.0)  # non-zero mean
    w, b = randn(16, dtype, 28), randn(16, dtype, 29)
    tx, tw, tb = (tt(a).requires_grad_() for a in (x, w, b))
    y = F.layer_norm(tx, (16,), tw, tb, eps)
    close(rt.layer_norm(x, w, b, eps), y)
    dy = randn(x.shape, dtype, 30)
    gx, gw, gb = torch.autograd.grad(y, (tx, tw, tb), tt(dy))
    dx, dw, db = rt.layer_norm_grad(dy, x, w, eps)
    close(dx, gx)
    close(dw, gw, scale=10.0)
    close(db, gb, scale=10.0)


def test_norm_errors():
    with pytest.raises(ValueError, match="weight of type f64\\[16\\]"):
        rt.rms_norm(np.zeros((2, 16)), np.zeros(8), 1e-5)
    with pytest.raises(ValueError, match="eps > 0"):
        rt.layer_norm(np.zeros((2, 4)), np.ones(4), np.zeros(4), 0.0)
    # A result (or a gradient's cotangent) in the input's type, or bf16 for
    # an f32 input (mixed precision); the same check on both backends (a
    # tensor on a GPU describes itself with its device).
    on = " on cuda:0" if DEVICE == "cuda" else ""
    x, w = np.zeros((2, 16), np.float32), np.ones(16, np.float32)
    with pytest.raises(ValueError, match=r"rms_norm: expects a result in the input's "
                       rf"type \(f32\[2, 16\]{on}\), or bf16 for an f32 input, got f64"):
        rt.rms_norm(x, w, 1e-5, rt.DType.F64)
    with pytest.raises(ValueError, match=r"rms_norm_grad: expects grad in the input's "
                       rf"type \(f32\[2, 16\]{on}\), or bf16 for an f32 input, got f64"):
        rt.rms_norm_grad(np.zeros((2, 16)), x, w, 1e-5)
    with pytest.raises(ValueError, match=r"layer_norm_grad: expects grad of the input's "
                       rf"shape \(f32\[2, 16\]{on}\), got f32\[2, 8\]{on}"):
        rt.layer_norm_grad(np.zeros((2, 8), np.float32), x, w, 1e-5)
    if DEVICE == "cpu":
        with pytest.raises(ValueError, match=r"layer_norm: computes a result of another "
                           r"type than its input \(bf16 from f32\) on GPUs only"):
            rt.layer_norm(x, w, w, 1e-5, rt.DType.BF16)


# --------------------------------------------------------------------------
# RoPE


def rope_ref(x, pos, theta, style, inverse=False):
    """Direct formula: pairs (2i, 2i+1) or (i, i + D/2), angle pos * theta^(-2i/D)."""
    D = x.shape[-1]
    half = D // 2
    i = torch.arange(half, dtype=torch.float64)
    freq = theta ** (-2 * i / D)
    ang = pos.to(torch.float64)[..., None] * freq  # [B, T, D/2]
    c = torch.cos(ang)[:, :, None, :].to(x.dtype)
    s = torch.sin(ang)[:, :, None, :].to(x.dtype)
    if inverse:
        s = -s
    if style == rt.RopeStyle.Interleaved:
        x0, x1 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x0 * c - x1 * s, x0 * s + x1 * c], -1).flatten(-2)
    x0, x1 = x[..., :half], x[..., half:]
    return torch.cat([x0 * c - x1 * s, x0 * s + x1 * c], -1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("style", [rt.RopeStyle.Interleaved, rt.RopeStyle.Half])
def test_rope(dtype, style):
    B, T, H, D = 2, 8, 3, 16
    x = randn((B, T, H, D), dtype, 31)
    pos = rng(32).permutation(np.arange(50, 50 + B * T)).reshape(B, T).astype(np.int64)
    tx = tt(x).requires_grad_()
    y = rope_ref(tx, tt(pos), 10000.0, style)
    ours = rt.rope(x, pos, 10000.0, style)
    close(ours, y)
    # The inverse undoes the rotation and is the VJP.
    close(rt.rope(npy(ours), pos, 10000.0, style, True), x)
    dy = randn(x.shape, dtype, 33)
    (gx,) = torch.autograd.grad(y, tx, tt(dy))
    close(rt.rope(dy, pos.astype(np.int32), 10000.0, style, True), gx)
    # Position 0 is the identity; styles differ elsewhere.
    zero = np.zeros((B, T), np.int64)
    close(rt.rope(x, zero, 500.0, style), x)


def test_rope_errors():
    with pytest.raises(ValueError, match="even head dimension"):
        rt.rope(np.zeros((1, 2, 1, 3)), np.zeros((1, 2), np.int64), 1e4, rt.RopeStyle.Half)
    with pytest.raises(ValueError, match="positions of shape"):
        rt.rope(np.zeros((1, 2, 1, 4)), np.zeros((1, 3), np.int64), 1e4, rt.RopeStyle.Half)


# --------------------------------------------------------------------------
# Attention


ATTN_CASES = {
    # name: (B, Hq, Hkv, Tq, Tk, kind)
    "plain": (2, 4, 4, 6, 6, "none"),
    "gqa": (2, 4, 2, 8, 8, "none"),
    "causal": (2, 4, 2, 8, 8, "causal"),
    "causal_permuted_positions": (2, 4, 1, 8, 8, "cp"),
    "documents": (2, 4, 2, 8, 8, "docs"),
    "causal_documents": (2, 2, 1, 8, 8, "causal_docs"),
    "query_chunk": (2, 4, 2, 4, 8, "chunk"),
    # Causal without positions: query i sees keys j <= i (also with fewer
    # queries than keys).
    "index_causal": (2, 4, 2, 8, 8, "index"),
    "index_causal_fewer_queries": (2, 4, 2, 4, 8, "index"),
    # Bidirectional blocks (causal, or the query's block >= 0 is the key's)
    # and sliding windows (query position - key position < window):
    # PaliGemma's prefix-LM (the prefix is block 0, the rest -1; index
    # positions), image blocks 0, 1, 2 (explicit positions), a window alone,
    # and Gemma 3's window over blocks longer than the window (a key of the
    # query's block but window or more positions back is not seen), also
    # permuted as context parallelism lays the sequence out, for the last
    # queries only (i32), and with documents.
    "prefix_lm": (2, 4, 2, 8, 8, "prefix"),
    "image_blocks": (2, 4, 2, 8, 8, "images"),
    "window": (2, 4, 2, 8, 8, "window"),
    "window_blocks": (2, 4, 2, 8, 8, "window_blocks"),
    "window_blocks_permuted": (2, 4, 1, 8, 8, "window_blocks_cp"),
    "window_blocks_query_chunk": (2, 4, 2, 4, 8, "window_blocks_chunk"),
    "window_blocks_documents": (2, 2, 1, 8, 8, "window_blocks_docs"),
}

# Block ids [B, 8] of the window_blocks cases (window 2): blocks of 5 and 3
# positions, longer than the window.
WINDOW_BLOCKS = np.array([[-1, 0, 0, 0, 0, 0, -1, -1], [1, 1, 1, -1, -1, 2, 2, 2]], np.int64)


def attn_inputs(case, dtype):
    B, Hq, Hkv, Tq, Tk, kind = ATTN_CASES[case]
    D = 8
    q, k, v = randn((B, Hq, Tq, D), dtype, 40), randn((B, Hkv, Tk, D), dtype, 41), randn((B, Hkv, Tk, D), dtype, 42)
    kw = {}
    kpos = np.tile(np.arange(Tk, dtype=np.int64), (B, 1))
    if kind in ("causal", "causal_docs"):
        kw = dict(q_positions=kpos, k_positions=kpos, causal=True)
    elif kind == "cp":
        perm = npy(rt.cp_permute(np.arange(Tk, dtype=np.int64), 0, 2))
        kw = dict(q_positions=kpos[:, perm].copy(), k_positions=kpos[:, perm].copy(), causal=True)
    elif kind == "index":
        kw = dict(causal=True)
    elif kind == "chunk":  # the second half of the queries against all keys
        kw = dict(q_positions=kpos[:, Tk - Tq:].astype(np.int32).copy(), k_positions=kpos.astype(np.int32), causal=True)
    elif kind == "prefix":  # prefixes of 3 and 5 (i32 blocks)
        blk = np.array([[0, 0, 0, -1, -1, -1, -1, -1], [0, 0, 0, 0, 0, -1, -1, -1]], np.int32)
        kw = dict(q_blocks=blk, k_blocks=blk, causal=True)
    elif kind == "images":
        blk = np.array([[-1, 0, 0, 0, -1, 1, 1, -1], [0, 0, -1, 1, 1, 1, 2, 2]], np.int64)
        kw = dict(q_positions=kpos, k_positions=kpos, q_blocks=blk, k_blocks=blk, causal=True)
    elif kind == "window":
        kw = dict(causal=True, window=3)
    elif kind in ("window_blocks", "window_blocks_cp", "window_blocks_docs"):
        pos, blk = kpos, WINDOW_BLOCKS
        if kind == "window_blocks_cp":
            perm = npy(rt.cp_permute(np.arange(Tk, dtype=np.int64), 0, 2))
            pos, blk = pos[:, perm].copy(), blk[:, perm].copy()
        kw = dict(q_positions=pos, k_positions=pos, q_blocks=blk, k_blocks=blk, causal=True, window=2)
    elif kind == "window_blocks_chunk":
        pos, blk = kpos.astype(np.int32), WINDOW_BLOCKS.astype(np.int32)
        kw = dict(q_positions=pos[:, Tk - Tq:].copy(), k_positions=pos, q_blocks=blk[:, Tk - Tq:].copy(),
                  k_blocks=blk, causal=True, window=2)
    if kind in ("docs", "causal_docs", "window_blocks_docs"):
        doc = np.array([[0, 0, 0, 1, 1, 2, 2, 2], [0, 1, 1, 1, 1, 1, 3, 3]], np.int64)
        kw.update(q_documents=doc, k_documents=doc)
    return q, k, v, kw


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(ATTN_CASES))
def test_attention_vs_sdpa(case, dtype):
    q, k, v, kw = attn_inputs(case, dtype)
    B, _, Tq, D = q.shape
    Tk = k.shape[2]
    scale = D ** -0.5
    out, lse = rt.attention(q, k, v, scale=scale, **kw)
    mask = mask_of(B, Tq, Tk, kw)
    expected = F.scaled_dot_product_attention(tt(q), tt(k), tt(v), attn_mask=mask, scale=scale, enable_gqa=True)
    close(out, expected)
    ref_out, ref_lse = attn_ref(tt(q), tt(k), tt(v), mask, scale)
    close(out, ref_out)
    close(lse, ref_lse)
    assert lse.dtype == RT[dtype]


def test_attention_permuted_positions_match_causal_sdpa():
    # Attention over a cp-permuted sequence with explicit positions equals
    # causal attention over the original order.
    B, H, T, D = 2, 2, 8, 4
    q, k, v = (randn((B, H, T, D), np.float64, s) for s in (50, 51, 52))
    pos = np.tile(np.arange(T, dtype=np.int64), (B, 1))
    perm = lambda a: npy(rt.cp_permute(a, 2, 2))  # noqa: E731
    ppos = npy(rt.cp_permute(pos, 1, 2))
    out, _ = rt.attention(perm(q), perm(k), perm(v), ppos, ppos, causal=True, scale=0.5)
    back = rt.cp_permute(out, 2, 2, rt.Balancer.HeadTail, True)
    close(back, F.scaled_dot_product_attention(tt(q), tt(k), tt(v), is_causal=True, scale=0.5))


@pytest.mark.parametrize("dtype", FLOATS)
def test_attention_fully_masked_rows(dtype):
    # Query 0 of batch 0 has no key of its document: zero output, lse = -inf.
    q, k, v = randn((2, 2, 4, 8), dtype, 53), randn((2, 1, 4, 8), dtype, 54), randn((2, 1, 4, 8), dtype, 55)
    qdoc = np.array([[9, 1, 1, 2], [1, 1, 2, 2]], np.int64)
    kdoc = np.array([[1, 1, 2, 2], [1, 1, 2, 2]], np.int64)
    out, lse = rt.attention(q, k, v, q_documents=qdoc, k_documents=kdoc, scale=0.3)
    o, l_ = npy(out), npy(lse)
    assert np.all(o[0, :, 0] == 0) and np.all(np.isneginf(l_[0, :, 0]))
    mask = attn_mask(2, 4, 4, qdoc=qdoc, kdoc=kdoc)
    tq, tk, tv = (tt(a).requires_grad_() for a in (q, k, v))
    ref_out, ref_lse = attn_ref(tq, tk, tv, mask, 0.3)
    close(out, ref_out)
    np.testing.assert_array_equal(np.isneginf(l_), np.isneginf(npy(ref_lse)))
    fin = np.isfinite(l_)
    np.testing.assert_allclose(l_[fin], npy(ref_lse)[fin], **TOL[dtype])
    dout = randn(q.shape, dtype, 56)
    grads = torch.autograd.grad(ref_out, (tq, tk, tv), tt(dout))
    ours = rt.attention_grad(dout, q, k, v, out, lse, q_documents=qdoc, k_documents=kdoc, scale=0.3)
    for a, e in zip(ours, grads):
        close(a, e)
    assert np.all(npy(ours[0])[0, :, 0] == 0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", sorted(ATTN_CASES))
def test_attention_grad(case, dtype):
    q, k, v, kw = attn_inputs(case, dtype)
    B, _, Tq, D = q.shape
    Tk = k.shape[2]
    scale = 0.37
    mask = mask_of(B, Tq, Tk, kw)
    tq, tk, tv = (tt(a).requires_grad_() for a in (q, k, v))
    ref_out, _ = attn_ref(tq, tk, tv, mask, scale)
    dout = randn(q.shape, dtype, 57)
    grads = torch.autograd.grad(ref_out, (tq, tk, tv), tt(dout))
    out, lse = rt.attention(q, k, v, scale=scale, **kw)
    ours = rt.attention_grad(dout, q, k, v, out, lse, scale=scale, **kw)
    for a, e in zip(ours, grads):
        close(a, e)


def test_attention_masks_by_hand():
    # The reference mask on the window_blocks case, row by row: query 5 of
    # batch 0 (block 0 = positions 1..5, window 2) sees keys 4 and 5 only,
    # not block 0's keys 1..3 (window) nor 6 (after it, no block); query 2
    # sees 1 and 2 (window) and 3..5 (its block, ahead).
    kw = dict(q_positions=np.tile(np.arange(8), (2, 1)), k_positions=np.tile(np.arange(8), (2, 1)),
              q_blocks=WINDOW_BLOCKS, k_blocks=WINDOW_BLOCKS, causal=True, window=2)
    m = mask_of(2, 8, 8, kw)[:, 0].numpy()
    assert np.flatnonzero(m[0, 5]).tolist() == [4, 5]
    assert np.flatnonzero(m[0, 2]).tolist() == [1, 2, 3, 4, 5]
    assert np.flatnonzero(m[0, 6]).tolist() == [5, 6]
    # Blocks longer than the window: window AND (causal OR block) differs
    # from (causal AND window) OR block, which the cases tell apart.
    causal_only = mask_of(2, 8, 8, dict(kw, q_blocks=None, k_blocks=None))[:, 0].numpy()
    blk = WINDOW_BLOCKS
    same_block = (blk[:, :, None] >= 0) & (blk[:, :, None] == blk[:, None, :])
    assert np.any(m != (causal_only | same_block))
    # The prefix-LM: the prefix sees itself whole, the rest is causal.
    blk = np.array([[0, 0, 0, -1]])
    m = attn_mask(1, 4, 4, causal=True, qblk=blk, kblk=blk)[0, 0].numpy()
    np.testing.assert_array_equal(m, [[1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 1]])


@pytest.mark.parametrize("dtype", FLOATS)
def test_attention_blocks_window_permuted(dtype):
    # Blocks and a window over a sequence permuted head-tail (cp = 2, as
    # context parallelism lays it out), with the permuted positions and
    # blocks: permuted back, the output and the gradients equal attention
    # over the sequence in order.
    B, H, T, D, cp = 2, 2, 16, 4, 2
    q, k, v = (randn((B, H, T, D), dtype, s) for s in (58, 59, 60))
    dout = randn((B, H, T, D), dtype, 61)
    kw, mask = blocks_window_roundtrip(B, T, cp, 3, 62)
    order = head_tail(np.arange(T), 0, cp)
    back = np.argsort(order)
    perm = lambda a: np.ascontiguousarray(a[:, :, order])  # noqa: E731
    unperm = lambda x: np.ascontiguousarray(npy(x)[:, :, back])  # noqa: E731
    out, lse = rt.attention(perm(q), perm(k), perm(v), scale=0.5, **kw)
    tq, tk, tv = (tt(a).requires_grad_() for a in (q, k, v))
    ref_out, ref_lse = attn_ref(tq, tk, tv, mask, 0.5)
    close(unperm(out), ref_out)
    close(npy(lse)[:, :, back], ref_lse)
    grads = torch.autograd.grad(ref_out, (tq, tk, tv), tt(dout))
    ours = rt.attention_grad(perm(dout), perm(q), perm(k), perm(v), out, lse, scale=0.5, **kw)
    for a, e in zip(ours, grads):
        close(unperm(a), e)


def test_attention_errors():
    q, k = np.zeros((1, 3, 4, 8)), np.zeros((1, 2, 4, 8))
    with pytest.raises(ValueError, match="multiple of key/value heads"):
        rt.attention(q, k, k)
    with pytest.raises(ValueError, match="together or neither"):
        rt.attention(q, q, q, q_positions=np.zeros((1, 4), np.int64))
    with pytest.raises(ValueError, match="query positions of shape"):
        rt.attention(q, q, q, np.zeros((1, 5), np.int64), np.zeros((1, 4), np.int64), causal=True)
    with pytest.raises(ValueError, match="lse"):
        rt.attention_grad(q, q, q, q, q, np.zeros((1, 3, 4), np.float32))
    blk = np.zeros((1, 4), np.int64)
    with pytest.raises(ValueError, match="blocks and a window only with causal attention"):
        rt.attention(q, q, q, q_blocks=blk, k_blocks=blk)
    with pytest.raises(ValueError, match="blocks and a window only with causal attention"):
        rt.attention(q, q, q, window=3)
    with pytest.raises(ValueError, match="blocks and a window only with causal attention"):
        rt.attention_grad(q, q, q, q, q, np.zeros((1, 3, 4)), q_blocks=blk, k_blocks=blk)
    with pytest.raises(ValueError, match="window >= 0"):
        rt.attention(q, q, q, causal=True, window=-1)
    with pytest.raises(ValueError, match="query and key blocks together or neither"):
        rt.attention(q, q, q, q_blocks=blk, causal=True)
    with pytest.raises(ValueError, match="query and key blocks together or neither"):
        rt.attention(q, q, q, k_blocks=blk, causal=True)
    with pytest.raises(ValueError, match="key blocks of shape"):
        rt.attention(q, q, q, q_blocks=blk, k_blocks=np.zeros((1, 5), np.int64), causal=True)
    with pytest.raises(ValueError, match="query blocks"):
        rt.attention(q, q, q, q_blocks=np.zeros((1, 4)), k_blocks=blk, causal=True)
    # Existing keywords keep working with the new defaults (no blocks,
    # window 0).
    out, _ = rt.attention(q, q, q, causal=True, scale=0.5)
    assert npy(out).shape == q.shape


# layout=(query, key, value, output): which are stored sequence-major,
# [B, T, H, D] instead of [B, H, T, D].
ATTN_LAYOUTS = {
    "query": (True, False, False, False),
    "key": (False, True, False, False),
    "value": (False, False, True, False),
    "output": (False, False, False, True),
    "all": (True, True, True, True),
}


def swap_heads(a, sequence_major=True):
    """[B, H, T, D] <-> [B, T, H, D] when sequence_major (a numpy copy)."""
    a = npy(a)
    return np.ascontiguousarray(a.swapaxes(1, 2)) if sequence_major else a


@pytest.mark.parametrize("mask", ["none", "index_causal", "positions"])
@pytest.mark.parametrize("layout", sorted(ATTN_LAYOUTS))
def test_attention_layout(layout, mask):
    # The same op with some tensors stored sequence-major: the results are
    # the head-major call's, transposed where their layout says (GQA 2:1,
    # fewer queries than keys).
    lq, lk, lv, lo = flags = ATTN_LAYOUTS[layout]
    B, Hq, Hkv, Tq, Tk, D = 2, 4, 2, 5, 7, 8
    dtype = np.float32
    q, k, v = randn((B, Hq, Tq, D), dtype, 70), randn((B, Hkv, Tk, D), dtype, 71), randn((B, Hkv, Tk, D), dtype, 72)
    dout = randn((B, Hq, Tq, D), dtype, 73)
    kw = dict(scale=0.4)
    if mask == "index_causal":
        kw.update(causal=True)
    elif mask == "positions":  # the last Tq of Tk positions
        pos = np.tile(np.arange(Tk, dtype=np.int64), (B, 1))
        kw.update(q_positions=pos[:, Tk - Tq:].copy(), k_positions=pos, causal=True)
    out, lse = rt.attention(q, k, v, **kw)
    dq, dk, dv = rt.attention_grad(dout, q, k, v, out, lse, **kw)
    sq, sk, sv, sout = swap_heads(q, lq), swap_heads(k, lk), swap_heads(v, lv), swap_heads(out, lo)
    out2, lse2 = rt.attention(sq, sk, sv, layout=flags, **kw)
    equal(out2, sout)
    equal(lse2, npy(lse))
    grads = rt.attention_grad(swap_heads(dout, lo), sq, sk, sv, sout, lse, layout=list(flags), **kw)
    for a, e, f in zip(grads, (dq, dk, dv), (lq, lk, lv)):
        equal(a, swap_heads(e, f))


def test_attention_layout_errors():
    # Messages speak of the logical [B, H, T, D] shapes (and the device, on
    # a GPU).
    q, k = np.zeros((1, 3, 4, 8), np.float32), np.zeros((1, 1, 4, 8), np.float32)
    seq = (False, False, True, False)
    with pytest.raises(ValueError, match=r"glimmer.attention: expects value \[B, T, H, D\] of rank 4, got f32\[4, 8\]"):
        rt.attention(q, k, k[0, 0], layout=seq)
    with pytest.raises(ValueError, match=r"expects value like key \(f32\[1, 1, 4, 8\][^)]*\), got f32\[1, 1, 5, 8\]"):
        rt.attention(q, k, np.zeros((1, 5, 1, 8), np.float32), layout=seq)
    # A sequence-major query [1, T=3, H=4, 8] against head-major keys of 3 heads.
    with pytest.raises(ValueError, match=r"query heads \(4\) must be a multiple of key/value heads \(3\)"):
        rt.attention(q, q, q, layout=(True, False, False, False))
    out = np.zeros((1, 4, 3, 8), np.float32)  # sequence-major: fits
    lse = np.zeros((1, 3, 4), np.float32)
    with pytest.raises(ValueError, match=r"glimmer.attention_grad: expects grad like query \(f32\[1, 3, 4, 8\][^)]*\), got f32\[1, 4, 3, 8\]"):
        rt.attention_grad(q, q, k, k, out, lse, layout=(False, False, False, True))
    with pytest.raises(ValueError, match=r"expects output \[B, T, H, D\] of rank 4"):
        rt.attention_grad(out, q, k, k, out[0], lse, layout=(False, False, False, True))
    with pytest.raises(TypeError):
        rt.attention(q, k, k, layout=(True, False))


# --------------------------------------------------------------------------
# Cross-entropy


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("label_dtype", [np.int64, np.int32])
def test_cross_entropy_and_grad(dtype, label_dtype):
    B, T, V = 2, 7, 13
    logits = randn((B, T, V), dtype, 60, 4.0)
    logits[0, 0, 3] = 80.0  # a dominant logit stays finite
    labels = rng(61).integers(0, V, (B, T)).astype(label_dtype)
    labels[0, 1] = labels[1, 6] = -100
    labels[0, 0] = 3
    sum_dtype = RT[dtype]
    s, n = rt.cross_entropy(logits, labels, -100, sum_dtype)
    tl = tt(logits).requires_grad_()
    ref = F.cross_entropy(tl.reshape(-1, V), tt(labels).long().reshape(-1), reduction="sum", ignore_index=-100)
    close(s, ref, scale=10.0)
    assert s.shape == () and n.dtype == rt.DType.I64 and n.item() == B * T - 2
    (gl,) = torch.autograd.grad(ref * 0.7, tl)
    g = np.array(0.7, dtype)
    close(rt.cross_entropy_grad(g, logits, labels, -100), gl)
    # The sum in float64 from float32 logits.
    s64, _ = rt.cross_entropy(logits, labels, -100, rt.DType.F64)
    assert s64.dtype == rt.DType.F64
    np.testing.assert_allclose(s64.item(), ref.item(), rtol=TOL[dtype]["rtol"])


def test_cross_entropy_ignore_index_and_all_ignored():
    logits = randn((4, 5), np.float64, 62)
    labels = np.array([2, 0, 0, 4])  # ignore_index 0 (not -100)
    s, n = rt.cross_entropy(logits, labels, 0, rt.DType.F64)
    ref = F.cross_entropy(tt(logits), tt(labels), reduction="sum", ignore_index=0)
    close(s, ref)
    assert n.item() == 2
    none = np.full(4, -100)
    s, n = rt.cross_entropy(logits, none, -100, rt.DType.F64)
    assert s.item() == 0.0 and n.item() == 0
    equal(rt.cross_entropy_grad(np.array(1.0), logits, none, -100), np.zeros((4, 5)))


def test_cross_entropy_errors():
    logits = np.zeros((2, 3, 5), np.float32)
    with pytest.raises(ValueError, match=r"label 5 at position 4 is out of range for 5 classes"):
        rt.cross_entropy(logits, np.array([[0, 1, 2], [3, 5, 0]]), -100, rt.DType.F32)
    with pytest.raises(ValueError, match="label -1 .* out of range"):
        rt.cross_entropy_grad(np.array(1.0, np.float32), logits, np.array([[0, -1, 2], [3, 4, 0]]), -100)
    with pytest.raises(ValueError, match="labels of shape"):
        rt.cross_entropy(logits, np.zeros((2, 4), np.int64), -100, rt.DType.F32)


# --------------------------------------------------------------------------
# Convolution


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("stride,padding", [([4, 4], [0, 0]), ([2, 1], [1, 2]), ([3, 3], [1, 0])])
def test_conv2d_and_grad(dtype, stride, padding):
    x, w, b = randn((2, 3, 9, 10), dtype, 70), randn((5, 3, 4, 3), dtype, 71), randn(5, dtype, 72)
    tx, tw = tt(x).requires_grad_(), tt(w).requires_grad_()
    y = F.conv2d(tx, tw, stride=stride, padding=padding)
    close(rt.conv2d(x, w, None, stride, padding), y)
    close(rt.conv2d(x, w, b, stride, padding), F.conv2d(tt(x), tt(w), tt(b), stride=stride, padding=padding))
    dy = randn(tuple(y.shape), dtype, 73)
    gx, gw = torch.autograd.grad(y, (tx, tw), tt(dy))
    dx, dw = rt.conv2d_grad(dy, x, w, stride, padding)
    close(dx, gx)
    close(dw, gw, scale=10.0)


def test_conv2d_errors():
    with pytest.raises(ValueError, match="channels"):
        rt.conv2d(np.zeros((1, 3, 4, 4)), np.zeros((2, 2, 2, 2)), None, [1, 1], [0, 0])
    with pytest.raises(ValueError, match="larger than the padded input"):
        rt.conv2d(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 3, 3)), None, [1, 1], [0, 0])
    with pytest.raises(ValueError, match="grad of shape"):
        rt.conv2d_grad(np.zeros((1, 1, 2, 2)), np.zeros((1, 1, 4, 4)), np.zeros((1, 1, 2, 2)), [1, 1], [0, 0])


# --------------------------------------------------------------------------
# Optimizers


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adamw(dtype, weight_decay):
    lr, betas, eps = 1e-2, (0.9, 0.95), 1e-8
    p = randn((4, 6), dtype, 80)
    tp = torch.nn.Parameter(tt(p))
    opt = torch.optim.AdamW([tp], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    m, v = np.zeros_like(p), np.zeros_like(p)
    for step in range(1, 7):
        g = randn(p.shape, dtype, 100 + step, scale=10.0 ** (step % 3 - 1))
        tp.grad = tt(g)
        opt.step()
        p, m, v = (npy(t) for t in rt.adamw_update(p, g, m, v, np.array(step, np.int64), lr, betas[0], betas[1], eps, weight_decay))
        st = opt.state[tp]
        close(p, tp.detach())
        close(m, st["exp_avg"])
        close(v, st["exp_avg_sq"])
    with pytest.raises(ValueError, match="1-based step"):
        rt.adamw_update(p, p, m, v, np.array(0, np.int64), lr, 0.9, 0.99, eps, 0.0)
    with pytest.raises(ValueError, match="scalar i64 step"):
        rt.adamw_update(p, p, m, v, np.array([1], np.int64), lr, 0.9, 0.99, eps, 0.0)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sgd(dtype):
    p = randn(10, dtype, 81)
    tp = torch.nn.Parameter(tt(p))
    opt = torch.optim.SGD([tp], lr=0.1, weight_decay=0.05)
    for step in range(4):
        g = randn(10, dtype, 90 + step)
        tp.grad = tt(g)
        opt.step()
        p = npy(rt.sgd_update(p, g, 0.1, 0.05))
        close(p, tp.detach())


@pytest.mark.parametrize("dtype", FLOATS)
def test_optimizer_grad_scale(dtype):
    # grad_scale (gradient clipping's coefficient, applied inside the update)
    # gives exactly the update of the grad multiplied by it first.
    p, g = randn((5, 7), dtype, 82), randn((5, 7), dtype, 83)
    m, v = randn((5, 7), dtype, 84), np.abs(randn((5, 7), dtype, 85))
    s = np.array(0.37, dtype)
    step = np.array(3, np.int64)
    scaled = npy(rt.mul(g, rt.broadcast_in_dim(s, [5, 7], [])))
    fused = rt.adamw_update(p, g, m, v, step, 1e-2, 0.9, 0.95, 1e-8, 0.1, grad_scale=s)
    plain = rt.adamw_update(p, scaled, m, v, step, 1e-2, 0.9, 0.95, 1e-8, 0.1)
    for a, e in zip(fused, plain):
        equal(a, npy(e))
    equal(rt.sgd_update(p, g, 0.1, 0.05, grad_scale=s), npy(rt.sgd_update(p, scaled, 0.1, 0.05)))
    with pytest.raises(ValueError, match="grad_scale to be a scalar of the param's type"):
        rt.adamw_update(p, g, m, v, step, 1e-2, 0.9, 0.95, 1e-8, 0.1, grad_scale=np.array([0.5], dtype))
    with pytest.raises(ValueError, match="grad_scale to be a scalar of the param's type"):
        rt.sgd_update(p, g, 0.1, 0.0, grad_scale=np.array(0.5, np.float64 if dtype == np.float32 else np.float32))


def test_optimizer_updates_leave_their_inputs():
    # A tensor Python holds is the sole handle on its storage, which the
    # kernels update in place when handed over (the trainer's state); from
    # Python the updates return new state and leave the caller's tensors
    # as they were. Called on the module itself: _OnDevice's moves would
    # hand the kernel a second handle.
    raw = getattr(rt, "_module", rt)
    p, g, m = (randn((6, 5), np.float32, s) for s in (91, 92, 93))
    v = np.abs(randn((6, 5), np.float32, 94))
    P, G, M, V = (raw.Tensor(np.array(a)).to(DEVICE) for a in (p, g, m, v))
    step = raw.Tensor(np.array(1, np.int64)).to(DEVICE)
    new = raw.adamw_update(P, G, M, V, step, 1e-2, 0.9, 0.95, 1e-8, 0.1)
    moved = raw.sgd_update(P, G, 0.1, 0.05)
    for t, a in zip((P, M, V), (p, m, v)):
        equal(t.to("cpu"), a)
    assert not np.array_equal(npy(new[0].to("cpu")), p)
    assert not np.array_equal(npy(moved.to("cpu")), p)


def test_optimizers_bf16_grad_of_f32_param():
    # A bf16 gradient of an f32 parameter (glimmer-narrow-gradients) gives
    # exactly the update of its f32 widening, with and without grad_scale.
    p, m = randn((5, 9), np.float32, 86), randn((5, 9), np.float32, 87)
    v = np.abs(randn((5, 9), np.float32, 88))
    g = rt.convert(randn((5, 9), np.float32, 89, scale=3.0), rt.DType.BF16)
    wide = npy(rt.convert(g, rt.DType.F32))
    step, s = np.array(2, np.int64), np.array(0.37, np.float32)
    for kw in ({}, {"grad_scale": s}):
        narrow = rt.adamw_update(p, g, m, v, step, 1e-2, 0.9, 0.95, 1e-8, 0.1, **kw)
        full = rt.adamw_update(p, wide, m, v, step, 1e-2, 0.9, 0.95, 1e-8, 0.1, **kw)
        for a, e in zip(narrow, full):
            equal(a, npy(e))
        equal(rt.sgd_update(p, g, 0.1, 0.05, **kw), npy(rt.sgd_update(p, wide, 0.1, 0.05, **kw)))
    # Only bf16 under f32 widens; other types and shapes are refused.
    with pytest.raises(ValueError, match=r"expects grad like param \(f32\[5, 9\][^)]*\), or in bf16 for an f32 param, got f64\[5, 9\]"):
        rt.adamw_update(p, wide.astype(np.float64), m, v, step, 1e-2, 0.9, 0.95, 1e-8, 0.1)
    with pytest.raises(ValueError, match=r"expects grad like param \(f32\[5, 9\][^)]*\), or in bf16 for an f32 param, got f32\[9, 5\]"):
        rt.sgd_update(p, wide.reshape(9, 5), 0.1, 0.0)
    with pytest.raises(ValueError, match=r"or in bf16 for an f32 param, got bf16\[5, 9\]"):
        rt.sgd_update(p.astype(np.float64), g, 0.1, 0.0)


# Sizes for the list kernels: empty, below and across one vector of 4,
# across several of the GPU kernels' 16384-element chunks, and more tensors
# than one launch takes (32 updates, 64 conversions).
LIST_SHAPES = [(0,), (1,), (3,), (4, 5), (37,), (16385,), (3, 40001)] + [(k + 2,) for k in range(70)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("scaled", [False, True])
def test_adamw_update_list(dtype, scaled):
    # Each tensor of the list gets the bits of its own adamw_update (f32
    # params with some bf16 grads too, which share launches by type).
    ps = [randn(s, dtype, 900 + i) for i, s in enumerate(LIST_SHAPES)]
    gs = [randn(s, dtype, 1000 + i, scale=3.0) for i, s in enumerate(LIST_SHAPES)]
    if dtype == np.float32:
        gs = [rt.convert(g, rt.DType.BF16) if i % 3 == 1 else g for i, g in enumerate(gs)]
    ms = [randn(s, dtype, 1100 + i) for i, s in enumerate(LIST_SHAPES)]
    vs = [np.abs(randn(s, dtype, 1200 + i)) for i, s in enumerate(LIST_SHAPES)]
    step = np.array(4, np.int64)
    kw = {"grad_scale": np.array(0.37, dtype)} if scaled else {}
    out = rt.adamw_update_list(ps, gs, ms, vs, step, 1e-2, 0.9, 0.95, 1e-8, 0.1, **kw)
    n = len(ps)
    assert len(out) == 3 * n
    for k in range(n):
        one = rt.adamw_update(ps[k], gs[k], ms[k], vs[k], step, 1e-2, 0.9, 0.95, 1e-8, 0.1, **kw)
        for j in range(3):
            equal(out[j * n + k], npy(one[j]))
    assert rt.adamw_update_list([], [], [], [], step, 1e-2, 0.9, 0.95, 1e-8, 0.1) == []


def test_adamw_update_list_errors():
    p = randn((3, 4), np.float32, 1300)
    step = np.array(1, np.int64)
    with pytest.raises(ValueError, match=r"glimmer.adamw_update_list: expects as many grads, "
                       r"exp_avgs and exp_avg_sqs as params, got 2 params, 1 grads, 2 exp_avgs "
                       r"and 2 exp_avg_sqs"):
        rt.adamw_update_list([p, p], [p], [p, p], [p, p], step, 1e-2, 0.9, 0.95, 1e-8, 0.0)
    # Each update is checked as adamw_update checks it.
    with pytest.raises(ValueError, match=r"glimmer.adamw_update: expects exp_avg like param"):
        rt.adamw_update_list([p, p], [p, p], [p, p[:2]], [p, p], step, 1e-2, 0.9, 0.95, 1e-8, 0.0)
    with pytest.raises(ValueError, match="glimmer.adamw_update: expects a 1-based step, got 0"):
        rt.adamw_update_list([p], [p], [p], [p], np.array(0, np.int64), 1e-2, 0.9, 0.95, 1e-8, 0.0)


@pytest.mark.parametrize("to", [rt.DType.F32, rt.DType.F64, rt.DType.BF16, rt.DType.I64])
def test_convert_list(to):
    # Each input gets the bits of its own convert, whatever its type (inputs
    # of the result type are copied).
    kinds = [np.float32, np.float64, np.int64, np.int32]
    xs = [randn(s, kinds[i % 4], 1400 + i, scale=50.0) for i, s in enumerate(LIST_SHAPES)]
    out = rt.convert_list(xs, to)
    assert len(out) == len(xs)
    wide = rt.DType.F32 if to == rt.DType.BF16 else to  # numpy has no bf16
    for x, y in zip(xs, out):
        equal(rt.convert(y, wide), npy(rt.convert(rt.convert(x, to), wide)))
    assert rt.convert_list([], to) == []


# --------------------------------------------------------------------------
# Multimodal

IMG = 7


def bank_indices_ref(tokens):
    t = tt(tokens)
    m = t == IMG
    c = m.flatten().long().cumsum(0).view_as(t) - 1
    return torch.where(m, c, torch.full_like(c, -1)).to(t.dtype)


def gather_ref(embeds, bank, idx):
    valid = idx >= 0
    return torch.where(valid[..., None], bank[idx.clamp(min=0)], embeds)


VISION_TOKENS = {
    "middle": np.array([[1, 7, 7, 2, 3, 7, 4, 5], [7, 1, 2, 7, 7, 3, 4, 1]]),
    "start_and_end": np.array([[7, 7, 1, 2, 3, 4, 5, 7], [7, 1, 2, 3, 4, 5, 7, 7]]),
    "none": np.array([[1, 2, 3, 4, 5, 6, 8, 9], [1, 1, 1, 1, 2, 2, 2, 2]]),
    "single_batch": np.array([[7, 7, 7, 1, 2, 7]]),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("tok_dtype", [np.int64, np.int32])
@pytest.mark.parametrize("case", sorted(VISION_TOKENS))
def test_vision_gather_and_grad(case, tok_dtype, dtype):
    tokens = VISION_TOKENS[case].astype(tok_dtype)
    B, T = tokens.shape
    D = 5
    idx = rt.vision_bank_indices(tokens, IMG)
    ref_idx = bank_indices_ref(tokens)
    equal(idx, npy(ref_idx))
    N = int((tokens == IMG).sum())
    embeds = randn((B, T, D), dtype, 110)
    bank = randn((max(N, 1), D), dtype, 111)  # torch's formula needs a row
    te, tb = tt(embeds).requires_grad_(), tt(bank).requires_grad_()
    y = gather_ref(te, tb, ref_idx.long())
    close(rt.vision_gather(embeds, bank, idx), y)
    dy = randn((B, T, D), dtype, 112)
    ge, gb = torch.autograd.grad(y, (te, tb), tt(dy))
    de, db = rt.vision_gather_grad(dy, idx, max(N, 1))
    close(de, ge)
    close(db, gb)
    if N == 0:  # an empty bank is fine when no token is an image token
        close(rt.vision_gather(embeds, np.zeros((0, D), dtype), idx), embeds)
        de, db = rt.vision_gather_grad(dy, idx, 0)
        close(de, dy)
        assert db.shape == (0, D)


@pytest.mark.parametrize("dtype", FLOATS)
def test_vision_gather_grad_shared_and_unread_rows(dtype):
    # The merge of a vision model reads each bank row once, but the op sums
    # the gradients of every position that reads a row: row 3 is read by
    # three positions in different warps' windows of 32, row 0 twice, rows
    # 1 and 6 never; rows are wider than one pass of the summing loop.
    B, T, D, N = 2, 40, 260, 8
    idx = np.full((B, T), -1, np.int64)
    idx[0, [0, 5, 39]] = [3, 0, 2]
    idx[1, [1, 2, 20, 35, 39]] = [3, 0, 4, 3, 5]
    idx[1, 10] = 7
    dy = randn((B, T, D), dtype, 113)
    t = tt(dy)
    gb = torch.zeros(N, D, dtype=t.dtype).index_add_(0, tt(idx[idx >= 0]), t[tt(idx) >= 0])
    ge = torch.where(tt(idx)[..., None] >= 0, torch.zeros_like(t), t)
    de, db = rt.vision_gather_grad(dy, idx, N)
    close(de, ge)
    close(db, gb)
    assert not npy(db)[[1, 6]].any()


def test_vision_errors():
    tokens = VISION_TOKENS["middle"]
    idx = rt.vision_bank_indices(tokens, IMG)  # 6 image tokens
    embeds, bank = np.zeros((2, 8, 4)), np.zeros((5, 4))
    with pytest.raises(ValueError, match=r"vision bank index 5 at position 12 is out of range for a bank of 5 rows"):
        rt.vision_gather(embeds, bank, idx)
    with pytest.raises(ValueError, match="out of range for a bank of 3 rows"):
        rt.vision_gather_grad(embeds, idx, 3)
    with pytest.raises(ValueError, match="width"):
        rt.vision_gather(embeds, np.zeros((6, 3)), idx)
    with pytest.raises(ValueError, match="indices of shape"):
        rt.vision_gather(embeds, np.zeros((6, 4)), np.zeros((2, 7), np.int64))


# --------------------------------------------------------------------------
# Context parallelism


@pytest.mark.parametrize("cp", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64, np.bool_])
def test_cp_permute(cp, dtype):
    T = 2 * cp * 3
    x = (rng(120).standard_normal((2, T, 3)) * 10).astype(dtype)
    y = rt.cp_permute(x, 1, cp)
    equal(y, head_tail(x, 1, cp))
    equal(rt.cp_permute(y, 1, cp, rt.Balancer.HeadTail, True), x)
    # Rank r's contiguous share holds chunks r and 2cp-1-r of the original.
    pos = np.arange(T)
    share = npy(rt.cp_permute(pos, 0, cp)).reshape(cp, -1)
    C = T // (2 * cp)
    for r in range(cp):
        assert list(share[r]) == list(range(r * C, (r + 1) * C)) + list(range((2 * cp - 1 - r) * C, (2 * cp - r) * C))
    equal(rt.cp_permute(x, 1, cp, rt.Balancer.Contiguous), x)
    equal(rt.cp_permute(x, 1, cp, rt.Balancer.Contiguous, True), x)
    z = np.ascontiguousarray(np.moveaxis(x, 1, 2))  # along the last dim
    equal(rt.cp_permute(z, 2, cp), head_tail(z, 2, cp))


def test_cp_permute_errors():
    with pytest.raises(ValueError, match="not divisible by 4"):
        rt.cp_permute(np.zeros((2, 6)), 1, 2)
    with pytest.raises(ValueError, match="not divisible by 4"):
        rt.cp_permute(np.zeros((2, 6)), 1, 4, rt.Balancer.Contiguous)
    with pytest.raises(ValueError, match="cp >= 1"):
        rt.cp_permute(np.zeros((2, 6)), 1, 0)
