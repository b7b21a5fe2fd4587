"""Training step time on GPUs: glimmer-run --backend=cuda against PyTorch eager.

Two halves, because the GPU machine has the runtime but no compiler (no LLVM)
and receives only small files:

  prepare (build machine, the repository's .venv):
    .venv/bin/python bench/gpu_step_time.py prepare --out bench/.gpu/medium
        [--seq 8192 --batch 1 --images N --dim 1024 --layers 8 ...]

    Builds the reference VLM (examples/models/reference_vlm.py) at a
    "medium" configuration, draws a batch with make_batch, traces the model
    to TorchScript as examples/fixtures/generate.py does (torch.jit.trace of
    forward -> scalar loss), and compiles it with glimmer-train (f32, AdamW
    lr 1e-3, weight decay 0.01, clipping at 1.0, --steps=0 --emit-cpp) for
    the layouts "" and "cp=2" into OUT/medium.f32.cpp and
    OUT/medium.f32.cp2.cpp. Writes OUT/config.json: the model config, the
    batch recipe, the seed, the optimizer, SHA-256 checksums of the batch and
    of the initial weights, and the measured compile times. The .pt, the
    weights and the batch (about 1.7 GB at the default size) are written to
    a temporary directory and deleted, unless together they are at most
    --max-artifact-mb (20) MB: the GPU side regenerates them from
    config.json.

  run (GPU machine, 2 GPUs, PyTorch with CUDA):
    python3 bench/gpu_step_time.py run --dir bench/.gpu/medium
        --runtime-build /tmp/rt [--steps 10 --warmup 3]

    Regenerates the model, its weights and the batch from config.json (same
    code, same seed; the batch must match the recorded checksum), writes
    them to --work, then times
      * glimmer-run --backend=cuda on the unsharded program (1 GPU),
      * glimmer-run --backend=cuda on the cp=2 program (2 GPUs, NCCL),
      * PyTorch eager training of the same nn.Module on 1 GPU (AdamW lr 1e-3,
        weight decay 0.01, clip_grad_norm_ 1.0, f32 with TF32 off; CUDA
        events around each step, synchronized),
    each for --warmup + --steps steps, and prints a markdown table: median
    step time over the steps after the warmup, tokens/s (batch * seq /
    median step time, all ranks together), model TFLOP/s, and the loss and
    grad norm of step 1 (before any update: glimmer and PyTorch should agree
    to about 1e-4 relative in f32). glimmer's step times are the per-step
    "seconds" of its --metrics file (host clock around a step, which ends
    with a device synchronize). NCCL_NVLS_ENABLE=0 is set for everything.

Sequence length: the default T = 8192 (16 images of 16x16 patches = 50 %
image tokens). Attention is a flash-style kernel in both frameworks (glimmer:
runtime/cuda/Attention.cu, SIMT in f32; PyTorch: the memory-efficient SDPA
kernel, the only one with f32 support), so the score matrix is never
materialized; model FLOPs are about 11 TFLOP per step, i.e. roughly
0.3-1.5 s per step on an H200 in strict f32, and each timed run of 13 steps
takes well under a minute. Programs are compiled for one batch shape: for
another T, run prepare again (--seq, --images) into another directory.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
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


# --------------------------------------------------------------------------
# Shared: configuration, regeneration, checksums
# --------------------------------------------------------------------------


def torchtitan_ffn(dim: int, multiple_of: int = 256) -> int:
    """torchtitan's SwiGLU width for a nominal 4 * dim: 2/3 of it, rounded up."""
    hidden = int(2 * (4 * dim) / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def program_name(name: str, layout: str) -> str:
    """medium.f32.cpp, medium.f32.cp2.cpp (integration_test/make-programs.sh's naming)."""
    suffix = re.sub(r"[=,]", "", layout)
    return f"{name}.f32{'.' + suffix if suffix else ''}.cpp"


def build(config: dict):
    """(model, batch) from config.json's recipe: the only code path both halves use."""
    import reference_vlm as R

    cfg = R.VLMConfig(**config["model"])
    b = config["batch"]
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
        "dtype": "f32",
        "layouts": {},
    }
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(a.threads or torch.get_num_threads())

    t0 = time.perf_counter()
    model, batch = build(config)
    n_params = sum(p.numel() for p in model.parameters())
    sd = state_dict_of(model)
    config["checksums"] = {"batch": tensors_sha256(batch), "weights": tensors_sha256(sd)}
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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(model, tuple(batch[k] for k in INPUT_NAMES),
                                     check_trace=False, strict=False)
        t_trace = time.perf_counter() - t0
        pt = art / f"{a.name}.pt"
        torch.jit.save(traced, str(pt))
        data = art / f"{a.name}.batch.safetensors"
        save_file(batch, str(data))
        if small:
            save_file(sd, str(art / f"{a.name}.weights.safetensors"), metadata={"format": "pt"})
        del traced
        print(f"traced in {t_trace:.1f} s ({pt.stat().st_size / 2**20:.0f} MiB .pt"
              f"{'' if small else ', in ' + str(art) + ', not kept'})", flush=True)
        config["trace_seconds"] = round(t_trace, 2)

        cache = art / "cache"
        for layout in [l for l in a.layouts.split(";")]:
            layout = layout.strip()
            name = program_name(a.name, layout)
            shutil.rmtree(cache, ignore_errors=True)  # cold: no cached program
            o = OPTIMIZER
            cmd = [str(train), str(pt), f"--data={data}", "--dtype=f32", "--steps=0",
                   f"--optimizer={o['optimizer']}", f"--lr={o['lr']}",
                   f"--weight-decay={o['weight_decay']}", f"--betas={o['betas'][0]},{o['betas'][1]}",
                   f"--eps={o['eps']}", f"--max-norm={o['max_norm']}",
                   f"--emit-cpp={out / name}", f"--cache-dir={cache}"]
            if layout:
                cmd.append(f"--spmd={layout}")
            print("$ " + " ".join(cmd), flush=True)
            t0 = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True, env=nvls_env())
            seconds = time.perf_counter() - t0
            (out / (name[:-4] + ".compile.log")).write_text(
                "$ " + " ".join(cmd) + "\n" + r.stdout + r.stderr)
            if r.returncode != 0:
                sys.exit(f"glimmer-train failed ({r.returncode}) for layout '{layout}':\n"
                         + (r.stdout + r.stderr)[-4000:])
            source = (out / name).read_text()
            stages = parse_progress(r.stderr)
            # The rest: the pass pipeline (not reported separately), process
            # start, and loading the weights into a trainer for --steps=0.
            stages["other"] = round(seconds - sum(stages.values()), 2)
            entry = {"program": name, "seconds": round(seconds, 2), "stages": stages,
                     "cpp_lines": source.count("\n"), "cpp_bytes": len(source.encode())}
            config["layouts"][layout] = entry
            print(f"layout '{layout or 'unsharded'}': {name}, {entry['cpp_lines']} lines, "
                  f"glimmer-train {seconds:.1f} s {entry['stages']}", flush=True)
    finally:
        shutil.rmtree(art / "cache", ignore_errors=True)
        if tmp is not None:
            tmp.cleanup()

    config["flops"] = model_flops(config)
    config["prepared_with"] = {"torch": torch.__version__, "git": git_state(),
                               "glimmer_train": str(train)}
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
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


def time_glimmer(glimmer_run: Path, program: Path, weights: Path, data: Path, work: Path,
                 steps: int, warmup: int, timeout: float, backend: str) -> dict:
    metrics = work / (program.stem + ".metrics.jsonl")
    metrics.unlink(missing_ok=True)
    # A fresh copy, so glimmer-run builds the .so next to it against this
    # runtime build (it reuses a .so newer than the .cpp).
    local = work / program.name
    shutil.copyfile(program, local)
    local.with_suffix(".so").unlink(missing_ok=True)
    cmd = [str(glimmer_run), str(local), f"--weights={weights}", f"--data={data}",
           f"--backend={backend}", f"--steps={warmup + steps}", f"--metrics={metrics}",
           "--timeout=300"]
    print("$ NCCL_NVLS_ENABLE=0 " + " ".join(cmd), flush=True)
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=nvls_env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    (work / (program.stem + ".log")).write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        tail = (r.stdout + r.stderr)[-3000:]
        print(tail, file=sys.stderr)
        return {"error": f"glimmer-run exit {r.returncode}: {tail.strip().splitlines()[-1:]}"}
    rows = [json.loads(l) for l in metrics.read_text().splitlines() if l.strip()]
    rows = [x for x in rows if x.get("step", 0) >= 1]
    timed = [x["seconds"] for x in rows[warmup:]]
    if not timed:
        return {"error": "no steps after the warmup in the metrics file"}
    return {"median_s": statistics.median(timed), "min_s": min(timed), "max_s": max(timed),
            "step_seconds": [x["seconds"] for x in rows],
            "loss": [x["loss"] for x in rows], "grad_norm": [x["grad_norm"] for x in rows],
            "glimmer_tokens_per_s": statistics.median(x["tokens_per_s"] for x in rows[warmup:]),
            "wall_s": wall}


def time_torch(model, batch, steps: int, warmup: int, device: str) -> dict:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    model = model.to(dev).train()
    batch = {k: v.to(dev) for k, v in batch.items()}
    params = [p for p in model.parameters() if p.requires_grad]
    o = OPTIMIZER
    opt = torch.optim.AdamW(params, lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"],
                            weight_decay=o["weight_decay"])
    ms, wall, losses, norms = [], [], [], []
    t_start = time.perf_counter()
    for _ in range(warmup + steps):
        sync()
        if cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        if cuda:
            start.record()
        opt.zero_grad(set_to_none=True)
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
    timed = [m / 1e3 for m in ms[warmup:]]
    return {"median_s": statistics.median(timed), "min_s": min(timed), "max_s": max(timed),
            "step_seconds": [m / 1e3 for m in ms], "wall_step_seconds": wall,
            "loss": losses, "grad_norm": norms, "wall_s": time.perf_counter() - t_start,
            "max_memory_gib": torch.cuda.max_memory_allocated(dev) / 2**30 if cuda else None}


def cmd_run(a):
    os.environ["NCCL_NVLS_ENABLE"] = "0"
    import torch
    from safetensors.torch import save_file

    d = Path(a.dir)
    config = json.loads((d / "config.json").read_text())
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
              "weights": tensors_sha256(sd) == config["checksums"]["weights"]}
    if not checks["batch"]:
        msg = ("the regenerated batch differs from the one the programs were compiled for "
               "(checksum mismatch: another torch version or a changed make_batch?)")
        if not a.no_verify:
            sys.exit(msg)
        print("warning: " + msg, file=sys.stderr)
    if not checks["weights"]:
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

    results = []  # (layout, gpus, framework, result)
    for layout, entry in config["layouts"].items():
        need = 2 if layout else 1  # cp=N: N GPUs
        m = re.fullmatch(r"cp=(\d+)", layout)
        if m:
            need = int(m.group(1))
        if cuda and need > gpus:
            results.append((layout, need, "glimmer", {"error": f"needs {need} GPUs, {gpus} visible"}))
            continue
        r = time_glimmer(glimmer_run, d / entry["program"], weights, data, work,
                         a.steps, a.warmup, a.timeout, a.backend)
        results.append((layout, need, "glimmer", r))
        print(f"glimmer {layout or 'unsharded'}: {r.get('median_s', r.get('error'))}", flush=True)
    if not a.skip_torch:
        try:
            r = time_torch(model, batch, a.steps, a.warmup, "cuda:0" if cuda else "cpu")
        except Exception as e:  # e.g. out of memory: still report glimmer's numbers
            r = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        results.append(("", 1, "PyTorch eager", r))
        print(f"PyTorch eager: {r.get('median_s', r.get('error'))}", flush=True)

    device_name = torch.cuda.get_device_name(0) if cuda else "cpu (ranks as threads)"
    ref = next((r for l, _, f, r in results if f == "PyTorch eager" and "error" not in r), None)
    title = (f"{name}: dim {config['model']['dim']}, {config['model']['n_layers']} layers, "
             f"batch {B} x seq {T}, {config['batch']['images_per_sample']} image(s)/sample, "
             f"f32, AdamW + clip 1.0; median of {a.steps} steps after {a.warmup} warmup")
    print()
    print(f"### {title}")
    print()
    print("| config | layout | GPUs | framework | step time (ms) | tokens/s | model TFLOP/s "
          "| loss step 1 | grad norm step 1 | step-1 loss vs PyTorch (rel) "
          f"| loss step {a.warmup + a.steps} |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for layout, n, fw, r in results:
        lay = layout or "unsharded"
        if "error" in r:
            print(f"| {name} T={T} | {lay} | {n} | {fw} | error: {r['error']} | | | | | | |")
            continue
        s = r["median_s"]
        rel = ""
        if ref is not None and fw != "PyTorch eager":
            rel = f"{abs(r['loss'][0] - ref['loss'][0]) / abs(ref['loss'][0]):.1e}"
        print(f"| {name} T={T} | {lay} | {n} | {fw} | {s * 1e3:.1f} | {tokens / s:,.0f} "
              f"| {flops / s / 1e12:.1f} | {r['loss'][0]:.7f} | {r['grad_norm'][0]:.7g} | {rel} "
              f"| {r['loss'][-1]:.7f} |")
    print()
    print(f"model FLOPs per step: {flops / 1e12:.2f} TFLOP "
          f"(attention {model_flops(config)['attention_share']:.0%} of them); "
          f"device: {device_name} x {max(gpus, 1)}; torch {torch.__version__}")
    compile_s = {l or "unsharded": e["seconds"] for l, e in config["layouts"].items()}
    print(f"compile time on the build machine (glimmer-train, s): {compile_s}")

    record = {"config": config, "checksums_ok": checks, "steps": a.steps, "warmup": a.warmup,
              "backend": a.backend, "device": device_name, "gpus": gpus, "torch": torch.__version__,
              "results": [{"layout": l, "gpus": n, "framework": f, **r} for l, n, f, r in results]}
    out = Path(a.json) if a.json else work / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {out}")
    if any("error" in r for *_, r in results):
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
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--patch-size", type=int, default=14)
    p.add_argument("--vision-dim", type=int, default=1024)
    p.add_argument("--vision-layers", type=int, default=4)
    p.add_argument("--vision-heads", type=int, default=16)
    p.add_argument("--vision-mlp", type=int, default=4096)
    p.add_argument("--layouts", default=";cp=2", help="';'-separated glimmer-train --spmd layouts")
    p.add_argument("--glimmer-train", default=str(ROOT / "build" / "bin" / "glimmer-train"))
    p.add_argument("--max-artifact-mb", type=float, default=20,
                   help="keep the .pt, weights and batch in --out only below this size")
    p.add_argument("--tmp", default=None, help="where the large artifacts go meanwhile")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads for the trace")
    p.set_defaults(fn=cmd_prepare)

    r = sub.add_parser("run", help="GPU machine: regenerate, time glimmer-run and PyTorch")
    r.add_argument("--dir", required=True, help="what prepare wrote")
    r.add_argument("--runtime-build", required=True, help="runtime build dir with glimmer-run")
    r.add_argument("--steps", type=int, default=10)
    r.add_argument("--warmup", type=int, default=3)
    r.add_argument("--work", default=None, help="for weights, batch, .so, logs "
                   "(default: $TMPDIR/glimmer-bench-NAME)")
    r.add_argument("--json", default=None, help="results file (default: WORK/results.json)")
    r.add_argument("--timeout", type=float, default=240, help="seconds per glimmer-run")
    r.add_argument("--skip-torch", action="store_true")
    r.add_argument("--backend", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: a dry run of the whole script on the build machine (tiny configs)")
    r.add_argument("--no-verify", action="store_true", help="warn on a batch checksum mismatch")
    r.set_defaults(fn=cmd_run)

    a = ap.parse_args()
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
