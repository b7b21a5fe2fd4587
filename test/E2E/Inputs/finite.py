"""One definition of "how far apart" for the parity oracles.

A NaN makes every comparison false, so `max(worst, abs(a - b) / abs(b))`
silently skips it and a NaN loss would compare as a perfect match; an inf
on both sides gives inf - inf = NaN, the same. Every compare script takes
its differences from `rel_diff`, which refuses non-finite values in either
side before any arithmetic.
"""

import math
import sys


def require_finite(value, what):
    """Exits with a message when `value` is NaN or infinite."""
    if not math.isfinite(value):
        sys.exit(f"NON-FINITE: {what} is {value!r}; a parity check never "
                 "passes NaN or inf")
    return value


def rel_diff(ours, theirs, what):
    """|ours - theirs| / |theirs| (the absolute difference when theirs is
    0), after checking both are finite."""
    require_finite(ours, f"glimmer's {what}")
    require_finite(theirs, f"the oracle's {what}")
    diff = abs(ours - theirs)
    return diff / abs(theirs) if theirs != 0 else diff
