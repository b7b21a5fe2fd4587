#!/usr/bin/env python3
"""Pipeline schedules on the CPU: idle fraction and kept activations.

Trains the 4-layer reference VLM (examples/fixtures/reference_vlm_4l.pt) on
pp=4 stages with 8 micro-batches, under GPipe and 1F1B, ranks as threads,
and reports per stage (from glimmer's --metrics): the seconds its stage
functions ran, its idle fraction (1 - busy / step time) next to the ideal
(p-1)/(m+p-1) of a balanced pipeline, and the most bytes of boundary
activations it kept between a micro-batch's forward and backward.

    bench/pipeline_schedule.py prepare --out DIR     # needs glimmer-train
    bench/pipeline_schedule.py run DIR [--glimmer-run PATH]
    bench/pipeline_schedule.py all                   # both, here

`prepare` compiles the two programs (C++ for glimmer-run) and writes the
batch and weights, so `run` works on a machine with the runtime only.
Timings need a core per rank: on a machine with fewer cores than ranks the
threads share cores and the idle fractions mean little.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "examples" / "fixtures" / "reference_vlm_4l"
STAGES, MICROBATCHES = 4, 8
DATA = "synthetic:batch=8,seq=64,images=2"
SCHEDULES = ("gpipe", "1f1b")
STEPS = 6


def tool(name, given=None):
    path = given or shutil.which(name) or REPO / "build" / "bin" / name
    if not Path(path).exists():
        sys.exit(f"cannot find {name} (build it, or pass its path)")
    return str(path)


def prepare(out: Path):
    out.mkdir(parents=True, exist_ok=True)
    train = tool("glimmer-train")
    for schedule in SCHEDULES:
        spmd = f"pp={STAGES},microbatches={MICROBATCHES},schedule={schedule}"
        subprocess.run([train, f"{FIXTURE}.pt", f"--data={DATA}", "--seed=3",
                        "--dtype=f32", "--steps=0", f"--spmd={spmd}",
                        f"--emit-cpp={out / (schedule + '.cpp')}", "--quiet"],
                       check=True)
    shutil.copy(f"{FIXTURE}.weights.safetensors", out / "weights.safetensors")
    (out / "config.json").write_text(json.dumps(
        {"stages": STAGES, "microbatches": MICROBATCHES, "data": DATA}))


def run(directory: Path, glimmer_run=None):
    runner = tool("glimmer-run", glimmer_run)
    config = json.loads((directory / "config.json").read_text())
    p, m = config["stages"], config["microbatches"]
    ideal = (p - 1) / (m + p - 1)
    print(f"reference_vlm_4l, pp={p}, {m} micro-batches, {config['data']}, "
          f"f32, {os.cpu_count()} cores; mean of steps 2-{STEPS}")
    print(f"ideal idle fraction of a balanced pipeline (p-1)/(m+p-1) = "
          f"{ideal:.3f}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for schedule in SCHEDULES:
            metrics = Path(tmp) / f"{schedule}.jsonl"
            subprocess.run([runner, str(directory / f"{schedule}.cpp"),
                            f"--weights={directory / 'weights.safetensors'}",
                            f"--data={config['data']}", "--seed=3",
                            f"--steps={STEPS}", f"--metrics={metrics}",
                            f"--cache-dir={tmp}/cache", "--quiet"],
                           check=True, stdout=subprocess.DEVNULL)
            steps = [json.loads(line) for line in metrics.read_text().split("\n")
                     if line.strip()][1:]  # step 1 warms up
            seconds = sum(s["seconds"] for s in steps) / len(steps)
            stages = {}
            for s in steps:
                for r in s["pipeline"]:
                    e = stages.setdefault(r["stage"], {"busy": 0.0, "stash": 0})
                    e["busy"] += r["busy_s"] / len(steps)
                    e["stash"] = max(e["stash"], r["stash_peak_bytes"])
            results[schedule] = (seconds, stages, steps[-1]["loss"])
    for schedule, (seconds, stages, loss) in results.items():
        print(f"\n{schedule}: step {seconds * 1e3:.1f} ms, loss {loss:.6f}")
        print("  stage  busy ms  idle   kept activations (bytes)")
        for stage in sorted(stages):
            e = stages[stage]
            print(f"  {stage:5d}  {e['busy'] * 1e3:7.1f}  {1 - e['busy'] / seconds:5.3f}"
                  f"  {e['stash']:12d}")
    gpipe, onef = results["gpipe"][1], results["1f1b"][1]
    lower = all(onef[s]["stash"] <= gpipe[s]["stash"] for s in gpipe)
    print(f"\n1F1B keeps at most as many activations as GPipe on every stage: "
          f"{lower}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--glimmer-run")
    sub.add_parser("all")
    a = ap.parse_args()
    if a.command == "prepare":
        prepare(a.out)
    elif a.command == "run":
        run(a.dir, a.glimmer_run)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            prepare(Path(tmp))
            run(Path(tmp))


if __name__ == "__main__":
    main()
