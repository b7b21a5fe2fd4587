//===- SpmdContext.h - Thread-local parallel layout --------------*- C++
//-*-===//
//
// The parallel layout (mesh degrees, sequence parallelism, pipeline schedule,
// CP load balancer) that the compiler and the runtime read. It lives in a
// thread-local slot so that entry points (glimmer-opt, glimmer-train, Python)
// set it once and several threads can compile or run different layouts at the
// same time.
//
// This header is plain C++ on purpose: the runtime and the Python module use
// it without linking MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_CONTRACT_SPMDCONTEXT_H
#define GLIMMER_CONTRACT_SPMDCONTEXT_H

#include "glimmer_contract/ThreadCurrent.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace glimmer {

/// The named axes of the device mesh, in mesh order (outermost first).
enum class MeshAxis : unsigned { DpReplicate = 0, DpShard, Cp, Tp, Pp };
inline constexpr unsigned kNumMeshAxes = 5;

/// The textual name of a mesh axis ("dp_replicate", "dp_shard", "cp", ...).
std::string_view meshAxisName(MeshAxis axis);
/// The axis with the given name, or nullopt.
std::optional<MeshAxis> meshAxisFromName(std::string_view name);

/// How microbatches of a pipeline are scheduled.
enum class PipelineSchedule : unsigned {
  OneFOneB = 0,
  GPipe,
  /// 1F1B over `virtualStages` stages per pp rank (rank r holds stages r,
  /// r + pp, ...), as Megatron-LM's interleaved schedule.
  Interleaved1F1B
};
std::string_view scheduleName(PipelineSchedule schedule);

/// How the sequence is distributed across context-parallel ranks.
enum class CpBalancer : unsigned {
  /// Rank r holds chunks r and 2C-1-r of 2C equal chunks: balances causal
  /// attention work.
  HeadTail = 0,
  /// Rank r holds chunk r of C equal chunks.
  Contiguous,
};
std::string_view balancerName(CpBalancer balancer);

/// A parallel layout. Value type; compare with ==.
struct SpmdContext {
  std::array<int64_t, kNumMeshAxes> degrees{1, 1, 1, 1, 1};
  bool sp = false;
  int64_t microbatches = 1;
  /// Pipeline stages per pp rank (interleaved 1F1B).
  int64_t virtualStages = 1;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  CpBalancer balancer = CpBalancer::HeadTail;

  int64_t degree(MeshAxis axis) const {
    return degrees[static_cast<unsigned>(axis)];
  }
  void setDegree(MeshAxis axis, int64_t value) {
    degrees[static_cast<unsigned>(axis)] = value;
  }
  int64_t dpReplicate() const { return degree(MeshAxis::DpReplicate); }
  int64_t dpShard() const { return degree(MeshAxis::DpShard); }
  int64_t cp() const { return degree(MeshAxis::Cp); }
  int64_t tp() const { return degree(MeshAxis::Tp); }
  int64_t pp() const { return degree(MeshAxis::Pp); }

  /// The number of ranks: the product of all degrees.
  int64_t worldSize() const;

  /// Parses the textual form, e.g.
  /// "dp_shard=2,cp=2,tp=2,pp=2,sp,microbatches=4". Keys: dp_replicate,
  /// dp_shard, cp, tp, pp (positive integers), sp (flag, or sp=true|false),
  /// microbatches (positive integer), schedule (1f1b|gpipe), balancer
  /// (head_tail|contiguous). Omitted keys keep their defaults. On error returns
  /// nullopt and, when `error` is non-null, a message that names the offending
  /// entry.
  static std::optional<SpmdContext> parse(std::string_view text,
                                          std::string *error = nullptr);

  /// Canonical textual form: keys in the order above, defaults omitted, so
  /// parse(print()) == *this. The default layout prints as "".
  std::string print() const;

  /// Checks cross-field consistency (e.g. `sp` needs tp > 1). Returns the
  /// problem, or an empty string when the layout is consistent.
  std::string validate() const;

  bool operator==(const SpmdContext &other) const;
  bool operator!=(const SpmdContext &other) const { return !(*this == other); }

  /// The layout active on this thread: the innermost live SpmdScope, or the
  /// default (unsharded) layout when none is live.
  static const SpmdContext &current();
};

template <>
const SpmdContext *&ThreadCurrent<SpmdContext>::slot();

/// Makes a layout the current one of this thread for the scope's lifetime.
using SpmdScope = CurrentScope<SpmdContext>;

} // namespace glimmer

#endif // GLIMMER_CONTRACT_SPMDCONTEXT_H
