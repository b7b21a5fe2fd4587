"""Lists the C++/CUDA functions of the given source folders longer than a
limit, by Universal Ctags' function extents (lambdas count toward the
function that holds them).

Usage: function_lengths.py ROOT LIMIT DIR...
Prints `LINES NAME FILE:LINE` per function over LIMIT, then a count.
"""

import subprocess
import sys


def main():
    root, limit, dirs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    out = subprocess.run(
        ["ctags", "-R", "--fields=+ne", "--c++-kinds=f",
         "--languages=C++,CUDA", "--langmap=C++:+.cu.cuh.inc", "-x",
         "--_xformat=%{end} %{line} %N %F"] + dirs,
        cwd=root, capture_output=True, text=True, check=True).stdout
    long, seen = [], 0
    for row in out.splitlines():
        fields = row.split(" ", 3)
        if len(fields) < 4 or not fields[0].isdigit():
            continue
        seen += 1
        end, start, name, path = int(fields[0]), int(fields[1]), fields[2], fields[3]
        if end - start + 1 > limit:
            long.append((end - start + 1, name, f"{path}:{start}"))
    for lines, name, where in sorted(long, reverse=True):
        print(lines, name, where)
    print(f"{seen} functions read, {len(long)} longer than {limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
