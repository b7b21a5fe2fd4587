"""`pip install .` / `pip wheel .`: the `glimmer` package, self-contained.

The compiled parts come from the project's CMake build in build/
($GLIMMER_BUILD_DIR): configured here as scripts/setup.sh does when it is
not configured yet (that needs what setup.sh installs: LLVM/MLIR 22, ninja,
pybind11, and torch in the Python running pip, for LibTorch), built
(target glimmer-package), and installed into the wheel's glimmer/ with
`cmake --install --component glimmer-package`: the extension modules,
libglimmer_rt/libglimmer_contract (lib/), glimmer-train and glimmer-run
(bin/, run by the `glimmer` command) and the runtime headers generated
programs are compiled against (include/), all found relative to each other
($ORIGIN RUNPATHs). LibTorch is the installed torch package's; LLVM 22 and
CUDA (when the build has the CUDA backend) are the system's.

GLIMMER_WHEEL_NO_BUILD=1 packages the build directory as it is, without
running the build (it must have built the `glimmer-package` target): for
tests that run inside a build of that directory.
"""

import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("GLIMMER_BUILD_DIR", ROOT / "build")).resolve()
# setuptools' own scratch space, kept out of the CMake tree's build/lib.
SCRATCH = BUILD / "setuptools"


def cmake_env():
    """The environment without pip's build isolation: CMake asks the
    configured Python for the torch package (LibTorch)."""
    env = dict(os.environ)
    for key in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME",
                "PYTHONSAFEPATH"):
        env.pop(key, None)
    return env


def configured_python():
    cache = BUILD / "CMakeCache.txt"
    for line in cache.read_text().splitlines():
        if line.startswith("Python3_EXECUTABLE:"):
            return line.split("=", 1)[1]
    return None


class BuildWithCMake(build_py):
    def run(self):
        super().run()
        env = cmake_env()
        if not (BUILD / "CMakeCache.txt").exists():
            subprocess.check_call(
                ["cmake", "-G", "Ninja", "-S", str(ROOT), "-B", str(BUILD),
                 "-DCMAKE_BUILD_TYPE=Release",
                 "-DCMAKE_C_COMPILER=gcc", "-DCMAKE_CXX_COMPILER=g++",
                 "-DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir",
                 "-DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit",
                 f"-DPython3_EXECUTABLE={sys.executable}"], env=env)
        if not os.environ.get("GLIMMER_WHEEL_NO_BUILD"):
            subprocess.check_call(
                ["cmake", "--build", str(BUILD), "--target",
                 "glimmer-package"], env=env)
        suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
        if not list((BUILD / "python" / "glimmer").glob("_*" + suffix)):
            sys.exit(f"no extension modules ending in {suffix} in "
                     f"{BUILD / 'python' / 'glimmer'}: {BUILD} is configured "
                     f"for {configured_python()}, not {sys.executable}")
        package = Path(self.build_lib).resolve() / "glimmer"
        subprocess.check_call(
            ["cmake", "--install", str(BUILD), "--component",
             "glimmer-package", "--prefix", str(package)], env=env)


class BinaryDistribution(Distribution):
    """The wheel holds extension modules (a platform wheel)."""

    def has_ext_modules(self):
        return True


SCRATCH.mkdir(parents=True, exist_ok=True)
setup(
    packages=["glimmer"],
    package_dir={"glimmer": "python_bindings/glimmer"},
    cmdclass={"build_py": BuildWithCMake},
    distclass=BinaryDistribution,
    options={"build": {"build_base": str(SCRATCH)},
             "egg_info": {"egg_base": str(SCRATCH)}},
    zip_safe=False,
)
