"""The main demo: the reference VLM learns to caption generated images,
trained unsharded and under an SPMD layout (ranks as threads on the CPU),
side by side.

usage: demo.py [--spmd=dp_shard=2,cp=2] [--steps=600] [--plot=demo-loss.png]

examples/data/shapes.py draws an image-caption set (a shape of some colour
in some quadrant of a 16x16 image; "a red circle at the top left") and
packs it into shards of the reference VLM's batches; the model
(examples/models/reference_vlm.py, sized for the set) is exported with
torch.export. build/bin/glimmer-train trains it on the shard directory
twice, unsharded and with --spmd, with the same AdamW settings (f64 by
default), each step on the next shard. The demo prints the per-step loss
and grad norm of both runs with their largest difference and the step
through which they agree to 1e-9, checks that the loss fell below half its
start, scores each run's trained weights on held-out images (the
caption's words predicted from the image, per attribute and whole captions)
and writes a PNG of both runs' loss, grad norm and tokens/s (glimmer.plot,
as `glimmer plot` draws them).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("GLIMMER_BUILD_DIR", ROOT / "build"))
sys.path.insert(0, str(ROOT / "examples" / "data"))
sys.path.insert(0, str(ROOT / "examples" / "models"))

import reference_vlm  # noqa: E402
import shapes  # noqa: E402


def log(message):
    print(f"[demo] {message}", file=sys.stderr, flush=True)


def export_model(data: Path, out: Path) -> Path:
    """The reference VLM for the set, its weights drawn with seed 0,
    exported with the first shard as the example batch."""
    from safetensors.torch import load_file

    model = reference_vlm.build_model(shapes.model_config(), seed=0).train()
    example = load_file(str(data / "train" / "shard-00000.safetensors"))
    program = torch.export.export(model, (), example, strict=False)
    path = out / "captioner.pt2"
    torch.export.save(program, str(path))
    return path


def train(model: Path, data: Path, layout: str, steps: int, dtype: str, work: Path):
    label = layout or "unsharded"
    metrics, checkpoint = work / f"{label}.jsonl", work / f"{label}.ckpt"
    cmd = [str(BUILD / "bin" / "glimmer-train"), str(model), f"--data={data / 'train'}",
           f"--steps={steps}", f"--dtype={dtype}", "--optimizer=adamw", "--lr=3e-3",
           "--max-norm=1.0",
           f"--metrics={metrics}", f"--save={checkpoint}", "--quiet"]
    if layout:
        cmd.append(f"--spmd={layout}")
    log(f"glimmer-train {label}: compiling and training {steps} steps")
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    log(f"glimmer-train {label}: done in {time.perf_counter() - start:.0f} s")
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    return rows, checkpoint


def caption_accuracy(checkpoint: Path, heldout: Path):
    """Each held-out image's caption, teacher-forced through the trained
    model: the share of captions whose every word is the model's most
    likely next token, and of each attribute word."""
    from safetensors.torch import load_file

    cfg = shapes.model_config()
    model = reference_vlm.build_model(cfg).eval()
    state = {k: v for k, v in load_file(str(checkpoint)).items()
             if not k.startswith("optimizer.")}
    model.load_state_dict(state, strict=False)
    held = load_file(str(heldout))
    captions, images = held["captions"], held["images"]
    n = captions.shape[0]
    tokens = torch.cat([torch.full((n, shapes.PATCHES), shapes.IMAGE_TOKEN), captions], 1)
    positions = torch.arange(tokens.shape[1]).expand_as(tokens)
    with torch.no_grad():
        h = model.merge_vision(tokens, model.tok_embeddings(tokens), images)
        cos, sin = reference_vlm.rope_cos_sin(positions, cfg.head_dim, cfg.rope_theta)
        for layer in model.layers:
            h = layer(h, cos, sin)
        predicted = model.output(model.norm(h))[:, shapes.PATCHES - 1:-1].argmax(-1)
    right = predicted == captions
    per_attribute = {name: right[:, i].float().mean().item()
                     for name, i in shapes.ATTRIBUTES.items()}
    return right.all(1).float().mean().item(), per_attribute


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spmd", default="dp_shard=2,cp=2")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--dtype", default="f64", choices=["f32", "f64"])
    parser.add_argument("--plot", default="demo-loss.png")
    args = parser.parse_args()
    torch.set_num_threads(1)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "shapes"
        log(f"generating the image-caption set in {data}")
        shapes.generate(data, shards=48, batch=8, heldout=256, seed=0)
        log("exporting the reference VLM with torch.export")
        model = export_model(data, work)
        base, base_ckpt = train(model, data, "", args.steps, args.dtype, work)
        sharded, sharded_ckpt = train(model, data, args.spmd, args.steps, args.dtype, work)
        accuracy = [caption_accuracy(ckpt, data / "heldout.safetensors")
                    for ckpt in (base_ckpt, sharded_ckpt)]

    print()
    print(f"reference VLM captioning generated shapes, AdamW, {args.dtype}: unsharded vs "
          f"--spmd={args.spmd}, {args.steps} steps over 48 shards")
    header = (f"{'step':>5}  {'loss (1 rank)':>18}  {'loss (' + args.spmd + ')':>18}"
              f"  {'grad norm (1 rank)':>18}  {'grad norm (' + args.spmd + ')':>20}")
    print(header)
    print("-" * len(header))
    shown = {1, len(base)} | set(range(0, len(base) + 1, max(1, len(base) // 10)))
    worst_loss = worst_norm = 0.0
    for a, b in zip(base, sharded):
        worst_loss = max(worst_loss, abs(a["loss"] - b["loss"]))
        worst_norm = max(worst_norm, abs(a["grad_norm"] - b["grad_norm"]))
        if a["step"] in shown:
            print(f"{a['step']:>5}  {a['loss']:>18.12f}  {b['loss']:>18.12f}"
                  f"  {a['grad_norm']:>18.12f}  {b['grad_norm']:>20.12f}")
    print("-" * len(header))
    print(f"over all {len(base)} steps: max |loss difference| = {worst_loss:.3e}, "
          f"max |grad norm difference| = {worst_norm:.3e}")
    # Training turns chaotic where the model starts to read the images
    # (docs/Demo.md): rounding differences then grow by orders of magnitude
    # per hundred steps, in any two runs that add in another order.
    agree = next((a["step"] - 1 for a, b in zip(base, sharded)
                  if abs(a["loss"] - b["loss"]) > 1e-9 * abs(a["loss"])), len(base))
    print(f"the two runs agree to 1e-9 (relative) through step {agree}")
    start, end = base[0]["loss"], sum(r["loss"] for r in base[-10:]) / min(10, len(base))
    print(f"loss: {start:.4f} at step 1, {end:.4f} over the last 10 steps "
          f"({end / start:.1%} of the start)")
    for label, (whole, parts) in zip(["unsharded", f"--spmd={args.spmd}"], accuracy):
        words = ", ".join(f"{k} {v:.0%}" for k, v in parts.items())
        print(f"held-out captions ({label}): {whole:.0%} entirely right; {words}")
    sys.path.insert(0, str(BUILD / "python"))
    from glimmer.plot import plot_runs

    plot_runs([("unsharded", base), (f"--spmd={args.spmd}", sharded)], args.plot,
              title=f"Reference VLM captioning generated shapes, AdamW, {args.dtype}")
    print(f"loss, grad norm and tokens/s curves written to {args.plot}")
    if not end < start / 2:
        sys.exit("the loss did not fall below half its start")


if __name__ == "__main__":
    main()
