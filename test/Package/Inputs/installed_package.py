"""Builds the wheel from a configured build directory, installs it into a
fresh virtualenv and trains a fixture with it, from Python and with
`glimmer train`, where nothing can come from the checkout; compares the
losses with the build tree's glimmer-train.

usage: installed_package.py SRC BUILD OUT MODEL DATA STEPS

Only torch's site-packages is shared with the project's virtualenv (a .pth
file; the wheel is installed with --no-deps). The installed runs have no
PYTHONPATH, run in OUT/work on copies of the fixture, and compile through
a wrapper around the C++ compiler that records its arguments. Checked:
the module and every shared object mapped (/proc/self/maps; LD_DEBUG=libs
for glimmer-train and the compiler), every file Python opened and every
include/library directory of the compiles lie in the virtualenv, torch's
site-packages or outside the checkout and its build; the losses are finite
and equal bit for bit across the three runs.
"""

import glob
import importlib.util
import json
import math
import os
import shutil
import stat
import subprocess
import sys

SRC, BUILD, OUT, MODEL, DATA = (os.path.realpath(p) for p in sys.argv[1:6])
STEPS = int(sys.argv[6])
VENV = os.path.join(OUT, "venv")
WORK = os.path.join(OUT, "work")
TORCH_SITE = os.path.dirname(os.path.dirname(
    os.path.realpath(importlib.util.find_spec("torch").origin)))
FLAGS = ["--optimizer=adamw", "--lr=2e-3", "--max-norm=1.0",
         f"--steps={STEPS}"]


def fail(message):
    sys.exit(f"FAIL: {message}")


def below(path, root):
    return path == root or path.startswith(root.rstrip("/") + "/")


def from_checkout(path):
    """Whether a path lies in the checkout or its build, other than this
    test's own directory and torch's site-packages."""
    path = os.path.realpath(path)
    return ((below(path, SRC) or below(path, BUILD)) and
            not below(path, OUT) and not below(path, TORCH_SITE))


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        fail(f"{' '.join(cmd)} exited {result.returncode}:\n"
             f"{result.stdout}{result.stderr}")
    return result.stdout


def build_and_install():
    # setuptools before 70.1 makes wheels with the `wheel` package.
    if not importlib.util.find_spec("wheel"):
        import setuptools
        version = tuple(int(p) for p in setuptools.__version__.split(".")[:2])
        if version < (70, 1):
            fail(f"pip wheel needs the `wheel` package with setuptools "
                 f"{setuptools.__version__} (requirements.txt; "
                 "scripts/setup.sh installs it)")
    env = dict(os.environ, GLIMMER_BUILD_DIR=BUILD, GLIMMER_WHEEL_NO_BUILD="1")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
         "--no-deps", "--no-index", "-w", os.path.join(OUT, "wheel"), SRC],
        env=env, cwd=OUT)
    wheels = glob.glob(os.path.join(OUT, "wheel", "glimmer-*.whl"))
    if len(wheels) != 1:
        fail(f"expected one wheel, found {wheels}")
    print("wheel:", os.path.basename(wheels[0]))
    run([sys.executable, "-m", "venv", "--without-pip", VENV])
    run([sys.executable, "-m", "pip", "--python",
         os.path.join(VENV, "bin", "python"), "install", "-q", "--no-deps",
         "--no-index", wheels[0]], cwd=OUT)
    site = run([os.path.join(VENV, "bin", "python"), "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
               env={"PATH": "/usr/bin:/bin"}, cwd=OUT).strip()
    with open(os.path.join(site, "torch-site.pth"), "w") as f:
        f.write(TORCH_SITE + "\n")


def clean_environment(name):
    """An environment without PYTHONPATH or paths into the checkout; the
    C++ compiler is a wrapper that logs its arguments to WORK/NAME.cxx-*."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and not from_checkout(p)]
    wrapper = os.path.join(WORK, "cxx")
    if not os.path.exists(wrapper):
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nprintf "%s\\n" "$@" > "$GLIMMER_TEST_CXX_LOG.$$"\n'
                    'exec c++ "$@"\n')
        os.chmod(wrapper, stat.S_IRWXU)
    os.makedirs(os.path.join(WORK, "ld"), exist_ok=True)
    return {"PATH": os.pathsep.join([os.path.join(VENV, "bin")] + path),
            "HOME": WORK, "LANG": "C.UTF-8",
            "GLIMMER_CACHE_DIR": os.path.join(WORK, "cache-" + name),
            "GLIMMER_CXX": wrapper,
            "GLIMMER_TEST_CXX_LOG": os.path.join(WORK, name + ".cxx"),
            "LD_DEBUG": "libs",
            "LD_DEBUG_OUTPUT": os.path.join(WORK, "ld", name)}


def read_losses(path):
    with open(path) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()]


def check_losses(runs):
    first_name, first = runs[0]
    for name, losses in runs:
        if len(losses) != STEPS or not all(math.isfinite(x) for x in losses):
            fail(f"{name}: expected {STEPS} finite losses, got {losses}")
        if losses != first:
            fail(f"{name} losses {losses} differ from {first_name}'s {first}")
    print(f"{', '.join(n for n, _ in runs)}: {STEPS} steps, equal finite "
          f"losses (first {first[0]!r}, last {first[-1]!r})")


def check_isolation(python_run):
    if not below(os.path.realpath(python_run["file"]), VENV):
        fail(f"imported glimmer from {python_run['file']}, not {VENV}")
    print("imported glimmer from the virtualenv")
    loaded = set(python_run["mapped"])
    for log in glob.glob(os.path.join(WORK, "ld", "*")):
        with open(log, errors="replace") as f:
            for line in f:
                if "calling init:" in line:
                    loaded.add(line.split("calling init:", 1)[1].strip())
    package_libs = [p for p in loaded if below(os.path.realpath(p), VENV)]
    if not any(p.endswith("/glimmer/lib/libglimmer_rt.so")
               for p in package_libs):
        fail(f"libglimmer_rt.so was not loaded from {VENV}: {sorted(loaded)}")
    bad = sorted(p for p in loaded | set(python_run["opened"])
                 if from_checkout(p))
    if bad:
        fail("files from the checkout were used:\n" + "\n".join(bad))
    print(f"{len(loaded)} files mapped, none from the checkout")
    compiles = glob.glob(os.path.join(WORK, "*.cxx.*"))
    if len(compiles) < 2:
        fail(f"expected a compile for each installed run, found {compiles}")
    for log in compiles:
        with open(log) as f:
            args = f.read().splitlines()
        dirs = [a[len(p):] for a in args for p in ("-I", "-L", "-Wl,-rpath,")
                if a.startswith(p)]
        if not dirs or not all(below(d, VENV) for d in dirs):
            fail(f"a program was compiled against {dirs}, not {VENV}")
    print(f"{len(compiles)} programs compiled against the package's headers "
          "and library")


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(WORK)
    build_and_install()
    for src in (MODEL, DATA, os.path.join(os.path.dirname(__file__),
                                          "run_installed.py")):
        shutil.copy(src, WORK)
    model, data = os.path.basename(MODEL), os.path.basename(DATA)

    python_run = json.loads(run(
        [os.path.join(VENV, "bin", "python"), "run_installed.py", model, data,
         str(STEPS)], env=clean_environment("python"), cwd=WORK))
    run(["glimmer", "train", model, f"--data={data}", "--quiet",
         "--metrics=cli.jsonl"] + FLAGS,
        env=clean_environment("cli"), cwd=WORK)
    tree = os.path.join(OUT, "tree.jsonl")
    run([os.path.join(BUILD, "bin", "glimmer-train"), MODEL, f"--data={DATA}",
         "--quiet", f"--metrics={tree}",
         f"--cache-dir={os.path.join(OUT, 'cache-tree')}"] + FLAGS)
    check_losses([("glimmer.compile", python_run["losses"]),
                  ("glimmer train", read_losses(os.path.join(WORK,
                                                             "cli.jsonl"))),
                  ("the build tree's glimmer-train", read_losses(tree))])
    check_isolation(python_run)


if __name__ == "__main__":
    main()
