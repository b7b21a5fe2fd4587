//===- ShardingRule.cpp - Factors of an op's computation ------------------===//

#include "glimmer/Dialect/Glimmer/IR/ShardingRule.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace glimmer;

namespace {
std::string factorName(unsigned f) {
  // i, j, ..., z, then z1, z2, ...
  if (f < 18)
    return std::string(1, char('i' + f));
  return "z" + std::to_string(f - 17);
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<ShapedType>(v.getType()).getShape();
}
} // namespace

LogicalResult ShardingRule::verify(Operation *op) const {
  if (operands.size() != op->getNumOperands() ||
      results.size() != op->getNumResults())
    return op->emitOpError() << "sharding rule covers " << operands.size()
                             << " operands and " << results.size()
                             << " results";
  for (unsigned i = 0; i < getNumTensors(); ++i) {
    Value v = i < operands.size() ? op->getOperand(i)
                                  : op->getResult(i - operands.size());
    ArrayRef<int64_t> shape = shapeOf(v);
    const TensorFactors &dims = getTensor(i);
    if (dims.size() != shape.size())
      return op->emitOpError() << "sharding rule gives tensor #" << i << " "
                               << dims.size() << " dimensions, not "
                               << shape.size();
    for (auto [d, fs] : llvm::enumerate(dims)) {
      int64_t product = 1;
      for (unsigned f : fs)
        product *= factors[f].size;
      if (!fs.empty() && product != shape[d])
        return op->emitOpError()
               << "sharding rule factors of tensor #" << i << " dimension "
               << d << " multiply to " << product << ", not " << shape[d];
    }
  }
  return success();
}

void ShardingRule::print(raw_ostream &os) const {
  auto printTensors = [&](ArrayRef<TensorFactors> tensors) {
    os << "(";
    llvm::interleaveComma(tensors, os, [&](const TensorFactors &t) {
      os << "[";
      llvm::interleaveComma(t, os, [&](const DimFactors &fs) {
        if (fs.empty()) {
          os << "1";
        } else if (fs.size() == 1) {
          os << factorName(fs[0]);
        } else {
          os << "(";
          llvm::interleave(
              fs, os, [&](unsigned f) { os << factorName(f); }, ",");
          os << ")";
        }
      });
      os << "]";
    });
    os << ")";
  };
  printTensors(operands);
  os << " -> ";
  printTensors(results);
  os << " {";
  llvm::interleaveComma(llvm::seq<unsigned>(0, factors.size()), os,
                        [&](unsigned f) {
                          os << factorName(f) << "=" << factors[f].size;
                        });
  os << "}";
  for (auto [kind, name] :
       {std::pair{FactorKind::Reduction, "reduction"},
        std::pair{FactorKind::NeedReplication, "need_replication"},
        std::pair{FactorKind::Handled, "handled"}}) {
    SmallVector<unsigned> of;
    for (unsigned f = 0; f < factors.size(); ++f)
      if (factors[f].kind == kind)
        of.push_back(f);
    if (of.empty())
      continue;
    os << " " << name << "={";
    llvm::interleaveComma(of, os, [&](unsigned f) { os << factorName(f); });
    os << "}";
  }
}

std::string ShardingRule::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  print(os);
  return s;
}

ShardingRule ShardingRule::elementwise(Operation *op) {
  ShardingRule rule;
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
  TensorFactors dims;
  for (int64_t size : shape)
    dims.push_back(size == 1 ? DimFactors{} : DimFactors{rule.addFactor(size)});
  for (Value operand : op->getOperands())
    rule.addOperand(cast<ShapedType>(operand.getType()).getRank() == 0 &&
                            !shape.empty()
                        ? TensorFactors{}
                        : dims);
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    rule.addResult(dims);
  return rule;
}

ShardingRule ShardingRule::reshape(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  ShardingRule rule;
  TensorFactors a(in.size()), b(out.size());
  size_t i = 0, j = 0;
  int64_t ra = 0, rb = 0; // what remains of in[i] / out[j] to cover
  auto nextA = [&] {
    while (i < in.size() && in[i] == 1)
      ++i;
    ra = i < in.size() ? in[i] : 0;
  };
  auto nextB = [&] {
    while (j < out.size() && out[j] == 1)
      ++j;
    rb = j < out.size() ? out[j] : 0;
  };
  nextA();
  nextB();
  bool refined = true;
  while (i < in.size() && j < out.size()) {
    if (ra <= 0 || rb <= 0) {
      refined = false;
      break;
    }
    // The smaller remainder must divide the larger: then it is one factor
    // of both dimensions.
    int64_t small = std::min(ra, rb), large = std::max(ra, rb);
    if (large % small != 0) {
      refined = false;
      break;
    }
    unsigned f = rule.addFactor(small);
    a[i].push_back(f);
    b[j].push_back(f);
    ra /= small;
    rb /= small;
    if (ra == 1) {
      ++i;
      nextA();
    }
    if (rb == 1) {
      ++j;
      nextB();
    }
  }
  if (!refined || i < in.size() || j < out.size()) {
    // No common refinement (e.g. [6, 4] -> [4, 6]): nothing propagates.
    rule = ShardingRule();
    TensorFactors na, nb;
    for (int64_t s : in)
      na.push_back(s == 1 ? DimFactors{}
                          : DimFactors{rule.addFactor(
                                s, FactorKind::NeedReplication)});
    for (int64_t s : out)
      nb.push_back(s == 1 ? DimFactors{}
                          : DimFactors{rule.addFactor(
                                s, FactorKind::NeedReplication)});
    rule.addOperand(std::move(na));
    rule.addResult(std::move(nb));
    return rule;
  }
  rule.addOperand(std::move(a));
  rule.addResult(std::move(b));
  return rule;
}
