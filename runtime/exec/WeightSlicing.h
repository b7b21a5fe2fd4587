//===- WeightSlicing.h - Full tensors and ranks' pieces ---------*- C++ -*-===//
//
// Internal to runtime/exec: weights, checkpoints and batches hold full
// tensors; a rank holds the piece of each sharded argument that the
// manifest's sharding gives it (glimmer_contract/Sharding.h).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RUNTIME_EXEC_WEIGHTSLICING_H
#define GLIMMER_RUNTIME_EXEC_WEIGHTSLICING_H

#include "glimmer_rt/Trainer.h"

#include <functional>

namespace glimmer_rt::detail {

/// Reads a safetensors file, or throws.
std::unique_ptr<SafetensorsFile> readFile(const std::string &path);

/// Reads `name` from `file` as a full tensor of `slot` (converting
/// floating-point precision), or throws; `what` names the file in messages.
Tensor readFull(const SafetensorsFile &file, const SpmdContext &layout,
                const Slot &slot, const std::string &name, const char *what);

/// Rank `rank`'s piece of the full host tensor `full`, on `device`.
Tensor pieceFor(const Tensor &full, const SpmdContext &layout, const Slot &slot,
                int64_t rank, Device device);

/// The full tensor of a sharded slot from the pieces of `holder`'s group
/// over all of its axes (`pieceOf(rank)`, on the host).
Tensor assemble(const Slot &slot, const SpmdContext &layout,
                const RankContext &holder,
                const std::function<Tensor(int64_t rank)> &pieceOf);

} // namespace glimmer_rt::detail

#endif // GLIMMER_RUNTIME_EXEC_WEIGHTSLICING_H
