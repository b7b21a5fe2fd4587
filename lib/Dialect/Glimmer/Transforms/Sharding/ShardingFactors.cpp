//===- ShardingFactors.cpp - Mesh axes on an op's factors -----------------===//

#include "ShardingFactors.h"

#include "glimmer_contract/SpmdContext.h"

using namespace mlir;
using namespace glimmer;
using namespace glimmer::detail;

bool glimmer::detail::isTokenAxis(StringRef axis) {
  std::optional<MeshAxis> a =
      meshAxisFromName(std::string_view(axis.data(), axis.size()));
  return a && (*a == MeshAxis::DpReplicate || *a == MeshAxis::DpShard ||
               *a == MeshAxis::Cp);
}

int64_t glimmer::detail::axesSize(ArrayRef<StringRef> axes, MeshAttr mesh) {
  int64_t p = 1;
  for (StringRef a : axes)
    p *= *mesh.getAxisSize(a);
  return p;
}

std::optional<SmallVector<Axes>>
glimmer::detail::splitOverFactors(ArrayRef<StringRef> axes,
                                  ArrayRef<unsigned> fs,
                                  const ShardingRule &rule, MeshAttr mesh) {
  SmallVector<Axes> split(fs.size());
  if (fs.empty())
    return axes.empty() ? std::optional(split) : std::nullopt;
  size_t cur = 0;
  int64_t left = rule.getFactor(fs[0]).size;
  for (StringRef a : axes) {
    int64_t size = *mesh.getAxisSize(a);
    if (cur == fs.size() || left % size != 0)
      return std::nullopt;
    split[cur].push_back(a);
    left /= size;
    if (left == 1 && ++cur < fs.size())
      left = rule.getFactor(fs[cur]).size;
  }
  return split;
}

SmallVector<Axes>
glimmer::detail::projectFactors(const ShardingRule &rule,
                                const ShardingRule::TensorFactors &tensor,
                                ArrayRef<Axes> factorAxes, MeshAttr mesh) {
  SmallVector<Axes> dims;
  for (const ShardingRule::DimFactors &fs : tensor) {
    Axes axes;
    for (unsigned f : fs) {
      if (factorAxes[f].empty())
        break;
      axes.append(factorAxes[f]);
      if (axesSize(factorAxes[f], mesh) != rule.getFactor(f).size)
        break;
    }
    dims.push_back(std::move(axes));
  }
  return dims;
}
