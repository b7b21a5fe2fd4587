//===- AttentionMasks.h - Attention masks as per-token terms ----*- C++ -*-===//
//
// Reads the mask a model hands to its attention (scaled_dot_product_attention
// at import, or a spelled-out softmax attention in
// glimmer-recognize-attention) and, where it can, says it as the terms of
// glimmer.attention (causal positions, a sliding window, bidirectional
// blocks, document ids), all functions of per-token values: the [Tq, Tk]
// mask is never computed, and context parallelism permutes the per-token
// values with the tokens.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_DIALECT_GLIMMER_TRANSFORMS_ATTENTIONMASKS_H
#define GLIMMER_DIALECT_GLIMMER_TRANSFORMS_ATTENTIONMASKS_H

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace glimmer {

/// A mask as glimmer.attention's terms:
///   visible(i, j) = queryKeep[i] && keyKeep[j] &&
///                   (window: i - j < window) &&
///                   (!causal || j <= i || same block).
/// Positions are the sequence indices.
struct AttentionMaskForm {
  bool causal = false;
  std::optional<int64_t> window;
  /// Per-token values as the mask code read them, [Bs, 1..., T, 1] (query
  /// side) or [Bs, 1..., 1, T] (key side) with Bs the batch or 1.
  /// Blocks: integer ids (same block: qb == kb && qb >= 0) or, with
  /// `blockMembers`, booleans (same block: both are members). Null without
  /// blocks.
  mlir::Value queryBlocks, keyBlocks;
  bool blockMembers = false;
  /// Boolean conditions each query or key must meet (padding); ANDed.
  std::vector<mlir::Value> queryKeep, keyKeep;
  /// Integer ids a query and a key must share (`qd == kd`: packed
  /// sequences, transformers' `find_packed_sequence_indices`), as
  /// glimmer.attention's documents. Null without; never with keep terms.
  mlir::Value queryIds, keyIds;
};

/// Which of the forms a [rows, cols] boolean matrix (row-major; row i for
/// query i, column j for key j) is: all true; causal; a window, with or
/// without causality. std::nullopt for anything else.
std::optional<AttentionMaskForm>
classifyMaskMatrix(int64_t rows, int64_t cols, const std::vector<bool> &bits);

/// The form of a [B, H, Tq, Tk] boolean mask (or an additive floating one of
/// 0 and a large negative) computed at run time, read off the ops that
/// compute it: a conjunction of constant matrices, per-token conditions
/// and at most one disjunction "causal or same block", where "same block"
/// is `qb == kb && qb >= 0` of per-token block ids or membership of both
/// tokens. std::nullopt when the mask is anything else (the caller then
/// spells the attention out).
std::optional<AttentionMaskForm> recognizeAttentionMask(mlir::Value mask);

/// The value of a floating-point splat constant (through broadcasts), as a
/// mask's 0 and large negatives or a score scale are written.
std::optional<double> floatSplat(mlir::Value v);

/// glimmer.attention of q [B, Hq, Tq, D], k/v [B, Hkv, Tk, D] with the mask
/// `form`: the per-token values reshaped to [B, T], sequence-index positions
/// when causal (which needs Tq == Tk), padding conditions as document ids.
AttentionOp buildMaskedAttention(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value q, mlir::Value k, mlir::Value v,
                                 const AttentionMaskForm &form, double scale);

} // namespace glimmer

#endif // GLIMMER_DIALECT_GLIMMER_TRANSFORMS_ATTENTIONMASKS_H
