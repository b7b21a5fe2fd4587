//===- Sharding.cpp - A tensor's pieces under a sharding ------------------===//

#include "glimmer_contract/Sharding.h"

using namespace glimmer;

MeshCoords glimmer::meshCoords(const SpmdContext &layout, int64_t rank) {
  MeshCoords coords{};
  int64_t rest = rank;
  for (int i = kNumMeshAxes - 1; i >= 0; --i) {
    int64_t size = layout.degrees[i];
    coords[i] = rest % size;
    rest /= size;
  }
  return coords;
}

int64_t glimmer::rankAt(const SpmdContext &layout, const MeshCoords &coords) {
  int64_t rank = 0;
  for (unsigned i = 0; i < kNumMeshAxes; ++i)
    rank = rank * layout.degrees[i] + coords[i];
  return rank;
}

int64_t glimmer::groupSize(const SpmdContext &layout,
                           const std::vector<MeshAxis> &axes) {
  int64_t n = 1;
  for (MeshAxis a : axes)
    n *= layout.degree(a);
  return n;
}

int64_t glimmer::groupIndex(const SpmdContext &layout, const MeshCoords &coords,
                            const std::vector<MeshAxis> &axes) {
  int64_t index = 0;
  for (MeshAxis a : axes)
    index = index * layout.degree(a) + coords[static_cast<unsigned>(a)];
  return index;
}

std::optional<TensorSharding>
TensorSharding::fromNames(const std::vector<std::vector<std::string>> &names,
                          std::string &badAxis) {
  TensorSharding sharding;
  for (const auto &dim : names) {
    std::vector<MeshAxis> axes;
    for (const std::string &name : dim) {
      auto axis = meshAxisFromName(name);
      if (!axis) {
        badAxis = name;
        return std::nullopt;
      }
      axes.push_back(*axis);
    }
    sharding.dimAxes.push_back(std::move(axes));
  }
  return sharding;
}

std::vector<MeshAxis> TensorSharding::axes(size_t dim) const {
  return dim < dimAxes.size() ? dimAxes[dim] : std::vector<MeshAxis>{};
}

int64_t TensorSharding::pieces(const SpmdContext &layout, size_t dim) const {
  return groupSize(layout, axes(dim));
}

std::vector<int64_t>
TensorSharding::globalShape(const SpmdContext &layout,
                            std::vector<int64_t> local) const {
  for (size_t d = 0; d < local.size(); ++d)
    local[d] *= pieces(layout, d);
  return local;
}

int64_t TensorSharding::pieceIndex(const SpmdContext &layout,
                                   const MeshCoords &coords, size_t dim) const {
  return groupIndex(layout, coords, axes(dim));
}
