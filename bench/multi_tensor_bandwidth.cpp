//===- multi_tensor_bandwidth.cpp - List ops against one op per tensor ----===//
//
// Device time of an optimizer step's parameter updates and a mixed-precision
// step's parameter casts on a GPU, run as one op per tensor (adamw_update,
// convert) and as one list op (adamw_update_list, convert_list), for the
// parameter shapes of a safetensors file (bench/gpu_step_time.py run writes
// the medium model's weights to /tmp/glimmer-bench-medium). Runtime only;
// on the GPU machine:
//
//   g++ -std=c++17 -O2 -Iruntime/include -Icontract/include
//       bench/multi_tensor_bandwidth.cpp -o /tmp/multi_tensor_bandwidth
//       -L/tmp/rt -Wl,-rpath,/tmp/rt -lglimmer_rt      (one line)
//   /tmp/multi_tensor_bandwidth --weights=FILE [--trials=7] [--reps=10]
//       [--device=cuda:0]
//
// Every floating-point tensor of the file is a parameter (f32, random
// values): AdamW reads it, its bf16 gradient, both f32 moments and a
// clipping coefficient, and writes the three f32 results (26 bytes an
// element); the cast reads it and writes its bf16 copy (6 bytes).
//
// Device time, not the host's: in a training step the GPU is busy with the
// backward while the host queues the updates, and with the forward while
// it queues the casts. So each trial first queues a load on the GPU, four
// device-to-device copies of 2 GiB (about 4 ms each), then --reps rounds of
// the ops, and waits; the ops' device time per round is (the median of
// that wall time less the median of the load's alone) / reps. The load is
// memory-bound like the ops (GEMMs vary more from trial to trial with the
// clocks). The host's time to queue one round (wall time of the calls
// alone, no wait) is printed too. Baseline: a device-to-device copy
// (Tensor::clone) of half the ops' bytes (it reads and writes each byte),
// timed the same way.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Device.h"
#include "glimmer_rt/Kernels.h"
#include "glimmer_rt/Safetensors.h"
#include "glimmer_rt/Tensor.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace glimmer_rt;

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// A host tensor of `shape` with uniform values in [lo, hi), on `device`.
Tensor random(const std::vector<int64_t> &shape, float lo, float hi,
              std::mt19937 &gen, Device device) {
  Tensor t(DType::F32, Shape(shape.begin(), shape.end()));
  std::uniform_real_distribution<float> dist(lo, hi);
  float *p = t.data<float>();
  for (int64_t i = 0, n = t.numel(); i < n; ++i)
    p[i] = dist(gen);
  return t.to(device);
}

} // namespace

int main(int argc, char **argv) {
  std::string weights;
  int trials = 7, reps = 10;
  Device device = Device::cuda(0);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--weights=", 0) == 0)
      weights = arg.substr(10);
    else if (arg.rfind("--trials=", 0) == 0)
      trials = std::max(1, std::atoi(arg.c_str() + 9));
    else if (arg.rfind("--reps=", 0) == 0)
      reps = std::max(1, std::atoi(arg.c_str() + 7));
    else if (arg.rfind("--device=", 0) != 0 ||
             !parseDevice(arg.substr(9), device) || !device.isCuda()) {
      std::fprintf(stderr, "usage: multi_tensor_bandwidth --weights=FILE "
                           "[--trials=N] [--reps=N] [--device=cuda:N]\n");
      return 2;
    }
  }
  std::string error;
  auto file = SafetensorsFile::read(weights, error);
  if (!file) {
    std::fprintf(stderr, "multi_tensor_bandwidth: %s\n", error.c_str());
    return 1;
  }
  DeviceScope scope(device);
  // The optimizer's step checks are read once per trial, as in a step.
  DeferredChecks checks(device);
  std::mt19937 gen(0);
  std::vector<Tensor> params, grads, moments, squares;
  int64_t elements = 0;
  for (const TensorInfo &info : file->tensors()) {
    if (info.dtype != DType::F32 && info.dtype != DType::BF16)
      continue;
    params.push_back(random(info.shape, -1, 1, gen, device));
    grads.push_back(
        convert(random(info.shape, -0.01f, 0.01f, gen, device), DType::BF16));
    moments.push_back(random(info.shape, -0.01f, 0.01f, gen, device));
    squares.push_back(random(info.shape, 0, 1e-4f, gen, device));
    elements += params.back().numel();
  }
  Tensor step = Tensor(DType::I64, {});
  step.data<int64_t>()[0] = 3;
  step = step.to(device);
  Tensor scale = Tensor(DType::F32, {});
  scale.data<float>()[0] = 0.7f;
  scale = scale.to(device);
  std::vector<Tensor> keep; // results live until the trial ends

  auto casts = [&] {
    for (const Tensor &p : params)
      keep.push_back(convert(p, DType::BF16));
  };
  auto castList = [&] {
    for (Tensor &t : convertList(params, DType::BF16))
      keep.push_back(std::move(t));
  };
  auto updates = [&] {
    for (size_t k = 0; k < params.size(); ++k) {
      auto [p, m, v] = adamwUpdate(params[k], grads[k], moments[k], squares[k],
                                   step, 1e-3, 0.9, 0.999, 1e-8, 0.01, scale);
      keep.push_back(p);
      keep.push_back(m);
      keep.push_back(v);
    }
  };
  auto updateList = [&] {
    for (Tensor &t : adamwUpdateList(params, grads, moments, squares, step,
                                     1e-3, 0.9, 0.999, 1e-8, 0.01, scale))
      keep.push_back(std::move(t));
  };
  double castBytes = double(elements) * 6, updateBytes = double(elements) * 26;
  Tensor copyCast(DType::U8, {int64_t(castBytes / 2)}, device);
  Tensor copyUpdate(DType::U8, {int64_t(updateBytes / 2)}, device);
  auto cloneOf = [&](const Tensor &t) {
    return [&t, &keep] { keep.push_back(t.clone()); };
  };

  // The GPU's load while the host queues the ops: copies of 2 GiB.
  Tensor block(DType::U8, {int64_t(2) << 30}, device);
  auto busy = [&] {
    for (int i = 0; i < 4; ++i)
      keep.push_back(block.clone());
  };
  auto wall = [&](const std::function<void()> &ops, int rounds) {
    synchronize(device);
    keep.clear();
    auto t0 = Clock::now();
    busy();
    for (int r = 0; r < rounds; ++r)
      ops();
    synchronize(device);
    return seconds(t0);
  };
  auto hostTime = [&](const std::function<void()> &ops) {
    synchronize(device);
    keep.clear();
    auto t0 = Clock::now();
    ops();
    double s = seconds(t0);
    synchronize(device);
    return s;
  };
  auto nothing = [] {};
  struct Row {
    const char *name;
    std::function<void()> ops;
    double bytes;
    int calls;
  };
  std::vector<Row> rows = {
      {"convert (one call per tensor)", casts, castBytes, int(params.size())},
      {"convert_list", castList, castBytes, 1},
      {"copy of the casts' bytes", cloneOf(copyCast), castBytes, 1},
      {"adamw_update (one call per tensor)", updates, updateBytes,
       int(params.size())},
      {"adamw_update_list", updateList, updateBytes, 1},
      {"copy of the updates' bytes", cloneOf(copyUpdate), updateBytes, 1},
  };
  for (const Row &row : rows) // warm-up: plans, allocator buckets
    wall(row.ops, reps);
  std::vector<double> load;
  for (int t = 0; t < trials; ++t)
    load.push_back(wall(nothing, 0));
  double loadS = median(load);
  std::printf("%zu tensors, %.1f M elements; load of 4 copies of 2 GiB: "
              "%.3f ms (median of %d, from %.3f to %.3f); %d rounds of the "
              "ops per trial\n",
              params.size(), double(elements) / 1e6, loadS * 1e3, trials,
              *std::min_element(load.begin(), load.end()) * 1e3,
              *std::max_element(load.begin(), load.end()) * 1e3, reps);
  std::printf(
      "| op | calls | MB moved | device ms | GB/s | host ms to queue |\n"
      "|---|---|---|---|---|---|\n");
  for (const Row &row : rows) {
    std::vector<double> with, host;
    for (int t = 0; t < trials; ++t) {
      with.push_back(wall(row.ops, reps));
      host.push_back(hostTime(row.ops));
    }
    double dev = (median(with) - loadS) / reps;
    std::printf("| %s | %d | %.1f | %.3f | %.0f | %.3f |\n", row.name,
                row.calls, row.bytes / 1e6, dev * 1e3,
                dev > 0 ? row.bytes / dev / 1e9 : 0.0, median(host) * 1e3);
  }
  return 0;
}
