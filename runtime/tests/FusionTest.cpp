//===- FusionTest.cpp - Checks of fused kernels against their ops ---------===//

#include "glimmer_rt/Fusion.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace glimmer_rt;

namespace {

Tensor f32(std::vector<float> values) {
  return Tensor::fromData(DType::F32, {int64_t(values.size())}, values.data());
}

/// The message requireSameResults throws, or "" when it does not.
std::string mismatch(const std::vector<Tensor> &kernel,
                     const std::vector<Tensor> &ops) {
  try {
    requireSameResults(3, kernel, ops);
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(FusedKernelCheck, EqualResultsPass) {
  EXPECT_EQ(mismatch({f32({1, 2, 3})}, {f32({1, 2, 3})}), "");
}

// The first element that differs in any bit is named, with both values.
TEST(FusedKernelCheck, NamesTheFirstDifferingElement) {
  EXPECT_EQ(mismatch({f32({1, 2}), f32({1, 2, 5, 7})},
                     {f32({1, 2}), f32({1, 2, 3, 4})}),
            "glimmer.fusion: kernel glimmer_fused_3 result 1 (f32[4]) "
            "differs from its ops' at element 2: 5.000000 vs 3.000000");
}

// Bitwise, not by value: -0.0 is not 0.0.
TEST(FusedKernelCheck, ComparesBits) {
  EXPECT_NE(mismatch({f32({-0.0f})}, {f32({0.0f})}), "");
}

TEST(FusedKernelCheck, ShapesAndCountsMustAgree) {
  EXPECT_EQ(mismatch({f32({1, 2})}, {f32({1, 2, 3})}),
            "glimmer.fusion: kernel glimmer_fused_3 result 0 is f32[2], its "
            "ops give f32[3]");
  EXPECT_EQ(mismatch({f32({1})}, {f32({1}), f32({2})}),
            "glimmer.fusion: kernel glimmer_fused_3 gives 1 results, its ops 2");
}

// The host build's source is one translation unit: the runtime's headers
// are inlined (no include of them remains) and the host entry points are on.
TEST(FusedKernelHostSource, InlinesTheRuntimeHeaders) {
  FusedKernels kernels("#include \"FusionPrelude.cuh\"\n// kernels\n");
  std::string source = fusedKernelsHostSource(kernels);
  EXPECT_EQ(source.rfind("#define GLIMMER_FUSION_HOST 1\n", 0), 0u);
  for (const char *name : {"Bf16.h", "ElementwiseMath.cuh",
                           "FusionPrelude.cuh", "FusionHost.h"})
    EXPECT_EQ(source.find(std::string("#include \"") + name + "\""),
              std::string::npos)
        << name;
  EXPECT_NE(source.find("roundBf16"), std::string::npos);
  EXPECT_NE(source.find("// kernels"), std::string::npos);
}
