"""f32 attention and its gradient against PyTorch in f64, on the device that
GLIMMER_TEST_DEVICE names (cpu by default; integration_test/kernels.test runs
it with cuda):

    GLIMMER_TEST_DEVICE=cuda PYTHONPATH=build/python .venv/bin/python -m \
        pytest -q -p no:cacheprovider runtime/tests/python/test_attention_f32.py

On the GPU, head dimensions whose rows are whole 16-byte chunks (multiples
of 4) up to 128 take the tensor-core kernels, which compute f32 products as
3xTF32 (runtime/cuda/Attention.cu); 10 and 192 take the SIMT kernels. The
inputs are full f32 values (not bf16-representable ones), so the operands'
small TF32 halves are non-zero and every one of the three products counts.

Tolerances: ||a - e|| <= 1e-5 ||e|| over the tensor, and every row (along
the head dimension) within 3e-5 of (its norm + the RMS row norm), so that a
wrong tail tile cannot hide in the global norm. f32 arithmetic with f32
accumulation over these lengths stays near 1e-6; plain TF32 operands
(10-bit mantissas) put the output 3e-4 off (relative norm, measured in f64
on these cases) and fail both.
"""

import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from glimmer import _runtime as rt  # noqa: E402
from finite_checks import assert_finite  # noqa: E402
from attention_cases import ATTN_CASES, attn_inputs, attn_ref, check_blocks_window_roundtrip, rng, tt  # noqa: E402

DEVICE = os.environ.get("GLIMMER_TEST_DEVICE", "cpu")
if DEVICE.startswith("cuda") and rt.cuda_device_count() == 0:
    pytest.skip(f"GLIMMER_TEST_DEVICE={DEVICE} but no CUDA device is visible",
                allow_module_level=True)

NORM_TOL, ROW_TOL = 1e-5, 3e-5
# 36 (zero-padded to 64), 64, 96 (zero-padded to 128) and 128: tensor cores;
# 10 (not a multiple of 4) and 192 (above 128): SIMT.
HEAD_DIMS = [10, 36, 64, 96, 128, 192]


def randf(shape, seed):
    return rng(seed).standard_normal(shape).astype(np.float32)


def dev(a):
    return rt.Tensor(np.array(a, order="C")).to(DEVICE)


def host(t):
    return t.to("cpu").numpy()


def wide(a):
    return tt(np.asarray(a, dtype=np.float64))


def close_f32(actual, expected):
    assert actual.dtype == rt.DType.F32, actual.describe()
    a, e = host(actual).astype(np.float64), expected.detach().numpy()
    assert a.shape == e.shape, (a.shape, e.shape)
    assert_finite(a, e)
    err, ref = np.linalg.norm(a - e), np.linalg.norm(e)
    assert err <= NORM_TOL * ref, f"||a - e|| / ||e|| = {err / max(ref, 1e-300):.3g}"
    cols = a.shape[-1]
    d = np.linalg.norm((a - e).reshape(-1, cols), axis=1)
    n = np.linalg.norm(e.reshape(-1, cols), axis=1)
    bound = ROW_TOL * (n + np.sqrt(np.mean(n * n)))
    bad = np.flatnonzero(d > bound)
    assert bad.size == 0, (f"{bad.size} rows off, e.g. row {bad[0]}: |a - e| = "
                           f"{d[bad[0]]:.3g}, |e| = {n[bad[0]]:.3g}")


def devkw(kw):
    return {n: (dev(a) if isinstance(a, np.ndarray) else a) for n, a in kw.items()}


@pytest.mark.parametrize("D", HEAD_DIMS)
@pytest.mark.parametrize("case", sorted(ATTN_CASES))
def test_attention_f32(case, D):
    q, k, v, kw, mask = attn_inputs(case, D, randf)
    scale = D ** -0.5
    out, lse = rt.attention(dev(q), dev(k), dev(v), scale=scale, **devkw(kw))
    ref_out, ref_lse = attn_ref(wide(q), wide(k), wide(v), mask, scale)
    close_f32(out, ref_out)
    got, ref = host(lse), ref_lse.numpy()
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(got[fin], ref[fin], rtol=1e-5, atol=1e-5)
    assert np.all(host(out)[np.isneginf(ref)] == 0)  # queries without a visible key


@pytest.mark.parametrize("D", HEAD_DIMS)
@pytest.mark.parametrize("case", sorted(ATTN_CASES))
def test_attention_grad_f32(case, D):
    q, k, v, kw, mask = attn_inputs(case, D, randf)
    scale = 0.7 * D ** -0.5
    dout = randf(q.shape, 300 + D)
    tq, tk, tv = (wide(a).requires_grad_() for a in (q, k, v))
    ref_out, ref_lse = attn_ref(tq, tk, tv, mask, scale)
    gq, gk, gv = torch.autograd.grad(ref_out, (tq, tk, tv), wide(dout))
    dq_, dk_, dv_, dkw = dev(q), dev(k), dev(v), devkw(kw)
    out, lse = rt.attention(dq_, dk_, dv_, scale=scale, **dkw)  # the kernel's own out, lse
    dq, dk, dv = rt.attention_grad(dev(dout), dq_, dk_, dv_, out, lse, scale=scale, **dkw)
    close_f32(dq, gq)
    close_f32(dk, gk)
    close_f32(dv, gv)
    assert np.all(host(dq)[np.isneginf(ref_lse.detach().numpy())] == 0)


@pytest.mark.parametrize("D", [10, 64, 128])
@pytest.mark.parametrize("cp", [2, 4])
def test_attention_blocks_window_cp_roundtrip_f32(cp, D):
    # Blocks and a window under the CP permutation (attention_cases), in f32
    # against f64.
    check_blocks_window_roundtrip(rt, cp, D, randf, dev, devkw, wide, close_f32)
