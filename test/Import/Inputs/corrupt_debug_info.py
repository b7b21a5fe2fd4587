"""Writes a copy of a TorchScript archive whose debug info is corrupt.

Usage: corrupt_debug_info.py IN.pt OUT.pt

Every `*.debug_pkl` record (the map from the serialized code back to the
Python source, which LibTorch unpickles lazily, on the first source-range
lookup) is replaced by a well-formed pickle of the wrong shape: a list of
strings where LibTorch expects tuples of source ranges. The code and the
weights are untouched, so the archive still loads.
"""

import pickle
import sys
import zipfile


def main(src, dst):
    bad = pickle.dumps(["not", "a", "source", "range"], protocol=2)
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename.endswith(".debug_pkl"):
                data = bad
            zout.writestr(info, data)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
