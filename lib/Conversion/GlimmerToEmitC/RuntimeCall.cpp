//===- RuntimeCall.cpp - Runtime function names, C++ literals -------------===//

#include "RuntimeCall.h"

#include <cctype>
#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace glimmer;

StringRef glimmer::kernelName(Kernel kernel) {
  switch (kernel) {
#define GLIMMER_RT_KERNEL(name)                                                \
  case Kernel::name:                                                           \
    return #name;
#include "glimmer_rt/KernelTable.def"
  }
  llvm_unreachable("not a runtime function");
}

std::string glimmer::realLiteral(double v) {
  if (std::isnan(v))
    return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(v))
    return v > 0 ? "std::numeric_limits<double>::infinity()"
                 : "-std::numeric_limits<double>::infinity()";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  std::string s = buf;
  // Keep it a floating-point literal.
  if (s.find_first_of(".eE") == std::string::npos)
    s += ".0";
  return s;
}

std::string glimmer::intList(ArrayRef<int64_t> values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}

std::string glimmer::axesLiteral(ArrayAttr axes) {
  std::string s = "glimmer_rt::Axes{";
  for (auto [i, a] : llvm::enumerate(axes))
    s += (i ? ", \"" : "\"") + cast<StringAttr>(a).getValue().str() + "\"";
  return s + "}";
}

std::string glimmer::reductionLiteral(ReductionKind kind) {
  std::string name = stringifyReductionKind(kind).str();
  name[0] = std::toupper(name[0]);
  return "glimmer_rt::Reduction::" + name;
}
