//===- Collectives.h - Collectives of generated programs --------*- C++ -*-===//
//
// What partitioned programs call for the collective ops: each runs on the
// calling thread's communicator (CommScope) over the group of ranks that
// share the thread's coordinates except along the named mesh axes
// (RankContext::current()).
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COLLECTIVES_H
#define GLIMMER_RT_COLLECTIVES_H

#include "glimmer_rt/Comm.h"
#include "glimmer_rt/RankContext.h"

#include <string>
#include <vector>

namespace glimmer_rt {

using Axes = std::vector<std::string>;

/// Makes `comm` the calling thread's communicator for the scope's lifetime.
class CommScope {
public:
  explicit CommScope(Communicator &comm);
  ~CommScope();
  CommScope(const CommScope &) = delete;
  CommScope &operator=(const CommScope &) = delete;

private:
  Communicator *previous;
};

/// The calling thread's communicator; throws when there is none.
Communicator &currentCommunicator();

Tensor allGather(const Tensor &x, const Axes &axes, int64_t dim);
Tensor reduceScatter(Reduction kind, const Tensor &x, const Axes &axes,
                     int64_t dim);
Tensor allReduce(Reduction kind, const Tensor &x, const Axes &axes);
/// Splits `splitDim` into one piece per group member, sends piece i to
/// member i and concatenates what arrives along `concatDim`.
Tensor allToAll(const Tensor &x, const Axes &axes, int64_t splitDim,
                int64_t concatDim);
/// This rank's contiguous slice of `dim` (no communication).
Tensor localShard(const Tensor &x, const Axes &axes, int64_t dim);

} // namespace glimmer_rt

#endif // GLIMMER_RT_COLLECTIVES_H
