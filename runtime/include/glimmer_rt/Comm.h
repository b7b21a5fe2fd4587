//===- Comm.h - Communicators: collectives between ranks --------*- C++ -*-===//
//
// A Communicator runs collectives for one rank over groups of ranks (the
// groups come from RankContext::group for the mesh axes a collective names).
// Every member of a group calls the same collectives in the same order.
//
// InProcessWorld provides communicators for N ranks running as N threads of
// one process (the CPU backend): tensors are exchanged through shared
// memory, reductions run in group order, so every rank computes bit-identical
// results, run after run.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COMM_H
#define GLIMMER_RT_COMM_H

#include "glimmer_rt/Kernels.h"

#include <chrono>
#include <memory>
#include <vector>

namespace glimmer_rt {

using Group = std::vector<int64_t>;

/// Piece `index` of `pieces` equal contiguous pieces of `dim` (the caller
/// checks divisibility, with its own message).
Tensor pieceAlong(const Tensor &x, int64_t dim, int64_t index, int64_t pieces);

class Communicator {
public:
  virtual ~Communicator();
  virtual int64_t rank() const = 0;
  virtual int64_t worldSize() const = 0;

  /// Concatenation of the members' tensors along `dim`, in group order.
  virtual Tensor allGather(const Tensor &x, const Group &group,
                           int64_t dim) = 0;
  /// Reduction of the members' tensors, then this rank's slice along `dim`.
  virtual Tensor reduceScatter(const Tensor &x, const Group &group,
                               int64_t dim, Reduction kind) = 0;
  virtual Tensor allReduce(const Tensor &x, const Group &group,
                           Reduction kind) = 0;
  /// Splits `splitDim` into group-size pieces, sends piece i to member i,
  /// concatenates what arrives along `concatDim`.
  virtual Tensor allToAll(const Tensor &x, const Group &group,
                          int64_t splitDim, int64_t concatDim) = 0;
  virtual void send(const Tensor &x, int64_t peer) = 0;
  virtual Tensor recv(int64_t peer) = 0;
  /// pairs = [src0, dst0, src1, dst1, ...] as indices into `group`; a member
  /// that is no destination receives zeros.
  virtual Tensor ppermute(const Tensor &x, const Group &group,
                          const std::vector<int64_t> &pairs) = 0;
};

/// Shared state of N thread-ranks. Collectives that wait longer than
/// `timeout` for the other members throw RuntimeError (a rank that died
/// must not hang the others).
class InProcessWorld {
public:
  explicit InProcessWorld(
      int64_t size,
      std::chrono::milliseconds timeout = std::chrono::seconds(60));
  ~InProcessWorld();
  InProcessWorld(const InProcessWorld &) = delete;
  InProcessWorld &operator=(const InProcessWorld &) = delete;

  int64_t size() const;
  /// The communicator of `rank` (use it from that rank's thread only).
  std::unique_ptr<Communicator> communicator(int64_t rank);
  /// Makes every pending and future collective fail (a rank failed).
  void abort(const std::string &why);

  struct State;

private:
  std::shared_ptr<State> state;
};

} // namespace glimmer_rt

#endif // GLIMMER_RT_COMM_H
