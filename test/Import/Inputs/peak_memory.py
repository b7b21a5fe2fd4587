#!/usr/bin/env python3
"""Runs a command and fails when its peak resident memory exceeds a limit.

    python peak_memory.py LIMIT_MB COMMAND [ARG ...]

The command's stdout and stderr pass through; the exit code is the
command's, or 1 with a message on stderr when its peak resident set size
(getrusage's ru_maxrss of the child) was above LIMIT_MB megabytes.
"""

import resource
import shutil
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    limit_mb = int(sys.argv[1])
    command = sys.argv[2:]
    command[0] = shutil.which(command[0]) or command[0]
    code = subprocess.run(command).returncode
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
    if peak_mb > limit_mb:
        print(f"peak resident memory {peak_mb} MB is above the limit of "
              f"{limit_mb} MB", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
