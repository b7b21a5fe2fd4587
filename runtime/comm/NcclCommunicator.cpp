//===- NcclCommunicator.cpp - A rank's NCCL communicator ------------------===//
//
// Part of the Glimmer runtime. See NcclCommunicator.h. All communicators
// are nonblocking (ncclConfig_t::blocking = 0): no NCCL call blocks the
// host; calls that return ncclInProgress are polled with
// ncclCommGetAsyncError, checking the abort reason and the timeout in
// between. Once a rank's communicators are aborted (ncclCommAbort), its
// queued NCCL kernels exit, so the stream drains and nothing waits forever;
// the rank's `failure` says why, and every later use throws it.
//
//===----------------------------------------------------------------------===//

#include "NcclCommunicator.h"
#include "../cuda/CudaBackend.h"

#include <algorithm>
#include <exception>
#include <thread>

namespace glimmer_rt {
namespace cuda {
// Declared in cuda/Common.cuh, which only nvcc can compile.
cudaStream_t stream(int device);
} // namespace cuda
namespace nccl_detail {
// comm/NcclKernels.cu.
cudaError_t writeWords(int64_t *dst, const int64_t *words, int count,
                       cudaStream_t stream);

namespace {

/// send()'s header: magic, dtype, rank, then up to kMaxHeaderDims dims.
constexpr int kHeaderWords = 16;
constexpr int kMaxHeaderDims = kHeaderWords - 3;
constexpr int64_t kHeaderMagic = 0x474c4d5248445231; // "GLMRHDR1"

std::string ranksText(const Group &group) {
  std::string s = "[";
  for (size_t i = 0; i < group.size(); ++i)
    s += (i ? ", " : "") + std::to_string(group[i]);
  return s + "]";
}

std::optional<ncclDataType_t> reductionType(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return ncclFloat64;
  case DType::F32:
    return ncclFloat32;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F16:
    return ncclFloat16;
  case DType::I64:
    return ncclInt64;
  case DType::I32:
    return ncclInt32;
  case DType::I8:
    return ncclInt8;
  case DType::U8:
  case DType::Bool: // max = or, min = and
    return ncclUint8;
  default:
    return std::nullopt;
  }
}

const char *reductionName(Reduction kind) {
  return kind == Reduction::Sum   ? "sum"
         : kind == Reduction::Max ? "max"
                                  : "min";
}

ncclRedOp_t ncclOp(Reduction kind) {
  return kind == Reduction::Sum   ? ncclSum
         : kind == Reduction::Max ? ncclMax
                                  : ncclMin;
}

/// x with its dims permuted (result dim i = x dim perm[i]): a view when
/// only size-1 dims change places (no data moves), else a transpose on x's
/// device.
Tensor permuted(const Tensor &x, const std::vector<int64_t> &perm) {
  bool moves = false;
  int64_t last = -1;
  for (int64_t p : perm)
    if (x.dim(p) != 1) {
      moves |= p < last;
      last = p;
    }
  if (moves)
    return transpose(x, perm);
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(x.dim(p));
  return x.view(shape);
}

//===----------------------------------------------------------------------===//
// The communicator
//===----------------------------------------------------------------------===//

class NcclCommunicator : public Communicator {
public:
  NcclCommunicator(std::shared_ptr<Hub> hubPtr, int64_t rank, int device)
      : hub(std::move(hubPtr)), s(std::make_shared<RankState>(rank, device)),
        unwinding(std::uncaught_exceptions()) {
    cuda::setDevice(device);
    ncclConfig_t config = nonblockingConfig();
    ncclResult_t r = ncclCommInitRankConfig(&s->world, int(hub->size), hub->id,
                                            int(rank), &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      if (s->world)
        ncclCommAbort(s->world);
      throw RuntimeError(s->name() +
                         ": initializing NCCL failed: " + ncclText(r));
    }
    hub->add(s);
    std::shared_ptr<Hub> h = hub;
    std::shared_ptr<RankState> st = s;
    hookId = cuda::addWaitHook([h, st](int device, double waited) {
      onWait(*h, *st, device, waited);
    });
  }

  ~NcclCommunicator() override {
    cuda::removeWaitHook(hookId);
    hub->remove(s);
    bool unwindingNow = std::uncaught_exceptions() > unwinding;
    if (!unwindingNow)
      awaitInitQuietly();
    std::vector<std::pair<ncclComm_t, int>> started;
    std::string failure;
    bool newFailure = false;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      if (s->failure.empty()) {
        newFailure = true;
        if (hub->aborted.load()) {
          newFailure = false;
          s->abortLocked(s->name() + " aborted: " + hub->abortReason());
        } else if (unwindingNow) {
          s->abortLocked(s->name() + " stopped: its communicator was "
                                     "destroyed while an error propagated");
        } else if (s->world && !s->worldReady) {
          // Finalizing waits for initialization; abort instead.
          s->abortLocked(s->name() + ": the communicator was destroyed "
                                     "before NCCL finished initializing");
        } else {
          newFailure = false;
        }
      }
      failure = s->failure;
      if (failure.empty()) {
        DeviceGuard guard(s->device);
        for (ncclComm_t comm : s->commsLocked()) {
          ncclResult_t r = ncclCommFinalize(comm);
          if (r == ncclSuccess || r == ncclInProgress)
            started.emplace_back(comm, s->device);
          else
            ncclCommAbort(comm);
        }
        s->world = nullptr;
        s->groups.clear();
        s->failure = s->name() + ": the communicator was destroyed";
      }
    }
    if (newFailure) {
      // The other ranks would wait for this one: stop them (and, between
      // processes, tell them why).
      hub->abort(failure);
    } else if (failure.empty()) {
      // Peers that see this process go after a goodbye do not fail.
      std::lock_guard<std::mutex> lock(hub->livenessMutex);
      if (hub->liveness)
        hub->liveness->broadcast(kByeMessage, "");
    }
    hub->release(std::move(started));
  }

  int64_t rank() const override { return s->rank; }
  int64_t worldSize() const override { return hub->size; }

  Tensor allGather(const Tensor &x, const Group &group, int64_t dim) override {
    const char *op = "all_gather";
    checkInput(x, op);
    int64_t n = int64_t(group.size());
    indexIn(group, op);
    if (dim < 0 || dim >= x.rank())
      throw RuntimeError(std::string(op) + ": dimension " +
                         std::to_string(dim) + " is out of range for " +
                         x.describe());
    if (n == 1)
      return x;
    ncclComm_t comm = commFor(group);
    Shape gatheredShape{n};
    gatheredShape.insert(gatheredShape.end(), x.shape().begin(),
                         x.shape().end());
    Tensor gathered(x.dtype(), gatheredShape, x.device());
    if (x.nbytes())
      enqueue(describe(op, group), comm, [&] {
        return ncclAllGather(x.raw(), gathered.raw(), x.nbytes(), ncclUint8,
                             comm, stream());
      });
    // gathered is [n, x dims...]; the result puts n next to `dim` and
    // merges the two.
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d == dim)
        perm.push_back(0);
      perm.push_back(d + 1);
    }
    Shape out = x.shape();
    out[size_t(dim)] *= n;
    return permuted(gathered, perm).view(out);
  }

  Tensor reduceScatter(const Tensor &x, const Group &group, int64_t dim,
                       Reduction kind) override {
    const char *op = "reduce_scatter";
    checkInput(x, op);
    int64_t n = int64_t(group.size());
    indexIn(group, op);
    if (dim < 0 || dim >= x.rank() || x.dim(dim) % n != 0)
      throw RuntimeError("reduce_scatter: dimension " + std::to_string(dim) +
                         " of " + x.describe() +
                         " is not divisible by the group size " +
                         std::to_string(n));
    ncclDataType_t type = reductionTypeOf(x, kind, op);
    if (n == 1)
      return x;
    ncclComm_t comm = commFor(group);
    int64_t piece = x.dim(dim) / n;
    // NCCL scatters contiguous chunks: bring the n pieces of `dim` to the
    // front ([pre..., n, piece, post...] -> [n, pre..., piece, post...]).
    Shape split;
    for (int64_t d = 0; d < x.rank(); ++d) {
      if (d == dim) {
        split.push_back(n);
        split.push_back(piece);
      } else {
        split.push_back(x.dim(d));
      }
    }
    std::vector<int64_t> perm{dim};
    for (int64_t d = 0; d <= x.rank(); ++d)
      if (d != dim)
        perm.push_back(d);
    Tensor chunks = permuted(x.view(split), perm);
    Shape outShape = x.shape();
    outShape[size_t(dim)] = piece;
    Tensor out(x.dtype(), outShape, x.device());
    if (out.numel())
      enqueue(describe(op, group), comm, [&] {
        return ncclReduceScatter(chunks.raw(), out.raw(), size_t(out.numel()),
                                 type, ncclOp(kind), comm, stream());
      });
    return out;
  }

  Tensor allReduce(const Tensor &x, const Group &group,
                   Reduction kind) override {
    const char *op = "all_reduce";
    checkInput(x, op);
    indexIn(group, op);
    ncclDataType_t type = reductionTypeOf(x, kind, op);
    if (group.size() == 1)
      return x;
    ncclComm_t comm = commFor(group);
    Tensor out(x.dtype(), x.shape(), x.device());
    if (out.numel())
      enqueue(describe(op, group), comm, [&] {
        return ncclAllReduce(x.raw(), out.raw(), size_t(x.numel()), type,
                             ncclOp(kind), comm, stream());
      });
    return out;
  }

  Tensor allToAll(const Tensor &x, const Group &group, int64_t splitDim,
                  int64_t concatDim) override {
    const char *op = "all_to_all";
    checkInput(x, op);
    int64_t n = int64_t(group.size());
    indexIn(group, op);
    if (splitDim < 0 || splitDim >= x.rank() || x.dim(splitDim) % n != 0)
      throw RuntimeError("all_to_all: split dimension of " + x.describe() +
                         " is not divisible by the group size " +
                         std::to_string(n));
    if (concatDim < 0 || concatDim >= x.rank())
      throw RuntimeError("all_to_all: concat dimension " +
                         std::to_string(concatDim) + " is out of range for " +
                         x.describe());
    if (n == 1)
      return x;
    ncclComm_t comm = commFor(group);
    int64_t k = x.rank(), piece = x.dim(splitDim) / n;
    // Piece j of `splitDim` goes to member j: make the pieces contiguous
    // chunks by moving splitDim to the front.
    std::vector<int64_t> toFront{splitDim};
    for (int64_t d = 0; d < k; ++d)
      if (d != splitDim)
        toFront.push_back(d);
    Tensor chunks = permuted(x, toFront);
    Tensor received(x.dtype(), chunks.shape(), x.device());
    size_t chunkBytes = x.nbytes() / size_t(n);
    if (chunkBytes)
      enqueue(describe(op, group), comm, [&] {
        ncclResult_t first = ncclGroupStart();
        if (first != ncclSuccess)
          return first;
        const char *src = static_cast<const char *>(chunks.raw());
        char *dst = static_cast<char *>(received.raw());
        for (int64_t j = 0; j < n; ++j) {
          ncclResult_t a = ncclSend(src + size_t(j) * chunkBytes, chunkBytes,
                                    ncclUint8, int(j), comm, stream());
          ncclResult_t b = ncclRecv(dst + size_t(j) * chunkBytes, chunkBytes,
                                    ncclUint8, int(j), comm, stream());
          if (first == ncclSuccess)
            first = a != ncclSuccess ? a : b;
        }
        ncclResult_t end = ncclGroupEnd();
        return first != ncclSuccess ? first : end;
      });
    // received is [n, piece, other dims...] (chunk i from member i); the
    // result concatenates the pieces along concatDim in member order: put
    // n just before concatDim and merge the two.
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < k; ++d) {
      if (d == concatDim)
        perm.push_back(0);
      perm.push_back(d == splitDim ? 1 : 2 + (d < splitDim ? d : d - 1));
    }
    Shape pieces{n, piece};
    Shape out = x.shape();
    out[size_t(splitDim)] = piece;
    for (int64_t d = 0; d < k; ++d)
      if (d != splitDim)
        pieces.push_back(x.dim(d));
    out[size_t(concatDim)] *= n;
    return permuted(received.view(pieces), perm).view(out);
  }

  void send(const Tensor &x, int64_t peer) override {
    const char *op = "send";
    checkInput(x, op);
    checkPeer(peer, op);
    if (x.rank() > kMaxHeaderDims)
      throw RuntimeError("send: " + x.describe() + " has more than " +
                         std::to_string(kMaxHeaderDims) + " dimensions");
    ncclComm_t comm = commFor(worldGroup());
    int64_t words[kHeaderWords] = {kHeaderMagic, int64_t(x.dtype()), x.rank()};
    for (int64_t d = 0; d < x.rank(); ++d)
      words[3 + d] = x.dim(d);
    Tensor header(DType::I64, {kHeaderWords}, x.device());
    {
      DeviceGuard guard(s->device);
      cudaError_t status = nccl_detail::writeWords(
          header.data<int64_t>(), words, kHeaderWords, stream());
      if (status != cudaSuccess)
        throw RuntimeError(s->name() + ": send: writing the header failed: " +
                           cudaGetErrorString(status));
    }
    std::string what = "send to rank " + std::to_string(peer);
    enqueue(what + " (header)", comm, [&] {
      return ncclSend(header.raw(), kHeaderWords, ncclInt64, int(peer), comm,
                      stream());
    });
    if (x.nbytes())
      enqueue(what, comm, [&] {
        return ncclSend(x.raw(), x.nbytes(), ncclUint8, int(peer), comm,
                        stream());
      });
  }

  Tensor recv(int64_t peer) override {
    const char *op = "recv";
    checkPeer(peer, op);
    ncclComm_t comm = commFor(worldGroup());
    std::string what = "recv from rank " + std::to_string(peer);
    Device device = Device::cuda(s->device);
    Tensor header(DType::I64, {kHeaderWords}, device);
    enqueue(what + " (header)", comm, [&] {
      return ncclRecv(header.raw(), kHeaderWords, ncclInt64, int(peer), comm,
                      stream());
    });
    // The shape is needed on the host before the payload can be received.
    waitIdle(what);
    Tensor host = header.to(Device::cpu());
    const int64_t *words = host.data<int64_t>();
    int64_t rank = words[2];
    if (words[0] != kHeaderMagic || words[1] < 0 ||
        words[1] > int64_t(DType::Bool) || rank < 0 || rank > kMaxHeaderDims)
      throw RuntimeError(s->name() + ": " + what +
                         ": the message is not a tensor sent by send()");
    Shape shape(words + 3, words + 3 + rank);
    Tensor out(DType(words[1]), shape, device);
    if (out.nbytes())
      enqueue(what, comm, [&] {
        return ncclRecv(out.raw(), out.nbytes(), ncclUint8, int(peer), comm,
                        stream());
      });
    return out;
  }

  Tensor ppermute(const Tensor &x, const Group &group,
                  const std::vector<int64_t> &pairs) override {
    const char *op = "ppermute";
    checkInput(x, op);
    int64_t n = int64_t(group.size());
    int64_t index = indexIn(group, op);
    if (pairs.size() % 2 != 0)
      throw RuntimeError("ppermute: pairs must come as (source, destination)");
    // Every member checks every pair, so all of them throw alike.
    std::vector<bool> isDestination(size_t(n), false);
    std::vector<int64_t> sendTo;
    int64_t source = -1;
    for (size_t i = 0; i < pairs.size(); i += 2) {
      int64_t src = pairs[i], dst = pairs[i + 1];
      if (src < 0 || src >= n || dst < 0 || dst >= n)
        throw RuntimeError("ppermute: pair (" + std::to_string(src) + ", " +
                           std::to_string(dst) +
                           ") is out of range for a group of " +
                           std::to_string(n));
      if (isDestination[size_t(dst)])
        throw RuntimeError("ppermute: member " + std::to_string(dst) +
                           " is the destination of two pairs");
      isDestination[size_t(dst)] = true;
      if (src == index && dst != index)
        sendTo.push_back(dst);
      if (dst == index)
        source = src;
    }
    Tensor out;
    if (source == index)
      out = x;
    else if (source < 0)
      out = Tensor::zeros(x.dtype(), x.shape(), x.device());
    else
      out = Tensor(x.dtype(), x.shape(), x.device());
    if (n == 1)
      return out;
    ncclComm_t comm = commFor(group);
    bool receives = source >= 0 && source != index;
    if ((sendTo.empty() && !receives) || !x.nbytes())
      return out;
    enqueue(describe(op, group), comm, [&] {
      ncclResult_t first = ncclGroupStart();
      if (first != ncclSuccess)
        return first;
      for (int64_t dst : sendTo) {
        ncclResult_t r =
            ncclSend(x.raw(), x.nbytes(), ncclUint8, int(dst), comm, stream());
        if (first == ncclSuccess)
          first = r;
      }
      if (receives) {
        ncclResult_t r = ncclRecv(out.raw(), out.nbytes(), ncclUint8,
                                  int(source), comm, stream());
        if (first == ncclSuccess)
          first = r;
      }
      ncclResult_t end = ncclGroupEnd();
      return first != ncclSuccess ? first : end;
    });
    return out;
  }

private:
  cudaStream_t stream() const { return cuda::stream(s->device); }

  Group worldGroup() const {
    Group g(size_t(hub->size));
    for (int64_t r = 0; r < hub->size; ++r)
      g[size_t(r)] = r;
    return g;
  }

  std::string describe(const char *op, const Group &group) const {
    return std::string(op) + " on ranks " + ranksText(group);
  }

  void checkInput(const Tensor &x, const char *op) const {
    if (!x.defined())
      throw RuntimeError(std::string(op) + ": missing input tensor");
    if (x.device() != Device::cuda(s->device))
      throw RuntimeError(std::string(op) + ": expects a tensor on cuda:" +
                         std::to_string(s->device) + " (" + s->name() +
                         "'s GPU), got " + x.describe());
  }

  void checkPeer(int64_t peer, const char *op) const {
    if (peer < 0 || peer >= hub->size || peer == s->rank)
      throw RuntimeError(std::string(op) + ": invalid peer rank " +
                         std::to_string(peer));
  }

  int64_t indexIn(const Group &group, const char *op) const {
    for (size_t i = 0; i < group.size(); ++i)
      if (group[i] < 0 || group[i] >= hub->size)
        throw RuntimeError(std::string(op) + ": group " + ranksText(group) +
                           " names ranks outside a world of " +
                           std::to_string(hub->size));
    for (size_t i = 0; i < group.size(); ++i)
      if (group[i] == s->rank)
        return int64_t(i);
    throw RuntimeError("rank " + std::to_string(s->rank) +
                       " is not a member of its collective's group");
  }

  ncclDataType_t reductionTypeOf(const Tensor &x, Reduction kind,
                                 const char *op) const {
    std::optional<ncclDataType_t> type = reductionType(x.dtype());
    if (!type || (x.dtype() == DType::Bool && kind == Reduction::Sum))
      throw RuntimeError(std::string(op) + ": cannot " + reductionName(kind) +
                         "-reduce " + x.describe() + " with NCCL");
    return *type;
  }

  /// Throws the rank's failure, or the world's abort.
  void throwIfFailedLocked(const std::string &what) {
    if (!s->failure.empty())
      throw RuntimeError(s->failure);
    if (hub->aborted.load()) {
      std::string message =
          s->name() + ": " + what + " aborted: " + hub->abortReason();
      s->abortLocked(message);
      throw RuntimeError(message);
    }
  }

  /// Aborts the rank (and, between ranks of this hub, the world), then
  /// throws `message`.
  [[noreturn]] void fail(const std::string &message) {
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      // Whoever failed the rank first has told the others.
      if (!s->failure.empty())
        throw RuntimeError(s->failure);
      s->abortLocked(message);
    }
    hub->abort(message);
    throw RuntimeError(message);
  }

  /// Polls `comm` until it leaves ncclInProgress, giving up on an NCCL
  /// error, an abort or the timeout.
  void awaitComm(ncclComm_t comm, const std::string &what,
                 const std::string &onTimeout = "waiting for the other ranks") {
    auto start = Clock::now();
    for (int polls = 0;; ++polls) {
      ncclResult_t state = ncclInProgress;
      std::string message;
      {
        std::lock_guard<std::mutex> lock(s->mutex);
        throwIfFailedLocked(what);
        // Another rank failed: no point waiting for it to join.
        if (hub->aborted.load())
          message = s->name() + ": " + what + " aborted: " + hub->abortReason();
        else if (ncclCommGetAsyncError(comm, &state) != ncclSuccess)
          state = ncclInternalError;
      }
      if (!message.empty())
        fail(message);
      if (state == ncclSuccess)
        return;
      if (state != ncclInProgress)
        fail(s->name() + ": " + what +
             " failed: NCCL error: " + ncclText(state));
      if (Clock::now() - start > hub->timeout) {
        std::string progress = hub->livenessProgress();
        fail(s->name() + ": " + what + " timed out after " +
             durationText(hub->timeout) + " " + onTimeout +
             (progress.empty() ? "" : " (" + progress + ")"));
      }
      s->lastPollNs.store(nowNs());
      if (polls > 200)
        std::this_thread::sleep_for(std::chrono::microseconds(500));
      else
        std::this_thread::yield();
    }
  }

  /// Waits on the host until every enqueued collective has completed.
  void waitIdle(const std::string &what) {
    for (int polls = 0;; ++polls) {
      std::string message;
      {
        std::lock_guard<std::mutex> lock(s->mutex);
        throwIfFailedLocked(what);
        s->retireLocked();
        if (s->pending.empty())
          return;
        message = s->asyncErrorLocked();
        if (message.empty())
          message = s->timedOutLocked(hub->timeout);
      }
      if (!message.empty())
        fail(message);
      s->lastPollNs.store(nowNs());
      if (polls > 1000)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      else
        std::this_thread::yield();
    }
  }

  /// Waits (up to the timeout, without throwing) for the initialization of
  /// a communicator that was never used: the other ranks' finalization
  /// needs this rank initialized.
  void awaitInitQuietly() {
    auto deadline = Clock::now() + hub->timeout;
    while (!hub->aborted.load() && Clock::now() < deadline) {
      ncclResult_t state = ncclInternalError;
      {
        std::lock_guard<std::mutex> lock(s->mutex);
        if (s->worldReady || !s->failure.empty() || !s->world ||
            ncclCommGetAsyncError(s->world, &state) != ncclSuccess)
          return;
        s->worldReady = state == ncclSuccess;
      }
      if (state != ncclInProgress)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  /// Waits for the world communicator's initialization (every rank must
  /// have created its communicator).
  void ensureReady() {
    if (s->worldReady)
      return;
    ncclComm_t world;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      throwIfFailedLocked("initializing NCCL");
      world = s->world;
    }
    awaitComm(world,
              "initializing NCCL for " + std::to_string(hub->size) + " ranks",
              "for every rank to create its communicator");
    std::lock_guard<std::mutex> lock(s->mutex);
    s->worldReady = true;
  }

  /// The communicator of `group` (the world's for the world in rank order),
  /// split from the world's at the group's first use. All ranks of the
  /// world take part in a split, each with its own group.
  ncclComm_t commFor(const Group &group) {
    ensureReady();
    bool isWorld = int64_t(group.size()) == hub->size;
    for (size_t i = 0; isWorld && i < group.size(); ++i)
      isWorld = group[i] == int64_t(i);
    ncclComm_t parent;
    std::string what =
        "creating the NCCL communicator of ranks " + ranksText(group);
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      throwIfFailedLocked(what);
      if (isWorld)
        return s->world;
      auto it = s->groups.find(group);
      if (it != s->groups.end())
        return it->second;
      parent = s->world;
    }
    int color = int(*std::min_element(group.begin(), group.end()));
    int key = int(indexIn(group, "split"));
    // NCCL fills the new handle from its own thread when the split
    // completes; should we give up first, the slot must stay valid, so it
    // is leaked on that path.
    ncclComm_t *slot = new ncclComm_t(nullptr);
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      throwIfFailedLocked(what);
      DeviceGuard guard(s->device);
      ncclConfig_t config = nonblockingConfig();
      ncclResult_t r = ncclCommSplit(parent, color, key, slot, &config);
      if (r != ncclSuccess && r != ncclInProgress) {
        std::string message =
            s->name() + ": " + what + " failed: NCCL error: " + ncclText(r);
        s->abortLocked(message);
        hub->abort(message);
        throw RuntimeError(message);
      }
    }
    // A nonblocking split completes when the parent leaves ncclInProgress.
    awaitComm(parent, what, "for every rank to reach the split");
    ncclComm_t child = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    delete slot;
    if (!child)
      fail(s->name() + ": " + what +
           " failed: ncclCommSplit made no communicator");
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      if (!s->failure.empty()) {
        ncclCommAbort(child);
        throw RuntimeError(s->failure);
      }
      s->groups[group] = child;
    }
    awaitComm(child, what, "for every rank to reach the split");
    return child;
  }

  /// Runs `calls` (NCCL calls on `comm`, on the rank's stream) and tracks
  /// the collective until it completes (enqueueCaptured while the stream
  /// is captured into a CUDA graph).
  template <typename Calls>
  void enqueue(const std::string &what, ncclComm_t comm, Calls &&calls) {
    cudaStream_t st = stream();
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(st, &capture) != cudaSuccess)
      cudaGetLastError();
    if (capture == cudaStreamCaptureStatusActive)
      return enqueueCaptured(what, comm, std::forward<Calls>(calls));
    PendingOp op;
    op.what = what;
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      throwIfFailedLocked(what);
      s->retireLocked();
      DeviceGuard guard(s->device);
      op.start = s->takeEventLocked();
      recordLocked(op.start, st, what);
      ncclResult_t r = calls();
      if (r != ncclSuccess && r != ncclInProgress) {
        s->spareEvents.push_back(op.start);
        callFailedLocked(what, r);
      }
    }
    // Until the call leaves ncclInProgress nothing else may be queued on
    // the stream (nonblocking communicators may still be connecting).
    try {
      awaitComm(comm, what);
    } catch (...) {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->spareEvents.push_back(op.start);
      throw;
    }
    std::lock_guard<std::mutex> lock(s->mutex);
    DeviceGuard guard(s->device);
    op.end = s->takeEventLocked();
    try {
      recordLocked(op.end, st, what);
    } catch (...) {
      s->spareEvents.push_back(op.start);
      throw;
    }
    s->pending.push_back(std::move(op));
  }

  /// A collective queued while the stream is captured into a CUDA graph:
  /// it runs at each replay, not now, and an event recorded during a
  /// capture cannot be queried, so it is not tracked by events of its own;
  /// the time since the graph's launch bounds it instead (timedOutLocked).
  template <typename Calls>
  void enqueueCaptured(const std::string &what, ncclComm_t comm,
                       Calls &&calls) {
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      throwIfFailedLocked(what);
      DeviceGuard guard(s->device);
      ncclResult_t r = calls();
      if (r != ncclSuccess && r != ncclInProgress)
        callFailedLocked(what, r);
      s->graphCollectives = true;
    }
    awaitComm(comm, what);
  }

  /// After the NCCL call of `what` returned the error `r`: aborts this
  /// rank's communicators and the world's, and throws.
  [[noreturn]] void callFailedLocked(const std::string &what, ncclResult_t r) {
    std::string message =
        s->name() + ": " + what + " failed: NCCL error: " + ncclText(r);
    s->abortLocked(message);
    hub->abort(message);
    throw RuntimeError(message);
  }

  /// Records `event` on `st`; an event that cannot be recorded would look
  /// like a collective that never completes.
  void recordLocked(cudaEvent_t event, cudaStream_t st,
                    const std::string &what) {
    cudaError_t status = cudaEventRecord(event, st);
    if (status == cudaSuccess)
      return;
    s->spareEvents.push_back(event);
    throw RuntimeError(
        s->name() + ": " + what +
        ": cannot record a CUDA event: " + cudaGetErrorString(status));
  }

  std::shared_ptr<Hub> hub;
  std::shared_ptr<RankState> s;
  int hookId = -1;
  int unwinding;
};

} // namespace

std::unique_ptr<Communicator> makeCommunicator(std::shared_ptr<Hub> hub,
                                               int64_t rank, int device) {
  return std::make_unique<NcclCommunicator>(std::move(hub), rank, device);
}

} // namespace nccl_detail
} // namespace glimmer_rt
