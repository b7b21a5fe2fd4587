"""glimmer.compile() and glimmer.Program: compile a TorchScript model and
train it in-process, on the code paths glimmer-train runs.

Compiled programs are cached by content in the default cache directory
(the per-user cache: $GLIMMER_CACHE_DIR, else ~/.cache/glimmer), shared with the glimmer-train
runs below, so only a cold cache pays for the C++ compiles.
"""

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import glimmer  # noqa: E402
from finite_checks import assert_allclose_finite, assert_finite  # noqa: E402,F401
_driver = pytest.importorskip("glimmer._driver")

# torch 2.11 deprecates TorchScript, the importer's input format.
pytestmark = pytest.mark.filterwarnings(
    r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning")

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "examples" / "fixtures" / "reference_vlm.pt"
BATCH = ROOT / "examples" / "fixtures" / "reference_vlm.batch.safetensors"
CACHE = _driver.default_cache_dir()


def _glimmer_train():
    candidates = [os.environ.get("GLIMMER_TRAIN"),
                  Path(glimmer.__file__).resolve().parents[2] / "bin" /
                  "glimmer-train",
                  ROOT / "build" / "bin" / "glimmer-train"]
    for c in candidates:
        if c and Path(c).is_file():
            return str(c)
    pytest.skip("glimmer-train is not built")


STEP = re.compile(r"^step (\d+) \| loss (\S+) \| grad_norm (\S+) \|", re.M)


def glimmer_train(*args):
    """(step, loss, grad_norm) of each step line of a glimmer-train run."""
    out = subprocess.run(
        [_glimmer_train(), str(MODEL), f"--data={BATCH}", "--quiet",
         f"--cache-dir={CACHE}", *args],
        check=True, capture_output=True, text=True).stdout
    return [(int(s), float(l), float(g)) for s, l, g in STEP.findall(out)]


def steps(results):
    return [(r["step"], r["loss"], r["grad_norm"]) for r in results]


def compile_reference(**options):
    with glimmer.SpmdContext():
        return glimmer.compile(MODEL, BATCH, **options)


def batch_dict(as_torch):
    """The fixture batch as name -> tensor, through a file-independent
    path (the module's own safetensors reader)."""
    tensors, _ = glimmer._read_safetensors(BATCH)
    if as_torch:
        return {k: torch.from_numpy(v.copy()) for k, v in tensors.items()}
    return {k: v.copy() for k, v in tensors.items()}


# --- parity with glimmer-train ----------------------------------------------

CUSTOM = dict(lr=2e-3, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1,
              max_norm=0.5)
CUSTOM_FLAGS = ["--lr=2e-3", "--betas=0.8,0.95", "--eps=1e-6",
                "--weight-decay=0.1", "--max-norm=0.5"]


@pytest.fixture(scope="module")
def reference_steps():
    """glimmer-train's 5 AdamW steps with its default options."""
    return glimmer_train("--steps=5", "--optimizer=adamw")


def test_five_steps_equal_glimmer_train(reference_steps):
    program = compile_reference()
    results = program.train(BATCH, steps=5, optimizer="adamw")
    assert len(reference_steps) == 5
    assert steps(results) == reference_steps
    assert program.steps_done == 5


def test_options_and_grad_accum_equal_glimmer_train():
    theirs = glimmer_train("--steps=3", "--optimizer=adamw", "--grad-accum=2",
                           *CUSTOM_FLAGS)
    program = compile_reference()
    ours = program.train(str(BATCH), steps=3, optimizer="adamw",
                         grad_accum=2, **CUSTOM)
    assert len(theirs) == 3 and steps(ours) == theirs


def test_grad_accum_cuts_the_batch_and_keeps_the_step():
    # f64 so that the micro-batches' summed gradients agree with the whole
    # batch's to rounding; the batch of 2 runs as two micro-batches of one.
    whole = compile_reference(dtype="f64").train(BATCH, steps=3)
    program = compile_reference(dtype="f64")
    pieces = program.train(BATCH, steps=3, grad_accum=2)
    for a, b in zip(whole, pieces):
        assert_allclose_finite(b["loss"], a["loss"], rtol=1e-12)
        assert_allclose_finite(b["grad_norm"], a["grad_norm"], rtol=1e-12)
    # The step is compiled for one sample and takes the micro-batch.
    assert "{glimmer.microbatch}" in program.mlir
    assert "tensor<1x" in program.mlir
    # Changing grad_accum recompiles and carries the trained state over:
    # three more steps on one micro-batch continue where they left off.
    more = program.train(BATCH, steps=3, grad_accum=1)
    fresh = compile_reference(dtype="f64").train(BATCH, steps=6)
    for a, b in zip(fresh[3:], more):
        assert_allclose_finite(b["loss"], a["loss"], rtol=1e-12)
    with glimmer.SpmdContext(microbatches=2):
        layered = glimmer.compile(MODEL, BATCH, dtype="f64")
        with pytest.raises(ValueError, match="grad_accum=4 disagrees with "
                                             "microbatches=2"):
            layered.train(BATCH, steps=1, grad_accum=4)


def test_training_continues_across_calls_and_checkpoints(reference_steps,
                                                         tmp_path):
    program = compile_reference()
    first = program.train(BATCH, steps=3)
    ckpt = tmp_path / "step3.safetensors"
    program.save(ckpt)
    assert steps(first + program.train(BATCH, steps=2)) == reference_steps

    # A fresh program resumed from the checkpoint takes steps 4 and 5 ...
    resumed = compile_reference()
    resumed.resume(ckpt)
    assert resumed.steps_done == 3
    assert steps(resumed.train(BATCH, steps=2)) == reference_steps[3:]
    # ... and so does glimmer-train.
    assert glimmer_train("--steps=2", f"--resume={ckpt}") == \
        reference_steps[3:]


def test_new_hyperparameters_keep_the_parameters():
    program = compile_reference()
    program.train(BATCH, steps=2)
    before = program.parameters()
    later = program.train(BATCH, steps=1, **CUSTOM)  # recompiles
    assert [r["step"] for r in later] == [3]
    assert program.config["lr"] == CUSTOM["lr"]
    # The new program started from the trained parameters: its first loss
    # is the loss of the trained model.
    fresh = compile_reference()
    fresh.train(BATCH, steps=2)
    assert later[0]["loss"] == pytest.approx(fresh.forward(BATCH), rel=1e-6)
    assert any(not np.array_equal(before[k], v)
               for k, v in program.parameters().items())


def test_programs_train_in_parallel_threads(reference_steps):
    # Compiling and training release the GIL; each program has its state.
    results = [None] * 3

    def run(i):
        results[i] = steps(compile_reference().train(BATCH, steps=5))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [reference_steps] * 3


# --- inputs ------------------------------------------------------------------

def test_dict_inputs_and_script_module(reference_steps):
    module = torch.jit.load(str(MODEL))
    assert isinstance(module, torch.jit.ScriptModule)
    with glimmer.SpmdContext():
        program = glimmer.compile(module, batch_dict(as_torch=True))
    results = program.train(batch_dict(as_torch=False), steps=2)
    assert steps(results) == reference_steps[:2]


def test_lazy_compile_from_first_batch(reference_steps):
    with glimmer.SpmdContext():
        program = glimmer.compile(MODEL)
    with pytest.raises(RuntimeError, match="not compiled yet"):
        program.mlir
    assert steps(program.train(batch_dict(as_torch=True), steps=1)) == \
        reference_steps[:1]


def test_mlir_and_cpp():
    program = compile_reference()
    assert program.layout == str(glimmer.SpmdContext())
    assert "glimmer.vision_gather" in program.mlir
    assert "@apply_step" in program.mlir
    assert "glimmer_rt::" in program.cpp


def test_parameters_by_state_dict_key():
    module = torch.jit.load(str(MODEL))
    expected = dict(module.named_parameters())
    program = compile_reference()
    params = program.parameters()
    assert list(params) == list(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(params[name], value.detach().numpy())
    before = program.parameter("output.weight").copy()
    program.train(BATCH, steps=2)
    after = program.parameter("output.weight")
    assert after.shape == before.shape and after.dtype == np.float32
    assert not np.array_equal(before, after)
    with pytest.raises(KeyError, match="no parameter 'output.wieght'"):
        program.parameter("output.wieght")


# --- errors ------------------------------------------------------------------

def test_missing_model_file(tmp_path):
    missing = tmp_path / "missing.pt"
    with pytest.raises(glimmer.CompileError,
                       match=r"cannot open TorchScript file .*missing\.pt"):
        glimmer.compile(missing, BATCH)
    with pytest.raises(glimmer.CompileError, match="no such file"):
        glimmer.compile(missing)
    with pytest.raises(glimmer.CompileError,
                       match=r"cannot open torch.export archive .*missing\.pt2"):
        glimmer.compile(tmp_path / "missing.pt2")


def test_misnamed_example_input():
    inputs = batch_dict(as_torch=True)
    inputs["token_ids"] = inputs.pop("tokens")
    with pytest.raises(glimmer.CompileError,
                       match="example input 'token_ids' matches no argument "
                             r"of forward \(arguments: tokens"):
        glimmer.compile(MODEL, inputs)


def test_bad_optimizer_name():
    program = compile_reference()
    with pytest.raises(glimmer.CompileError,
                       match="unknown optimizer 'adam' "
                             r"\(expected adamw or sgd\)"):
        program.train(BATCH, steps=1, optimizer="adam")
    with pytest.raises(glimmer.CompileError, match="unknown optimizer"):
        compile_reference(optimizer="lamb")


def test_bad_dtype_name():
    with pytest.raises(glimmer.CompileError,
                       match="unsupported floating-point type 'f16' "
                             r"\(expected f32, f64, bf16 or bf16-autocast\)"):
        compile_reference(dtype="f16")


def assert_trains_alike(base, sharded, steps, rtol, params_atol=None):
    """`steps` steps of both programs: per-step loss and grad norm within
    `rtol` of the unsharded program's (a comparison with NaN fails), and,
    with `params_atol`, the gathered parameters within it."""
    a, b = base.train(BATCH, steps=steps), sharded.train(BATCH, steps=steps)
    assert len(a) == len(b) == steps
    for x, y in zip(a, b):
        assert abs(x["loss"] - y["loss"]) <= rtol * abs(x["loss"])
        assert abs(x["grad_norm"] - y["grad_norm"]) <= rtol * abs(x["grad_norm"])
    if params_atol is not None:
        pa, pb = base.parameters(), sharded.parameters()
        assert pa.keys() == pb.keys()
        for name in pa:
            assert_allclose_finite(pb[name], pa[name], rtol=0, atol=params_atol)


def test_layouts_train_like_the_unsharded_program():
    # FSDP x CP from Python: the layout of the enclosing SpmdContext, ranks
    # as threads; f64 steps equal to the unsharded program's.
    base = glimmer.compile(MODEL, BATCH, dtype="f64", max_norm=1.0)
    with glimmer.SpmdContext(dp_shard=2, cp=2):
        sharded = glimmer.compile(MODEL, BATCH, dtype="f64", max_norm=1.0)
    assert sharded.layout == "dp_shard=2,cp=2"
    assert_trains_alike(base, sharded, steps=3, rtol=1e-10, params_atol=1e-9)


def test_tensor_parallel_trains_like_the_unsharded_program():
    # tp=2 from Python: the default TP plan, ranks as threads; f64 steps and
    # the gathered parameters equal to the unsharded program's.
    base = glimmer.compile(MODEL, BATCH, dtype="f64", max_norm=1.0)
    with glimmer.SpmdContext(tp=2):
        sharded = glimmer.compile(MODEL, BATCH, dtype="f64", max_norm=1.0)
    assert sharded.layout == "tp=2"
    assert_trains_alike(base, sharded, steps=3, rtol=1e-12, params_atol=1e-9)


def test_tensor_parallel_plan_from_python():
    # A plan given as a dict: only the attention projections are split; the
    # numbers stay the unsharded program's. A pattern naming no weight is a
    # CompileError.
    plan = {"layers.*.attention.w[qkv].weight": "colwise",
            "layers.*.attention.wo.weight": "rowwise"}
    base = glimmer.compile(MODEL, BATCH, dtype="f64")
    with glimmer.SpmdContext(tp=2):
        sharded = glimmer.compile(MODEL, BATCH, dtype="f64", tp_plan=plan)
        with pytest.raises(glimmer.CompileError,
                           match=r"the TP plan pattern 'decoder\.\*\.q_proj"
                                 r"\.weight' matches no linear weight or embedding table"):
            glimmer.compile(MODEL, BATCH, dtype="f64",
                            tp_plan={"decoder.*.q_proj.weight": "colwise"})
    assert_trains_alike(base, sharded, steps=2, rtol=1e-12)


def test_activation_checkpointing_from_python():
    # ac="full" recomputes each layer's forward in its backward (copies of
    # the layers' attention) and trains with the same numbers, as does a
    # budget of 0 bytes;
    # an unknown mode is a CompileError, a negative budget a ValueError.
    base = glimmer.compile(MODEL, BATCH, dtype="f64")
    full = glimmer.compile(MODEL, BATCH, dtype="f64", ac="full")
    budget = glimmer.compile(MODEL, BATCH, dtype="f64", ac_budget=0)
    assert full.mlir.count("glimmer.attention ") > \
        base.mlir.count("glimmer.attention ")
    assert_trains_alike(base, full, steps=2, rtol=1e-12, params_atol=0)
    # (train() carries the state on: a fresh program for the second pair.)
    assert_trains_alike(glimmer.compile(MODEL, BATCH, dtype="f64"), budget,
                        steps=2, rtol=1e-12)
    with pytest.raises(glimmer.CompileError,
                       match="unknown activation checkpointing mode 'most' "
                             r"\(expected none, full or selective\)"):
        glimmer.compile(MODEL, BATCH, dtype="f64", ac="most")
    with pytest.raises(glimmer.CompileError,
                       match="does not combine with the mode 'full'"):
        glimmer.compile(MODEL, BATCH, dtype="f64", ac="full", ac_budget=10)
    with pytest.raises(ValueError, match="ac_budget must be a number of "
                                         r"bytes \(0 or more\), got -1"):
        glimmer.compile(MODEL, BATCH, dtype="f64", ac_budget=-1)


def test_pipeline_from_python():
    # Two stages cut at layers.1 (given as a list), two micro-batches: the
    # unsharded program's numbers, and the stages' parameters gather back
    # into the whole model.
    base = compile_reference(dtype="f64")
    with glimmer.SpmdContext(pp=2, microbatches=2):
        staged = glimmer.compile(MODEL, BATCH, dtype="f64",
                                 pp_split=["layers.1"])
    assert "@stage_1_grad" in staged.mlir
    assert_trains_alike(base, staged, steps=2, rtol=1e-12, params_atol=1e-12)


def _reference_module():
    sys.path.insert(0, str(ROOT / "examples" / "models"))
    import reference_vlm
    return reference_vlm.build_model(seed=0).train()


def test_module_and_exported_program_train_like_torchscript():
    # The reference VLM given as a torch.nn.Module (exported by
    # glimmer.compile with torch.export) and as an ExportedProgram trains
    # with the numbers of its TorchScript fixture (the same weights).
    base = compile_reference(dtype="f64")
    module = _reference_module()
    with glimmer.SpmdContext():
        from_module = glimmer.compile(module, BATCH, dtype="f64")
    assert_trains_alike(base, from_module, steps=2, rtol=1e-12,
                        params_atol=1e-12)
    exported = torch.export.export(module, (), batch_dict(as_torch=True),
                                   strict=False)
    with glimmer.SpmdContext():
        from_program = glimmer.compile(exported, BATCH, dtype="f64")
    # A fresh base: training state carries across train() calls.
    assert_trains_alike(compile_reference(dtype="f64"), from_program, steps=2,
                        rtol=1e-12,
                        params_atol=1e-12)


def test_module_needs_example_inputs():
    with pytest.raises(TypeError, match="exports a torch.nn.Module with "
                                        "torch.export on its example inputs"):
        glimmer.compile(_reference_module())


def test_impossible_layout_is_a_compile_error():
    with glimmer.SpmdContext(pp=4):
        with pytest.raises(glimmer.CompileError,
                           match="pp = 4 pipeline stages but the model has 2 "
                                 "decoder layers"):
            glimmer.compile(MODEL, BATCH)


class Unsupported(torch.nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=1).sum()  # unsupported


def test_unsupported_op_reports_the_source_location():
    line = next(i for i, text in enumerate(Path(__file__).read_text()
                                           .splitlines(), 1)
                if text.endswith("# unsupported"))
    with pytest.raises(glimmer.CompileError) as info:
        glimmer.compile(torch.jit.script(Unsupported()),
                        {"x": np.ones((2, 3), np.float32)})
    message = str(info.value)
    assert f"test_compile.py:{line}:" in message
    assert "error: unsupported operator 'aten::cumprod'" in message


def test_runtime_errors():
    program = compile_reference()
    inputs = batch_dict(as_torch=False)
    inputs["tokens"] = inputs["tokens"][:, :8]
    with pytest.raises(RuntimeError, match=r"tensor 'tokens' has shape \[2, 8\] "
                       r"but the program was compiled for \[2, 16\]"):
        program.train(inputs, steps=1)
    with pytest.raises(FileNotFoundError, match="nope.safetensors"):
        program.forward(ROOT / "nope.safetensors")
    with pytest.raises(ValueError, match="grad_accum"):
        program.train(BATCH, steps=1, grad_accum=0)


# --- numerics and loading ----------------------------------------------------

def test_f64_forward_matches_pytorch():
    spec = importlib.util.spec_from_file_location(
        "torch_oracle", ROOT / "test" / "E2E" / "Inputs" / "torch_oracle.py")
    oracle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(oracle)
    module = torch.jit.load(str(MODEL))
    module.eval()
    oracle.promote_module(module)
    module = module.double()
    batch = {k: torch.from_numpy(v.astype(np.float64) if v.dtype.kind == "f"
                                 else v)
             for k, v in batch_dict(as_torch=False).items()}
    names = [a.name for a in module.forward.schema.arguments[1:]]
    with torch.no_grad():
        expected = module(*[batch[n] for n in names]).item()

    program = compile_reference()
    loss = program.forward(BATCH, dtype="f64")
    assert abs(loss - expected) <= 1e-12 * abs(expected)


@pytest.mark.parametrize("first, second", [("glimmer._driver", "torch"),
                                           ("torch", "glimmer._driver")])
def test_import_order_with_torch(first, second):
    # glimmer._driver loads LibTorch (glimmer.compile imports it lazily).
    script = textwrap.dedent(f"""
        import {first}
        import {second}
        import glimmer
        import torch
        p = glimmer.compile({str(MODEL)!r}, {str(BATCH)!r})
        torch.jit.load({str(MODEL)!r})
        print(p.forward({str(BATCH)!r}))
    """)
    out = subprocess.run([sys.executable, "-c", script], check=True,
                         capture_output=True, text=True,
                         env=dict(os.environ)).stdout
    assert float(out) == pytest.approx(4.4154157638549805, rel=1e-6)
