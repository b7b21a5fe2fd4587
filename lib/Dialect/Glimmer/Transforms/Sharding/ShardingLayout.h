//===- ShardingLayout.h - How a value is distributed ------------*- C++ -*-===//
//
// The per-value state propagation and partitioning share: the mesh axes
// that split each dimension (major to minor) and the axes over which the
// value is a partial sum, as a #glimmer.sharding says them.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_LIB_TRANSFORMS_SHARDINGLAYOUT_H
#define GLIMMER_LIB_TRANSFORMS_SHARDINGLAYOUT_H

#include "ShardingFactors.h"

namespace glimmer::detail {

/// How a value is distributed: axes per dimension, partial axes.
struct Layout {
  llvm::SmallVector<Axes> dims;
  Axes partial;

  static Layout replicated(unsigned rank) {
    Layout l;
    l.dims.resize(rank);
    return l;
  }
  static Layout of(ShardingAttr s, unsigned rank) {
    Layout l;
    for (unsigned d = 0; d < rank; ++d)
      l.dims.push_back(Axes(s.getDimAxes(d)));
    l.partial = Axes(s.getPartialAxes());
    return l;
  }
  bool operator==(const Layout &o) const {
    return dims == o.dims && partial == o.partial;
  }
  bool uses(llvm::StringRef a) const {
    return llvm::is_contained(partial, a) ||
           llvm::any_of(
               dims, [&](const Axes &x) { return llvm::is_contained(x, a); });
  }
  bool isReplicated() const {
    return partial.empty() &&
           llvm::all_of(dims, [](const Axes &a) { return a.empty(); });
  }
  /// The partial axes over which the sum is the loss's per-rank share.
  Axes tokenPartial() const {
    Axes out;
    for (llvm::StringRef a : partial)
      if (isTokenAxis(a))
        out.push_back(a);
    return out;
  }
};

/// Whether `axes` starts with `prefix` (a split that `axes` refines).
inline bool isPrefix(llvm::ArrayRef<llvm::StringRef> prefix,
                     llvm::ArrayRef<llvm::StringRef> axes) {
  return prefix.size() <= axes.size() &&
         std::equal(prefix.begin(), prefix.end(), axes.begin());
}

} // namespace glimmer::detail

#endif // GLIMMER_LIB_TRANSFORMS_SHARDINGLAYOUT_H
