"""A tiny reference vision-language model, torchtitan style, plain torch.nn.

Vision encoder (ViT: Conv2d patch embedding + learned position embedding +
pre-norm blocks + final LayerNorm) -> projector (Linear, GELU, Linear) ->
vision merge by a cumsum index gather into the token embeddings -> Llama-style
decoder (RMSNorm, GQA attention with repeat_kv, interleaved RoPE on explicit
positions, SwiGLU) -> untied output head -> token-mean cross-entropy.

forward(tokens, labels, positions, images) -> scalar loss

    tokens    [B, T] int64   text ids; image patches are runs of image_token_id
    labels    [B, T] int64   pre-shifted: labels[b, t] is the target of position t,
                             -100 = ignored
    positions [B, T] int64   RoPE positions (arange per sample in make_batch)
    images    [N, C, H, W] float32, all images of the batch in batch order
                             (sample 0's images first, then sample 1's, ...)

The model is written so that torch.jit.trace records no shape arithmetic
(no aten::size / prim::NumToTensor): every reshape uses flatten/unflatten or
-1 with Python-constant sizes from the config.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence, Union

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class VLMConfig:
    # text decoder
    vocab_size: int = 64
    dim: int = 32
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    ffn_hidden_dim: int = 64
    norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    image_token_id: int = 63  # vocab_size - 1
    # vision encoder
    image_size: int = 8
    in_channels: int = 3
    patch_size: int = 4
    vision_dim: int = 32
    n_vision_layers: int = 1
    n_vision_heads: int = 4
    vision_mlp_dim: int = 64
    vision_norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def patches_per_image(self) -> int:
        return (self.image_size // self.patch_size) ** 2


# --------------------------------------------------------------------------
# Vision encoder
# --------------------------------------------------------------------------


class VisionAttention(nn.Module):
    def __init__(self, cfg: VLMConfig):
        super().__init__()
        self.n_heads = cfg.n_vision_heads
        self.head_dim = cfg.vision_dim // cfg.n_vision_heads
        self.wq = nn.Linear(cfg.vision_dim, cfg.vision_dim, bias=True)
        self.wk = nn.Linear(cfg.vision_dim, cfg.vision_dim, bias=True)
        self.wv = nn.Linear(cfg.vision_dim, cfg.vision_dim, bias=True)
        self.wo = nn.Linear(cfg.vision_dim, cfg.vision_dim, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # x: [N, P, Dv] -> [N, heads, P, hd]
        q = self.wq(x).unflatten(-1, (self.n_heads, self.head_dim)).transpose(1, 2)
        k = self.wk(x).unflatten(-1, (self.n_heads, self.head_dim)).transpose(1, 2)
        v = self.wv(x).unflatten(-1, (self.n_heads, self.head_dim)).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=False)
        return self.wo(o.transpose(1, 2).flatten(2))


class VisionFeedForward(nn.Module):
    def __init__(self, cfg: VLMConfig):
        super().__init__()
        self.w1 = nn.Linear(cfg.vision_dim, cfg.vision_mlp_dim, bias=True)
        self.w2 = nn.Linear(cfg.vision_mlp_dim, cfg.vision_dim, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.gelu(self.w1(x), approximate="tanh"))


class VisionBlock(nn.Module):
    def __init__(self, cfg: VLMConfig):
        super().__init__()
        self.attention_norm = nn.LayerNorm(cfg.vision_dim, eps=cfg.vision_norm_eps)
        self.attention = VisionAttention(cfg)
        self.ffn_norm = nn.LayerNorm(cfg.vision_dim, eps=cfg.vision_norm_eps)
        self.feed_forward = VisionFeedForward(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x))
        return x + self.feed_forward(self.ffn_norm(x))


class VisionEncoder(nn.Module):
    def __init__(self, cfg: VLMConfig):
        super().__init__()
        self.patch_embed = nn.Conv2d(
            cfg.in_channels, cfg.vision_dim, kernel_size=cfg.patch_size, stride=cfg.patch_size
        )
        self.pos_embed = nn.Parameter(torch.empty(cfg.patches_per_image, cfg.vision_dim))
        self.layers = nn.ModuleList([VisionBlock(cfg) for _ in range(cfg.n_vision_layers)])
        self.norm = nn.LayerNorm(cfg.vision_dim, eps=cfg.vision_norm_eps)
        nn.init.normal_(self.pos_embed, std=0.02)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(images)  # [N, Dv, h, w]
        x = x.flatten(2).transpose(1, 2)  # [N, P, Dv]
        x = x + self.pos_embed
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


# --------------------------------------------------------------------------
# Text decoder
# --------------------------------------------------------------------------


def rope_cos_sin(positions: torch.Tensor, head_dim: int, theta: float):
    """cos/sin of shape [B, T, 1, head_dim/2], inv_freq computed in-graph."""
    inv_freq = 1.0 / (
        theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32, device=positions.device) / head_dim)
    )
    freqs = positions[..., None].float() * inv_freq  # [B, T, D/2]
    freqs = freqs.unsqueeze(2)  # broadcast over heads
    return freqs.cos(), freqs.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Interleaved-pair rotation of x [B, T, H, D]: pairs (2i, 2i+1), real arithmetic."""
    xp = x.float().unflatten(-1, (-1, 2))  # [B, T, H, D/2, 2]
    x0 = xp.select(-1, 0)
    x1 = xp.select(-1, 1)
    out0 = x0 * cos - x1 * sin
    out1 = x0 * sin + x1 * cos
    return torch.stack([out0, out1], dim=-1).flatten(-2).type_as(x)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[B, T, n_kv, D] -> [B, T, n_kv * n_rep, D] (torchtitan's expand + reshape)."""
    if n_rep == 1:
        return x
    return x.unsqueeze(3).expand(-1, -1, -1, n_rep, -1).flatten(2, 3)


class Attention(nn.Module):
    def __init__(self, cfg: VLMConfig):
        super().__init__()
        self.n_heads = cfg.n_heads
        self.n_kv_heads = cfg.n_kv_heads
        self.n_rep = cfg.n_heads // cfg.n_kv_heads
        self.head_dim = cfg.head_dim
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * self.head_dim, cfg.dim, bias=False)

    def forward(self, x, cos, sin):
        xq = self.wq(x).unflatten(-1, (self.n_heads, self.head_dim))
        xk = self.wk(x).unflatten(-1, (self.n_kv_heads, self.head_dim))
        xv = self.wv(x).unflatten(-1, (self.n_kv_heads, self.head_dim))
        xq = apply_rope(xq, cos, sin)
        xk = apply_rope(xk, cos, sin)
        keys = repeat_kv(xk, self.n_rep)
        values = repeat_kv(xv, self.n_rep)
        q = xq.transpose(1, 2)  # [B, H, T, D]
        k = keys.transpose(1, 2)
        v = values.transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(o.transpose(1, 2).flatten(2))


class FeedForward(nn.Module):
    def __init__(self, cfg: VLMConfig):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.ffn_hidden_dim, bias=False)
        self.w2 = nn.Linear(cfg.ffn_hidden_dim, cfg.dim, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.ffn_hidden_dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, cfg: VLMConfig):
        super().__init__()
        self.attention_norm = nn.RMSNorm(cfg.dim, eps=cfg.norm_eps)
        self.attention = Attention(cfg)
        self.ffn_norm = nn.RMSNorm(cfg.dim, eps=cfg.norm_eps)
        self.feed_forward = FeedForward(cfg)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class ReferenceVLM(nn.Module):
    def __init__(self, cfg: VLMConfig):
        super().__init__()
        self.cfg = cfg
        self.vision = VisionEncoder(cfg)
        self.projector = nn.Sequential(
            nn.Linear(cfg.vision_dim, cfg.dim, bias=True),
            nn.GELU(),
            nn.Linear(cfg.dim, cfg.dim, bias=True),
        )
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList([TransformerBlock(cfg) for _ in range(cfg.n_layers)])
        self.norm = nn.RMSNorm(cfg.dim, eps=cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)

    def merge_vision(self, tokens: torch.Tensor, h: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
        if images.shape[0] == 0:
            # No image in the whole batch: nothing to gather (a Python branch,
            # so a trace of an image-free batch simply has no vision ops).
            return h
        feats = self.projector(self.vision(images))  # [N, P, D]
        bank = feats.flatten(0, 1)  # [N * P, D], batch order
        image_mask = tokens == self.cfg.image_token_id
        idx = torch.cumsum(image_mask.flatten().long(), 0).view_as(tokens) - 1
        rows = bank[idx.clamp(min=0)]  # [B, T, D]
        return torch.where(image_mask.unsqueeze(-1), rows, h)

    def forward(self, tokens, labels, positions, images):
        cfg = self.cfg
        h = self.tok_embeddings(tokens)
        h = self.merge_vision(tokens, h, images)
        cos, sin = rope_cos_sin(positions, cfg.head_dim, cfg.rope_theta)
        for layer in self.layers:
            h = layer(h, cos, sin)
        logits = self.output(self.norm(h))
        return F.cross_entropy(
            logits.flatten(0, 1).float(), labels.flatten(0, 1), ignore_index=-100
        )


def build_model(cfg: VLMConfig | None = None, seed: int = 0) -> ReferenceVLM:
    cfg = cfg or VLMConfig()
    torch.manual_seed(seed)
    return ReferenceVLM(cfg).eval()


# --------------------------------------------------------------------------
# Synthetic batches
# --------------------------------------------------------------------------

Placement = Union[str, Sequence[Sequence[int]]]


def make_batch(
    cfg: VLMConfig,
    batch: int = 2,
    seq_len: int = 16,
    images_per_sample: Union[int, Sequence[int]] = 1,
    seed: int = 0,
    placement: Placement = "random",
):
    """Build {tokens, labels, positions, images} for ReferenceVLM.forward.

    images_per_sample: an int for every sample, or one count per sample
        (0 = a text-only sample).
    placement: where each image's run of patches_per_image image tokens starts:
        "random" - random non-overlapping offsets,
        "start"  - the first image of each sample starts at position 0,
        "end"    - the last image of each sample ends at position seq_len - 1,
        "both"   - first image at 0 and last image ending at seq_len - 1,
        or explicit start offsets, one list per sample (sorted, non-overlapping).
    Labels: labels[t] = tokens[t + 1]; -100 at the last position, at every
    image-token position, and wherever the target itself is an image token
    (so the image token id is never a label).
    """
    P = cfg.patches_per_image
    img_id = cfg.image_token_id
    counts = [images_per_sample] * batch if isinstance(images_per_sample, int) else list(images_per_sample)
    assert len(counts) == batch, "images_per_sample needs one count per sample"
    g = torch.Generator().manual_seed(seed)

    # text ids: anything in [0, vocab) except the image token
    text_vocab = [i for i in range(cfg.vocab_size) if i != img_id]
    text_ids = torch.tensor(text_vocab, dtype=torch.long)
    tokens = text_ids[torch.randint(len(text_vocab), (batch, seq_len), generator=g)]

    for b, n in enumerate(counts):
        if n == 0:
            continue
        if not isinstance(placement, str):
            starts = list(placement[b])
            assert len(starts) == n
        else:
            free = seq_len - n * P
            assert free >= 0, f"sample {b}: {n} images of {P} tokens do not fit in {seq_len}"
            # split `free` text tokens into n + 1 gaps (before, between, after)
            fixed_first = placement in ("start", "both")
            fixed_last = placement in ("end", "both")
            gaps = [0] * (n + 1)
            movable = [i for i in range(n + 1) if not (i == 0 and fixed_first) and not (i == n and fixed_last)]
            if movable:
                picks = torch.randint(len(movable), (free,), generator=g).tolist()
                for p in picks:
                    gaps[movable[p]] += 1
            elif free:
                raise ValueError("placement 'both' with one image needs seq_len == patches_per_image")
            starts, pos = [], gaps[0]
            for i in range(n):
                starts.append(pos)
                pos += P + gaps[i + 1]
        prev_end = 0
        for s in starts:
            assert s >= prev_end and s + P <= seq_len, f"bad image start {s} in sample {b}"
            tokens[b, s : s + P] = img_id
            prev_end = s + P

    n_images = sum(counts)
    images = torch.randn(
        n_images, cfg.in_channels, cfg.image_size, cfg.image_size, generator=g, dtype=torch.float32
    )

    labels = torch.full_like(tokens, -100)
    labels[:, :-1] = tokens[:, 1:]
    labels[tokens == img_id] = -100
    labels[labels == img_id] = -100

    positions = torch.arange(seq_len, dtype=torch.long).unsqueeze(0).expand(batch, seq_len).contiguous()
    return {"tokens": tokens, "labels": labels, "positions": positions, "images": images}


if __name__ == "__main__":
    cfg = VLMConfig()
    model = build_model(cfg)
    for kw in [
        dict(images_per_sample=1),
        dict(images_per_sample=[0, 2]),
        dict(images_per_sample=[1, 1], placement="start"),
        dict(images_per_sample=[1, 2], placement="end"),
        dict(images_per_sample=[2, 0], placement=[[3, 9], []]),
        dict(images_per_sample=0),
    ]:
        b = make_batch(cfg, batch=2, seq_len=16, seed=0, **kw)
        with torch.no_grad():
            print(kw, float(model(**b)))
