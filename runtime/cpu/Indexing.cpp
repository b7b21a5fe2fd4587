//===- Indexing.cpp - CPU kernels: Index-driven ops -----------------------===//
//
// Part of the Glimmer runtime's reference CPU kernels: the index checks,
// embeddings and the vision-token gathers; every index is checked before it is
// read.
//
//===----------------------------------------------------------------------===//

#include "../common/Messages.h"
#include "KernelUtil.h"

namespace glimmer_rt::cpu {

Tensor checkIndices(const Tensor &ids, int64_t bound, bool hasIgnore,
                    int64_t ignoreIndex, const char *op) {
  std::vector<int64_t> v = indexValues(op, ids, hasIgnore ? "labels" : "ids");
  for (size_t p = 0; p < v.size(); ++p) {
    if ((hasIgnore && v[p] == ignoreIndex) || (v[p] >= 0 && v[p] < bound))
      continue;
    fail(op, hasIgnore ? messages::labelOutOfRange(v[p], int64_t(p), bound,
                                                   ignoreIndex)
                       : messages::idOutOfRange(v[p], int64_t(p), bound));
  }
  return ids;
}

Tensor embedding(const Tensor &table, const Tensor &ids) {
  const char *op = "embedding";
  requireDefined(op, table, "table");
  requireRank(op, table, "a [V, D] table", 2);
  std::vector<int64_t> idv = indexValues(op, ids, "ids");
  int64_t V = table.dim(0), D = table.dim(1);
  Shape outShape = ids.shape();
  outShape.push_back(D);
  Tensor y(table.dtype(), outShape);
  size_t row = size_t(D) * dtypeSize(table.dtype());
  for (size_t p = 0; p < idv.size(); ++p) {
    int64_t id = idv[p];
    check(id >= 0 && id < V, op, messages::idOutOfRange(id, int64_t(p), V));
    if (row)
      std::memcpy(static_cast<char *>(y.raw()) + p * row,
                  static_cast<const char *>(table.raw()) + size_t(id) * row,
                  row);
  }
  return y;
}

Tensor embeddingGrad(const Tensor &grad, const Tensor &ids,
                     int64_t numEmbeddings) {
  const char *op = "embedding_grad";
  requireFloat(op, grad, "grad");
  std::vector<int64_t> idv = indexValues(op, ids, "ids");
  check(numEmbeddings >= 0, op, "negative number of embeddings");
  check(grad.rank() == ids.rank() + 1, op,
        "expects grad of shape ids.shape + [D], got grad " + grad.describe() +
            " and ids " + ids.describe());
  int64_t D = grad.dim(-1);
  Shape expected = ids.shape();
  expected.push_back(D);
  requireShape(op, grad, "grad", expected);
  return dispatchFloat(op, grad, "grad", [&](auto tag) {
    using T = decltype(tag);
    Tensor out = Tensor::zeros(grad.dtype(), {numEmbeddings, D});
    const T *g = grad.data<T>();
    T *o = out.data<T>();
    for (size_t p = 0; p < idv.size(); ++p) {
      int64_t id = idv[p];
      check(id >= 0 && id < numEmbeddings, op,
            messages::idOutOfRange(id, int64_t(p), numEmbeddings));
      for (int64_t d = 0; d < D; ++d)
        o[id * D + d] += g[int64_t(p) * D + d];
    }
    return out;
  });
}

Tensor visionBankIndices(const Tensor &tokens, int64_t imageTokenId) {
  const char *op = "vision_bank_indices";
  std::vector<int64_t> tok = indexValues(op, tokens, "tokens");
  Tensor out(tokens.dtype(), tokens.shape());
  int64_t seen = 0;
  for (size_t i = 0; i < tok.size(); ++i) {
    int64_t idx = tok[i] == imageTokenId ? seen++ : -1;
    storeScalar(tokens.dtype(), out.raw(), int64_t(i), {false, 0, idx});
  }
  return out;
}

namespace {
/// rows [B, T, D] and indices [B, T]; returns the indices.
std::vector<int64_t> checkTokenRows(const char *op, const Tensor &rows,
                                    const char *rowsName,
                                    const Tensor &indices) {
  requireFloat(op, rows, rowsName);
  check(rows.rank() == 3, op,
        std::string("expects ") + rowsName + " [B, T, D], got " +
            rows.describe());
  std::vector<int64_t> idx = indexValues(op, indices, "indices");
  requireShape(op, indices, "indices", {rows.dim(0), rows.dim(1)});
  return idx;
}

void checkBankIndex(const char *op, int64_t idx, size_t position,
                    int64_t bankRows) {
  check(idx < bankRows, op,
        "vision bank index " + std::to_string(idx) + " at position " +
            std::to_string(position) + " is out of range for a bank of " +
            std::to_string(bankRows) +
            " rows (more image tokens than image features?)");
}
} // namespace

Tensor visionGather(const Tensor &embeds, const Tensor &bank,
                    const Tensor &indices) {
  const char *op = "vision_gather";
  std::vector<int64_t> idx = checkTokenRows(op, embeds, "embeds", indices);
  requireDefined(op, bank, "bank");
  requireRank(op, bank, "an [N, D] bank", 2);
  check(bank.dtype() == embeds.dtype(), op,
        "expects embeds and bank of the same type, got " + embeds.describe() +
            " and " + bank.describe());
  int64_t D = embeds.dim(2), N = bank.dim(0);
  check(bank.dim(1) == D, op,
        "bank rows have width " + std::to_string(bank.dim(1)) +
            " but embeddings have width " + std::to_string(D));
  Tensor y(embeds.dtype(), embeds.shape());
  size_t row = size_t(D) * dtypeSize(embeds.dtype());
  for (size_t p = 0; p < idx.size(); ++p) {
    checkBankIndex(op, idx[p], p, N);
    const char *src =
        idx[p] >= 0
            ? static_cast<const char *>(bank.raw()) + size_t(idx[p]) * row
            : static_cast<const char *>(embeds.raw()) + p * row;
    if (row)
      std::memcpy(static_cast<char *>(y.raw()) + p * row, src, row);
  }
  return y;
}

std::tuple<Tensor, Tensor>
visionGatherGrad(const Tensor &grad, const Tensor &indices, int64_t bankRows) {
  const char *op = "vision_gather_grad";
  std::vector<int64_t> idx = checkTokenRows(op, grad, "grad", indices);
  check(bankRows >= 0, op, "negative number of bank rows");
  int64_t D = grad.dim(2);
  return dispatchFloat(op, grad, "grad", [&](auto tag) {
    using T = decltype(tag);
    Tensor de(grad.dtype(), grad.shape());
    Tensor db = Tensor::zeros(grad.dtype(), {bankRows, D});
    const T *G = grad.data<T>();
    T *dE = de.data<T>(), *dB = db.data<T>();
    for (size_t p = 0; p < idx.size(); ++p) {
      checkBankIndex(op, idx[p], p, bankRows);
      const T *g = G + int64_t(p) * D;
      T *e = dE + int64_t(p) * D;
      if (idx[p] >= 0) {
        T *b = dB + idx[p] * D;
        for (int64_t d = 0; d < D; ++d) {
          b[d] += g[d];
          e[d] = 0;
        }
      } else {
        for (int64_t d = 0; d < D; ++d)
          e[d] = g[d];
      }
    }
    return std::make_tuple(de, db);
  });
}

} // namespace glimmer_rt::cpu
