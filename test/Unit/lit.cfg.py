# -*- Python -*-
# Runs the GoogleTest binaries (compiler unit tests and runtime tests) as part
# of check-glimmer, one lit test per GoogleTest case.

import os

import lit.formats

config.name = "GLIMMER-Unit"
config.suffixes = []
config.test_exec_root = os.path.join(config.glimmer_obj_root, "unittests")
config.test_source_root = config.test_exec_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
