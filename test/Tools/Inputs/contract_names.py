"""Checks that each name of the compiler-runtime contract has one definition.

The attribute names (glimmer_contract/Attributes.h) and the element type
names (glimmer_contract/DType.h's table in contract/lib/DType.cpp) may be
spelled as string literals only where the contract defines them; everything
else uses the contract's constants (tests, which check the names' values,
are not read). Prints each other spelling and fails.

Usage: contract_names.py SOURCE_ROOT [--exclude PATH]...
"""

import os
import re
import sys

ATTRIBUTES = "contract/include/glimmer_contract/Attributes.h"
DTYPES = "contract/lib/DType.cpp"
DIRS = ["contract", "include", "lib", "tools", "runtime", "python_bindings",
        "fuzz"]
CPP = (".cpp", ".h", ".cu", ".cuh", ".inc", ".td")


def main():
    root = sys.argv[1]
    args = sys.argv[2:]
    excluded = {args[i + 1] for i, a in enumerate(args) if a == "--exclude"}

    def read(path):
        with open(os.path.join(root, path), encoding="utf-8") as f:
            return f.read()

    attrs = re.findall(r'= ("glimmer\.[a-z_.]+");', read(ATTRIBUTES))
    dtypes = sorted(set(re.findall(r'\{DType::\w+, ("\w+"), ("\w+"), \d+\}',
                                   read(DTYPES))))
    dtypes = sorted({n for pair in dtypes for n in pair})
    problems = []
    for name in attrs:
        if read(ATTRIBUTES).count(name) != 1:
            problems.append(f"{ATTRIBUTES}: {name} is defined more than once")
    for top in DIRS:
        for dirpath, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [d for d in dirs if d != "tests"]
            for file in sorted(files):
                path = os.path.relpath(os.path.join(dirpath, file), root)
                if path in excluded or not file.endswith(CPP + (".py",)):
                    continue
                text = read(path)
                if file.endswith(CPP):
                    # Comments may mention names.
                    text = re.sub(r"//[^\n]*", "", text)
                names = [n for n in attrs if path != ATTRIBUTES]
                if file.endswith(CPP) and path != DTYPES:
                    names += dtypes
                for name in names:
                    for m in re.finditer(re.escape(name), text):
                        line = text.count("\n", 0, m.start()) + 1
                        problems.append(f"{path}:{line}: {name}")
    for p in problems:
        print(p)
    print(f"{len(attrs)} attribute names, {len(dtypes)} element type names, "
          f"{len(problems)} other spellings")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
