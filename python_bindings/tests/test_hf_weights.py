"""glimmer.compile(weights=...) and Program.export_weights(): Hugging Face
checkpoints in and out, as glimmer-train --weights and --export-weights."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import glimmer  # noqa: E402
_driver = pytest.importorskip("glimmer._driver")

pytestmark = pytest.mark.filterwarnings(
    r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning")

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "examples" / "fixtures"
MODEL = FIX / "hf_llava.pt"
BATCH = FIX / "hf_llava.batch.safetensors"
PRETRAINED = FIX / "hf_llava.pretrained"
CACHE = _driver.default_cache_dir()
STEP = re.compile(r"^step (\d+) \| loss (\S+) \| grad_norm (\S+) \|", re.M)


def _glimmer_train():
    for c in (os.environ.get("GLIMMER_TRAIN"),
              Path(glimmer.__file__).resolve().parents[2] / "bin" / "glimmer-train",
              ROOT / "build" / "bin" / "glimmer-train"):
        if c and Path(c).is_file():
            return str(c)
    pytest.skip("glimmer-train is not built")


def compile_llava(weights):
    with glimmer.SpmdContext():
        return glimmer.compile(str(MODEL), str(BATCH), weights=weights)


def test_weights_bind_like_glimmer_train():
    program = compile_llava(PRETRAINED)
    results = program.train(str(BATCH), steps=2)
    out = subprocess.run(
        [_glimmer_train(), str(MODEL), f"--data={BATCH}", "--quiet",
         f"--cache-dir={CACHE}", "--steps=2", f"--weights={PRETRAINED}"],
        check=True, capture_output=True, text=True).stdout
    expected = [float(loss) for _, loss, _ in STEP.findall(out)]
    assert len(expected) == 2
    assert [r["loss"] for r in results] == expected


def test_export_weights_holds_the_trained_parameters(tmp_path):
    program = compile_llava(PRETRAINED)
    program.train(str(BATCH), steps=1)
    program.export_weights(tmp_path / "export", max_shard_size="80KB")
    index = json.loads((tmp_path / "export" / "model.safetensors.index.json").read_text())
    reference = json.loads((PRETRAINED / "model.safetensors.index.json").read_text())
    assert set(index["weight_map"]) == set(reference["weight_map"])
    assert index["metadata"]["total_size"] == reference["metadata"]["total_size"]
    from safetensors.numpy import load_file
    exported = {}
    for shard in sorted(set(index["weight_map"].values())):
        exported.update(load_file(str(tmp_path / "export" / shard)))
    assert len(set(index["weight_map"].values())) == 3
    params = program.parameters()
    assert set(exported) == set(params)
    for name, value in params.items():
        np.testing.assert_array_equal(exported[name], value)


def test_weights_that_do_not_fit_raise_one_error(tmp_path):
    from safetensors.torch import load_file, save_file
    state = load_file(str(FIX / "hf_llava.weights.safetensors"))
    state.pop("lm_head.weight")
    state["extra.bias"] = torch.zeros(2)
    save_file(state, str(tmp_path / "w.safetensors"))
    with pytest.raises(RuntimeError, match=r"(?s)1 missing:.*lm_head\.weight.*"
                       r"1 unexpected:.*extra\.bias"):
        compile_llava(tmp_path / "w.safetensors").train(str(BATCH), steps=1)


def _export(tmp_path, *flags):
    subprocess.run([sys.executable, str(FIX / "export.py"), *flags, str(tmp_path),
                    "reference_vlm"], check=True, capture_output=True)


def test_meta_device_export_trains_with_bound_weights(tmp_path):
    # A weightless archive (exported on the meta device) compiles; its
    # weights come from weights=, and it trains as the archive that holds
    # the same weights.
    _export(tmp_path, "--meta")
    _export(tmp_path)
    batch = FIX / "reference_vlm.batch.safetensors"
    with glimmer.SpmdContext():
        meta = glimmer.compile(str(tmp_path / "reference_vlm.meta.pt2"), str(batch),
                               weights=FIX / "reference_vlm.weights.safetensors")
        real = glimmer.compile(str(tmp_path / "reference_vlm.pt2"), str(batch))
    got = [r["loss"] for r in meta.train(str(batch), steps=2)]
    want = [r["loss"] for r in real.train(str(batch), steps=2)]
    assert all(np.isfinite(got)) and got == want
