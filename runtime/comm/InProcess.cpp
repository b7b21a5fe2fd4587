//===- InProcess.cpp - Collectives between thread-ranks -------------------===//
//
// Every collective is built on one primitive, `exchange`: each member of a
// group deposits its tensor and receives all members' tensors in group
// order. Members meet at a rendezvous keyed by (group, per-group sequence
// number); tensors are immutable once produced, so they are shared, not
// copied.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Comm.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>

using namespace glimmer_rt;

Communicator::~Communicator() = default;

Tensor glimmer_rt::pieceAlong(const Tensor &x, int64_t dim, int64_t index,
                              int64_t pieces) {
  int64_t piece = x.dim(dim) / pieces;
  std::vector<int64_t> start(x.rank(), 0), stride(x.rank(), 1);
  std::vector<int64_t> limit(x.shape());
  start[dim] = index * piece;
  limit[dim] = (index + 1) * piece;
  return slice(x, start, limit, stride);
}

struct InProcessWorld::State {
  struct Rendezvous {
    std::vector<Tensor> slots;
    size_t arrived = 0;
    size_t departed = 0;
  };
  int64_t size;
  std::chrono::milliseconds timeout;
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::pair<Group, uint64_t>, Rendezvous> rendezvous;
  // Next sequence number of each (rank, group).
  std::map<std::pair<int64_t, Group>, uint64_t> sequence;
  // Point-to-point mailboxes, FIFO per (source, destination).
  std::map<std::pair<int64_t, int64_t>, std::deque<Tensor>> mailboxes;
  std::string abortReason;

  template <typename Pred>
  void wait(std::unique_lock<std::mutex> &lock, Pred ready,
            const std::string &what) {
    if (!changed.wait_for(lock, timeout, [&] {
          return ready() || !abortReason.empty();
        }))
      throw RuntimeError(what + " timed out after " +
                         std::to_string(timeout.count()) +
                         " ms waiting for other ranks");
    if (!abortReason.empty())
      throw RuntimeError(what + " aborted: " + abortReason);
  }
};

namespace {

class InProcessCommunicator : public Communicator {
public:
  InProcessCommunicator(std::shared_ptr<InProcessWorld::State> state,
                        int64_t rank)
      : state(std::move(state)), myRank(rank) {}

  int64_t rank() const override { return myRank; }
  int64_t worldSize() const override { return state->size; }

  Tensor allGather(const Tensor &x, const Group &group, int64_t dim) override {
    return concat(exchange(x, group, "all_gather"), dim);
  }

  Tensor reduceScatter(const Tensor &x, const Group &group, int64_t dim,
                       Reduction kind) override {
    std::vector<Tensor> all = exchange(x, group, "reduce_scatter");
    Tensor total = combine(all, kind);
    int64_t n = int64_t(group.size());
    if (dim < 0 || dim >= x.rank() || x.dim(dim) % n != 0)
      throw RuntimeError("reduce_scatter: dimension " + std::to_string(dim) +
                         " of " + x.describe() +
                         " is not divisible by the group size " +
                         std::to_string(n));
    return pieceAlong(total, dim, indexIn(group), n);
  }

  Tensor allReduce(const Tensor &x, const Group &group,
                   Reduction kind) override {
    return combine(exchange(x, group, "all_reduce"), kind);
  }

  Tensor allToAll(const Tensor &x, const Group &group, int64_t splitDim,
                  int64_t concatDim) override {
    int64_t n = int64_t(group.size());
    if (splitDim < 0 || splitDim >= x.rank() || x.dim(splitDim) % n != 0)
      throw RuntimeError("all_to_all: split dimension of " + x.describe() +
                         " is not divisible by the group size " +
                         std::to_string(n));
    std::vector<Tensor> all = exchange(x, group, "all_to_all");
    int64_t index = indexIn(group);
    std::vector<Tensor> mine;
    for (const Tensor &t : all)
      mine.push_back(pieceAlong(t, splitDim, index, n));
    return concat(mine, concatDim);
  }

  void send(const Tensor &x, int64_t peer) override {
    checkRank(peer, "send");
    std::lock_guard<std::mutex> lock(state->mutex);
    state->mailboxes[{myRank, peer}].push_back(x);
    state->changed.notify_all();
  }

  Tensor recv(int64_t peer) override {
    checkRank(peer, "recv");
    std::unique_lock<std::mutex> lock(state->mutex);
    auto &box = state->mailboxes[{peer, myRank}];
    state->wait(lock, [&] { return !box.empty(); },
                "recv from rank " + std::to_string(peer));
    Tensor t = box.front();
    box.pop_front();
    return t;
  }

  Tensor ppermute(const Tensor &x, const Group &group,
                  const std::vector<int64_t> &pairs) override {
    std::vector<Tensor> all = exchange(x, group, "ppermute");
    int64_t index = indexIn(group);
    for (size_t i = 0; i + 1 < pairs.size(); i += 2)
      if (pairs[i + 1] == index) {
        if (pairs[i] < 0 || pairs[i] >= int64_t(all.size()))
          throw RuntimeError("ppermute: source out of range");
        return all[pairs[i]];
      }
    return full(x.dtype(), x.shape(), 0.0);
  }

private:
  void checkRank(int64_t peer, const char *what) const {
    if (peer < 0 || peer >= state->size || peer == myRank)
      throw RuntimeError(std::string(what) + ": invalid peer rank " +
                         std::to_string(peer));
  }

  int64_t indexIn(const Group &group) const {
    for (size_t i = 0; i < group.size(); ++i)
      if (group[i] == myRank)
        return int64_t(i);
    throw RuntimeError("rank " + std::to_string(myRank) +
                       " is not a member of its collective's group");
  }

  /// Reduces in group order, so every member gets identical bits.
  static Tensor combine(const std::vector<Tensor> &all, Reduction kind) {
    Tensor acc = all[0];
    for (size_t i = 1; i < all.size(); ++i)
      acc = kind == Reduction::Sum   ? add(acc, all[i])
            : kind == Reduction::Max ? max(acc, all[i])
                                     : min(acc, all[i]);
    return acc;
  }

  std::vector<Tensor> exchange(const Tensor &x, const Group &group,
                               const std::string &what) {
    int64_t index = indexIn(group);
    std::unique_lock<std::mutex> lock(state->mutex);
    if (!state->abortReason.empty())
      throw RuntimeError(what + " aborted: " + state->abortReason);
    uint64_t seq = state->sequence[{myRank, group}]++;
    auto key = std::make_pair(group, seq);
    auto &r = state->rendezvous[key];
    if (r.slots.empty())
      r.slots.resize(group.size());
    r.slots[index] = x;
    ++r.arrived;
    state->changed.notify_all();
    state->wait(lock, [&] { return r.arrived == group.size(); },
                what + " on rank " + std::to_string(myRank));
    std::vector<Tensor> result = r.slots;
    if (++r.departed == group.size())
      state->rendezvous.erase(key);
    return result;
  }

  std::shared_ptr<InProcessWorld::State> state;
  int64_t myRank;
};

} // namespace

InProcessWorld::InProcessWorld(int64_t size, std::chrono::milliseconds timeout)
    : state(std::make_shared<State>()) {
  if (size < 1)
    throw RuntimeError("a world needs at least one rank");
  state->size = size;
  state->timeout = timeout;
}

InProcessWorld::~InProcessWorld() = default;

int64_t InProcessWorld::size() const { return state->size; }

std::unique_ptr<Communicator> InProcessWorld::communicator(int64_t rank) {
  if (rank < 0 || rank >= state->size)
    throw RuntimeError("rank " + std::to_string(rank) + " outside a world of " +
                       std::to_string(state->size));
  return std::make_unique<InProcessCommunicator>(state, rank);
}

void InProcessWorld::abort(const std::string &why) {
  std::lock_guard<std::mutex> lock(state->mutex);
  state->abortReason = why;
  state->changed.notify_all();
}
