"""The attention layer of the mask test models (make_sdpa_mask.py,
make_hf_masks.py): multi-head attention with grouped-query heads whose mask
is an argument, through F.scaled_dot_product_attention or, with
Attention.eager set, transformers' eager attention."""

import torch
import torch.nn.functional as F

V, D, H, HKV, T = 32, 16, 4, 2, 16


def repeat_kv(x, n_rep):
    B, H, T, Dh = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(B, H, n_rep, T, Dh).reshape(B, H * n_rep, T, Dh)


def eager_attention(q, k, v, mask):
    """transformers' eager_attention_forward."""
    n_rep = q.shape[1] // k.shape[1]
    k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
    weights = torch.matmul(q, k.transpose(2, 3)) * q.shape[-1] ** -0.5
    if mask.dtype == torch.bool:
        mask = torch.where(mask, 0.0, torch.finfo(q.dtype).min).to(q.dtype)
    weights = weights + mask
    weights = F.softmax(weights, dim=-1, dtype=torch.float32).to(q.dtype)
    return torch.matmul(weights, v)


class Attention(torch.nn.Module):
    eager = False

    def __init__(self, kv_heads):
        super().__init__()
        self.kv = kv_heads
        self.q = torch.nn.Linear(D, D, bias=False)
        self.k = torch.nn.Linear(D, D // H * kv_heads, bias=False)
        self.v = torch.nn.Linear(D, D // H * kv_heads, bias=False)
        self.o = torch.nn.Linear(D, D, bias=False)

    def forward(self, x, mask):
        B = x.shape[0]
        q = self.q(x).view(B, T, H, D // H).transpose(1, 2)
        k = self.k(x).view(B, T, self.kv, D // H).transpose(1, 2)
        v = self.v(x).view(B, T, self.kv, D // H).transpose(1, 2)
        if Attention.eager:
            y = eager_attention(q, k, v, mask)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                               enable_gqa=self.kv != H)
        return self.o(y.transpose(1, 2).reshape(B, T, D))
