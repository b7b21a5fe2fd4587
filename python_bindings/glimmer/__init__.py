"""Glimmer: an MLIR compiler for training vision-language models with
context parallelism.

    import glimmer
    with glimmer.SpmdContext(dp_shard=2, cp=2):
        assert glimmer.SpmdContext.current().cp == 2

Compile a model (a torch.nn.Module, which is exported with torch.export; a
torch.export program or .pt2 archive; or TorchScript) and train it
in-process on the CPU (the code paths of `glimmer-train`):

    with glimmer.SpmdContext():
        program = glimmer.compile("model.pt", "batch.safetensors")
    for r in program.train("batch.safetensors", steps=5, optimizer="adamw"):
        print(r["step"], r["loss"], r["grad_norm"])
    program.train(loader, steps=100)     # a stream: a DataLoader of dicts,
                                         # a list, a directory of shards
    program.parameter("output.weight")   # numpy, current value

The compiler itself (`glimmer._driver`, which links LibTorch) is loaded at
the first compile, so `import glimmer` stays light and works before or after
`import torch`.
"""

import json
import os
import struct
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Mapping

from ._glimmer import _CHECKPOINT_STEP_KEY, SpmdContext

__all__ = ["SpmdContext", "CompileError", "Program", "compile",
           "prepare_export"]


class CompileError(Exception):
    """Compiling a model failed. The message is the compiler's diagnostics,
    formatted as glimmer-train prints them (`file:line:col: error: ...`,
    with the source line where the location has one)."""


def prepare_export(program):
    """What `torch.export.save` cannot write, rewritten into what it can
    (docs/TorchExport.md): data-dependent checks as tensor assertions
    (export_assertions), torch.vmap as the batched ops (export_vmap).
    Rewrites `program` and returns the program to save."""
    from .export_assertions import lift_scalar_assertions
    from .export_vmap import trace_out_vmap
    lift_scalar_assertions(program)
    return trace_out_vmap(program)


def _native():
    # _driver links LibTorch: importing torch first loads the torch
    # package's copy, which _driver then uses wherever torch is installed.
    import torch  # noqa: F401
    try:
        from . import _driver as driver
    except ImportError as e:
        raise ImportError(
            "glimmer.compile needs the glimmer._driver extension, which is "
            "built with the TorchScript importer (GLIMMER_ENABLE_TORCH=ON): "
            f"{e}") from e
    return driver


# --- safetensors images (numpy only) ----------------------------------------

_NP_OF = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8",
          "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}
_NAME_OF = {"f8": "F64", "f4": "F32", "f2": "F16", "i8": "I64", "i4": "I32",
            "i2": "I16", "i1": "I8", "u1": "U8", "b1": "BOOL"}


def _np():
    import numpy
    return numpy


def _as_array(name, value):
    """(safetensors dtype, shape, bytes) of a numpy array, torch tensor or
    anything numpy.asarray accepts."""
    np = _np()
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            return "BF16", tuple(t.shape), t.view(torch.int16).numpy().tobytes()
        value = t.numpy()
    a = np.asarray(value)
    key = a.dtype.kind + str(a.dtype.itemsize)
    if key not in _NAME_OF:
        raise TypeError(f"tensor '{name}' has dtype {a.dtype}, which glimmer "
                        "does not support (float64/32/16, int64/32/16/8, "
                        "uint8, bool)")
    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
    return _NAME_OF[key], a.shape, a.tobytes()


def _safetensors_image(tensors, metadata=None):
    """The bytes of a safetensors file holding `tensors` (name -> array)."""
    header, blobs, offset = {}, [], 0
    for name, value in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, got {name!r}")
        dtype, shape, data = _as_array(name, value)
        header[name] = {"dtype": dtype, "shape": [int(d) for d in shape],
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def _read_safetensors(path):
    """(name -> numpy array, metadata) of a safetensors file."""
    np = _np()
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        dtype = np.dtype(_NP_OF[info["dtype"]])
        out[name] = np.frombuffer(data, dtype=dtype, count=(end - begin) //
                                  dtype.itemsize,
                                  offset=8 + n + begin).reshape(info["shape"])
    return out, metadata


def _to_numpy(triple):
    """A numpy array of a (dtype name, shape, bytearray) from _driver."""
    dtype, shape, data = triple
    return _np().frombuffer(data, dtype=_NP_OF[dtype]).reshape(shape)


# --- data streams --------------------------------------------------------------

_GLOB_CHARS = "*?["


def _stream_of(data):
    """The batches of a stream (an iterable of paths or dicts), or None when
    `data` is one batch (a file's path or a dict)."""
    if isinstance(data, Mapping):
        return None
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if os.path.isdir(path):
            shards = sorted(os.path.join(path, f) for f in os.listdir(path)
                            if f.endswith(".safetensors") and
                            not os.path.isdir(os.path.join(path, f)))
            if not shards:
                raise ValueError(f"the directory '{path}' holds no "
                                 ".safetensors shard")
            return shards
        if not os.path.exists(path) and any(c in path for c in _GLOB_CHARS):
            import glob
            shards = sorted(p for p in glob.glob(path) if not os.path.isdir(p))
            if not shards:
                raise ValueError(f"the pattern '{path}' matches no file")
            return shards
        return None
    try:
        iter(data)
    except TypeError:
        raise TypeError("data must be a safetensors path, a dict of name -> "
                        "tensor, a directory, a glob pattern or an iterable "
                        f"of batches, got {type(data).__name__}") from None
    return data


def _cycle(stream):
    """(index in the epoch, batch) of `stream`, iterated again after each
    epoch, without end."""
    epoch = 0
    while True:
        count = 0
        for item in stream:
            yield count, item
            count += 1
        if count == 0:
            raise ValueError(
                "the data stream yields no batch" if epoch == 0 else
                "the data stream yields no batch when iterated again for "
                f"epoch {epoch + 1} (an iterator is used up after one pass: "
                "pass a re-iterable, such as a list or a DataLoader, or "
                "fewer steps)")
        epoch += 1


def _repeat(item, count):
    for _ in range(count):
        yield item


def _chain_first(first, items, count, read):
    """`first`, then the next `count - 1` of `items` read with `read`, as
    (index, batch)."""
    if count == 0:
        return
    yield first
    for _ in range(count - 1):
        index, item = next(items)
        yield index, read(item)[0]


class _Prefetcher:
    """Iterates `source` on a background thread, at most one item ahead (the
    next batch is taken from the stream and parsed while a step runs, with
    the GIL released). An exception the source raises is raised again here,
    in order."""

    _END = object()

    def __init__(self, source):
        import queue
        self._queue = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._source = source
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="glimmer-data")
        self._thread.start()

    def _put(self, item):
        import queue
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def _run(self):
        try:
            for item in self._source:
                if not self._put((item, None)):
                    return
        except BaseException as e:  # raised on the consumer's thread
            self._put((None, e))
            return
        self._put((self._END, None))

    def __iter__(self):
        return self

    def __next__(self):
        item, error = self._queue.get()
        if error is not None:
            raise error
        if item is self._END:
            raise StopIteration
        return item

    def close(self):
        self._stop.set()
        self._thread.join()


# --- compile ------------------------------------------------------------------

_DEFAULTS = dict(dtype="f32", optimizer="adamw", lr=1e-3, weight_decay=None,
                 betas=(0.9, 0.999), eps=1e-8, max_norm=0.0, grad_accum=1)


def compile(model, example_inputs=None, *, dtype="f32", optimizer="adamw",
            lr=1e-3, weight_decay=None, betas=(0.9, 0.999), eps=1e-8,
            max_norm=0.0, grad_accum=1, cache_dir=None, verbose=False,
            tp_plan=None, pp_split=None, weights=None, ac="none",
            ac_budget=None):
    """Compiles a model for training under the active SpmdContext and
    returns a Program.

    model: a torch.nn.Module (exported with torch.export.export(model, (),
        example_inputs, strict=False); needs example_inputs), a
        torch.export.ExportedProgram, the path of a torch.export archive
        (.pt2) or of a TorchScript archive (.pt), or a
        torch.jit.ScriptModule.
    example_inputs: a safetensors path, or a dict of forward argument name ->
        torch.Tensor / numpy array; fixes the shapes and dtypes the program
        is compiled for. When None, the first batch given to train() or
        forward() serves, and compiling waits until then.
    dtype, optimizer, lr, weight_decay (None: 0.01 for AdamW, 0 for SGD),
        betas, eps, max_norm (0: no clipping): the training configuration
        compiled into @apply_step; train() may change it (recompiling).
    grad_accum: micro-batches per optimizer step: the batch is cut into
        that many pieces, run one after another with their gradients summed
        (the loss stays the mean over the whole batch); the program is
        compiled for the micro-batch's shape. The same as `microbatches` of
        the SpmdContext.
    cache_dir: where compiled programs are kept (by default
        $GLIMMER_CACHE_DIR, else $XDG_CACHE_HOME/glimmer, else
        ~/.cache/glimmer; refused unless only you can write it); compiling the same program again
        reuses the earlier build.
    verbose: print the compiler's progress to stderr.
    tp_plan: a tensor-parallel plan for layouts with tp > 1: a JSON file, or
        a dict, mapping state_dict name patterns to "colwise", "rowwise" or
        "replicate" (None: the default plan read off the graph).
    pp_split: for layouts with pp > 1, the first decoder layer of each
        pipeline stage after the first, as a list or a comma-separated
        string ("layers.4,layers.8"); None: stages balanced by cost.
    weights: a safetensors file or a Hugging Face checkpoint directory
        (model.safetensors, or model.safetensors.index.json and its shards,
        as save_pretrained writes them) whose tensors replace the model's
        own weights by state_dict name, as glimmer-train --weights: one
        RuntimeError lists every missing, unexpected and mis-shaped key; a
        bf16/f16 checkpoint converts to an f32/f64 program.
    ac: activation checkpointing of the training program, as glimmer-train
        --ac: "none" keeps every activation the backward reads; "full":
        each decoder and vision layer keeps its inputs and computes its
        forward again right before its backward; "selective": it also
        keeps the results of GEMMs, attention and collectives.
    ac_budget: instead of ac, a number of bytes (glimmer-train
        --ac-budget): of the activations the layers' backward reads, the
        most expensive to compute again per byte are kept while they fit,
        the rest computed again. None: no budget.

    The program is partitioned for the calling thread's SPMD layout
    (`with glimmer.SpmdContext(dp_shard=2, cp=2): ...`); its ranks run as
    threads on the CPU, with the unsharded program's numbers.

    Raises CompileError with the compiler's diagnostics (also for layouts
    the model cannot take, such as more pipeline stages than layers).
    """
    layout = str(SpmdContext.current())
    config = dict(dtype=dtype, optimizer=optimizer, lr=lr,
                  weight_decay=weight_decay, betas=betas, eps=eps,
                  max_norm=max_norm, grad_accum=grad_accum)
    return Program(model, example_inputs, layout, config, cache_dir, verbose,
                   tp_plan, pp_split, weights, ac, ac_budget)


class Program:
    """A model compiled by glimmer.compile(), with its training state.

    `.mlir` and `.cpp` show the program last compiled; `.train()`,
    `.forward()`, `.parameters()`, `.save()` and `.resume()` run it. The
    training state (parameters, optimizer state, step count) carries across
    train() calls; changing the training configuration recompiles (compiled
    programs are cached by content) and keeps the parameters, and the
    optimizer state too unless the optimizer kind changes.
    """

    def __init__(self, model, example_inputs, layout, config, cache_dir,
                 verbose, tp_plan=None, pp_split=None, weights=None,
                 ac="none", ac_budget=None):
        self._lock = threading.RLock()
        # The mode is checked by the compiler, with its message
        # (CompileError); -1 is the compiler's "no budget".
        if ac_budget is not None and (isinstance(ac_budget, bool) or
                                      int(ac_budget) != ac_budget or
                                      ac_budget < 0):
            raise ValueError(f"ac_budget must be a number of bytes (0 or "
                             f"more), got {ac_budget!r}")
        self._ac = ac
        self._ac_budget = -1 if ac_budget is None else int(ac_budget)
        self._weights = os.fspath(weights) if weights is not None else None
        self._tmp = tempfile.TemporaryDirectory(prefix="glimmer-")
        if isinstance(tp_plan, dict):
            path = os.path.join(self._tmp.name, "tp-plan.json")
            with open(path, "w") as f:
                json.dump(tp_plan, f)
            tp_plan = path
        self._tp_plan = os.fspath(tp_plan) if tp_plan else ""
        if pp_split is not None and not isinstance(pp_split, str):
            pp_split = ",".join(str(p) for p in pp_split)
        self._pp_split = pp_split or ""
        self.layout = layout
        self._cache_dir = os.fspath(cache_dir) if cache_dir else ""
        self._verbose = bool(verbose)
        self._config = self._normalize(config)
        self._variants = {}  # key -> _driver.Program
        self._current = None  # the _driver.Program last compiled or run
        self._trainer = None  # _driver.Trainer
        self._trainer_config = None  # the configuration it was compiled for
        self.model_path = self._model_path(model, example_inputs)
        if example_inputs is None:
            self.example_inputs = None
            if not os.path.exists(self.model_path):
                kind = ("torch.export archive" if self.model_path.endswith(".pt2")
                        else "TorchScript file")
                raise CompileError(f"cannot open {kind} "
                                   f"'{self.model_path}': no such file")
        else:
            self.example_inputs = self._example_path(example_inputs)
            self._variant(self._config, train=True)

    # -- inputs --

    def _model_path(self, model, example_inputs):
        if isinstance(model, (str, os.PathLike)):
            return os.path.abspath(os.fspath(model))
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(model, torch.jit.ScriptModule):
            path = os.path.join(self._tmp.name, "model.pt")
            with warnings.catch_warnings():
                # torch 2.11 deprecates TorchScript; it is still an input
                # format.
                warnings.simplefilter("ignore", DeprecationWarning)
                torch.jit.save(model, path)
            return path
        if torch is not None and isinstance(model, torch.nn.Module):
            if example_inputs is None:
                raise TypeError("glimmer.compile exports a torch.nn.Module "
                                "with torch.export on its example inputs: "
                                "pass example_inputs")
            model = torch.export.export(
                model, (), self._example_tensors(example_inputs),
                strict=False)
        if torch is not None and isinstance(model,
                                            torch.export.ExportedProgram):
            model = prepare_export(model)
            path = os.path.join(self._tmp.name, "model.pt2")
            torch.export.save(model, path)
            return path
        raise TypeError("glimmer.compile: model must be a path, a "
                        "torch.nn.Module, a torch.export.ExportedProgram or "
                        f"a torch.jit.ScriptModule, got {type(model).__name__}")

    @staticmethod
    def _example_tensors(inputs):
        """Example inputs as name -> torch.Tensor, for torch.export."""
        torch = sys.modules["torch"]
        if isinstance(inputs, (str, os.PathLike)):
            tensors, _ = _read_safetensors(os.fspath(inputs))
        elif isinstance(inputs, Mapping):
            tensors = inputs
        else:
            raise TypeError("example inputs must be a safetensors path or a "
                            "dict of name -> tensor, got "
                            f"{type(inputs).__name__}")
        return {name: value if isinstance(value, torch.Tensor)
                else torch.from_numpy(_np().array(value))
                for name, value in tensors.items()}

    def _example_path(self, inputs):
        if isinstance(inputs, (str, os.PathLike)):
            return os.path.abspath(os.fspath(inputs))
        if isinstance(inputs, Mapping):
            path = os.path.join(self._tmp.name, "example_inputs.safetensors")
            with open(path, "wb") as f:
                f.write(_safetensors_image(inputs))
            return path
        raise TypeError("example inputs must be a safetensors path or a dict "
                        "of name -> tensor, got "
                        f"{type(inputs).__name__}")

    def _batch(self, data):
        """A _driver.Batch of a path or dict, and a path holding it (for
        compiling lazily)."""
        driver = _native()
        if isinstance(data, (str, os.PathLike)):
            path = os.path.abspath(os.fspath(data))
            if not os.path.exists(path):
                raise FileNotFoundError(f"data file '{path}' does not exist")
            try:
                return driver.Batch.read(path), path
            except RuntimeError as e:
                raise ValueError(str(e)) from None
        if isinstance(data, Mapping):
            image = _safetensors_image(data)
            path = None
            if self.example_inputs is None:
                path = os.path.join(self._tmp.name,
                                    "example_inputs.safetensors")
                with open(path, "wb") as f:
                    f.write(image)
            return driver.Batch.parse(image, "<dict batch>"), path
        raise TypeError("data must be a safetensors path or a dict of name -> "
                        f"tensor, got {type(data).__name__}")

    # -- configurations and compiled variants --

    @staticmethod
    def _normalize(config):
        c = dict(config)
        betas = tuple(float(b) for b in c["betas"])
        if len(betas) != 2:
            raise ValueError(f"betas must be (beta1, beta2), got {c['betas']}")
        c["betas"] = betas
        c["weight_decay"] = (-1.0 if c["weight_decay"] is None
                             else float(c["weight_decay"]))
        for k in ("lr", "eps", "max_norm"):
            c[k] = float(c[k])
        c["grad_accum"] = int(c.get("grad_accum", 1))
        if c["grad_accum"] < 1:
            raise ValueError(
                f"grad_accum must be at least 1, got {c['grad_accum']}")
        c["dtype"], c["optimizer"] = str(c["dtype"]), str(c["optimizer"])
        return c

    @staticmethod
    def _key(config, train):
        if not train:
            return (config["dtype"], False)
        return (config["dtype"], True, config["optimizer"], config["lr"],
                config["weight_decay"], config["betas"], config["eps"],
                config["max_norm"], config["grad_accum"])

    def _layout_for(self, config, train):
        """The SPMD layout a variant compiles for: the thread's, with
        `grad_accum` micro-batches when training."""
        n = config["grad_accum"] if train else 1
        if n == 1:
            return self.layout
        have = SpmdContext.parse(self.layout).microbatches
        if have == n:
            return self.layout
        if have != 1:
            raise ValueError(f"grad_accum={n} disagrees with "
                             f"microbatches={have} of the SpmdContext")
        return (self.layout + "," if self.layout else "") + \
            f"microbatches={n}"

    def _variant(self, config, train):
        key = self._key(config, train)
        program = self._variants.get(key)
        if program is None:
            if self.example_inputs is None:
                raise RuntimeError(
                    "the program is not compiled yet: pass example_inputs to "
                    "glimmer.compile(), or call train() or forward() with a "
                    "batch first")
            b1, b2 = config["betas"]
            program = _native().compile(
                self.model_path, self.example_inputs, dtype=config["dtype"],
                train=train, optimizer=config["optimizer"], lr=config["lr"],
                weight_decay=config["weight_decay"], beta1=b1, beta2=b2,
                eps=config["eps"], max_norm=config["max_norm"],
                cache_dir=self._cache_dir, verbose=self._verbose,
                spmd=self._layout_for(config, train), tp_plan=self._tp_plan,
                pp_split=self._pp_split, ac=self._ac,
                ac_budget=self._ac_budget,
                weights_optional=self._weights is not None)
            if program.diagnostics:
                warnings.warn(program.diagnostics, stacklevel=4)
            if self._weights is not None:
                program.bind_weights(self._weights, os.path.join(
                    self._tmp.name, f"weights-{len(self._variants)}.safetensors"))
            self._variants[key] = program
        self._current = program
        return program

    def _ensure_examples(self, path):
        if self.example_inputs is None:
            self.example_inputs = path

    def _use_trainer(self, config):
        """The trainer over the training program of `config`, carrying the
        state of the previous one over."""
        program = self._variant(config, train=True)
        old = self._trainer
        if old is not None and old.program is program:
            return old
        new = _native().Trainer(program)
        if old is not None:
            keep = self._trainer_config["optimizer"] == config["optimizer"]
            self._transfer(old, new, keep)
        self._trainer, self._trainer_config = new, dict(config)
        return new

    def _transfer(self, old, new, keep_optimizer):
        """Moves parameters (and optimizer state and step count when
        `keep_optimizer`) from `old` to `new`, converting precision."""
        np = _np()
        src = os.path.join(self._tmp.name, "transfer-from.safetensors")
        dst = os.path.join(self._tmp.name, "transfer-to.safetensors")
        old.save(src)
        state, meta = _read_safetensors(src)
        out = {}
        prog = new.program
        # Every function's parameters (pipeline stages and micro-batched
        # programs split them over @stage_<s>_grad and @apply_step_<r>).
        slots = [slot for fn in prog.functions for slot in prog.slots(fn)]
        for role, name, dtype, shape in slots:
            if role == "param":
                out[name] = state[name].astype(_NP_OF[dtype])
        for role, name, dtype, shape in slots:
            if role in ("exp_avg", "exp_avg_sq"):
                key = f"optimizer.{role}.{name}"
                out[key] = (state[key].astype(_NP_OF[dtype])
                            if keep_optimizer and key in state
                            else np.zeros(shape, _NP_OF[dtype]))
        step = meta.get(_CHECKPOINT_STEP_KEY, "0") if keep_optimizer else "0"
        tensors = os.path.join(self._tmp.name, "transfer-tensors.safetensors")
        with open(tensors, "wb") as f:
            f.write(_safetensors_image(out))
        _native().write_checkpoint(tensors, dst, int(step))
        new.resume(dst)

    # -- inspection --

    def _compiled(self):
        if self._current is None:
            self._variant(self._config, train=True)
        return self._current

    @property
    def mlir(self):
        """The module after the pipeline (with @grad_step and @apply_step
        when compiled for training), of the program last compiled or run."""
        with self._lock:
            return self._compiled().mlir

    @property
    def cpp(self):
        """The generated C++ source of the program last compiled or run."""
        with self._lock:
            return self._compiled().cpp

    @property
    def config(self):
        """The current training configuration (what train() uses when not
        told otherwise)."""
        c = dict(self._config)
        c["weight_decay"] = None if c["weight_decay"] < 0 else c["weight_decay"]
        return c

    @property
    def steps_done(self):
        """Optimizer steps taken (counting from a resumed checkpoint)."""
        return self._trainer.steps_done if self._trainer is not None else 0

    # -- running --

    def train(self, data, steps=10, *, optimizer=None, lr=None,
              weight_decay=None, betas=None, eps=None, max_norm=None,
              grad_accum=None, dtype=None, callback=None):
        """Runs `steps` optimizer steps on `data`, each on `grad_accum`
        micro-batches of its batch (see compile()). `data` is one batch, a
        safetensors path or a dict of name -> tensor (every step trains on
        it, as in glimmer-train); or a stream of batches: a directory (its
        *.safetensors shards in name order), a glob pattern, or any
        iterable of batches (paths or dicts: a list, a
        torch.utils.data.DataLoader with batch_size=None over a dataset of
        dicts, ...). Step k of a stream trains on its k-th batch, iterating
        the stream again (another epoch) when `steps` outruns it; a thread
        takes the next batch from the stream while a step runs. Every
        batch has the shapes and dtypes the program was compiled for.
        Options left None keep the current configuration; a changed one
        recompiles. Returns one dict per step: step, loss, grad_norm,
        seconds, shard (the batch's index in its stream; 0 for one batch);
        calls `callback(dict)` after each step when given."""
        steps = int(steps)
        if steps < 0:
            raise ValueError(f"steps must not be negative, got {steps}")
        with self._lock:
            config = dict(self._config)
            given = dict(optimizer=optimizer, lr=lr, weight_decay=weight_decay,
                         betas=betas, eps=eps, max_norm=max_norm, dtype=dtype,
                         grad_accum=grad_accum)
            config.update({k: v for k, v in given.items() if v is not None})
            config = self._normalize(config)
            stream = _stream_of(data)
            if stream is None:
                batch, path = self._batch(data)
                batches = _repeat((0, batch), steps)
            else:
                # The first batch on this thread: it may be the example the
                # program is compiled for.
                items = _cycle(stream)
                shard, item = next(items)
                batch, path = self._batch(item)
                batches = _Prefetcher(
                    _chain_first((shard, batch), items, steps, self._batch))
            try:
                if path is not None:
                    self._ensure_examples(path)
                trainer = self._use_trainer(config)
                self._config = config
                results = []
                for shard, batch in batches:
                    start = time.perf_counter()
                    try:
                        step, loss, grad_norm = trainer.step(batch)
                    except RuntimeError as e:
                        if stream is None:
                            raise
                        raise RuntimeError(f"batch {shard} of the data "
                                           f"({batch.name}): {e}") from None
                    r = {"step": step, "loss": loss, "grad_norm": grad_norm,
                         "seconds": time.perf_counter() - start,
                         "shard": shard}
                    results.append(r)
                    if callback is not None:
                        callback(r)
                return results
            finally:
                if stream is not None:
                    batches.close()

    def forward(self, data, *, dtype=None):
        """The loss of @forward on `data`, with the current parameters (the
        trained ones after train() or resume()). `dtype` ("f32"/"f64",
        default: the current one) may select another precision, compiling a
        forward-only program for it when needed."""
        with self._lock:
            batch, path = self._batch(data)
            self._ensure_examples(path)
            config = self._normalize(dict(self._config,
                                          dtype=dtype or self._config["dtype"]))
            trainer = self._trainer
            if trainer is not None and trainer.program.dtype == config["dtype"]:
                program = trainer.program
            else:
                program = (self._variants.get(self._key(config, True)) or
                           self._variants.get(self._key(config, False)) or
                           self._variant(config, train=False))
            self._current = program
            scratch = os.path.join(self._tmp.name, "forward.safetensors")
            return program.forward(batch, trainer, scratch)

    def parameters(self):
        """The trainable parameters, state_dict key -> numpy array (current
        values: after training, the trained ones), in state_dict order."""
        with self._lock:
            if self._trainer is not None:
                program = self._trainer.program
                raw = self._trainer.parameters()
            else:
                program = self._compiled()
                raw = program.initial_parameters()
            order = [name for role, name, _, _ in program.slots("forward")
                     if role == "param"]
            return {name: _to_numpy(raw[name]) for name in order
                    if name in raw}

    def parameter(self, name):
        """One parameter by state_dict key (numpy array)."""
        params = self.parameters()
        if name not in params:
            names = list(params)
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            raise KeyError(f"the model has no parameter '{name}' "
                           f"({len(names)} parameters: {shown})")
        return params[name]

    def save(self, path):
        """Writes a checkpoint (parameters, optimizer state, step count;
        safetensors, as glimmer-train --save)."""
        with self._lock:
            self._use_trainer(self._config).save(os.fspath(path))

    def export_weights(self, directory, max_shard_size="5GB"):
        """Writes the parameters (current values: after training, the
        trained ones) to `directory` as Hugging Face's save_pretrained does,
        as glimmer-train --export-weights: safetensors shards of at most
        `max_shard_size` ("5GB", "500MB", "80KB", bytes as an int) named
        model-0000i-of-0000n.safetensors with model.safetensors.index.json,
        or one model.safetensors."""
        with self._lock:
            self._use_trainer(self._config).export_weights(
                os.fspath(directory), str(max_shard_size))

    def resume(self, path):
        """Continues from a checkpoint written by save() or glimmer-train
        --save, under the current configuration."""
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"checkpoint '{path}' does not exist")
        with self._lock:
            self._use_trainer(self._config).resume(path)

    def __repr__(self):
        state = "compiled" if self._variants else "not compiled yet"
        return (f"<glimmer.Program {self.model_path!r} "
                f"layout={self.layout or 'default'!r} "
                f"dtype={self._config['dtype']} {state}, "
                f"{self.steps_done} steps>")
