#!/usr/bin/env python3
"""A generated image-caption set the reference VLM can learn, as training
shards.

    python examples/data/shapes.py OUTDIR [--shards 48] [--batch 8] [--seed 0]

Each image is 16x16 RGB: one shape (square, circle, triangle or cross) in
one colour (red, green, blue or yellow) in one quadrant (top/bottom,
left/right) over a noisy background, jittered in place and shade. Its
caption says what and where: "a red circle at the top left". A word-level
tokenizer turns captions into ids; each sequence packs PAIRS image-caption
pairs (the image's 16 patch tokens, then its caption and an end token);
labels are the next token on caption positions and -100 on image tokens, so
the loss is the caption's. Shards are safetensors files with the reference
VLM's forward arguments (tokens, labels, positions, images), one global
batch each, OUTDIR/train/shard-00000.safetensors, ... (the order training
reads them in: `glimmer-train --data=OUTDIR/train`);
OUTDIR/heldout.safetensors holds images and captions drawn with another
seed, for evaluation. Everything is drawn from --seed: the same
command writes the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file

COLOURS = {"red": (0.9, 0.1, 0.1), "green": (0.1, 0.8, 0.2),
           "blue": (0.15, 0.25, 0.95), "yellow": (0.95, 0.85, 0.1)}
SHAPES = ("square", "circle", "triangle", "cross")
ROWS = ("top", "bottom")
COLUMNS = ("left", "right")
WORDS = ["<pad>", "<end>", "a", "at", "the", *COLOURS, *SHAPES, *ROWS, *COLUMNS]
IMAGE_SIZE, PATCH = 16, 8
PATCHES = (IMAGE_SIZE // PATCH) ** 2
CAPTION = 8  # "a COLOUR SHAPE at the ROW COLUMN <end>"
PAIRS = 4
SEQ = PAIRS * (PATCHES + CAPTION)
VOCAB = 32
IMAGE_TOKEN = VOCAB - 1
# Which caption word (by position in the caption) names which attribute.
ATTRIBUTES = {"colour": 1, "shape": 2, "row": 5, "column": 6}


def model_config():
    """The reference VLM's configuration for this set (examples/models)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
    import reference_vlm

    return reference_vlm.VLMConfig(
        vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, n_kv_heads=2,
        ffn_hidden_dim=128, image_token_id=IMAGE_TOKEN, image_size=IMAGE_SIZE,
        patch_size=PATCH, vision_dim=32, n_vision_layers=1, n_vision_heads=4,
        vision_mlp_dim=64)


def encode(caption: str) -> list[int]:
    return [WORDS.index(w) for w in caption.split()] + [WORDS.index("<end>")]


def render(rng: np.random.Generator, colour: str, shape: str, row: int,
           column: int) -> np.ndarray:
    """One [3, 16, 16] image: the shape in its quadrant, jittered by a
    pixel, its colour shaded, over noise."""
    img = rng.normal(0.0, 0.08, (3, IMAGE_SIZE, IMAGE_SIZE)) + 0.2
    half = IMAGE_SIZE // 2
    cy = row * half + half / 2 - 0.5 + rng.integers(-1, 2)
    cx = column * half + half / 2 - 0.5 + rng.integers(-1, 2)
    y, x = np.mgrid[0:IMAGE_SIZE, 0:IMAGE_SIZE].astype(np.float64)
    dy, dx = y - cy, x - cx
    if shape == "square":
        mask = (np.abs(dy) <= 2.5) & (np.abs(dx) <= 2.5)
    elif shape == "circle":
        mask = dy * dy + dx * dx <= 2.8 ** 2
    elif shape == "triangle":
        mask = (dy >= -2.5) & (dy <= 2.5) & (np.abs(dx) <= (dy + 2.5) / 2)
    else:  # cross
        mask = ((np.abs(dy) <= 0.6) & (np.abs(dx) <= 3)) | \
               ((np.abs(dx) <= 0.6) & (np.abs(dy) <= 3))
    shade = rng.uniform(0.8, 1.1)
    for c, value in enumerate(COLOURS[colour]):
        img[c][mask] = value * shade
    return img.astype(np.float32)


def draw(rng: np.random.Generator):
    """An image and its caption."""
    colour = list(COLOURS)[rng.integers(4)]
    shape = SHAPES[rng.integers(4)]
    row, column = int(rng.integers(2)), int(rng.integers(2))
    caption = f"a {colour} {shape} at the {ROWS[row]} {COLUMNS[column]}"
    return render(rng, colour, shape, row, column), caption


def pack(images, captions):
    """Sequences of PAIRS (image, caption) pairs, in order."""
    n = len(captions) // PAIRS
    tokens = torch.zeros(n, SEQ, dtype=torch.long)
    labels = torch.full((n, SEQ), -100, dtype=torch.long)
    for i, caption in enumerate(captions):
        b, at = divmod(i, PAIRS)
        start = at * (PATCHES + CAPTION)
        ids = encode(caption)
        tokens[b, start:start + PATCHES] = IMAGE_TOKEN
        tokens[b, start + PATCHES:start + PATCHES + len(ids)] = torch.tensor(ids)
        # The last image token predicts the caption's first word; each word
        # the next; the end token nothing.
        first = start + PATCHES - 1
        labels[b, first:first + len(ids)] = torch.tensor(ids)
    positions = torch.arange(SEQ).expand(n, SEQ).contiguous()
    return {"tokens": tokens, "labels": labels, "positions": positions,
            "images": torch.from_numpy(np.stack(images))}


def generate(out: Path, shards: int, batch: int, heldout: int, seed: int):
    (out / "train").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for s in range(shards):
        drawn = [draw(rng) for _ in range(batch * PAIRS)]
        save_file(pack(*zip(*drawn)), str(out / "train" / f"shard-{s:05d}.safetensors"))
    rng = np.random.default_rng(seed + 1_000_003)
    drawn = [draw(rng) for _ in range(heldout)]
    images, captions = zip(*drawn)
    save_file({"images": torch.from_numpy(np.stack(images)),
               "captions": torch.tensor([encode(c) for c in captions])},
              str(out / "heldout.safetensors"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--shards", type=int, default=48)
    parser.add_argument("--batch", type=int, default=8,
                        help="sequences per shard (each holds %d pairs)" % PAIRS)
    parser.add_argument("--heldout", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    generate(args.out, args.shards, args.batch, args.heldout, args.seed)


if __name__ == "__main__":
    main()
