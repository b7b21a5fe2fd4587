"""Checks that the runtime build compiles no source of the compiler's tree.

Reads the build's compile_commands.json; every object built under the
runtime's build folder (`-o runtime/...`) must come from runtime/ or from
the contract library (contract/), which compiler and runtime share.

Usage: runtime_sources.py COMPILE_COMMANDS.json SOURCE_ROOT
"""

import json
import os
import re
import sys


def main():
    commands = json.load(open(sys.argv[1]))
    root = os.path.realpath(sys.argv[2])
    allowed = [os.path.join(root, d) + os.sep for d in ("runtime", "contract")]
    runtime = [c for c in commands if re.search(r" -o runtime/", c["command"])]
    bad = [c["file"] for c in runtime
           if not any(os.path.realpath(c["file"]).startswith(a) for a in allowed)]
    for f in bad:
        print("runtime compiles", os.path.relpath(f, root))
    print(f"{len(runtime)} runtime objects, {len(bad)} from outside "
          "runtime/ and contract/")
    return 1 if bad or not runtime else 0


if __name__ == "__main__":
    sys.exit(main())
