# -*- Python -*-
# GPU integration tests: the runtime's CUDA backend and NCCL communicators,
# and compiled programs trained on GPUs. Run on a GPU machine, which needs
# only the runtime (no LLVM): see integration_test/README.md.
#
#   lit -v integration_test -Druntime_build=DIR -Dprograms=DIR
#
# runtime_build: a standalone runtime build with GLIMMER_ENABLE_CUDA=ON and
# GLIMMER_RT_PYTHON=ON; programs: what make-programs.sh generated on the
# build machine.

import os
import subprocess
import sys

import lit.formats

config.name = "GLIMMER-GPU"
# The internal shell: it provides `not` (no LLVM tools on the GPU hosts).
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test"]
config.excludes = ["Inputs", "lit.cfg.py", "README.md"]
config.test_source_root = os.path.dirname(__file__)
src = os.path.dirname(config.test_source_root)

runtime_build = lit_config.params.get("runtime_build")
programs = lit_config.params.get("programs", os.path.join(src, ".gpu", "programs"))
if not runtime_build:
    lit_config.fatal("pass -Druntime_build=DIR (a runtime build with CUDA)")
config.test_exec_root = os.path.join(runtime_build, "integration_test")

gpus = 0
try:
    out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    gpus = sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
except OSError:
    pass
if gpus >= 1:
    config.available_features.add("cuda")
# The runtime was built with cuDNN attention (it builds this test then).
if os.path.exists(os.path.join(runtime_build, "glimmer-cudnn-attention-test")):
    config.available_features.add("cudnn")
if gpus >= 2:
    config.available_features.add("multi-gpu")
if gpus >= 4:
    config.available_features.add("four-gpus")

config.substitutions.append(("%rt", runtime_build))
config.substitutions.append(("%programs", programs))
config.substitutions.append(("%src", src))
config.substitutions.append(("%python", sys.executable))
config.environment["PATH"] = os.pathsep.join(
    [runtime_build, os.environ.get("PATH", "")])
# NVLink multicast stays off on the shared GPU hosts.
config.environment["NCCL_NVLS_ENABLE"] = "0"
for var in ["HOME", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "TMPDIR"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
