"""Writes a tiny language model whose attention masks are built the way
transformers' masking_utils builds them (index tensors broadcast against
each other, per-token ids gathered at [batch_idx, q_idx] and
[batch_idx, kv_idx], combined with & and |), and a batch for it.

Layer 1, PaliGemma's prefix-LM: causal | (same non-negative block), the
block ids 0 on the prefix (token_type_ids 0) and -1 elsewhere; a boolean
mask, grouped-query attention.
Layer 2, Gemma 3's sliding-window layer: window & (causal | same image
block), the image blocks numbered by a cumulative sum of block starts from
token_type_ids 1; an additive mask (0 / the most negative float). One image
block is longer than the window, so its first tokens stay visible to its
last ones only through the block term.
Layer 3, a sliding window known at trace time (a Mistral-style constant
causal band).
Layer 4, packed sequences as transformers finds them under torch.export
(find_packed_sequence_indices: a new sequence wherever the ids do not step
by one, here where token_type_ids changes; a diff and a cumsum): causal &
same sequence, a boolean mask.

hf_masks_eager.pt is the same model with Hugging Face's eager attention
(keys and values repeated for GQA, q @ k^T * scale plus the mask as 0 / the
most negative float, an f32 softmax, @ v) instead of SDPA.

usage: make_hf_masks.py OUTDIR
"""

import sys

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from mask_attention import HKV, D, H, T, V, Attention

WINDOW = 3


def index_grids(B):
    """masking_utils' _non_vmap_expansion_sdpa: [B,1,1,1], [1,1,T,1], [1,1,1,T]."""
    batch_idx = torch.arange(B)[:, None, None, None]
    q_idx = torch.arange(T)[None, None, :, None]
    kv_idx = torch.arange(T)[None, None, None, :]
    return batch_idx, q_idx, kv_idx


def same_block(ids, batch_idx, q_idx, kv_idx):
    q_group = ids[batch_idx, q_idx]
    kv_group = ids[batch_idx, kv_idx]
    return (q_group == kv_group) & (q_group >= 0)


class HfMaskLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(V, D)
        self.prefix_attn = Attention(HKV)
        self.sliding_attn = Attention(H)
        self.band_attn = Attention(HKV)
        self.packed_attn = Attention(HKV)
        self.norm = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, V, bias=False)

    def forward(self, input_ids, token_type_ids, labels):
        B = input_ids.shape[0]
        x = self.embed(input_ids)
        batch_idx, q_idx, kv_idx = index_grids(B)
        causal = kv_idx <= q_idx
        # PaliGemma: the prefix is one bidirectional block.
        prefix_ids = torch.where(token_type_ids == 0, 0, -1)
        prefix_lm = causal | same_block(prefix_ids, batch_idx, q_idx, kv_idx)
        x = x + self.prefix_attn(x, prefix_lm.expand(B, 1, T, T))
        # Gemma 3: image blocks numbered by where they start.
        is_image = token_type_ids == 1
        previous = F.pad(is_image, (1, 0), value=False)[:, :-1]
        starts = is_image & ~previous
        group_ids = torch.cumsum(starts.int(), dim=1) - 1
        image_ids = torch.where(is_image, group_ids, -1)
        window = kv_idx > q_idx - WINDOW
        sliding = window & (causal | same_block(image_ids, batch_idx, q_idx, kv_idx))
        additive = torch.where(sliding.expand(B, 1, T, T), 0.0,
                               torch.finfo(x.dtype).min)
        x = x + self.sliding_attn(x, additive.to(x.dtype))
        # A band known at trace time.
        band = (kv_idx <= q_idx) & (q_idx - kv_idx < WINDOW)
        x = x + self.band_attn(x, band)
        # Packed sequences: a new one wherever token_type_ids changes.
        step = torch.diff(token_type_ids, prepend=token_type_ids[:, :1])
        sequence = (step != 0).cumsum(-1)
        packed = causal & (sequence[batch_idx, q_idx] == sequence[batch_idx, kv_idx])
        x = x + self.packed_attn(x, packed.expand(B, 1, T, T))
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)


out = sys.argv[1]
gen = torch.Generator().manual_seed(1)
ids = torch.randint(0, V, (2, T), generator=gen)
types = torch.full((2, T), 2, dtype=torch.int64)
types[0, :6] = 0          # sample 0: a prefix of 6 tokens, across a cp=2 chunk (4 tokens)
types[1, 3:10] = 1        # sample 1: an image of 7 tokens (longer than the window)
types[1, 12:14] = 1       # and one of 2
types[1, 0:2] = 0         # and a prefix of 2
labels = ids.clone()
labels[types != 2] = -100
batch = {"input_ids": ids, "token_type_ids": types, "labels": labels}
model = HfMaskLM()
traced = torch.jit.trace(model, tuple(batch.values()), check_trace=False)
traced.save(f"{out}/hf_masks.pt")
save_file(batch, f"{out}/hf_masks.batch.safetensors")
Attention.eager = True
eager = HfMaskLM()
with torch.no_grad():
    assert torch.allclose(eager(*batch.values()), model(*batch.values()), atol=1e-6)
torch.jit.trace(eager, tuple(batch.values()), check_trace=False).save(f"{out}/hf_masks_eager.pt")
