"""Checks that every relative Markdown link in the repository's documents
names a file inside the repository that exists.

Usage: check_links.py REPO_ROOT
Prints one line per broken link and exits 1 if there is any.
"""

import pathlib
import re
import subprocess
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    # In a checkout, the tracked documents (not those of build trees or
    # virtualenvs inside it); elsewhere every document below the root.
    top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                         capture_output=True, text=True)
    if top.returncode == 0 and pathlib.Path(top.stdout.strip()).resolve() == root:
        tracked = subprocess.run(["git", "-C", str(root), "ls-files", "*.md"],
                                 capture_output=True, text=True, check=True)
        docs = [root / p for p in tracked.stdout.split()]
    else:
        docs = sorted(root.rglob("*.md"))
    broken, checked = [], 0
    for doc in docs:
        if not doc.is_file():
            continue
        for lineno, line in enumerate(doc.read_text().splitlines(), 1):
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                checked += 1
                path = (doc.parent / target.split("#")[0]).resolve()
                where = f"{doc.relative_to(root)}:{lineno}"
                if root not in path.parents and path != root:
                    broken.append(f"{where}: '{target}' is outside the repository")
                elif not path.exists():
                    broken.append(f"{where}: '{target}' does not exist")
    for b in broken:
        print(b)
    print(f"{checked} links checked, {len(broken)} broken")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
