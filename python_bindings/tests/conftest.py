"""The finiteness checks shared with the runtime's kernel tests
(runtime/tests/python/finite_checks.py) are importable here too."""

import pathlib
import sys

sys.path.insert(
    0, str(pathlib.Path(__file__).resolve().parents[2] / "runtime" / "tests" / "python"))
