"""`pip install .`: builds the `glimmer` Python module with the project's
CMake build and installs it.

The extension modules are built by the existing CMake/Ninja build in build/
($GLIMMER_BUILD_DIR), configured here as scripts/setup.sh does when it is not
configured yet (that needs what setup.sh installs: LLVM/MLIR 22, ninja,
pybind11, and torch in the Python running pip, for LibTorch). Then
`glimmer-python` (the modules' target) is built and the modules are copied
into the wheel with python_bindings/glimmer/*.py.

The installed package is not relocatable: the compiler compiles generated
programs against runtime/include in this checkout and links them with
build/lib/libglimmer_rt.so, and the modules load that library and LibTorch
(from the torch package of the Python that configured the build) by absolute
path. Keep the checkout, build/ and that environment in place. See README.md,
"Python".
"""

import importlib.machinery
import os
import shutil
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
        subprocess.check_call(
            ["cmake", "--build", str(BUILD), "--target", "glimmer-python"],
            env=env)
        built = BUILD / "python" / "glimmer"
        suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
        modules = sorted(built.glob("_*" + suffix))
        if not modules:
            sys.exit(f"no extension modules ending in {suffix} in {built}: "
                     f"{BUILD} is configured for {configured_python()}, not "
                     f"{sys.executable}")
        dest = Path(self.build_lib) / "glimmer"
        dest.mkdir(parents=True, exist_ok=True)
        for module in modules:
            shutil.copy2(module, dest / module.name)


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
