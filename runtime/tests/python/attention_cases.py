"""Attention test cases shared by the CUDA kernel tests in bf16
(test_kernels_bf16.py) and f32 (test_attention_f32.py): masks of every kind
the kernels support at sizes that straddle their tiles, and a PyTorch
reference."""

import numpy as np
import torch


def rng(seed):
    return np.random.default_rng(seed)


def tt(a):
    """numpy -> torch (a copy)."""
    return torch.from_numpy(np.array(a))


def head_tail(x, dim, cp):
    """Head-tail load balancing: rank r holds chunks r and 2cp-1-r."""
    chunks = np.split(x, 2 * cp, axis=dim)
    order = [c for r in range(cp) for c in (r, 2 * cp - 1 - r)]
    return np.concatenate([chunks[i] for i in order], axis=dim)


def attn_mask(B, Tq, Tk, qpos=None, kpos=None, qdoc=None, kdoc=None, causal=False,
              qblk=None, kblk=None, window=0):
    """The runtime's mask (Kernels.h) as a [B, 1, Tq, Tk] boolean tensor:
    same document, and under causality: key within the window (window > 0)
    and (key not after the query, or query block >= 0 equal to the key's)."""
    mask = torch.ones(B, Tq, Tk, dtype=torch.bool)
    if causal and qpos is None:  # causal without positions: the indices
        qpos = np.tile(np.arange(Tq, dtype=np.int64), (B, 1))
        kpos = np.tile(np.arange(Tk, dtype=np.int64), (B, 1))
    if causal:
        qp, kp = tt(qpos)[:, :, None].long(), tt(kpos)[:, None, :].long()
        seen = kp <= qp
        if qblk is not None:  # bidirectional blocks
            qb, kb = tt(qblk)[:, :, None].long(), tt(kblk)[:, None, :].long()
            seen |= (qb >= 0) & (qb == kb)
        if window > 0:  # sliding window, blocks included
            seen &= qp - kp < window
        mask &= seen
    if qdoc is not None:
        mask &= tt(kdoc)[:, None, :].long() == tt(qdoc)[:, :, None].long()
    return mask[:, None]  # [B, 1, Tq, Tk]


def mask_of(B, Tq, Tk, kw):
    """attn_mask of the runtime's attention keywords `kw`."""
    return attn_mask(B, Tq, Tk, kw.get("q_positions"), kw.get("k_positions"),
                     kw.get("q_documents"), kw.get("k_documents"), kw.get("causal", False),
                     kw.get("q_blocks"), kw.get("k_blocks"), kw.get("window", 0))


def runs(T, spans, dtype=np.int64):
    """Block ids of a row of T: -1, and id i on the i-th span [start, end)."""
    blk = np.full(T, -1, dtype)
    for i, (start, end) in enumerate(spans):
        blk[start:end] = i
    return blk


def blocks_window_sequence(B, T, window, seed):
    """Gemma 3's mask on a sequence of T: image blocks (ids 0, 1, ... on
    contiguous runs, -1 for text), some longer than the window, seen
    bidirectionally, and a sliding window over everything. Returns
    positions [B, T] and blocks [B, T] (i64)."""
    r = rng(seed)
    blk = np.full((B, T), -1, np.int64)
    for b in range(B):
        start, i = int(r.integers(0, 8)), 0
        while start < T - 4:
            length = int(r.integers(window // 2 + 1, 3 * window + 2))
            blk[b, start:start + length] = i
            i += 1
            start += length + int(r.integers(1, 2 * window + 2))
    pos = np.tile(np.arange(T, dtype=np.int64), (B, 1))
    return pos, blk


def attn_ref(q, k, v, mask, scale):
    """Masked softmax attention in the inputs' precision; fully masked rows
    get zero output, lse = -inf and zero gradients."""
    g = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    s = (q @ kk.transpose(-1, -2)) * scale
    s = s.masked_fill(~mask, float("-inf"))
    m = s.amax(-1, keepdim=True).detach()
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(s - m)
    den = e.sum(-1, keepdim=True)
    p = e / torch.where(den > 0, den, torch.ones_like(den))
    return p @ vv, (m + torch.log(den)).squeeze(-1)


def documents(B, T, seed):
    """Random document ids (non-decreasing, ~6 documents per row)."""
    breaks = rng(seed).random((B, T)) < 0.04
    breaks[:, 0] = False
    return np.cumsum(breaks, axis=1).astype(np.int64)


ATTN_CASES = {
    # name: (B, Hq, Hkv, Tq, Tk, kind)
    "plain": (2, 4, 4, 96, 96, "none"),
    "gqa": (2, 4, 2, 160, 160, "none"),
    "causal_gqa": (2, 4, 2, 160, 160, "causal"),
    "causal_mqa": (1, 4, 1, 200, 200, "causal"),
    # Positions of a sequence permuted head-tail for cp = 2 (chunks of 40,
    # straddling the kernels' tiles), queries and keys alike.
    "causal_cp_permuted": (2, 4, 2, 160, 160, "cp"),
    # One rank's queries of a cp = 4 head-tail permuted sequence of 256
    # (rank 1 in batch 0, rank 3 in batch 1) against all 256 keys in the
    # permuted order (as after the all-gather of K/V).
    "causal_cp_rank_share": (2, 4, 2, 64, 256, "cp_share"),
    "documents": (2, 4, 2, 160, 160, "docs"),
    # Packed documents with positions restarting in each document.
    "causal_documents": (2, 4, 2, 160, 160, "causal_docs"),
    # Some queries belong to no key's document: zero output, lse = -inf.
    "missing_documents": (2, 4, 2, 160, 160, "docs_missing"),
    # The last 64 queries against 160 keys (i32 positions).
    "query_chunk": (2, 4, 2, 64, 160, "chunk"),
    # Causal without positions (the indices are the positions): cuDNN's
    # fused flash attention where it applies, the tensor-core / SIMT
    # kernels on iota positions otherwise. Also with GQA 4:1, a length
    # that is no multiple of the tiles, and fewer queries than keys.
    "index_causal": (2, 4, 2, 160, 160, "index"),
    "index_causal_mqa_ragged": (1, 4, 1, 200, 200, "index"),
    "index_causal_fewer_queries": (2, 4, 2, 64, 160, "index"),
    # A long sequence: several key tiles per query tile in every kernel.
    "index_causal_long": (1, 2, 1, 1024, 1024, "index"),
    # Bidirectional blocks and sliding windows (Hugging Face's prefix-LM,
    # Gemma 3), at lengths of several tiles of every kernel (tiles of 16 to
    # 128 rows), so that tile skipping decides on block and window
    # statistics: PaliGemma's prefix-LM (a prefix of block 0, seen
    # bidirectionally; index positions, i32 blocks), image blocks with
    # explicit positions, a window alone (3 and 90 positions), image blocks
    # longer than the window under it, those permuted head-tail for cp = 2
    # (chunks of 50), the last 64 queries of such a sequence, and with
    # documents.
    "prefix_lm": (2, 4, 2, 200, 200, "prefix"),
    "image_blocks": (2, 4, 2, 200, 200, "images"),
    "window": (1, 4, 1, 200, 200, "window"),
    "window_wide": (2, 4, 2, 200, 200, "window_wide"),
    "window_blocks": (2, 4, 2, 200, 200, "window_blocks"),
    "window_blocks_cp_permuted": (2, 4, 2, 200, 200, "window_blocks_cp"),
    "window_blocks_query_chunk": (2, 4, 2, 64, 200, "window_blocks_chunk"),
    "window_blocks_documents": (2, 4, 2, 200, 200, "window_blocks_docs"),
}
def attn_inputs(case, D, rand):
    """q, k, v drawn by rand(shape, seed), the mask keywords of the case and
    its [B, 1, Tq, Tk] boolean mask."""
    B, Hq, Hkv, Tq, Tk, kind = ATTN_CASES[case]
    seed = 200 + sorted(ATTN_CASES).index(case) * 10 + D
    q = rand((B, Hq, Tq, D), seed)
    k, v = rand((B, Hkv, Tk, D), seed + 1), rand((B, Hkv, Tk, D), seed + 2)
    kw = {}
    ar = np.tile(np.arange(Tk, dtype=np.int64), (B, 1))
    if kind == "causal":
        kw = dict(q_positions=ar, k_positions=ar, causal=True)
    elif kind == "cp":
        perm = head_tail(ar, 1, 2)
        kw = dict(q_positions=perm, k_positions=perm, causal=True)
    elif kind == "cp_share":
        cp = 4
        perm = head_tail(ar, 1, cp)  # [B, 256]: rank r holds [r * 64, (r + 1) * 64)
        share = Tk // cp
        qpos = np.stack([perm[0, 1 * share:2 * share], perm[1, 3 * share:4 * share]])
        kw = dict(q_positions=qpos, k_positions=perm, causal=True)
    elif kind == "index":
        kw = dict(causal=True)
    elif kind == "chunk":
        kw = dict(q_positions=ar[:, Tk - Tq:].astype(np.int32), k_positions=ar.astype(np.int32), causal=True)
    elif kind in ("docs", "docs_missing"):
        doc = documents(B, Tk, seed + 3)
        qdoc = doc.copy()
        if kind == "docs_missing":
            qdoc[rng(seed + 4).random((B, Tq)) < 0.1] = 10_000
        kw = dict(q_documents=qdoc, k_documents=doc)
    elif kind == "causal_docs":
        doc = documents(B, Tk, seed + 3)
        starts = np.array([[np.flatnonzero(d == d[t])[0] for t in range(Tk)] for d in doc])
        pos = np.arange(Tk)[None, :] - starts
        kw = dict(q_positions=pos, k_positions=pos, q_documents=doc, k_documents=doc, causal=True)
    elif kind == "prefix":  # prefixes of 70 and 130: across tiles
        blk = np.stack([runs(Tk, [(0, 70)], np.int32), runs(Tk, [(0, 130)], np.int32)])
        kw = dict(q_blocks=blk, k_blocks=blk, causal=True)
    elif kind == "images":
        blk = np.stack([runs(Tk, [(10, 40), (75, 140), (150, 170)]),
                        runs(Tk, [(0, 64), (64, 100), (129, 199)])])
        kw = dict(q_positions=ar, k_positions=ar, q_blocks=blk, k_blocks=blk, causal=True)
    elif kind == "window":
        kw = dict(causal=True, window=3)
    elif kind == "window_wide":
        kw = dict(q_positions=ar, k_positions=ar, causal=True, window=90)
    elif kind in ("window_blocks", "window_blocks_cp", "window_blocks_chunk"):
        pos, blk = blocks_window_sequence(B, Tk, 20, seed + 5)
        if kind == "window_blocks_cp":
            pos, blk = head_tail(pos, 1, 2), head_tail(blk, 1, 2)
        qpos, qblk = pos, blk
        if kind == "window_blocks_chunk":
            qpos, qblk = pos[:, Tk - Tq:].astype(np.int32), blk[:, Tk - Tq:].astype(np.int32)
            pos, blk = pos.astype(np.int32), blk.astype(np.int32)
        kw = dict(q_positions=qpos, k_positions=pos, q_blocks=qblk, k_blocks=blk, causal=True, window=20)
    elif kind == "window_blocks_docs":
        doc = documents(B, Tk, seed + 3)
        starts = np.array([[np.flatnonzero(d == d[t])[0] for t in range(Tk)] for d in doc])
        pos = np.arange(Tk)[None, :] - starts
        _, blk = blocks_window_sequence(B, Tk, 12, seed + 5)
        kw = dict(q_positions=pos, k_positions=pos, q_documents=doc, k_documents=doc,
                  q_blocks=blk, k_blocks=blk, causal=True, window=12)
    mask = mask_of(B, Tq, Tk, kw)
    return q, k, v, kw, mask


def blocks_window_roundtrip(B, T, cp, window, seed):
    """Positions and blocks (blocks_window_sequence) of a sequence, the same
    permuted head-tail for cp ranks (as context parallelism lays them out),
    and the mask of the unpermuted sequence: attention over the permuted
    sequence, permuted back, must equal attention under that mask."""
    pos, blk = blocks_window_sequence(B, T, window, seed)
    kw = dict(q_positions=head_tail(pos, 1, cp), k_positions=head_tail(pos, 1, cp),
              q_blocks=head_tail(blk, 1, cp), k_blocks=head_tail(blk, 1, cp),
              causal=True, window=window)
    return kw, attn_mask(B, T, T, pos, pos, causal=True, qblk=blk, kblk=blk, window=window)


def check_blocks_window_roundtrip(rt, cp, D, rand, dev, devkw, ref, close):
    """Bidirectional blocks (some longer than the window) and a sliding window
    over a sequence permuted head-tail on the device (rt.cp_permute), with the
    permuted positions and blocks: the output and the gradients of the
    runtime `rt`, permuted back, must be attention under the mask of the
    sequence in order. B = 2, 4 heads, T = 160, window 20; inputs from
    rand(shape, seed), moved by dev / devkw; the reference is attn_ref on
    ref(array) (its precision), compared by close(actual, expected)."""
    B, H, T = 2, 4, 160
    q, k, v, dout = (rand((B, H, T, D), 410 + s) for s in range(4))
    kw, mask = blocks_window_roundtrip(B, T, cp, 20, 414)
    perm = lambda a: rt.cp_permute(dev(a), 2, cp)  # noqa: E731
    back = lambda x: rt.cp_permute(x, 2, cp, rt.Balancer.HeadTail, True)  # noqa: E731
    scale = D ** -0.5
    pq, pk, pv, dkw = perm(q), perm(k), perm(v), devkw(kw)
    out, lse = rt.attention(pq, pk, pv, scale=scale, **dkw)
    tq, tk, tv = (ref(a).requires_grad_() for a in (q, k, v))
    ref_out, _ = attn_ref(tq, tk, tv, mask, scale)
    close(back(out), ref_out)
    gq, gk, gv = torch.autograd.grad(ref_out, (tq, tk, tv), ref(dout))
    dq, dk, dv = rt.attention_grad(perm(dout), pq, pk, pv, out, lse, scale=scale, **dkw)
    close(back(dq), gq)
    close(back(dk), gk)
    close(back(dv), gv)
