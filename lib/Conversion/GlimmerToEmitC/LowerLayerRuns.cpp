//===- LowerLayerRuns.cpp - Repeated layer calls as one loop --------------===//
//
// glimmer-outline-layers leaves a deep model's functions with one call per
// layer (forward, backward, recomputation), each passing its parameters and
// saved activations: unrolled in C++, the caller and with it the host
// compiler's time grow with depth. A run of calls that repeats the same
// callees, each operand found the same way in every iteration (a frame
// argument by a table, one value for all, the previous iteration's result,
// an earlier result of the iteration, a value an earlier run stored),
// becomes one call of glimmer_rt::runLayers with constant tables: only the
// tables grow. The calls run in the same order on the same values, so
// results keep their bits, and each value is dropped after its last use.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include <functional>
#include <tuple>

using namespace mlir;
using namespace glimmer;

namespace {

/// glimmer_rt::LayerOperand.
enum Kind : int64_t { FromFrame, FromGiven, FromCarry, FromLocal, FromStore };

/// Where one operand of a slot's calls comes from in every iteration; the
/// fields are runLayers' (a, b, c, d, e).
struct Source {
  Kind kind;
  int64_t a = 0, b = 0, c = 0, d = 0, e = 0;
  /// FromGiven: the value; FromCarry: its first value.
  Value value;
  /// FromStore: the store variable.
  Value store;
};

/// What becomes of one result of a slot's calls (runLayers' result plan).
struct ResultPlan {
  int64_t carry = -1, column = -1, output = -1, final = -1;
};

/// (iteration, slot, result number).
using Def = std::tuple<unsigned, unsigned, unsigned>;

} // namespace

/// `iterations` repetitions of `period` calls, iteration-major.
struct glimmer::LayerRun {
  unsigned period = 0, iterations = 0;
  SmallVector<func::CallOp> calls;
  DenseMap<Operation *, std::pair<unsigned, unsigned>> position;
  SmallVector<SmallVector<Source>> operands;
  SmallVector<SmallVector<ResultPlan>> results;

  func::CallOp at(unsigned i, unsigned s) const {
    return calls[i * period + s];
  }
  /// Where in the first `iterations` iterations `v` is computed.
  std::optional<Def> defOf(Value v) const {
    auto r = dyn_cast<OpResult>(v);
    if (!r)
      return std::nullopt;
    auto it = position.find(r.getOwner());
    if (it == position.end() || it->second.first >= iterations)
      return std::nullopt;
    return Def{it->second.first, it->second.second, r.getResultNumber()};
  }
  bool contains(Operation *op) const {
    auto it = position.find(op);
    return it != position.end() && it->second.first < iterations;
  }
};

/// Classifies operand `p` of slot `s` by its first two iterations and cuts
/// `run.iterations` to those that conform; false where no kind fits.
static bool classify(LayerRun &run, unsigned s, unsigned p, Source &src,
                     const DenseMap<Value, FunctionLowering::StoredAt> &stored,
                     const DenseMap<Value, Operation *> &lastUse,
                     const std::function<bool(Value)> &isArgument) {
  auto operand = [&](unsigned i) { return run.at(i, s)->getOperand(p); };
  Value v0 = operand(0), v1 = operand(1);
  std::optional<Def> d0 = run.defOf(v0), d1 = run.defOf(v1);
  auto storedAt = [&](Value v) -> const FunctionLowering::StoredAt * {
    auto it = stored.find(FunctionLowering::variableOf(v));
    return it == stored.end() ? nullptr : &it->second;
  };
  auto lastHere = [&](unsigned i) {
    return lastUse.lookup(FunctionLowering::variableOf(operand(i))) ==
           run.at(i, s).getOperation();
  };
  std::function<bool(unsigned)> conforms;
  const FunctionLowering::StoredAt *s0 = storedAt(v0), *s1 = storedAt(v1);
  if (d1 && std::get<0>(*d1) == 1 && std::get<1>(*d1) < s) {
    src.kind = FromLocal;
    src.a = std::get<1>(*d1);
    src.b = std::get<2>(*d1);
    conforms = [&](unsigned i) {
      return run.defOf(operand(i)) == Def{i, src.a, src.b};
    };
  } else if (d1 && std::get<0>(*d1) == 0 && !d0) {
    // a, b: the (slot, result) it carries, numbered once all are known.
    src.kind = FromCarry;
    src.a = std::get<1>(*d1);
    src.b = std::get<2>(*d1);
    src.value = v0;
    conforms = [&](unsigned i) {
      return run.defOf(operand(i)) == Def{i - 1, src.a, src.b};
    };
  } else if (!d0 && v0 == v1) {
    src.kind = FromGiven;
    src.value = v0;
    conforms = [&](unsigned i) { return operand(i) == v0; };
  } else if (isArgument(v0) && isArgument(v1)) {
    src.kind = FromFrame;
    conforms = [&](unsigned i) { return isArgument(operand(i)); };
  } else if (s0 && s1 && s0->store == s1->store && s0->column == s1->column &&
             std::abs(s1->iteration - s0->iteration) == 1) {
    // In the same or the reverse order (a backward after its forward);
    // dropped from the store by the call that reads it last.
    src.kind = FromStore;
    src.store = s0->store;
    src.b = s0->column;
    src.c = s0->iteration;
    src.d = s1->iteration - s0->iteration;
    src.e = lastHere(0);
    conforms = [&](unsigned i) {
      const FunctionLowering::StoredAt *at = storedAt(operand(i));
      return at && at->store == src.store && at->column == src.b &&
             at->iteration == src.c + src.d * int64_t(i) &&
             lastHere(i) == bool(src.e);
    };
  } else {
    return false;
  }
  for (unsigned i = 1; i < run.iterations; ++i)
    if (!conforms(i)) {
      run.iterations = i;
      break;
    }
  return true;
}

/// Plans what becomes of each result; false where some iterations' result
/// is used after the run and others' not (but the last).
static bool planResults(LayerRun &run, unsigned &columns, unsigned &outputs,
                        unsigned &finals) {
  columns = outputs = finals = 0;
  run.results.assign(run.period, {});
  for (unsigned s = 0; s < run.period; ++s) {
    func::CallOp first = run.at(0, s);
    run.results[s].resize(first->getNumResults());
    for (unsigned r = 0; r < first->getNumResults(); ++r) {
      unsigned outside = 0, onlyReturned = 0;
      bool lastOutside = false;
      for (unsigned i = 0; i < run.iterations; ++i) {
        Value v = run.at(i, s)->getResult(r);
        unsigned uses = 0;
        bool returned = true;
        for (OpOperand &use : v.getUses())
          if (!run.contains(use.getOwner())) {
            ++uses;
            returned &= isa<func::ReturnOp>(use.getOwner());
          }
        outside += uses > 0;
        onlyReturned += uses == 1 && returned;
        lastOutside = uses > 0;
      }
      ResultPlan &plan = run.results[s][r];
      if (onlyReturned == run.iterations)
        plan.output = outputs++;
      else if (outside == run.iterations)
        plan.column = columns++;
      else if (outside == 1 && lastOutside)
        plan.final = finals++;
      else if (outside != 0)
        return false;
    }
  }
  return true;
}

Operation *FunctionLowering::lowerRun(func::CallOp first) {
  SmallVector<func::CallOp> calls;
  for (Operation *op = first; op; op = op->getNextNode()) {
    auto call = dyn_cast<func::CallOp>(op);
    if (!call)
      break;
    calls.push_back(call);
  }
  auto isArg = [&](Value v) { return isArgument(v); };
  for (unsigned period = 1; period <= 4 && 2 * period <= calls.size();
       ++period) {
    LayerRun run;
    run.period = period;
    while ((run.iterations + 1) * period <= calls.size() &&
           llvm::all_of(llvm::seq(0u, period), [&](unsigned s) {
             return calls[run.iterations * period + s].getCallee() ==
                    calls[s].getCallee();
           }))
      ++run.iterations;
    if (run.iterations < 2)
      continue;
    run.calls.assign(calls.begin(), calls.begin() + run.iterations * period);
    for (auto [k, call] : llvm::enumerate(run.calls))
      run.position[call] = {k / period, k % period};
    run.operands.assign(period, {});
    bool ok = true;
    for (unsigned s = 0; s < period && ok; ++s) {
      run.operands[s].resize(run.at(0, s)->getNumOperands());
      for (unsigned p = 0; p < run.operands[s].size() && ok; ++p)
        ok = classify(run, s, p, run.operands[s][p], stored, lastUse, isArg) &&
             run.iterations >= 2;
    }
    // A result carried into two operands must start from one value.
    DenseMap<std::pair<int64_t, int64_t>, Value> firstValue;
    for (ArrayRef<Source> slot : run.operands)
      for (const Source &src : slot)
        if (ok && src.kind == FromCarry)
          ok = firstValue.try_emplace({src.a, src.b}, src.value)
                   .first->second == src.value;
    if (!ok)
      continue;
    unsigned columns, outputs, finals;
    while (run.iterations >= 2 &&
           !planResults(run, columns, outputs, finals))
      --run.iterations;
    if (run.iterations < 2)
      continue;
    return emitRun(run, columns, outputs);
  }
  return nullptr;
}

Operation *FunctionLowering::emitRun(LayerRun &run, unsigned columns,
                                     unsigned outputs) {
  func::CallOp first = run.at(0, 0),
               last = run.at(run.iterations - 1, run.period - 1);
  Location loc = first.getLoc();
  std::string comment = "// " + std::to_string(run.iterations) +
                        " iterations of";
  for (unsigned s = 0; s < run.period; ++s)
    comment += " " + run.at(0, s).getCallee().str();
  StringRef from = modulePathOf(first.getLoc()),
            to = modulePathOf(last.getLoc());
  if (!from.empty() && !to.empty())
    comment += " (" + from.str() + " to " + to.str() + ")";
  emitc::VerbatimOp::create(b, loc, comment);
  lastPath = to.str();

  // Number the carries, the given values, the frame columns and the stores
  // read, in the order of their first operand.
  SmallVector<Value> given, reads;
  SmallVector<std::pair<int64_t, int64_t>> carried;
  SmallVector<int64_t> carryInit;
  SmallVector<std::pair<unsigned, unsigned>> frameColumns;
  DenseSet<Value> releasedInLoop;
  for (unsigned s = 0; s < run.period; ++s)
    for (auto [p, src] : llvm::enumerate(run.operands[s])) {
      switch (src.kind) {
      case FromGiven:
        src.a = given.size();
        given.push_back(src.value);
        break;
      case FromCarry: {
        std::pair<int64_t, int64_t> key{src.a, src.b};
        auto *it = llvm::find(carried, key);
        if (it == carried.end()) {
          carried.push_back(key);
          carryInit.push_back(given.size());
          given.push_back(src.value);
          it = carried.end() - 1;
        }
        run.results[src.a][src.b].carry = it - carried.begin();
        src.a = it - carried.begin();
        break;
      }
      case FromFrame:
        src.a = frameColumns.size();
        frameColumns.push_back({s, unsigned(p)});
        break;
      case FromStore: {
        auto *it = llvm::find(reads, src.store);
        src.a = it - reads.begin();
        if (it == reads.end())
          reads.push_back(src.store);
        if (src.e)
          for (unsigned i = 0; i < run.iterations; ++i)
            releasedInLoop.insert(variableOf(run.at(i, s)->getOperand(p)));
        break;
      }
      case FromLocal:
        break;
      }
    }

  // The values given to the loop, then those it used last, released here:
  // the given list holds them (and a carry's first value only until the
  // next iteration replaces it).
  RuntimeCall givenList(b, loc, Kernel::tensorList);
  for (Value v : given)
    givenList.operand(map(v));
  Value givenValues = givenList.build(list)[0];
  for (func::CallOp call : run.calls)
    if (run.contains(call))
      for (Value v : releaseAfter.lookup(call))
        if (!run.defOf(v) && !releasedInLoop.contains(v))
          releaseValue(v);
  releaseTemporaries(loc);

  SmallVector<int64_t> frameTable, outputTable, operandPlan, resultPlan;
  for (unsigned i = 0; i < run.iterations; ++i)
    for (auto [s, p] : frameColumns)
      frameTable.push_back(
          cast<BlockArgument>(run.at(i, s)->getOperand(p)).getArgNumber());
  operandPlan = {run.period, int64_t(carried.size())};
  llvm::append_range(operandPlan, carryInit);
  for (unsigned s = 0; s < run.period; ++s) {
    operandPlan.push_back(run.operands[s].size());
    for (const Source &src : run.operands[s])
      llvm::append_range(operandPlan, SmallVector<int64_t>{
                                          src.kind, src.a, src.b, src.c,
                                          src.d, src.e});
    resultPlan.push_back(run.results[s].size());
    for (const ResultPlan &r : run.results[s])
      llvm::append_range(resultPlan, SmallVector<int64_t>{
                                         r.carry, r.column, r.output, r.final});
  }
  outputTable.resize(run.iterations * outputs);
  for (unsigned i = 0; i < run.iterations; ++i)
    for (unsigned s = 0; s < run.period; ++s)
      for (auto [r, plan] : llvm::enumerate(run.results[s]))
        if (plan.output >= 0) {
          Value v = run.at(i, s)->getResult(r);
          for (OpOperand &use : v.getUses())
            if (isa<func::ReturnOp>(use.getOwner()))
              outputTable[i * outputs + plan.output] = use.getOperandNumber();
          returned.insert(v);
        }

  auto storeType = emitc::OpaqueType::get(ctx, "glimmer_rt::LayerStore");
  Value store;
  if (columns)
    store = RuntimeCall(b, loc, Kernel::layerStore)
                .integer(run.iterations)
                .integer(columns)
                .build(storeType)[0];
  Value readStores;
  if (!reads.empty()) {
    RuntimeCall storeList(b, loc, Kernel::layerStores);
    for (Value v : reads)
      storeList.operand(v);
    readStores = storeList.build(emitc::OpaqueType::get(
        ctx, "std::vector<glimmer_rt::LayerStore>"))[0];
  }
  std::string fns = "{";
  for (unsigned s = 0; s < run.period; ++s)
    fns += (s ? ", " : "") + run.at(0, s).getCallee().str();
  fns += "}";
  RuntimeCall loop(b, loc, Kernel::runLayers);
  loop.operand(frame)
      .literal(fns)
      .integer(run.iterations)
      .operand(givenValues)
      .ints(operandPlan)
      .ints(resultPlan)
      .ints(frameTable)
      .ints(outputTable);
  if (readStores)
    loop.operand(readStores);
  else
    loop.literal("{}");
  if (store)
    loop.operand(store);
  else
    loop.literal("glimmer_rt::LayerStore()");
  Value lastResults = loop.build(list)[0];

  for (unsigned s = 0; s < run.period; ++s)
    for (auto [r, plan] : llvm::enumerate(run.results[s])) {
      if (plan.column >= 0)
        for (unsigned i = 0; i < run.iterations; ++i)
          stored[run.at(i, s)->getResult(r)] = {store, i, plan.column};
      if (plan.final >= 0)
        mapping[run.at(run.iterations - 1, s)->getResult(r)] =
            RuntimeCall(b, loc, Kernel::take)
                .operand(lastResults)
                .integer(plan.final)
                .build(tensor)[0];
    }
  RuntimeCall(b, loc, Kernel::release).operand(lastResults).build({});
  return last;
}
