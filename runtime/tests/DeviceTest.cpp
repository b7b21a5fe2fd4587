//===- DeviceTest.cpp - The device settings read from the environment ----===//

#include "glimmer_rt/Device.h"
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
