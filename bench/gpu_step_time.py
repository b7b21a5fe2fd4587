"""Training step time on GPUs: glimmer-run --backend=cuda against PyTorch eager,
in f32 and in bf16 mixed precision.

Two halves, because the GPU machine has the runtime but no compiler (no LLVM)
and receives only small files:

  prepare (build machine, the repository's .venv):
    .venv/bin/python bench/gpu_step_time.py prepare --out bench/.gpu/medium
        [--dtypes f32,bf16] [--seq 8192 --batch 1 --images N --dim 1024 ...]

    Builds the reference VLM (examples/models/reference_vlm.py) at a
    "medium" configuration, draws a batch with make_batch, traces the model
    to TorchScript as examples/fixtures/generate.py does (torch.jit.trace of
    forward -> scalar loss; once, in f32), and compiles it with glimmer-train
    (AdamW lr 1e-3, weight decay 0.01, clipping at 1.0, --steps=0
    --emit-cpp) for each --dtypes entry and each of the layouts "" and
    "cp=2": OUT/medium.f32.cpp, OUT/medium.f32.cp2.cpp, OUT/medium.bf16.cpp,
    OUT/medium.bf16.cp2.cpp. --dtype=bf16 is glimmer-train's mixed
    precision: f32 parameters, optimizer state and loss, bf16 compute
    (bf16-autocast: with autocast's f32 norms and residual stream); its
    programs bind the same f32 weights and batch as the f32 ones and only
    run on GPUs. Writes OUT/config.json: the model config, the batch recipe,
    the seed, the optimizer, SHA-256 checksums of the batch and of the
    initial weights, and the measured compile time of each (dtype, layout)
    under "programs". The .pt, the weights and the batch (about 1.7 GB at
    the default size) are written to a temporary directory and deleted,
    unless together they are at most --max-artifact-mb (20) MB: the GPU side
    regenerates them from config.json. With --export, the model is built on
    the meta device and exported with torch.export (strict=False) instead of
    traced: no weights exist on the build machine (a 3 B or 7 B model
    compiles in the memory its graph takes), and the GPU side makes them.
    --ac none,selective,full compiles each layout once per activation
    checkpointing mode (glimmer-train --ac; OUT/medium.bf16.ac-full.cpp),
    so that run times the modes side by side on one batch and reports each
    one's peak memory.

  run (GPU machine, 2 GPUs, PyTorch with CUDA):
    python3 bench/gpu_step_time.py run --dir bench/.gpu/medium
        --runtime-build /tmp/rt [--dtypes f32,bf16 --steps 8 --warmup 2]

    Regenerates the model, its weights and the batch from config.json (same
    code, same seed; the batch must match the recorded checksum), writes
    them to --work, then, for each dtype of --dtypes, times
      * glimmer-run --backend=cuda on each of that dtype's programs in
        config.json: unsharded (1 GPU), cp=2 (2 GPUs, NCCL),
      * PyTorch eager training of the same nn.Module on 1 GPU (AdamW lr 1e-3,
        weight decay 0.01, clip_grad_norm_ 1.0, f32 parameters, TF32 off unless --tf32;
        for bf16 the forward runs under torch.autocast("cuda",
        dtype=torch.bfloat16), as test/E2E/Inputs/torch_train_oracle.py
        does; CUDA events around each step, synchronized; once for bf16 and
        bf16-autocast, which are both read against it),
      * for the dtypes of --compile-dtypes (bf16), the same under
        torch.compile with the fused AdamW (compiled in the warmup steps),
    each for --warmup + --steps steps, and prints a markdown table: dtype,
    median step time over the steps after the warmup, tokens/s (batch * seq
    / median step time, all ranks together), the speed relative to
    torch.compile's, model TFLOP/s and MFU (against an 8192^3 GEMM timed in
    the same run, per GPU), peak device memory (glimmer: the runtime
    allocator's high-water mark in a step, whole buckets; PyTorch:
    torch.cuda.max_memory_allocated), and the loss
    and grad norm of step 1 (before any update), with glimmer's step-1 loss
    relative to PyTorch's of the same dtype (about 1e-4 in f32, 1e-2 in
    bf16). glimmer's step times are the per-step "seconds" of its --metrics
    file (host clock around a step, which ends with a device synchronize).
    NCCL_NVLS_ENABLE=0 is set for everything. The whole run is bounded by
    --budget (330 s): each glimmer-run is stopped when its share of what is
    left runs out (keeping what its metrics file holds), and PyTorch stops
    early on the same deadline; --json is rewritten after each measurement.

Sequence length: the default T = 8192 (16 images of 16x16 patches = 50 %
image tokens). Attention is a flash-style kernel in both frameworks (glimmer:
runtime/cuda/Attention.cu in f32, cuDNN's fused flash attention in bf16
through runtime/cuda/CudnnAttention.cpp; PyTorch: the memory-efficient SDPA
kernel in f32, the only one with f32 support, flash attention under bf16
autocast), so the
score matrix is never materialized; model FLOPs are about 11 TFLOP per step,
i.e. roughly 0.3-1.5 s per step on an H200 in strict f32. Programs are
compiled for one batch shape: for another T, run prepare again (--seq,
--images) into another directory.
"""

from __future__ import annotations

import argparse
import copy
import gc
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "models"))

INPUT_NAMES = ["tokens", "labels", "positions", "images"]  # forward's arguments
OPTIMIZER = {"optimizer": "adamw", "lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8,
             "weight_decay": 0.01, "max_norm": 1.0}
# glimmer-train --dtype; bf16 and bf16-autocast: mixed precision, CUDA only.
DTYPES = ("f32", "bf16", "bf16-autocast")
# glimmer-train --ac: activation checkpointing.
AC_MODES = ("none", "selective", "full")


def torch_dtype(dtype: str) -> str:
    """The PyTorch run a glimmer dtype is measured against: both mixed
    precisions against autocast(bf16)."""
    return "bf16" if dtype.startswith("bf16") else dtype


# --------------------------------------------------------------------------
# Shared: configuration, regeneration, checksums
# --------------------------------------------------------------------------


def torchtitan_ffn(dim: int, multiple_of: int = 256) -> int:
    """torchtitan's SwiGLU width for a nominal 4 * dim: 2/3 of it, rounded up."""
    hidden = int(2 * (4 * dim) / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def program_name(name: str, layout: str, dtype: str = "f32", ac: str = "") -> str:
    """medium.f32.cpp, medium.bf16.cp2.cpp, medium.bf16.ac-full.cpp, ...
    (integration_test/make-programs.sh's naming)."""
    suffix = re.sub(r"[=,]", "", layout)
    suffix += ("." if suffix and ac else "") + (f"ac-{ac}" if ac else "")
    return f"{name}.{dtype}{'.' + suffix if suffix else ''}.cpp"


def variant_key(layout: str, ac: str) -> str:
    """config.json's key of a program under its dtype: the layout, and the
    activation checkpointing mode when prepare --ac chose one."""
    return " ".join(x for x in (layout, f"ac={ac}" if ac else "") if x)


def variant_layout(key: str, entry: dict) -> str:
    """The --spmd layout of a program (its key before --ac existed)."""
    return entry.get("layout", key)


def variant_label(key: str) -> str:
    """How tables name a program: its key, "unsharded" where no layout."""
    return key if key and not key.startswith("ac=") else \
        " ".join(x for x in ("unsharded", key) if x)


def parse_ac(text: str) -> list:
    modes = [m.strip() for m in text.split(",") if m.strip()]
    bad = [m for m in modes if m not in AC_MODES]
    if bad:
        sys.exit(f"--ac: expected a comma-separated subset of {','.join(AC_MODES)}, got '{text}'")
    return list(dict.fromkeys(modes)) or [""]


def parse_dtypes(text: str) -> list:
    dtypes = [d.strip() for d in text.split(",") if d.strip()]
    bad = [d for d in dtypes if d not in DTYPES]
    if bad or not dtypes:
        sys.exit(f"--dtypes: expected a comma-separated subset of {','.join(DTYPES)}, got '{text}'")
    return list(dict.fromkeys(dtypes))


def config_programs(config: dict) -> dict:
    """{dtype: {layout: entry}}; config.json files written before the bf16
    mode hold f32 programs only, under "layouts"."""
    if "programs" in config:
        return config["programs"]
    return {config.get("dtype", "f32"): config.get("layouts", {})}


def build(config: dict, meta: bool = False):
    """(model, batch) from config.json's recipe: the only code path both halves use.
    meta: the model on the meta device (no weight data), for torch.export."""
    import torch
    import reference_vlm as R

    cfg = R.VLMConfig(**config["model"])
    b = config["batch"]
    if meta:
        with torch.device("meta"):
            model = R.ReferenceVLM(cfg).eval()
    else:
        model = R.build_model(cfg, seed=config["seed"])
    batch = R.make_batch(cfg, batch=b["batch"], seq_len=b["seq_len"],
                         images_per_sample=b["images_per_sample"], seed=config["seed"],
                         placement=b["placement"])
    batch = {k: batch[k].contiguous() for k in INPUT_NAMES}
    return model, batch


def tensors_sha256(tensors: dict) -> str:
    """SHA-256 over (name, dtype, shape, bytes) of each tensor, in the dict's order."""
    import torch

    h = hashlib.sha256()
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        h.update(f"{name}|{t.dtype}|{list(t.shape)}|".encode())
        h.update(t.view(-1).view(torch.uint8).numpy().data)
    return h.hexdigest()


def state_dict_of(model) -> dict:
    return {k: v.detach().contiguous() for k, v in model.state_dict().items()}


def model_flops(config: dict) -> dict:
    """Forward + backward FLOPs of one step (3 x the forward's matmul and
    attention FLOPs; causal attention counts the visible pairs only)."""
    m, b = config["model"], config["batch"]
    B, T = b["batch"], b["seq_len"]
    n_img = sum(b["images_per_sample"]) if isinstance(b["images_per_sample"], list) \
        else B * b["images_per_sample"]
    D, L, H, Hkv, F = m["dim"], m["n_layers"], m["n_heads"], m["n_kv_heads"], m["ffn_hidden_dim"]
    hd = D // H
    text_linear = L * (D * H * hd + 2 * D * Hkv * hd + H * hd * D + 3 * D * F) + D * m["vocab_size"]
    text = 2 * B * T * text_linear
    text_attn = L * 2 * 2 * B * H * hd * (T * (T + 1) // 2)
    Dv, Lv, Hv, Mv = m["vision_dim"], m["n_vision_layers"], m["n_vision_heads"], m["vision_mlp_dim"]
    P = (m["image_size"] // m["patch_size"]) ** 2
    vis_linear = (Lv * (4 * Dv * Dv + 2 * Dv * Mv) + Dv * D + D * D
                  + m["in_channels"] * m["patch_size"] ** 2 * Dv)
    vision = 2 * n_img * P * vis_linear
    vis_attn = Lv * 2 * 2 * n_img * Hv * (Dv // Hv) * P * P
    fwd = text + text_attn + vision + vis_attn
    return {"forward": fwd, "step": 3 * fwd, "attention_share": (text_attn + vis_attn) / fwd}


def nvls_env() -> dict:
    env = dict(os.environ)
    env["NCCL_NVLS_ENABLE"] = "0"
    return env


# --------------------------------------------------------------------------
# prepare (build machine)
# --------------------------------------------------------------------------


def git_state() -> dict:
    def git(*args):
        r = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None
    status = git("status", "--porcelain")
    return {"commit": git("rev-parse", "HEAD"),
            "modified_files": None if status is None else len(status.splitlines())}


def parse_progress(stderr: str) -> dict:
    """glimmer-train's '[glimmer-train] <stage> ... in X s' lines -> {stage: X}."""
    stages = {}
    for line in stderr.splitlines():
        m = re.match(r"\[glimmer-train\] (.*?) in ([0-9.]+) s\s*$", line.strip())
        if m:
            stages[re.sub(r" \(.*\)$", "", m.group(1))] = float(m.group(2))
    return stages


def cmd_prepare(a):
    import torch
    from safetensors.torch import save_file

    dtypes = parse_dtypes(a.dtypes)
    train = Path(a.glimmer_train)
    if not train.is_file():
        sys.exit(f"glimmer-train not found at {train} (ninja -C build glimmer-train)")
    ffn = a.ffn or torchtitan_ffn(a.dim)
    P = (a.image_size // a.patch_size) ** 2
    images = a.images if a.images is not None else int(a.image_share * a.seq) // P
    if images * P > a.seq:
        sys.exit(f"{images} images of {P} tokens do not fit in seq {a.seq}")
    model_cfg = dict(
        vocab_size=a.vocab, dim=a.dim, n_layers=a.layers, n_heads=a.heads,
        n_kv_heads=a.kv_heads, ffn_hidden_dim=ffn, norm_eps=1e-5, rope_theta=a.rope_theta,
        image_token_id=a.vocab - 1, image_size=a.image_size, in_channels=3,
        patch_size=a.patch_size, vision_dim=a.vision_dim, n_vision_layers=a.vision_layers,
        n_vision_heads=a.vision_heads, vision_mlp_dim=a.vision_mlp, vision_norm_eps=1e-5)
    config = {
        "name": a.name,
        "seed": a.seed,
        "model": model_cfg,
        "batch": {"batch": a.batch, "seq_len": a.seq, "images_per_sample": images,
                  "placement": "random"},
        "optimizer": OPTIMIZER,
        "dtypes": dtypes,
        "programs": {d: {} for d in dtypes},  # dtype -> layout -> program, compile time
    }
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(a.threads or torch.get_num_threads())

    t0 = time.perf_counter()
    model, batch = build(config, meta=a.export)
    n_params = sum(p.numel() for p in model.parameters())
    # A meta-device model has no weights to check: the GPU side makes them.
    sd = {} if a.export else state_dict_of(model)
    config["checksums"] = {"batch": tensors_sha256(batch),
                           "weights": None if a.export else tensors_sha256(sd)}
    config["front_end"] = "torch.export (meta device)" if a.export else "TorchScript trace" 
    t_build = time.perf_counter() - t0
    print(f"model: {n_params / 1e6:.1f} M parameters; batch {a.batch} x {a.seq}, "
          f"{images} image(s) per sample of {P} tokens "
          f"({images * P / a.seq:.0%} image tokens); built in {t_build:.1f} s", flush=True)

    weights_bytes = sum(v.numel() * v.element_size() for v in sd.values())
    batch_bytes = sum(v.numel() * v.element_size() for v in batch.values())
    # The .pt holds the weights too (plus a small graph).
    small = 2 * weights_bytes + batch_bytes <= a.max_artifact_mb * 2**20
    tmp = None
    if small:
        art = out
    else:
        tmp = tempfile.TemporaryDirectory(prefix="glimmer-bench-", dir=a.tmp)
        art = Path(tmp.name)
    try:
        t0 = time.perf_counter()
        # The trace records ops, not sizes (glimmer-train takes every shape
        # from --data), so a shorter batch can trace a program for a
        # sequence whose eager CPU forward would not fit in memory.
        trace_batch = batch
        if a.trace_seq:
            short = copy.deepcopy(config)
            short["batch"]["seq_len"] = a.trace_seq
            short["batch"]["images_per_sample"] = max(1, images * a.trace_seq // a.seq)
            _, trace_batch = build(short)
            config["trace_batch"] = short["batch"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if a.export:
                # Weightless: compiling needs the graph and its shapes only.
                traced = torch.export.export(
                    model, (), {k: v.to("meta") for k, v in trace_batch.items()},
                    strict=False)
            else:
                traced = torch.jit.trace(model, tuple(trace_batch[k] for k in INPUT_NAMES),
                                         check_trace=False, strict=False)
        del trace_batch
        t_trace = time.perf_counter() - t0
        pt = art / f"{a.name}.{'pt2' if a.export else 'pt'}"
        if a.export:
            torch.export.save(traced, str(pt))
        else:
            torch.jit.save(traced, str(pt))
        data = art / f"{a.name}.batch.safetensors"
        save_file(batch, str(data))
        if small and not a.export:
            save_file(sd, str(art / f"{a.name}.weights.safetensors"), metadata={"format": "pt"})
        del traced
        print(f"traced in {t_trace:.1f} s ({pt.stat().st_size / 2**20:.0f} MiB .pt"
              f"{'' if small else ', in ' + str(art) + ', not kept'})", flush=True)
        config["trace_seconds"] = round(t_trace, 2)

        cache = art / "cache"
        layouts = [l.strip() for l in a.layouts.split(";")]
        acs = parse_ac(a.ac)
        if acs != [""] and "--ac" in a.train_args:
            sys.exit("--ac and --train-args=--ac...: give the modes in --ac only")
        variants = [(layout, ac) for layout in layouts for ac in acs]
        for dtype in dtypes:
            for layout, ac in variants:
                name = program_name(a.name, layout, dtype, ac)
                shutil.rmtree(cache, ignore_errors=True)  # cold: no cached program
                o = OPTIMIZER
                cmd = [str(train), str(pt), f"--data={data}", f"--dtype={dtype}", "--steps=0",
                       f"--optimizer={o['optimizer']}", f"--lr={o['lr']}",
                       f"--weight-decay={o['weight_decay']}",
                       f"--betas={o['betas'][0]},{o['betas'][1]}",
                       f"--eps={o['eps']}", f"--max-norm={o['max_norm']}",
                       f"--emit-cpp={out / name}", f"--cache-dir={cache}"]
                if layout:
                    cmd.append(f"--spmd={layout}")
                if ac:
                    cmd.append(f"--ac={ac}")
                cmd += a.train_args.split()
                print("$ " + " ".join(cmd), flush=True)
                t0 = time.perf_counter()
                r = subprocess.run(cmd, capture_output=True, text=True, env=nvls_env())
                seconds = time.perf_counter() - t0
                (out / (name[:-4] + ".compile.log")).write_text(
                    "$ " + " ".join(cmd) + "\n" + r.stdout + r.stderr)
                if r.returncode != 0:
                    sys.exit(f"glimmer-train failed ({r.returncode}) for dtype {dtype}, "
                             f"layout '{layout}':\n" + (r.stdout + r.stderr)[-4000:])
                source = (out / name).read_text()
                stages = parse_progress(r.stderr)
                # The rest: the pass pipeline (not reported separately), process
                # start, and loading the weights into a trainer for --steps=0.
                stages["other"] = round(seconds - sum(stages.values()), 2)
                entry = {"program": name, "dtype": dtype, "layout": layout, "ac": ac,
                         "seconds": round(seconds, 2),
                         "stages": stages, "cpp_lines": source.count("\n"),
                         "cpp_bytes": len(source.encode())}
                key = variant_key(layout, ac)
                config["programs"][dtype][key] = entry
                print(f"{dtype} {variant_label(key)}: {name}, "
                      f"{entry['cpp_lines']} lines, glimmer-train {seconds:.1f} s "
                      f"{entry['stages']}", flush=True)
    finally:
        shutil.rmtree(art / "cache", ignore_errors=True)
        if tmp is not None:
            tmp.cleanup()

    config["train_args"] = a.train_args
    config["flops"] = model_flops(config)
    config["prepared_with"] = {"torch": torch.__version__, "git": git_state(),
                               "glimmer_train": str(train)}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    print("compile times (glimmer-train wall, s): " + ", ".join(
        f"{d} {variant_label(l)} {e['seconds']}"
        for d, progs in config["programs"].items() for l, e in progs.items()))
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"wrote {out}/config.json; {out} holds {total / 2**20:.1f} MiB"
          + ("  (over 20 MiB: too much for the GPU machine)" if total > 20 * 2**20 else ""))


# --------------------------------------------------------------------------
# run (GPU machine)
# --------------------------------------------------------------------------


def find_glimmer_run(build_dir: Path) -> Path:
    for p in (build_dir / "glimmer-run", build_dir / "bin" / "glimmer-run"):
        if p.is_file():
            return p
    sys.exit(f"no glimmer-run in {build_dir} (cmake -S runtime -B {build_dir} -G Ninja "
             "-DCMAKE_BUILD_TYPE=Release -DGLIMMER_ENABLE_CUDA=ON "
             f"-DCMAKE_CUDA_ARCHITECTURES=90 && ninja -C {build_dir} glimmer-run)")


_running = None  # the glimmer-run in flight (its own process group)


def _stop(signum, frame):
    """SIGTERM/SIGINT (e.g. from `timeout`): glimmer-run runs in its own
    session, so stop it here rather than leave it on the GPU."""
    p = _running
    if p is not None and p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass
    sys.exit(128 + signum)


def secs(x: float) -> str:
    return f"{x:.0f}" if x >= 10 else f"{x:.1f}"


def time_glimmer(glimmer_run: Path, program: Path, weights: Path, data: Path, work: Path,
                 steps: int, warmup: int, timeout: float, backend: str,
                 tf32: bool = False, cuda_graph: bool = False) -> dict:
    global _running
    tag = ".graph" if cuda_graph else ""
    metrics = work / (program.stem + tag + ".metrics.jsonl")
    metrics.unlink(missing_ok=True)
    # A fresh copy, so glimmer-run builds the .so next to it against this
    # runtime build (it reuses a .so newer than the .cpp).
    local = work / program.name
    shutil.copyfile(program, local)
    local.with_suffix(".so").unlink(missing_ok=True)
    log = work / (program.stem + tag + ".log")
    cmd = [str(glimmer_run), str(local), f"--weights={weights}", f"--data={data}",
           f"--backend={backend}", f"--steps={warmup + steps}", f"--metrics={metrics}",
           "--timeout=300"] + (["--tf32"] if tf32 else []) \
        + (["--cuda-graph"] if cuda_graph else [])
    print("$ NCCL_NVLS_ENABLE=0 " + " ".join(cmd) + f"   (stopped after {secs(timeout)} s)",
          flush=True)
    t0 = time.perf_counter()
    # Output to a file, not a pipe, and a process group of its own: on a
    # timeout the whole group (glimmer-run and the c++ it may be running) is
    # killed and nothing is left holding a pipe open.
    with open(log, "w") as f:
        _running = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=nvls_env(),
                                    start_new_session=True)
        timed_out = False
        try:
            rc = _running.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(_running.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            rc = _running.wait()
        finally:
            _running = None
    wall = time.perf_counter() - t0
    output = log.read_text(errors="replace")
    if rc != 0 and not timed_out:
        tail = output[-3000:]
        print(tail, file=sys.stderr)
        return {"error": f"glimmer-run exit {rc}: {tail.strip().splitlines()[-1:]}", "wall_s": wall}
    # Metrics lines are flushed per step: after a timeout they hold the steps done.
    rows = []
    if metrics.is_file():
        for line in metrics.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line cut by the kill
    rows = [x for x in rows if x.get("step", 0) >= 1]
    timed = [x["seconds"] for x in rows[warmup:]]
    if not timed:
        why = (f"stopped after {secs(timeout)} s, {len(rows)} step(s) done" if timed_out
               else "no steps after the warmup in the metrics file")
        return {"error": why, "wall_s": wall,
                "loss": [x["loss"] for x in rows], "grad_norm": [x["grad_norm"] for x in rows]}
    r = {"median_s": statistics.median(timed), "min_s": min(timed), "max_s": max(timed),
         "timed_steps": len(timed), "step_seconds": [x["seconds"] for x in rows],
         "loss": [x["loss"] for x in rows], "grad_norm": [x["grad_norm"] for x in rows],
         "glimmer_tokens_per_s": statistics.median(x["tokens_per_s"] for x in rows[warmup:]),
         "wall_s": wall}
    # The runtime's allocator: the most any GPU had handed out in a step.
    peaks = [x["peak_device_bytes"] for x in rows if "peak_device_bytes" in x]
    if peaks and max(peaks) > 0:
        r["max_memory_gib"] = max(peaks) / 2**30
    # The host's wait for the device in each step: near the step time, the
    # device is the limit; near zero, queueing the work is.
    waits = [x["host_wait_seconds"] for x in rows[warmup:] if "host_wait_seconds" in x]
    if waits:
        r["host_wait_median_s"] = statistics.median(waits)
    # Allocations that reached cudaMalloc, per timed step (0 when the
    # allocator's cache holds what a step needs).
    mallocs = [x["device_allocations"] for x in rows[warmup:] if "device_allocations" in x]
    if mallocs:
        r["device_allocations"] = mallocs
    if timed_out:
        r["truncated"] = f"stopped after {secs(timeout)} s"
    return r


def profile_glimmer(glimmer_run: Path, program: Path, weights: Path, data: Path, work: Path,
                    timeout: float, backend: str, steps: int = 3, tf32: bool = False) -> str:
    """A separate, untimed run with GLIMMER_PROFILE=1 (CUDA events around
    every runtime op slow the step down): the runtime's table of device time
    per op over `steps` - 1 steps (its first step is a warm-up)."""
    local = work / ("profile-" + program.name)
    shutil.copyfile(program, local)
    local.with_suffix(".so").unlink(missing_ok=True)
    log = work / (local.stem + ".log")
    cmd = [str(glimmer_run), str(local), f"--weights={weights}", f"--data={data}",
           f"--backend={backend}", f"--steps={steps}", "--timeout=300"] + (
               ["--tf32"] if tf32 else [])
    print("$ GLIMMER_PROFILE=1 NCCL_NVLS_ENABLE=0 " + " ".join(cmd), flush=True)
    env = nvls_env()
    env["GLIMMER_PROFILE"] = "1"
    with open(log, "w") as f:
        try:
            subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=timeout,
                           start_new_session=True)
        except subprocess.TimeoutExpired:
            return f"profile run stopped after {secs(timeout)} s"
    text = log.read_text(errors="replace")
    start = text.find("device time per step by op")
    if start < 0:
        return "no profile in the log: " + " ".join(text.strip().splitlines()[-1:])
    return "\n".join(l for l in text[start:].splitlines() if l.startswith(("|", "device")))


_SAC_KEEP = None


def _sac_policy(ctx, op, *args, **kwargs):
    from torch.utils.checkpoint import CheckpointPolicy
    return (CheckpointPolicy.MUST_SAVE if op in _SAC_KEEP
            else CheckpointPolicy.PREFER_RECOMPUTE)


def _sac_context():
    from torch.utils.checkpoint import create_selective_checkpoint_contexts
    return create_selective_checkpoint_contexts(_sac_policy)


def checkpointed(block, mode: str):
    """`block` under activation checkpointing, as torchtitan applies it:
    "full" recomputes the block's whole forward in its backward; "selective"
    keeps its GEMM and attention outputs and recomputes the rest (norms,
    activations, elementwise). One wrapper class for every block: a class per
    block would make torch.compile recompile for each (its guards check the
    module's type) until its recompile limit sends the rest to eager."""
    global _SAC_KEEP
    import torch

    if _SAC_KEEP is None:
        aten = torch.ops.aten
        _SAC_KEEP = {aten.mm.default, aten.addmm.default, aten.bmm.default,
                     aten._scaled_dot_product_flash_attention.default,
                     aten._scaled_dot_product_efficient_attention.default,
                     aten._scaled_dot_product_cudnn_attention.default}

    return _checkpointed_class()(block, mode == "selective")


_CHECKPOINTED = None


def _checkpointed_class():
    global _CHECKPOINTED
    if _CHECKPOINTED is None:
        import torch
        from torch.utils.checkpoint import checkpoint

        class Checkpointed(torch.nn.Module):
            def __init__(self, block, selective: bool):
                super().__init__()
                self.block = block
                self.selective = selective

            def forward(self, *args):
                if self.selective:
                    return checkpoint(self.block, *args, use_reentrant=False,
                                      context_fn=_sac_context)
                return checkpoint(self.block, *args, use_reentrant=False)

        _CHECKPOINTED = Checkpointed
    return _CHECKPOINTED


def prepare_torch_blocks(model, per_block: bool, ac: str):
    """torchtitan's recipe: each decoder and vision block wrapped for
    activation checkpointing (ac: "full" or "selective") and compiled on its
    own (per_block)."""
    import torch

    for blocks in (model.layers, model.vision.layers):
        for i in range(len(blocks)):
            block = checkpointed(blocks[i], ac) if ac != "none" else blocks[i]
            blocks[i] = torch.compile(block) if per_block else block
    return model


def time_torch(model, batch, steps: int, warmup: int, device: str, dtype: str,
               deadline: float | None = None, compiled: bool = False,
               tf32: bool = False, per_block: bool = False, ac: str = "none") -> dict:
    """PyTorch training from `model`'s (CPU) initial weights, which are left
    untouched. dtype bf16: the forward under torch.autocast(bf16), f32
    parameters, gradients and AdamW state (torch_train_oracle.py's recipe).
    compiled: the model under torch.compile (default mode) and the fused
    AdamW, what a user who wants speed runs; its compilation happens in the
    warmup steps; per_block: each block compiled on its own instead of the
    whole model (torchtitan's way); ac: "full" or "selective" activation
    checkpointing of each block. tf32: f32 matrix products (and cuDNN convolutions) on
    TF32 tensor cores, as glimmer-run --tf32."""
    import torch

    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
    model = copy.deepcopy(model).to(dev).train()
    batch = {k: v.to(dev) for k, v in batch.items()}
    params = [p for p in model.parameters() if p.requires_grad]
    o = OPTIMIZER
    opt = torch.optim.AdamW(params, lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"],
                            weight_decay=o["weight_decay"],
                            **({"fused": True} if compiled and cuda else {}))
    if compiled and per_block or ac != "none":
        model = prepare_torch_blocks(model, compiled and per_block, ac)
    if compiled and not per_block:
        model = torch.compile(model)
    autocast = torch.autocast(dev.type, dtype=torch.bfloat16, enabled=dtype == "bf16")
    ms, wall, losses, norms = [], [], [], []
    loss = norm = None
    t_start = time.perf_counter()
    for i in range(warmup + steps):
        if i > 0 and deadline is not None and time.perf_counter() > deadline:
            break
        sync()
        if cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        if cuda:
            start.record()
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = model(**batch)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(params, o["max_norm"])
        opt.step()
        if cuda:
            end.record()
        sync()
        wall.append(time.perf_counter() - t0)
        ms.append(start.elapsed_time(end) if cuda else wall[-1] * 1e3)
        losses.append(loss.item())
        norms.append(norm.item())
    peak = torch.cuda.max_memory_allocated(dev) / 2**30 if cuda else None
    del model, batch, params, opt, loss, norm
    if compiled:
        torch._dynamo.reset()  # drop the compiled graphs and their buffers
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    timed = [m / 1e3 for m in ms[warmup:]]
    if not timed:
        return {"error": f"stopped at the --budget deadline after {len(ms)} step(s)",
                "loss": losses, "grad_norm": norms}
    r = {"median_s": statistics.median(timed), "min_s": min(timed), "max_s": max(timed),
         "timed_steps": len(timed), "step_seconds": [m / 1e3 for m in ms],
         "wall_step_seconds": wall, "loss": losses, "grad_norm": norms,
         "wall_s": time.perf_counter() - t_start, "max_memory_gib": peak}
    if len(ms) < warmup + steps:
        r["truncated"] = "stopped at the --budget deadline"
    return r


# glimmer-run --cuda-graph, a framework of its own in the results.
GRAPH = "glimmer (CUDA graph)"

# Time kept for each measurement still to come when the --budget is shared
# out (a glimmer-run: start, build at -O0, load weights, a few steps).
RESERVE_S = {"glimmer": 40.0, GRAPH: 40.0, "PyTorch eager": 20.0, "torch.compile": 60.0}


def matmul_peak_tflops(dtype: str, device: str, tf32: bool = False) -> float | None:
    """The GPU's achievable dense-GEMM rate in this dtype (f32 with TF32 off
    unless `tf32`), measured here: the denominator of MFU."""
    import torch
    if not device.startswith("cuda"):
        return None
    torch.backends.cuda.matmul.allow_tf32 = tf32
    n = 8192
    dt = torch.bfloat16 if dtype == "bf16" else torch.float32
    a = torch.randn(n, n, device=device, dtype=dt)
    b = torch.randn(n, n, device=device, dtype=dt)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    reps = 20 if dtype == "bf16" else 5
    start.record()
    for _ in range(reps):
        a @ b
    end.record()
    torch.cuda.synchronize()
    seconds = start.elapsed_time(end) / 1e3 / reps
    del a, b
    torch.cuda.empty_cache()
    return 2 * n**3 / seconds / 1e12


def cmd_run(a):
    t_run = time.perf_counter()
    deadline = t_run + a.budget
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _stop)
    import torch
    from safetensors.torch import save_file

    dtypes = parse_dtypes(a.dtypes)
    d = Path(a.dir)
    config = json.loads((d / "config.json").read_text())
    programs = config_programs(config)
    name = config["name"]
    B, T = config["batch"]["batch"], config["batch"]["seq_len"]
    tokens = B * T
    flops = model_flops(config)["step"]
    work = Path(a.work or Path(tempfile.gettempdir()) / f"glimmer-bench-{name}")
    work.mkdir(parents=True, exist_ok=True)
    glimmer_run = find_glimmer_run(Path(a.runtime_build))
    cuda = a.backend == "cuda"
    gpus = torch.cuda.device_count() if cuda else 0
    if cuda and gpus < 1:
        sys.exit("no CUDA device visible to PyTorch")

    t0 = time.perf_counter()
    model, batch = build(config)
    sd = state_dict_of(model)
    checks = {"batch": tensors_sha256(batch) == config["checksums"]["batch"],
              "weights": config["checksums"]["weights"] is not None
              and tensors_sha256(sd) == config["checksums"]["weights"]}
    if not checks["batch"]:
        msg = ("the regenerated batch differs from the one the programs were compiled for "
               "(checksum mismatch: another torch version or a changed make_batch?)")
        if not a.no_verify:
            sys.exit(msg)
        print("warning: " + msg, file=sys.stderr)
    if config["checksums"]["weights"] is None:
        checks["weights"] = "made here (the programs were compiled from a meta-device export)"
    elif not checks["weights"]:
        print("warning: the regenerated initial weights differ from prepare's (checksum); "
              "glimmer and PyTorch still start from the same weights here", file=sys.stderr)
    weights = work / f"{name}.weights.safetensors"
    data = work / f"{name}.batch.safetensors"
    save_file(sd, str(weights), metadata={"format": "pt"})
    save_file(batch, str(data))
    del sd
    print(f"regenerated {name} ({sum(p.numel() for p in model.parameters()) / 1e6:.1f} M "
          f"parameters, batch {B} x {T}) in {time.perf_counter() - t0:.1f} s; "
          f"checksums: {checks}", flush=True)

    # What to measure, in order: per dtype, its glimmer programs, then PyTorch.
    # PyTorch runs once per its dtype (bf16 and bf16-autocast share autocast).
    plan = []  # (dtype, framework, layout, config entry)
    for dtype in dtypes:
        progs = programs.get(dtype) or {}
        if not progs:
            print(f"note: {d / 'config.json'} has no {dtype} programs "
                  f"(prepare --dtypes {dtype}); timing PyTorch only", file=sys.stderr)
        runs = {"off": ["glimmer"], "on": [GRAPH], "both": ["glimmer", GRAPH]}[a.cuda_graph]
        plan += [(dtype, fw, layout, entry) for layout, entry in progs.items() for fw in runs]
        peer = torch_dtype(dtype)
        if not a.skip_torch and not any(p[0] == peer and p[1] not in ("glimmer", GRAPH)
                                        for p in plan):
            if not a.skip_eager:
                plan.append((peer, "PyTorch eager", "", None))
            if a.compile_dtypes and peer in map(torch_dtype, parse_dtypes(a.compile_dtypes)):
                plan.append((peer, "torch.compile", "", None))

    device_name = torch.cuda.get_device_name(0) if cuda else "cpu (ranks as threads)"
    # The denominator of MFU: this GPU's dense GEMM rate per dtype, measured.
    peaks = {dt: matmul_peak_tflops(dt, "cuda:0" if cuda else "cpu", a.tf32 and dt == "f32")
             for dt in dict.fromkeys(map(torch_dtype, dtypes))}
    if cuda:
        print("measured GEMM peak (8192^3, TFLOP/s): "
              + ", ".join(f"{dt} {v:.0f}" for dt, v in peaks.items()), flush=True)
    results = []  # {"dtype", "layout", "gpus", "framework", **result}
    out = Path(a.json) if a.json else work / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)

    def save():  # after every measurement, so a run stopped from outside keeps what it has
        record = {"config": config, "checksums_ok": checks, "dtypes": dtypes, "steps": a.steps,
                  "warmup": a.warmup, "budget_s": a.budget,
                  "wall_s": round(time.perf_counter() - t_run, 1), "backend": a.backend,
                  "device": device_name, "gpus": gpus, "torch": torch.__version__,
                  "gemm_peak_tflops": peaks, "results": results}
        out.write_text(json.dumps(record, indent=2) + "\n")

    for i, (dtype, fw, layout, entry) in enumerate(plan):
        left = deadline - time.perf_counter() - sum(RESERVE_S[p[1]] for p in plan[i + 1:])
        need = 1
        if fw in ("glimmer", GRAPH):
            spmd = variant_layout(layout, entry)
            m = re.fullmatch(r"cp=(\d+)", spmd)
            need = int(m.group(1)) if m else (2 if spmd else 1)  # cp=N: N GPUs
            program = d / entry["program"]
            if cuda and need > gpus:
                r = {"error": f"needs {need} GPUs, {gpus} visible"}
            elif dtype != "f32" and not cuda:
                r = {"skipped": f"{dtype} programs run on --backend=cuda only"}
            elif not program.is_file():
                r = {"error": f"{program} is missing (prepare --dtypes {dtype})"}
            elif left < 15:
                r = {"error": f"not started: the {a.budget:.0f} s --budget is used up"}
            else:
                r = time_glimmer(glimmer_run, program, weights, data, work,
                                 a.steps, a.warmup, min(a.timeout, left), a.backend,
                                 tf32=a.tf32 and dtype == "f32", cuda_graph=fw == GRAPH)
                if (a.profile and fw == "glimmer" and not spmd and "median_s" in r
                        and deadline - time.perf_counter() > 60):
                    r["profile"] = profile_glimmer(glimmer_run, program, weights, data, work,
                                                   min(a.timeout, 120.0), a.backend,
                                                   tf32=a.tf32 and dtype == "f32")
        else:
            if left < 5:
                r = {"error": f"not started: the {a.budget:.0f} s --budget is used up"}
            else:
                try:
                    r = time_torch(model, batch, a.steps, a.warmup, "cuda:0" if cuda else "cpu",
                                   dtype, deadline=time.perf_counter() + left,
                                   compiled=fw == "torch.compile",
                                   tf32=a.tf32 and dtype == "f32",
                                   per_block=a.torch_compile == "per-block",
                                   ac=a.torch_ac)
                except Exception as e:  # e.g. out of memory: still report glimmer's numbers
                    r = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
                    gc.collect()
                    if cuda:
                        torch.cuda.empty_cache()
        results.append({"dtype": dtype, "layout": layout, "gpus": need, "framework": fw, **r})
        status = r.get("median_s", r.get("error", r.get("skipped")))
        print(f"{fw} {dtype} {variant_label(layout)}: {status}"
              + (f" ({r['truncated']})" if "truncated" in r else ""), flush=True)
        save()

    refs = {x["dtype"]: x for x in results
            if x["framework"] == "PyTorch eager" and "median_s" in x}
    compiled = {x["dtype"]: x for x in results
                if x["framework"] == "torch.compile" and "median_s" in x}
    title = (f"{name}: dim {config['model']['dim']}, {config['model']['n_layers']} layers, "
             f"batch {B} x seq {T}, {config['batch']['images_per_sample']} image(s)/sample, "
             f"{', '.join(dtypes)}"
             + (" (bf16: f32 master weights, bf16 compute; bf16-autocast: with "
                "autocast's f32 norms and residual stream)" if "bf16" in dtypes
                or "bf16-autocast" in dtypes else "")
             + (", f32 GEMMs in TF32 (--tf32), " if a.tf32 else ", TF32 off, ")
             + f"AdamW + clip 1.0; median of {a.steps} steps after {a.warmup} warmup"
             + f"; torch.compile: {a.torch_compile}"
             + (f", PyTorch with {a.torch_ac} AC" if a.torch_ac != "none" else ""))
    n_steps = a.warmup + a.steps
    print()
    print(f"### {title}")
    print()
    print("| config | dtype | layout | GPUs | framework | step time (ms) | tokens/s "
          "| vs torch.compile | model TFLOP/s | MFU | peak memory (GiB) | loss step 1 "
          "| grad norm step 1 "
          f"| step-1 loss vs PyTorch, same dtype (rel) | loss step {n_steps} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for x in results:
        head = f"| {name} T={T} | {x['dtype']} | {variant_label(x['layout'])} | {x['gpus']} " \
               f"| {x['framework']} "
        if "median_s" not in x:
            what = f"error: {x['error']}" if "error" in x else f"skipped: {x['skipped']}"
            print(head + f"| {what} | | | | | | | | | |")
            continue
        s = x["median_s"]
        step_ms = f"{s * 1e3:.1f}" + (f" ({x['timed_steps']} steps)"
                                      if x["timed_steps"] < a.steps else "")
        rel = ""
        ref = refs.get(torch_dtype(x["dtype"]))
        if ref is not None and x["framework"] != "PyTorch eager":
            rel = f"{abs(x['loss'][0] - ref['loss'][0]) / abs(ref['loss'][0]):.1e}"
        last = f"{x['loss'][-1]:.7f}" + (f" (step {len(x['loss'])})"
                                         if len(x["loss"]) != n_steps else "")
        versus = ""
        if torch_dtype(x["dtype"]) in compiled:
            versus = f"{compiled[torch_dtype(x['dtype'])]['median_s'] / s:.2f}x"
        peak = peaks.get(torch_dtype(x["dtype"]))
        mfu = f"{flops / s / 1e12 / (peak * x['gpus']):.0%}" if peak else ""
        gib = x.get("max_memory_gib")
        # Small configurations (a CPU dry run) differ below 0.1 GiB.
        mem = "" if gib is None else f"{gib:.1f}" if gib >= 1 else f"{gib:.3f}"
        print(head + f"| {step_ms} | {tokens / s:,.0f} | {versus} | {flops / s / 1e12:.1f} "
              f"| {mfu} | {mem} | {x['loss'][0]:.7f} | {x['grad_norm'][0]:.7g} | {rel} "
              f"| {last} |")
    for x in results:
        if "host_wait_median_s" in x:
            w = x["host_wait_median_s"]
            print(f"{x['framework']} {x['dtype']} {variant_label(x['layout'])}: the host waited "
                  f"{w * 1e3:.1f} ms of the {x['median_s'] * 1e3:.1f} ms step for the device "
                  f"(median), so it queued the step's work in about "
                  f"{(x['median_s'] - w) * 1e3:.1f} ms"
                  + (f"; {'cudaMalloc' if cuda else 'system allocator'} calls per timed "
                     f"step: {x['device_allocations']}"
                     if "device_allocations" in x else ""))
    for x in results:
        if "profile" in x:
            print()
            print(f"glimmer {x['dtype']} {variant_label(x['layout'])}, "
                  "device time per runtime op (a separate GLIMMER_PROFILE run):")
            print()
            print(x["profile"])
    print()
    print(f"model FLOPs per step: {flops / 1e12:.2f} TFLOP "
          f"(attention {model_flops(config)['attention_share']:.0%} of them); "
          f"device: {device_name} x {max(gpus, 1)}; torch {torch.__version__}; "
          "step-1 loss agreement expected: ~1e-4 (f32), ~1e-2 (bf16)")
    compile_s = {f"{dt} {variant_label(l)}": e["seconds"]
                 for dt, progs in programs.items() if dt in dtypes for l, e in progs.items()}
    print(f"compile time on the build machine (glimmer-train, s): {compile_s}")
    save()
    print(f"wrote {out}; run took {time.perf_counter() - t_run:.0f} s "
          f"(--budget {a.budget:.0f} s)")
    if any("error" in x for x in results):
        return 1
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("prepare", help="build machine: trace, compile, write config.json")
    p.add_argument("--out", required=True, help="directory for config.json and the programs")
    p.add_argument("--name", default="medium")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vocab", type=int, default=32000, help="image_token_id is vocab - 1")
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--ffn", type=int, default=0, help="SwiGLU width (default: torchtitan's for 4*dim)")
    p.add_argument("--rope-theta", type=float, default=500000.0)
    p.add_argument("--seq", type=int, default=8192)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--images", type=int, default=None,
                   help="images per sample (default: --image-share of the sequence)")
    p.add_argument("--image-share", type=float, default=0.5)
    p.add_argument("--trace-seq", type=int, default=0,
                   help="trace on a batch of this sequence length (images scaled alike) "
                   "and compile for --seq: for sequences whose eager CPU trace does not "
                   "fit in the build machine's memory (T=32768 needs ~70 GB)")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--patch-size", type=int, default=14)
    p.add_argument("--vision-dim", type=int, default=1024)
    p.add_argument("--vision-layers", type=int, default=4)
    p.add_argument("--vision-heads", type=int, default=16)
    p.add_argument("--vision-mlp", type=int, default=4096)
    p.add_argument("--layouts", default=";cp=2", help="';'-separated glimmer-train --spmd layouts")
    p.add_argument("--dtypes", default="f32,bf16",
                   help="','-separated glimmer-train --dtype values to compile each layout for "
                   "(f32, bf16)")
    p.add_argument("--ac", default="",
                   help="','-separated glimmer-train --ac modes (none, selective, full): "
                   "each layout is compiled once per mode, and run times them side by side")
    p.add_argument("--train-args", default="",
                   help="more glimmer-train flags for every program (e.g. '--ac=selective'), "
                   "recorded in config.json")
    p.add_argument("--glimmer-train", default=str(ROOT / "build" / "bin" / "glimmer-train"))
    p.add_argument("--max-artifact-mb", type=float, default=20,
                   help="keep the .pt, weights and batch in --out only below this size")
    p.add_argument("--tmp", default=None, help="where the large artifacts go meanwhile")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads for the trace")
    p.add_argument("--export", action="store_true",
                   help="compile from a torch.export of the model built on the meta device "
                        "(no weights on this machine: any size compiles) instead of a trace")
    p.set_defaults(fn=cmd_prepare)

    r = sub.add_parser("run", help="GPU machine: regenerate, time glimmer-run and PyTorch")
    r.add_argument("--dir", required=True, help="what prepare wrote")
    r.add_argument("--runtime-build", required=True, help="runtime build dir with glimmer-run")
    r.add_argument("--dtypes", default="f32,bf16",
                   help="','-separated: time these dtypes' programs (those config.json lists) "
                   "and PyTorch eager in each (bf16: autocast)")
    r.add_argument("--steps", type=int, default=8, help="timed steps per measurement")
    r.add_argument("--warmup", type=int, default=2, help="untimed steps before them")
    r.add_argument("--budget", type=float, default=330,
                   help="seconds for the whole run: each glimmer-run gets what is left less "
                   f"{RESERVE_S['glimmer']:.0f} s per glimmer-run and "
                   f"{RESERVE_S['PyTorch eager']:.0f} s per PyTorch run still to come "
                   "(at most --timeout), PyTorch stops early at the same deadline")
    r.add_argument("--work", default=None, help="for weights, batch, .so, logs "
                   "(default: $TMPDIR/glimmer-bench-NAME)")
    r.add_argument("--json", default=None, help="results file (default: WORK/results.json)")
    r.add_argument("--timeout", type=float, default=240,
                   help="seconds per glimmer-run at most (see --budget)")
    r.add_argument("--skip-torch", action="store_true")
    r.add_argument("--skip-eager", action="store_true",
                   help="time torch.compile but not PyTorch eager")
    r.add_argument("--torch-compile", choices=["whole", "per-block"], default="whole",
                   help="torch.compile the whole model, or each decoder and vision block "
                   "on its own (torchtitan)")
    r.add_argument("--torch-ac", choices=["none", "full", "selective"], default="none",
                   help="PyTorch's blocks under activation checkpointing: full (each "
                   "block's forward recomputed in its backward) or selective (GEMM and "
                   "attention outputs kept, the rest recomputed)")
    r.add_argument("--tf32", action="store_true",
                   help="f32 GEMMs on TF32 tensor cores: glimmer-run --tf32 and PyTorch's "
                   "allow_tf32 (f32 programs; bf16 ones are not affected)")
    r.add_argument("--cuda-graph", choices=["off", "on", "both"], default="off",
                   help="glimmer-run --cuda-graph (the step captured once as a CUDA graph "
                   "and replayed): off, on, or both (each glimmer program timed twice)")
    r.add_argument("--profile", action="store_true",
                   help="after each unsharded glimmer measurement, a separate 3-step run "
                   "with GLIMMER_PROFILE=1: the runtime's device time per op")
    r.add_argument("--compile-dtypes", default="bf16",
                   help="','-separated dtypes in which torch.compile (with the fused AdamW) "
                   "is timed too, after eager ('' for none)")
    r.add_argument("--backend", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: a dry run of the whole script on the build machine (tiny configs)")
    r.add_argument("--no-verify", action="store_true", help="warn on a batch checksum mismatch")
    r.set_defaults(fn=cmd_run)

    a = ap.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
