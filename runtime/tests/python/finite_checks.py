"""The kernel and compile tests' tolerance comparisons refuse NaN and inf.

np.testing.assert_allclose treats NaN == NaN (equal_nan=True) and inf == inf,
so a kernel that returns NaN where its reference is also NaN (say both
overflow on a bad input) would pass. Tolerance checks call `assert_finite`
first; tests of deliberate NaN/inf results compare exactly (`equal`) or
mask the non-finite positions after checking they agree.
"""

import numpy as np


def assert_finite(*arrays, what="compared values"):
    for i, a in enumerate(arrays):
        a = np.asarray(a)
        if a.dtype.kind in "fc" and not np.all(np.isfinite(a)):
            bad = np.argwhere(~np.isfinite(a))[:3].tolist()
            raise AssertionError(
                f"{what}: operand {i} holds NaN or inf (at {bad}); a "
                "tolerance comparison never passes non-finite values")


def assert_allclose_finite(actual, expected, **tol):
    """np.testing.assert_allclose on finite values only."""
    assert_finite(actual, expected)
    np.testing.assert_allclose(actual, expected, equal_nan=False, **tol)
