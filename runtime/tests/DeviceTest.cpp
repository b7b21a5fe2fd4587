//===- DeviceTest.cpp - Device settings, copyInto, device graphs ---------===//

#include "glimmer_rt/Device.h"
#include "glimmer_rt/DeviceGraph.h"
#include "glimmer_rt/Tensor.h"

#include <gtest/gtest.h>

#include <string>

using namespace glimmer_rt;

namespace {

TEST(AttentionOverride, NamesEachChoice) {
  EXPECT_EQ(parseAttentionOverride(nullptr), AttentionOverride::None);
  EXPECT_EQ(parseAttentionOverride("cudnn"), AttentionOverride::Cudnn);
  EXPECT_EQ(parseAttentionOverride("cudnn-deterministic"),
            AttentionOverride::CudnnDeterministic);
  EXPECT_EQ(parseAttentionOverride("cudnn-nondeterministic"),
            AttentionOverride::CudnnNondeterministic);
  EXPECT_EQ(parseAttentionOverride("mma"), AttentionOverride::Mma);
  EXPECT_EQ(parseAttentionOverride("simt"), AttentionOverride::Simt);
}

// A misspelt value is refused (it would otherwise silently run the default
// kernels), naming what is accepted.
TEST(AttentionOverride, RefusesUnknownValues) {
  for (const char *bad : {"", "SIMT", "cudnn-det", "flash"}) {
    try {
      parseAttentionOverride(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const RuntimeError &e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("GLIMMER_CUDA_ATTENTION must be one of 'cudnn', "
                            "'cudnn-deterministic', 'cudnn-nondeterministic', "
                            "'mma', 'simt', got '") +
                    bad + "'");
    }
  }
}

} // namespace

// copyInto refreshes a tensor in place (a captured graph's input): the
// destination keeps its storage and takes the source's elements.
TEST(CopyInto, KeepsTheDestinationStorage) {
  float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8};
  Tensor dst = Tensor::fromData(DType::F32, {2, 2}, a);
  Tensor src = Tensor::fromData(DType::F32, {2, 2}, b);
  const void *where = dst.raw();
  copyInto(dst, src);
  EXPECT_EQ(dst.raw(), where);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(dst.item(i), b[i]);
}

TEST(CopyInto, RefusesAnotherShapeOrType) {
  float a[] = {1, 2, 3, 4};
  Tensor dst = Tensor::fromData(DType::F32, {2, 2}, a);
  Tensor flat = Tensor::fromData(DType::F32, {4}, a);
  Tensor wide = Tensor::zeros(DType::F64, {2, 2});
  for (const Tensor *src : {&flat, &wide}) {
    try {
      copyInto(dst, *src);
      FAIL() << "copyInto took " << src->describe();
    } catch (const RuntimeError &e) {
      EXPECT_EQ(e.message, "copyInto expects two tensors of one dtype, shape "
                           "and device, got f32[2, 2] and " +
                               src->describe());
    }
  }
}

// Without the CUDA backend's devices a device graph cannot start; on the
// CPU it says so instead of capturing nothing.
TEST(DeviceGraph, RefusesTheCpu) {
  try {
    DeviceGraph graph(Device::cpu());
    FAIL() << "a device graph started on the CPU";
  } catch (const RuntimeError &e) {
    EXPECT_NE(e.message.find("a device graph needs a CUDA device, got cpu"),
              std::string::npos)
        << e.message;
  }
}
