//===- CudnnAttention.cpp - cuDNN's fused flash attention -----------------===//
//
// One cudnn-frontend graph per (direction, shape, mask, scale, layout) and
// device, built on first use and kept for the process: rank threads come
// and go with every step, so a per-thread cache would rebuild the plans
// each step.
// Each device has one cuDNN handle; a mutex serializes the (host-side,
// asynchronous) plan lookups and launches on it. A shape cuDNN does not
// support is cached as such and falls back to Attention.cu every time after
// without asking again.
//
//===----------------------------------------------------------------------===//

#include "CudnnAttention.h"
#include "CudaBackend.h"

#include "glimmer_rt/Device.h"

#include <cudnn_frontend.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

namespace glimmer_rt {
namespace cuda {
namespace {

namespace fe = cudnn_frontend;

// Tensor uids of the graphs' variant packs.
enum : int64_t { kQ = 1, kK, kV, kO, kStats, kDO, kDQ, kDK, kDV };

[[noreturn]] void fail(const char *op, const std::string &what) {
  throw RuntimeError(std::string("glimmer.") + op + ": cuDNN attention: " +
                     what);
}

std::vector<int64_t> contiguous(const std::vector<int64_t> &dims) {
  std::vector<int64_t> stride(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i)
    stride[i - 1] = stride[i] * dims[i];
  return stride;
}

/// A graph tensor's dims and the strides of its storage.
struct Layout {
  std::vector<int64_t> dims, strides;
};

/// Dims [B, H, T, D], stored so or sequence-major ([B, T, H, D]).
Layout bhtd(int64_t B, int64_t H, int64_t T, int64_t D, bool sequenceMajor) {
  if (sequenceMajor)
    return {{B, H, T, D}, {T * H * D, D, H * D, 1}};
  return {{B, H, T, D}, contiguous({B, H, T, D})};
}

std::shared_ptr<fe::graph::Tensor_attributes>
input(fe::graph::Graph &g, const char *name, int64_t uid, const Layout &l,
      fe::DataType_t type = fe::DataType_t::BFLOAT16) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim(l.dims)
                      .set_stride(l.strides)
                      .set_data_type(type));
}

void output(const std::shared_ptr<fe::graph::Tensor_attributes> &t, int64_t uid,
            const Layout &l, fe::DataType_t type = fe::DataType_t::BFLOAT16) {
  t->set_output(true)
      .set_uid(uid)
      .set_dim(l.dims)
      .set_stride(l.strides)
      .set_data_type(type);
}

using Key = std::tuple<bool, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, bool, double, bool, bool, bool, bool>;

/// The most workspace cuDNN's deterministic attention backward may take
/// unless asked for (GLIMMER_CUDA_ATTENTION=cudnn-deterministic).
constexpr int64_t kDeterministicWorkspace = int64_t(256) << 20;

struct Plan {
  std::shared_ptr<fe::graph::Graph> graph; // null: cuDNN cannot run it
  int64_t workspace = 0;
  std::string why; // without a graph: cuDNN's reason
};

std::shared_ptr<fe::graph::Graph> newGraph() {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

// The layouts of a shape's tensors.
Layout queryLayout(const CudnnAttentionShape &s) {
  return bhtd(s.B, s.Hq, s.Tq, s.D, s.layout.query);
}
Layout keyLayout(const CudnnAttentionShape &s) {
  return bhtd(s.B, s.Hkv, s.Tk, s.D, s.layout.key);
}
Layout valueLayout(const CudnnAttentionShape &s) {
  return bhtd(s.B, s.Hkv, s.Tk, s.D, s.layout.value);
}
Layout outputLayout(const CudnnAttentionShape &s) {
  return bhtd(s.B, s.Hq, s.Tq, s.D, s.layout.output);
}
/// The softmax statistics (lse), [B, Hq, Tq, 1] f32 in every layout.
Layout statsLayout(const CudnnAttentionShape &s) {
  return {{s.B, s.Hq, s.Tq, 1}, contiguous({s.B, s.Hq, s.Tq, 1})};
}

std::shared_ptr<fe::graph::Graph> forwardGraph(const CudnnAttentionShape &s) {
  auto g = newGraph();
  auto q = input(*g, "Q", kQ, queryLayout(s));
  auto k = input(*g, "K", kK, keyLayout(s));
  auto v = input(*g, "V", kV, valueLayout(s));
  auto options = fe::graph::SDPA_attributes()
                     .set_name("glimmer_attention")
                     .set_generate_stats(true)
                     .set_attn_scale(float(s.scale));
  if (s.causal)
    options.set_causal_mask(true); // top-left: key j <= query i
  auto [o, stats] = g->sdpa(q, k, v, options);
  output(o, kO, outputLayout(s));
  output(stats, kStats, statsLayout(s), fe::DataType_t::FLOAT);
  return g;
}

std::shared_ptr<fe::graph::Graph> backwardGraph(const CudnnAttentionShape &s,
                                                bool deterministic) {
  auto g = newGraph();
  auto q = input(*g, "Q", kQ, queryLayout(s));
  auto k = input(*g, "K", kK, keyLayout(s));
  auto v = input(*g, "V", kV, valueLayout(s));
  auto o = input(*g, "O", kO, outputLayout(s));
  auto dO = input(*g, "dO", kDO, outputLayout(s));
  auto stats =
      input(*g, "Stats", kStats, statsLayout(s), fe::DataType_t::FLOAT);
  auto options = fe::graph::SDPA_backward_attributes()
                     .set_name("glimmer_attention_grad")
                     .set_attn_scale(float(s.scale))
                     .set_deterministic_algorithm(deterministic);
  if (s.causal)
    options.set_causal_mask(true);
  auto [dq, dk, dv] = g->sdpa_backward(q, k, v, o, dO, stats, options);
  output(dq, kDQ, queryLayout(s));
  output(dk, kDK, keyLayout(s));
  output(dv, kDV, valueLayout(s));
  return g;
}

/// A device's cuDNN handle and plans. Never destroyed: plans may be in use
/// until the process exits, and cuDNN may be unloaded before static
/// destructors run.
struct DeviceCache {
  std::mutex mutex;
  cudnnHandle_t handle = nullptr;
  std::map<Key, Plan> plans;
};

DeviceCache &cacheFor(const char *op, int device) {
  return perDevice<DeviceCache>(device, [&](DeviceCache &cache) {
    if (cache.handle)
      return;
    cudnnStatus_t st = cudnnCreate(&cache.handle);
    if (st != CUDNN_STATUS_SUCCESS) {
      cache.handle = nullptr;
      fail(op, std::string("cudnnCreate: ") + cudnnGetErrorString(st));
    }
  });
}

/// The cached plan of a direction and shape; builds it on first use (the
/// cache's mutex is held).
const Plan &planFor(DeviceCache &cache, bool backward,
                    const CudnnAttentionShape &s) {
  auto &plans = cache.plans;
  cudnnHandle_t handle = cache.handle;
  const AttentionLayout &l = s.layout;
  Key key{backward, s.B,     s.Hq,    s.Hkv, s.Tq,    s.Tk,    s.D,
          s.causal, s.scale, l.query, l.key, l.value, l.output};
  auto it = plans.find(key);
  if (it != plans.end())
    return it->second;
  // Any refusal while building (validation, no engine for this shape or
  // this GPU) means "not supported here": the caller's kernels run it.
  auto build = [&](std::shared_ptr<fe::graph::Graph> g) {
    Plan plan;
    auto status = g->build(handle, {fe::HeurMode_t::A});
    if (status.is_good())
      status = g->get_workspace_size(plan.workspace);
    if (status.is_good())
      plan.graph = std::move(g);
    else
      plan.why = "cuDNN has no plan for this shape (" +
                 status.get_message() + ")";
    return plan;
  };
  if (!backward)
    return plans.emplace(key, build(forwardGraph(s))).first->second;
  // The deterministic backward's workspace grows with the square of the
  // sequence (2 GiB at 8k tokens and 16 heads, 32 GiB at 32k): beyond
  // kDeterministicWorkspace the non-deterministic one runs, unless
  // GLIMMER_CUDA_ATTENTION picks one (cudnnAttentionDeterminism).
  int mode = glimmer_rt::cudnnAttentionDeterminism();
  Plan plan = build(backwardGraph(s, mode >= 0));
  if (mode < 0 && plan.graph && plan.workspace > kDeterministicWorkspace)
    if (Plan fast = build(backwardGraph(s, false)); fast.graph)
      plan = std::move(fast);
  return plans.emplace(key, std::move(plan)).first->second;
}

/// Why cuDNN cannot take these operands ("" when it can).
std::string unusable(const CudnnAttentionShape &s,
                     std::initializer_list<const Tensor *> operands) {
  if (!cudnnAttentionEnabled())
    return attentionOverride() == AttentionOverride::None
               ? "cuDNN attention is turned off in this process (the "
                 "Python modules turn it off when they load)"
               : "GLIMMER_CUDA_ATTENTION selects the runtime's kernels";
  if (s.D % 8 != 0 || s.D > 256)
    return "head dim " + std::to_string(s.D) +
           " (cuDNN takes multiples of 8 up to 256)";
  for (const Tensor *t : operands) {
    if (t->dtype() != DType::BF16)
      return "an operand is " + t->describe() + ", not bf16";
    if (!aligned16(*t))
      return "an operand is not 16-byte aligned";
  }
  return "";
}

void run(const char *op, int device, cudaStream_t stream, cudnnHandle_t handle,
         const Plan &plan, std::unordered_map<int64_t, void *> &pack) {
  cudnnStatus_t st = cudnnSetStream(handle, stream);
  if (st != CUDNN_STATUS_SUCCESS)
    fail(op, std::string("cudnnSetStream: ") + cudnnGetErrorString(st));
  Tensor workspace;
  if (plan.workspace > 0)
    workspace = Tensor(DType::U8, {plan.workspace}, Device::cuda(device));
  auto status = plan.graph->execute(
      handle, pack, plan.workspace > 0 ? workspace.raw() : nullptr);
  if (!status.is_good())
    fail(op, status.get_message());
  countCudnnAttentionCall();
}

} // namespace

bool cudnnAttentionForward(const char *op, int device, cudaStream_t stream,
                           const CudnnAttentionShape &s, const Tensor &q,
                           const Tensor &k, const Tensor &v, Tensor &out,
                           Tensor &lse, std::string &why) {
  why = unusable(s, {&q, &k, &v, &out});
  if (!why.empty())
    return false;
  DeviceCache &cache = cacheFor(op, device);
  std::lock_guard<std::mutex> lock(cache.mutex);
  const Plan &plan = planFor(cache, /*backward=*/false, s);
  if (!plan.graph) {
    why = plan.why;
    return false;
  }
  std::unordered_map<int64_t, void *> pack{
      {kQ, const_cast<void *>(q.raw())}, {kK, const_cast<void *>(k.raw())},
      {kV, const_cast<void *>(v.raw())}, {kO, out.raw()},
      {kStats, lse.raw()}};
  run(op, device, stream, cache.handle, plan, pack);
  return true;
}

bool cudnnAttentionBackward(const char *op, int device, cudaStream_t stream,
                            const CudnnAttentionShape &s, const Tensor &grad,
                            const Tensor &q, const Tensor &k, const Tensor &v,
                            const Tensor &out, const Tensor &lse, Tensor &dq,
                            Tensor &dk, Tensor &dv, std::string &why) {
  why = unusable(s, {&grad, &q, &k, &v, &out, &dq, &dk, &dv});
  if (!why.empty())
    return false;
  DeviceCache &cache = cacheFor(op, device);
  std::lock_guard<std::mutex> lock(cache.mutex);
  const Plan &plan = planFor(cache, /*backward=*/true, s);
  if (!plan.graph) {
    why = plan.why;
    return false;
  }
  std::unordered_map<int64_t, void *> pack{
      {kQ, const_cast<void *>(q.raw())},
      {kK, const_cast<void *>(k.raw())},
      {kV, const_cast<void *>(v.raw())},
      {kO, const_cast<void *>(out.raw())},
      {kDO, const_cast<void *>(grad.raw())},
      {kStats, const_cast<void *>(lse.raw())},
      {kDQ, dq.raw()},
      {kDK, dk.raw()},
      {kDV, dv.raw()}};
  run(op, device, stream, cache.handle, plan, pack);
  return true;
}

} // namespace cuda
} // namespace glimmer_rt
