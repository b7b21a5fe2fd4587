# -*- Python -*-
# Lit configuration for the glimmer regression suite.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "GLIMMER"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.glimmer_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%glimmer_src_root", config.glimmer_src_root))
config.substitutions.append(("%glimmer_obj_root", config.glimmer_obj_root))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# `not`, `count` and `split-file` come from the LLVM tools directory.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.glimmer_tools_dir, append_path=True)

tool_dirs = [config.glimmer_tools_dir, config.llvm_tools_dir]
tools = ["glimmer-opt", "glimmer-datagen", "glimmer-run"]
if config.glimmer_torch_enabled:
    tools.extend(["glimmer-translate", "glimmer-train", "glimmer-gradcheck",
                  "glimmer-export-dump"])
    config.available_features.add("torch")
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The project's Python (the virtualenv with torch), for fixture generators.
config.substitutions.insert(0, ("%python", config.python_executable))

# The `glimmer` Python package in the build tree (build/python).
if config.glimmer_python_enabled:
    config.available_features.add("python")

# A GLIMMER_SANITIZE=address build (docs/Sanitizers.md).
if "address" in config.glimmer_sanitize:
    config.available_features.add("asan")

# Tests that hand files to another user (chown) need root.
if os.geteuid() == 0:
    config.available_features.add("root")

if config.glimmer_unittests_enabled:
    config.available_features.add("unittests")
