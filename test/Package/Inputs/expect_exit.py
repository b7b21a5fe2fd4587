"""expect_exit.py N COMMAND...: runs COMMAND (its output passes through)
and succeeds only when it exits with status N."""

import subprocess
import sys

code = subprocess.call(sys.argv[2:])
if code != int(sys.argv[1]):
    sys.exit(f"expected exit status {sys.argv[1]}, got {code}")
