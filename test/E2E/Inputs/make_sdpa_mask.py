"""Writes a tiny language model whose attention goes through
F.scaled_dot_product_attention with masks computed at run time, as Hugging
Face models build them from token types and padding, and a batch for it;
and scripted modules whose attention the importer refuses.

Layer 1: a prefix-LM boolean mask (causal, and bidirectional within the
tokens `token_type_ids` marks 0), grouped-query attention (4 query heads,
2 key/value heads, enable_gqa). Layer 2: an additive float mask (0 / -inf)
that is causal and hides padding keys (`token_type_ids` 2); sample 1 starts
with two padding tokens, so its first two queries see no key at all.
Layer 3: a mask no per-token term expresses (a key is visible when its
token id is at most the query's), which the importer spells out.

usage: make_sdpa_mask.py OUTDIR
"""

import sys

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from mask_attention import HKV, D, H, T, V, Attention


class SdpaMaskLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(V, D)
        self.prefix_attn = Attention(HKV)
        self.padded_attn = Attention(H)
        self.ordered_attn = Attention(HKV)
        self.norm = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, V, bias=False)

    def forward(self, input_ids, token_type_ids, labels):
        x = self.embed(input_ids)
        i = torch.arange(T)
        causal = (i[None, :] <= i[:, None])[None, None]            # [1, 1, T, T]
        prefix = token_type_ids == 0
        bidir = (prefix[:, :, None] & prefix[:, None, :])[:, None]  # [B, 1, T, T]
        x = x + self.prefix_attn(x, causal | bidir)
        keep = causal & (token_type_ids != 2)[:, None, None, :]
        additive = x.new_zeros(keep.shape).masked_fill(~keep, float("-inf"))
        x = x + self.padded_attn(x, additive)
        ordered = (input_ids[:, None, None, :] <= input_ids[:, None, :, None]) | causal
        x = x + self.ordered_attn(x, ordered)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100)


class CausalAndMask(torch.nn.Module):
    def forward(self, q, mask):
        return F.scaled_dot_product_attention(q, q, q, attn_mask=mask > 0, is_causal=True)


class IntegerMask(torch.nn.Module):
    def forward(self, q, mask):
        return F.scaled_dot_product_attention(q, q, q, attn_mask=mask)


class AntiCausalMask(torch.nn.Module):
    def forward(self, q, mask):
        # Known at import time, but no form of positions: keys at or after
        # the query.
        upper = torch.ones(4, 4, dtype=torch.bool).triu()
        return F.scaled_dot_product_attention(q, q, q, attn_mask=upper)


class UnevenHeads(torch.nn.Module):
    def forward(self, q, mask):
        # 2 query heads against 3 key/value heads.
        kv = torch.cat([q, q[:, :1]], 1)
        return F.scaled_dot_product_attention(q, kv, kv, attn_mask=mask > 0)


class WideMask(torch.nn.Module):
    def forward(self, q, mask):
        # One query against a mask for four.
        return F.scaled_dot_product_attention(q[:, :, :1], q, q, attn_mask=mask > 0)


out = sys.argv[1]
gen = torch.Generator().manual_seed(1)
ids = torch.randint(0, V, (2, T), generator=gen)
types = torch.ones(2, T, dtype=torch.int64)
types[0, :6] = 0          # sample 0: a prefix of 6 tokens, across a cp=2 chunk (4 tokens)
types[1, :2] = 2          # sample 1: two padding tokens, then a prefix of 5
types[1, 2:7] = 0
labels = ids.clone()
labels[types != 1] = -100
batch = {"input_ids": ids, "token_type_ids": types, "labels": labels}
model = SdpaMaskLM()
traced = torch.jit.trace(model, tuple(batch.values()), check_trace=False)
traced.save(f"{out}/sdpa_mask.pt")
save_file(batch, f"{out}/sdpa_mask.batch.safetensors")
small = {"q": torch.randn(1, 2, 4, 8, generator=gen), "mask": torch.randint(0, 2, (1, 1, 4, 4), generator=gen)}
save_file(small, f"{out}/small.batch.safetensors")
torch.jit.script(CausalAndMask()).save(f"{out}/causal_and_mask.pt")
torch.jit.script(IntegerMask()).save(f"{out}/integer_mask.pt")
torch.jit.script(WideMask()).save(f"{out}/wide_mask.pt")
torch.jit.script(UnevenHeads()).save(f"{out}/uneven_heads.pt")
torch.jit.script(AntiCausalMask()).save(f"{out}/anti_causal.pt")
