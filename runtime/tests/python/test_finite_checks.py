"""The tolerance helpers of the kernel and compile tests fail on NaN and inf
in either operand (np.testing.assert_allclose alone passes NaN == NaN)."""

import numpy as np
import pytest

from finite_checks import assert_allclose_finite, assert_finite


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("side", ["actual", "expected", "both"])
def test_non_finite_fails(bad, side):
    good = np.array([1.0, 2.0, 3.0])
    poisoned = good.copy()
    poisoned[1] = bad
    a = poisoned if side in ("actual", "both") else good
    e = poisoned if side in ("expected", "both") else good
    with pytest.raises(AssertionError, match="NaN or inf"):
        assert_allclose_finite(a, e, rtol=1e-3)


def test_plain_assert_allclose_would_pass_nan():
    # Why the helper exists: numpy's check treats NaN == NaN.
    x = np.array([np.nan, 1.0])
    np.testing.assert_allclose(x, x)
    with pytest.raises(AssertionError):
        assert_finite(x)


def test_finite_values_compare_with_tolerance():
    assert_allclose_finite(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]),
                           rtol=1e-6)
    with pytest.raises(AssertionError):
        assert_allclose_finite(np.array([1.0]), np.array([1.1]), rtol=1e-6)
    # Integer tensors have no NaN.
    assert_finite(np.array([1, 2, 3]))
