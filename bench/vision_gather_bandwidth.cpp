//===- vision_gather_bandwidth.cpp - vision_gather(_grad) on a GPU --------===//
//
// Achieved memory bandwidth of the runtime's vision_gather and
// vision_gather_grad CUDA kernels against a device-to-device copy that moves
// the same number of bytes. Runtime only (no compiler); on the GPU machine:
//
//   g++ -std=c++17 -O2 -Iruntime/include -Icontract/include
//       bench/vision_gather_bandwidth.cpp -o /tmp/vision_gather_bandwidth
//       -L/tmp/rt -Wl,-rpath,/tmp/rt -lglimmer_rt      (one line)
//   /tmp/vision_gather_bandwidth [--batch=1] [--seq=8192] [--dim=4096]
//       [--image-share=0.5] [--patches=256] [--iters=50] [--trials=5]
//       [--warmup=5] [--dtype=f32|bf16|both] [--device=cuda:0]
//
// (--device=cpu --dtype=f32 with small sizes is a dry run of the program
// itself on a machine without a GPU.)
//
// Inputs on the GPU (cuda:0 unless --device): embeds [B, T, D], a bank
// [N, D] and indices [B, T] (int64) laid out like a VLM batch: runs of
// `patches` image tokens (one run per image) spread evenly over each sample,
// `image-share` of all tokens, numbered in batch order (what
// vision_bank_indices computes), -1 on text tokens; N = number of image
// tokens.
//
// Bytes counted (the traffic the op cannot avoid):
//   vision_gather       rows of embeds read for text tokens + rows of the
//                       bank read for image tokens (B*T*D elements together)
//                       + the output written (B*T*D) + the indices read;
//   vision_gather_grad  grad read (B*T*D) + d_embeds written (B*T*D) +
//                       d_bank written (N*D) + the indices read.
// The kernels move a little more than that (vision_gather_grad zero-fills
// d_bank and adds into it with atomics; for bf16 it accumulates in an f32
// scratch and converts at the end), so the "vs copy" ratios are a lower
// bound of how close they come to the copy's bandwidth for the same useful
// traffic.
//
// The copy baseline is Tensor::clone() of a byte tensor of half the counted
// bytes (a copy reads and writes each byte: cudaMemcpyAsync D2D), timed
// twice: queued back to back with one synchronize at the end, and with a
// synchronize after each copy. The calls run inside a DeferredChecks scope,
// as in a training step: their out-of-range bank index checks are read by
// the synchronize that ends each trial, so the calls queue back to back
// like the copies ("vs copy"); the "copy + sync" column is what a call
// that waited for the device each time (checks outside a step) compares
// with.
//
// Times: per call, the median over --trials of (loop of --iters calls,
// then glimmer_rt::synchronize) / iters, after --warmup calls; std::chrono
// steady_clock on the host.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Device.h"
#include "glimmer_rt/Kernels.h"
#include "glimmer_rt/Tensor.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace glimmer_rt;

namespace {

struct Options {
  int64_t batch = 1, seq = 8192, dim = 4096, patches = 256;
  double imageShare = 0.5;
  int iters = 50, trials = 5, warmup = 5;
  std::string dtype = "both";
  Device device = Device::cuda(0);
};

[[noreturn]] void usage(const char *message) {
  std::fprintf(stderr,
               "vision_gather_bandwidth: %s\n"
               "usage: vision_gather_bandwidth [--batch=B] [--seq=T] "
               "[--dim=D] [--image-share=S] [--patches=P] [--iters=N] "
               "[--trials=N] [--warmup=N] [--dtype=f32|bf16|both] "
               "[--device=cuda:N]\n",
               message);
  std::exit(2);
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
      usage(("unexpected argument '" + arg + "'").c_str());
    std::string key = arg.substr(2, eq - 2), value = arg.substr(eq + 1);
    char *end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    bool numeric = !value.empty() && *end == '\0';
    if (key == "device") {
      if (!parseDevice(value, o.device))
        usage("--device must be cuda:N (or cpu, for a dry run)");
      continue;
    }
    if (key == "dtype") {
      if (value != "f32" && value != "bf16" && value != "both")
        usage("--dtype must be f32, bf16 or both");
      o.dtype = value;
      continue;
    }
    if (!numeric || v < 0)
      usage(("--" + key + " expects a non-negative number").c_str());
    if (key == "batch")
      o.batch = int64_t(v);
    else if (key == "seq")
      o.seq = int64_t(v);
    else if (key == "dim")
      o.dim = int64_t(v);
    else if (key == "patches")
      o.patches = int64_t(v);
    else if (key == "image-share")
      o.imageShare = v;
    else if (key == "iters")
      o.iters = int(v);
    else if (key == "trials")
      o.trials = int(v);
    else if (key == "warmup")
      o.warmup = int(v);
    else
      usage(("unknown option --" + key).c_str());
  }
  if (o.batch < 1 || o.seq < 1 || o.dim < 1 || o.patches < 1 || o.iters < 1 ||
      o.trials < 1 || o.imageShare > 1)
    usage("sizes, --iters and --trials must be positive, --image-share <= 1");
  return o;
}

/// Indices [B, T]: per sample, `images` runs of `patches` image tokens spread
/// evenly (equal text gaps before, between and after them), numbered in
/// batch order; -1 elsewhere. Returns the host values and sets `bankRows`.
std::vector<int64_t> makeIndices(const Options &o, int64_t &bankRows) {
  int64_t images = int64_t(o.imageShare * double(o.seq)) / o.patches;
  int64_t text = o.seq - images * o.patches;
  std::vector<int64_t> idx(size_t(o.batch * o.seq), -1);
  int64_t next = 0;
  for (int64_t b = 0; b < o.batch; ++b) {
    int64_t *row = idx.data() + b * o.seq;
    int64_t pos = 0;
    for (int64_t i = 0; i < images; ++i) {
      // gap before image i: text * (i + 1) / (images + 1) - text * i / (images + 1)
      pos += text * (i + 1) / (images + 1) - text * i / (images + 1);
      for (int64_t p = 0; p < o.patches; ++p)
        row[pos++] = next++;
    }
  }
  bankRows = next;
  return idx;
}

using Clock = std::chrono::steady_clock;

/// Median over trials of the mean seconds per call of `fn` (iters calls,
/// then a synchronize of the device; `syncEach` also synchronizes after
/// each).
double timeCalls(const Options &o, const std::function<void()> &fn,
                 bool syncEach = false) {
  Device dev = o.device;
  DeferredChecks checks(dev); // as inside a training step
  for (int i = 0; i < o.warmup; ++i)
    fn();
  synchronize(dev);
  std::vector<double> perCall;
  for (int t = 0; t < o.trials; ++t) {
    auto start = Clock::now();
    for (int i = 0; i < o.iters; ++i) {
      fn();
      if (syncEach)
        synchronize(dev);
    }
    synchronize(dev);
    perCall.push_back(std::chrono::duration<double>(Clock::now() - start).count() /
                      o.iters);
  }
  std::sort(perCall.begin(), perCall.end());
  return perCall[perCall.size() / 2];
}

struct Row {
  std::string op, dtype;
  double bytes, seconds, copyQueued, copySynced;
};

void printRow(const Row &r) {
  auto gbps = [&](double s) { return r.bytes / s / 1e9; };
  std::printf("| %-18s | %-5s | %9.1f | %8.1f | %7.0f | %8.1f | %7.0f | %8.1f | "
              "%7.0f | %6.0f%% | %6.0f%% |\n",
              r.op.c_str(), r.dtype.c_str(), r.bytes / 1e6, r.seconds * 1e6,
              gbps(r.seconds), r.copyQueued * 1e6, gbps(r.copyQueued),
              r.copySynced * 1e6, gbps(r.copySynced),
              100.0 * r.copyQueued / r.seconds, 100.0 * r.copySynced / r.seconds);
}

/// A copy moving `bytes` (read + write): clone of bytes / 2 bytes.
std::pair<double, double> timeCopy(const Options &o, double bytes) {
  Tensor src = Tensor::zeros(DType::U8, {int64_t(bytes / 2)}, o.device);
  auto copy = [&] { Tensor t = src.clone(); };
  return {timeCalls(o, copy), timeCalls(o, copy, /*syncEach=*/true)};
}

std::vector<Row> bench(const Options &o, DType dtype, const char *dtypeName,
                       const std::vector<int64_t> &hostIdx, int64_t bankRows) {
  Device dev = o.device;
  DeviceScope scope(dev);
  int64_t B = o.batch, T = o.seq, D = o.dim;
  double es = double(dtypeSize(dtype));
  Tensor embeds = full(dtype, {B, T, D}, 1.0);
  Tensor bank = full(dtype, {bankRows, D}, 2.0);
  Tensor grad = full(dtype, {B, T, D}, 0.5);
  Tensor indices = Tensor::fromData(DType::I64, {B, T}, hostIdx.data(), dev);
  double idxBytes = double(B * T) * 8;

  // Correctness spot check: one text row and one image row.
  Tensor y = visionGather(embeds, bank, indices);
  synchronize(dev);
  int64_t firstImage = -1, firstText = -1;
  for (size_t p = 0; p < hostIdx.size(); ++p) {
    if (hostIdx[p] >= 0 && firstImage < 0)
      firstImage = int64_t(p);
    if (hostIdx[p] < 0 && firstText < 0)
      firstText = int64_t(p);
  }
  if ((firstImage >= 0 && y.item(firstImage * D) != 2.0) ||
      (firstText >= 0 && y.item(firstText * D) != 1.0)) {
    std::fprintf(stderr, "vision_gather returned wrong values\n");
    std::exit(1);
  }

  std::vector<Row> rows;
  {
    double bytes = 2 * double(B * T * D) * es + idxBytes;
    double s = timeCalls(o, [&] { Tensor out = visionGather(embeds, bank, indices); });
    auto [q, sy] = timeCopy(o, bytes);
    rows.push_back({"vision_gather", dtypeName, bytes, s, q, sy});
  }
  {
    double bytes = (2 * double(B * T * D) + double(bankRows * D)) * es + idxBytes;
    double s = timeCalls(o, [&] {
      auto grads = visionGatherGrad(grad, indices, bankRows);
    });
    auto [q, sy] = timeCopy(o, bytes);
    rows.push_back({"vision_gather_grad", dtypeName, bytes, s, q, sy});
  }
  return rows;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parse(argc, argv);
  if (o.device.isCuda() && (!builtWithCuda() || cudaDeviceCount() <= o.device.index)) {
    std::fprintf(stderr, "vision_gather_bandwidth: needs a runtime built with "
                         "GLIMMER_ENABLE_CUDA=ON and a visible GPU\n");
    return 1;
  }
  int64_t bankRows = 0;
  std::vector<int64_t> idx = makeIndices(o, bankRows);
  try {
    // The cost of one synchronize of an idle device (paid by every
    // vision_gather(_grad) call and by "copy + sync").
    Options syncOnly = o;
    syncOnly.iters = 1000;
    double syncSeconds;
    {
      DeviceScope scope(o.device);
      syncSeconds = timeCalls(syncOnly, [] {}, /*syncEach=*/true);
    }
    std::printf("%s: B = %lld, T = %lld, D = %lld: %lld image tokens (%.0f%%) in runs "
                "of %lld, bank [%lld, %lld]; median of %d trials of %d calls; "
                "idle synchronize %.1f us\n\n",
                o.device.str().c_str(), (long long)o.batch, (long long)o.seq, (long long)o.dim,
                (long long)bankRows,
                100.0 * double(bankRows) / double(o.batch * o.seq),
                (long long)o.patches, (long long)bankRows, (long long)o.dim,
                o.trials, o.iters, syncSeconds * 1e6);
    std::printf("| op                 | dtype | MB moved  | us/call  | GB/s    | "
                "copy us  | GB/s    | copy+sync us | GB/s | vs copy | vs copy+sync |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    std::vector<std::pair<DType, const char *>> types;
    if (o.dtype != "bf16")
      types.push_back({DType::F32, "f32"});
    if (o.dtype != "f32")
      types.push_back({DType::BF16, "bf16"});
    for (auto [dtype, name] : types)
      for (const Row &r : bench(o, dtype, name, idx, bankRows))
        printRow(r);
    std::printf("\nvs copy: the copy's time / the op's time (100%% = the same "
                "bandwidth as cudaMemcpyAsync D2D for the same bytes).\n");
  } catch (const RuntimeError &e) {
    std::fprintf(stderr, "vision_gather_bandwidth: %s\n", e.what());
    return 1;
  }
  return 0;
}
