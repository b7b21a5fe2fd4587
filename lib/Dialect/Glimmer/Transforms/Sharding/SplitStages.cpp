//===- SplitStages.cpp - Cut the forward into pipeline stages -------------===//
//
// The decoder layers are found from the graph, not from the model's code:
// they are the parameters `<prefix>.<N>.…` that the computation after the
// token embedding reads (through parameter-only work such as FSDP's
// all-gathers). Every value gets the highest decoder layer whose parameters
// it depends on (its depth along the residual stream); ops with a depth
// belong to that layer's stage. The rest (integer preparation, the vision
// encoder, the token embedding, a final norm's weight gathered by FSDP) has
// no depth: it goes to every stage that uses it, computed there again from
// the data inputs, so a later stage rebuilds its positions and labels from
// the full batch instead of receiving them. Values with a depth that a later
// stage uses are the boundary: each stage takes the previous cut's values
// and returns its own (passing on those it does not consume).
// Stage 0's trained work that no micro-batch changes (the vision encoder)
// becomes a once-per-step prologue.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/Transforms/Layers.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"

#include <limits>

namespace glimmer {
#define GEN_PASS_DEF_GLIMMERSPLITSTAGES
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h.inc"
} // namespace glimmer

using namespace mlir;
using namespace glimmer;

namespace {

/// A parameter name split at its first integer component:
/// "model.layers.3.mlp.w" -> {"model.layers", 3}.
std::optional<std::pair<std::string, int64_t>> layerOf(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (size_t i = 1; i + 1 < parts.size(); ++i) {
    int64_t index;
    if (!parts[i].getAsInteger(10, index) && index >= 0)
      return std::make_pair(llvm::join(ArrayRef(parts).take_front(i), "."),
                            index);
  }
  return std::nullopt;
}

/// Contiguous layer ranges for `stages` stages minimizing the most
/// expensive one (stage 0 also carries `pre`): first layer of each stage.
SmallVector<int64_t> balance(ArrayRef<double> layerCost, double pre,
                             int64_t stages) {
  int64_t n = layerCost.size();
  SmallVector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + layerCost[i];
  constexpr double inf = std::numeric_limits<double>::infinity();
  // best[s][i]: the least max cost of putting layers [0, i) on s stages.
  std::vector<std::vector<double>> best(stages + 1,
                                        std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> cut(stages + 1,
                                        std::vector<int64_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t s = 1; s <= stages; ++s)
    for (int64_t i = s; i <= n; ++i)
      for (int64_t j = s - 1; j < i; ++j) {
        double c = prefix[i] - prefix[j] + (s == 1 ? pre : 0);
        double v = std::max(best[s - 1][j], c);
        if (v < best[s][i]) {
          best[s][i] = v;
          cut[s][i] = j;
        }
      }
  SmallVector<int64_t> starts(stages);
  for (int64_t s = stages, i = n; s >= 1; --s) {
    starts[s - 1] = cut[s][i];
    i = cut[s][i];
  }
  return starts;
}

/// The split of @forward into stage functions, step by step.
class StageSplitter {
public:
  StageSplitter(func::FuncOp forward, int64_t numStages, std::string stagesText,
                StringRef split, StringRef passArgument)
      : forward(forward), body(forward.getBody().front()),
        ret(cast<func::ReturnOp>(body.getTerminator())), numStages(numStages),
        stagesText(std::move(stagesText)), split(split),
        passArgument(passArgument), b(forward.getContext()) {}

  LogicalResult run();

private:
  /// The parameter name of `v` when it is a parameter of @forward.
  StringAttr paramName(Value v);
  /// Depth -1: no decoder layer's parameters (the whole program, without
  /// pipeline stages).
  int64_t depthOf(Value v) const {
    auto it = depth.find(v);
    return it == depth.end() ? int64_t(-1) : it->second;
  }
  int64_t stageOfLayer(int64_t layer) const {
    int64_t s = 0;
    while (s + 1 < numStages && starts[s + 1] <= layer)
      ++s;
    return s;
  }

  /// Values computed from parameters and constants only, and values that
  /// depend on a trainable (floating-point) parameter.
  void classifyValues();
  /// The decoder layers (`prefix`.<N>, `numLayers` of them), each value's
  /// depth along the residual stream, and the first layer of each stage.
  LogicalResult assignLayers();
  /// The layer family of the parameters that the computation after the
  /// token embedding reads with the most layers.
  LogicalResult findDecoderLayers(std::string &prefix, int64_t &numLayers);
  /// The first layer of each stage after stage 0 from the user's split
  /// points.
  LogicalResult parseSplitPoints(StringRef prefix, int64_t numLayers);
  /// The stages each op belongs to.
  LogicalResult assignStages();
  /// `op`'s result `r` is trained work on data inputs that `stages` share.
  void reportSharedTrainedWork(Operation *op, Value r,
                               ArrayRef<int64_t> stages);
  /// The boundaries: values with a depth defined on a stage before a user.
  void findCuts();
  /// The prologue's ops and results, and the work stage 0 holds for it
  /// alone.
  void findPrologue();
  bool onlyStage0(Operation *op) {
    auto &st = stagesOf[op];
    return st.size() == 1 && st[0] == 0 &&
           (!op->getNumResults() || depthOf(op->getResult(0)) < 0);
  }
  bool inStage(Operation *op, int64_t s) {
    return stagesOf[op].contains(s) &&
           !(s == 0 && (prologue.contains(op) || onlyForPrologue.contains(op)));
  }

  /// An argument of a piece that a previous piece's result gives, marked
  /// `{<attr> = index}`.
  struct Input {
    Value value;
    StringRef attr;
    int64_t index;
  };
  /// A piece of @forward as a function: the block arguments its ops read
  /// (and `extraArgs`), attributes kept, in their order; then `inputs`; the
  /// ops `selected` picks, in program order, with operands defined outside
  /// rebuilt first (constants, parameter-only work stage 0 holds for the
  /// prologue); returning `results`, each marked
  /// `{glimmer.activation = i}` unless `resultAttrs` are given.
  func::FuncOp buildPiece(StringRef name,
                          llvm::function_ref<bool(Operation *)> selected,
                          ArrayRef<BlockArgument> extraArgs,
                          ArrayRef<Input> inputs, ArrayRef<Value> results,
                          ArrayRef<DictionaryAttr> resultAttrs);
  /// The block arguments read by the ops `selected` picks, by the work
  /// rebuilt for them and by `results`, with `extraArgs`, in their order.
  SmallVector<BlockArgument>
  argumentsRead(llvm::function_ref<bool(Operation *)> selected,
                ArrayRef<BlockArgument> extraArgs, ArrayRef<Input> inputs,
                ArrayRef<Value> results);
  /// The prologue and the stage functions.
  void buildFunctions();

  func::FuncOp forward;
  Block &body;
  func::ReturnOp ret;
  int64_t numStages;
  std::string stagesText;
  StringRef split;
  StringRef passArgument;
  OpBuilder b;

  DenseSet<Value> paramOnly, trained;
  DenseMap<Value, int64_t> depth;
  /// The first layer of each stage.
  SmallVector<int64_t> starts{0};
  /// The decoder layers, as error messages name them.
  std::string range;
  /// @forward's ops, but its terminator.
  SmallVector<Operation *> ops;
  DenseMap<Operation *, llvm::SmallSetVector<int64_t, 4>> stagesOf;
  /// The values each stage returns for the next.
  SmallVector<llvm::SetVector<Value>> cuts;
  /// The values some stage reads.
  DenseSet<Value> readSomewhere;
  DenseSet<Operation *> prologue, onlyForPrologue;
  llvm::SetVector<Value> prologueOut;
};

StringAttr StageSplitter::paramName(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &body)
    return {};
  return forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kParamAttr);
}

LogicalResult StageSplitter::run() {
  classifyValues();
  if (numStages > 1 && failed(assignLayers()))
    return failure();
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  if (failed(assignStages()))
    return failure();
  findCuts();
  // Parameters and buffers no stage reads (a vision tower's unused last
  // layer) stay with stage 0, so that the stages together hold the model's
  // whole state (and checkpoints keep it).
  for (Operation *op : ops)
    if (!stagesOf[op].empty())
      for (Value v : op->getOperands())
        readSomewhere.insert(v);
  for (Value v : ret.getOperands())
    readSomewhere.insert(v);
  findPrologue();
  buildFunctions();
  return success();
}

void StageSplitter::classifyValues() {
  for (BlockArgument arg : body.getArguments()) {
    if (paramName(arg)) {
      paramOnly.insert(arg);
      if (isa<FloatType>(
              cast<RankedTensorType>(arg.getType()).getElementType()))
        trained.insert(arg);
    }
  }
  for (Operation &op : body.without_terminator()) {
    bool allParam = llvm::all_of(
        op.getOperands(), [&](Value v) { return paramOnly.contains(v); });
    bool anyTrained = llvm::any_of(
        op.getOperands(), [&](Value v) { return trained.contains(v); });
    for (Value r : op.getResults()) {
      if (allParam)
        paramOnly.insert(r);
      if (anyTrained)
        trained.insert(r);
    }
  }
}

LogicalResult StageSplitter::assignLayers() {
  std::string prefix;
  int64_t numLayers = 0;
  if (failed(findDecoderLayers(prefix, numLayers)))
    return failure();

  // Depth along the residual stream: the highest decoder layer whose
  // parameters a value depends on.
  for (BlockArgument arg : body.getArguments())
    if (StringAttr name = paramName(arg))
      if (auto layer = layerOf(name.getValue()))
        if (layer->first == prefix)
          depth[arg] = layer->second;
  for (Operation &op : body.without_terminator()) {
    int64_t d = -1;
    for (Value v : op.getOperands())
      d = std::max(d, depthOf(v));
    for (Value r : op.getResults())
      depth[r] = d;
  }

  // The first layer of each stage: the user's split points, or balanced.
  starts.clear();
  if (!split.empty())
    return parseSplitPoints(prefix, numLayers);
  SmallVector<double> layerCost(numLayers, 0);
  double pre = 0;
  for (Operation &op : body.without_terminator()) {
    int64_t d = op.getNumResults() ? depthOf(op.getResult(0)) : -1;
    (d >= 0 ? layerCost[d] : pre) += estimatedCost(&op);
  }
  starts = balance(layerCost, pre, numStages);
  return success();
}

LogicalResult StageSplitter::findDecoderLayers(std::string &prefix,
                                               int64_t &numLayers) {
  // The computation after the token embedding: an embedding whose ids come
  // from a data input, through the CP permutation and the batch cuts.
  DenseSet<Value> fromData, afterEmbedding;
  for (BlockArgument arg : body.getArguments())
    if (forward.getArgAttr(arg.getArgNumber(), kInputAttr))
      fromData.insert(arg);
  for (Operation &op : body.without_terminator()) {
    auto embedding = dyn_cast<EmbeddingOp>(op);
    bool after = embedding && fromData.contains(embedding.getIds());
    after |= llvm::any_of(op.getOperands(),
                          [&](Value v) { return afterEmbedding.contains(v); });
    bool data = llvm::any_of(op.getOperands(),
                             [&](Value v) { return fromData.contains(v); });
    for (Value r : op.getResults()) {
      if (data)
        fromData.insert(r);
      if (after)
        afterEmbedding.insert(r);
    }
  }
  // The layer families of the parameters it reads.
  llvm::StringMap<llvm::DenseSet<int64_t>> families;
  std::function<void(Value, DenseSet<Value> &)> collect =
      [&](Value v, DenseSet<Value> &seen) {
        if (!paramOnly.contains(v) || !seen.insert(v).second)
          return;
        if (StringAttr name = paramName(v)) {
          if (auto layer = layerOf(name.getValue()))
            families[layer->first].insert(layer->second);
          return;
        }
        if (Operation *def = v.getDefiningOp())
          for (Value operand : def->getOperands())
            collect(operand, seen);
      };
  DenseSet<Value> seen;
  for (Operation &op : body.without_terminator())
    if (llvm::any_of(op.getResults(),
                     [&](Value r) { return afterEmbedding.contains(r); }))
      for (Value operand : op.getOperands())
        collect(operand, seen);
  size_t most = 0;
  for (auto &[name, indices] : families)
    if (indices.size() > most) {
      most = indices.size();
      prefix = name.str();
    }
  if (prefix.empty())
    return forward.emitError()
           << "'" << passArgument << "': found no decoder layers to split into "
           << numStages
           << " pipeline stages (parameters named "
              "<prefix>.<N>.… read after the token embedding)";
  numLayers = most;
  for (int64_t i = 0; i < numLayers; ++i)
    if (!families[prefix].contains(i))
      return forward.emitError()
             << "'" << passArgument << "': the decoder layers " << prefix
             << ".<N> are not numbered 0 to " << numLayers - 1 << " (no "
             << prefix << "." << i << ")";
  range = prefix + ".0 ... " + prefix + "." + std::to_string(numLayers - 1);
  if (numStages > numLayers)
    return forward.emitError()
           << stagesText << " pipeline stages but the model has " << numLayers
           << " decoder layers (" << range
           << "): every stage needs at least one layer";
  return success();
}

LogicalResult StageSplitter::parseSplitPoints(StringRef prefix,
                                              int64_t numLayers) {
  SmallVector<StringRef> points;
  split.split(points, ',');
  if (int64_t(points.size()) != numStages - 1)
    return forward.emitError()
           << "the pipeline split '" << split << "' names " << points.size()
           << " split points, but " << stagesText << " stages need "
           << numStages - 1;
  starts.push_back(0);
  StringRef last = prefix;
  last = last.rsplit('.').second.empty() ? last : last.rsplit('.').second;
  for (StringRef point : points) {
    auto [name, index] = point.trim().rsplit('.');
    int64_t layer;
    bool names = !index.getAsInteger(10, layer) && layer >= 0 &&
                 layer < numLayers &&
                 (name == prefix || name == last ||
                  prefix.ends_with(("." + name).str()));
    if (!names)
      return forward.emitError()
             << "pipeline split point '" << point.trim()
             << "' names no decoder layer (they are " << range << ")";
    if (layer <= starts.back())
      return forward.emitError()
             << "pipeline split point '" << point.trim()
             << "' does not start a new stage: split points must name "
                "increasing layers after "
             << prefix << ".0, so that every stage has a layer";
    starts.push_back(layer);
  }
  return success();
}

LogicalResult StageSplitter::assignStages() {
  for (Value v : ret.getOperands()) {
    if (numStages > 1 && depthOf(v) < 0)
      return ret.emitError()
             << "'" << passArgument
             << "': the loss does not depend on the decoder layers " << range;
  }
  // Ops with a depth belong to its stage; the others to every stage that
  // uses them (in reverse order, so users are placed first).
  for (Operation *op : llvm::reverse(ops)) {
    auto &mine = stagesOf[op];
    if (op->getNumResults() && depthOf(op->getResult(0)) >= 0) {
      mine.insert(stageOfLayer(depthOf(op->getResult(0))));
      continue;
    }
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers()) {
        if (isa<func::ReturnOp>(user))
          mine.insert(numStages - 1);
        else
          for (int64_t s : stagesOf[user])
            mine.insert(s);
      }
    // Parameter-only work (an FSDP gather or a cast of a tied weight) is
    // repeated on each stage that reads it; the stages' gradients of the
    // parameter are summed in the optimizer step. Trained work on data
    // would have to be repeated with its gradients split across stages.
    if (mine.size() > 1)
      for (Value r : op->getResults())
        if (trained.contains(r) && !paramOnly.contains(r)) {
          reportSharedTrainedWork(op, r, mine.getArrayRef());
          return failure();
        }
  }
  return success();
}

void StageSplitter::reportSharedTrainedWork(Operation *op, Value r,
                                            ArrayRef<int64_t> stages) {
  SmallVector<std::string> names;
  DenseSet<Value> cone;
  std::function<void(Value)> params = [&](Value v) {
    if (!cone.insert(v).second)
      return;
    if (StringAttr n = paramName(v))
      names.push_back("'" + n.str() + "'");
    else if (Operation *def = v.getDefiningOp())
      for (Value o : def->getOperands())
        params(o);
  };
  params(r);
  llvm::sort(names);
  op->emitOpError() << "is needed on pipeline stages " << stages[0] << " and "
                    << stages[1] << ", and depends on the parameters "
                    << llvm::join(names, ", ")
                    << ": trained work on data inputs cannot be shared by "
                       "several stages";
}

void StageSplitter::findCuts() {
  auto definingStage = [&](Value v) -> int64_t {
    Operation *def = v.getDefiningOp();
    if (!def || depthOf(v) < 0)
      return -1;
    return stagesOf[def][0];
  };
  cuts.resize(numStages);
  for (Operation *op : ops)
    for (int64_t user : stagesOf[op])
      for (Value v : op->getOperands()) {
        int64_t from = definingStage(v);
        for (int64_t c = std::max<int64_t>(from, 0); from >= 0 && c < user; ++c)
          cuts[c].insert(v);
      }
  // Boundaries in program order, so that sender and receiver agree.
  for (auto &cut : cuts) {
    SmallVector<Value> sorted(cut.begin(), cut.end());
    llvm::sort(sorted, [&](Value a, Value b) {
      return a.getDefiningOp()->isBeforeInBlock(b.getDefiningOp());
    });
    cut = llvm::SetVector<Value>(sorted.begin(), sorted.end());
  }
}

void StageSplitter::findPrologue() {
  // Stage 0's trained work that no micro-batch changes (the vision encoder
  // and projector on all images), run once per step instead of in every
  // micro-batch's forward and again in its backward. It is the cone of the
  // trained, micro-batch-invariant values that micro-batch dependent work
  // reads; constants are cloned where needed instead.
  DenseSet<Value> varies;
  for (BlockArgument arg : body.getArguments())
    if (forward.getArgAttr(arg.getArgNumber(), kMicrobatchAttr))
      varies.insert(arg);
  for (Operation *op : ops)
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return varies.contains(v); }))
      for (Value r : op->getResults())
        varies.insert(r);
  auto invariantTrained = [&](Operation *op) {
    return onlyStage0(op) && !isa<ConstantOp>(op) &&
           llvm::all_of(op->getResults(), [&](Value r) {
             return !varies.contains(r) && trained.contains(r);
           });
  };
  std::function<void(Operation *)> addCone = [&](Operation *op) {
    if (!op || isa<ConstantOp>(op) || !onlyStage0(op) ||
        !prologue.insert(op).second)
      return;
    for (Value v : op->getOperands())
      if (!varies.contains(v))
        addCone(v.getDefiningOp());
  };
  // Seeds: work on data inputs (images), not parameter-only work such as
  // FSDP's all-gathers, which would then stay gathered for the whole step.
  for (Operation *op : ops)
    if (invariantTrained(op) && llvm::any_of(op->getResults(), [&](Value r) {
          return !paramOnly.contains(r);
        }))
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (!isa<func::ReturnOp>(user) && !invariantTrained(user))
            addCone(op);
  // Its results that the rest of stage 0 reads, in program order.
  for (Operation *op : ops)
    if (onlyStage0(op) || stagesOf[op].contains(0))
      if (!prologue.contains(op))
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp())
            if (prologue.contains(def))
              prologueOut.insert(v);
  // Work stage 0 holds only for the prologue (a tied weight's gather that
  // the prologue's embedding reads) is the prologue's: the prologue
  // rebuilds it, and stage 0 would repeat a collective no one reads.
  for (Operation *op : llvm::reverse(ops)) {
    if (prologue.contains(op) || !stagesOf[op].contains(0) ||
        (op->getNumResults() && depthOf(op->getResult(0)) >= 0))
      continue;
    bool stage0Reads = false, prologueReads = false;
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers()) {
        if (isa<func::ReturnOp>(user) ||
            (stagesOf[user].contains(0) && !prologue.contains(user) &&
             !onlyForPrologue.contains(user)))
          stage0Reads = true;
        if (prologue.contains(user) || onlyForPrologue.contains(user))
          prologueReads = true;
      }
    if (prologueReads && !stage0Reads)
      onlyForPrologue.insert(op);
  }
}

SmallVector<BlockArgument>
StageSplitter::argumentsRead(llvm::function_ref<bool(Operation *)> selected,
                             ArrayRef<BlockArgument> extraArgs,
                             ArrayRef<Input> inputs, ArrayRef<Value> results) {
  llvm::SetVector<BlockArgument> used(extraArgs.begin(), extraArgs.end());
  DenseSet<Value> given;
  for (const Input &in : inputs)
    given.insert(in.value);
  DenseSet<Operation *> visited;
  std::function<void(Value)> reads = [&](Value v) {
    if (given.contains(v))
      return;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      used.insert(arg);
      return;
    }
    Operation *def = v.getDefiningOp();
    if (selected(def) || !visited.insert(def).second)
      return;
    for (Value operand : def->getOperands())
      reads(operand);
  };
  for (Operation *op : ops)
    if (selected(op))
      for (Value v : op->getOperands())
        reads(v);
  for (Value v : results)
    reads(v);
  SmallVector<BlockArgument> args(used.begin(), used.end());
  llvm::sort(args, [](BlockArgument x, BlockArgument y) {
    return x.getArgNumber() < y.getArgNumber();
  });
  return args;
}

func::FuncOp StageSplitter::buildPiece(
    StringRef name, llvm::function_ref<bool(Operation *)> selected,
    ArrayRef<BlockArgument> extraArgs, ArrayRef<Input> inputs,
    ArrayRef<Value> results, ArrayRef<DictionaryAttr> resultAttrs) {
  SmallVector<BlockArgument> args =
      argumentsRead(selected, extraArgs, inputs, results);
  SmallVector<Type> argTypes, resultTypes;
  for (BlockArgument arg : args)
    argTypes.push_back(arg.getType());
  for (const Input &in : inputs)
    argTypes.push_back(in.value.getType());
  for (Value v : results)
    resultTypes.push_back(v.getType());
  auto fn = func::FuncOp::create(b, forward.getLoc(), name,
                                 b.getFunctionType(argTypes, resultTypes));
  Block *entry = fn.addEntryBlock();
  IRMapping map;
  for (auto [i, arg] : llvm::enumerate(args)) {
    if (DictionaryAttr attrs = forward.getArgAttrDict(arg.getArgNumber()))
      fn.setArgAttrs(i, attrs);
    map.map(arg, entry->getArgument(i));
  }
  for (auto [i, in] : llvm::enumerate(inputs)) {
    unsigned position = args.size() + i;
    fn.setArgAttr(position, in.attr, b.getI64IntegerAttr(in.index));
    map.map(in.value, entry->getArgument(position));
  }
  OpBuilder inner = OpBuilder::atBlockEnd(entry);
  std::function<void(Value)> materialize = [&](Value v) {
    Operation *def = v.getDefiningOp();
    if (!def || map.contains(v) || selected(def))
      return;
    for (Value operand : def->getOperands())
      materialize(operand);
    inner.clone(*def, map);
  };
  for (Operation *op : ops) {
    if (!selected(op))
      continue;
    for (Value v : op->getOperands())
      materialize(v);
    inner.clone(*op, map);
  }
  SmallVector<Value> mapped;
  for (Value v : results)
    mapped.push_back(map.lookup(v));
  func::ReturnOp::create(inner, ret.getLoc(), mapped);
  for (unsigned i = 0; i < results.size(); ++i) {
    if (!resultAttrs.empty()) {
      if (resultAttrs[i])
        fn.setResultAttrs(i, resultAttrs[i]);
    } else {
      fn.setResultAttr(i, kActivationAttr, b.getI64IntegerAttr(i));
    }
  }
  b.setInsertionPointAfter(fn);
  return fn;
}

void StageSplitter::buildFunctions() {
  b.setInsertionPointAfter(forward);
  if (!prologueOut.empty()) {
    func::FuncOp fn = buildPiece(
        "prologue", [&](Operation *op) { return prologue.contains(op); }, {},
        {}, prologueOut.getArrayRef(), {});
    fn->setAttr(kStagePrologueAttr, b.getUnitAttr());
  }
  // Parameters no stage reads stay with stage 0.
  SmallVector<BlockArgument> unread;
  for (BlockArgument arg : body.getArguments())
    if (!readSomewhere.contains(arg) &&
        (forward.getArgAttr(arg.getArgNumber(), kParamAttr) ||
         forward.getArgAttr(arg.getArgNumber(), kBufferAttr)))
      unread.push_back(arg);
  SmallVector<DictionaryAttr> forwardResultAttrs;
  for (unsigned i = 0; i < forward.getNumResults(); ++i)
    forwardResultAttrs.push_back(forward.getResultAttrDict(i));
  for (int64_t s = 0; s < numStages; ++s) {
    // Stage 0 reads the prologue's results; the others the previous cut.
    SmallVector<Input> inputs;
    if (s == 0)
      for (auto [i, v] : llvm::enumerate(prologueOut))
        inputs.push_back({v, kPrologueAttr, int64_t(i)});
    else
      for (auto [i, v] : llvm::enumerate(cuts[s - 1]))
        inputs.push_back({v, kActivationAttr, int64_t(i)});
    bool lastStage = s == numStages - 1;
    SmallVector<Value> results =
        lastStage ? SmallVector<Value>(ret.getOperands())
                  : SmallVector<Value>(cuts[s].begin(), cuts[s].end());
    func::FuncOp fn = buildPiece(
        "stage_" + std::to_string(s),
        [&](Operation *op) { return inStage(op, s); },
        s == 0 ? ArrayRef<BlockArgument>(unread) : ArrayRef<BlockArgument>(),
        inputs, results,
        lastStage ? ArrayRef<DictionaryAttr>(forwardResultAttrs)
                  : ArrayRef<DictionaryAttr>());
    fn->setAttr(kStageAttr, b.getI64IntegerAttr(s));
  }
}

struct SplitStagesPass
    : public glimmer::impl::GlimmerSplitStagesBase<SplitStagesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SpmdAttr spmd = requireRecordedSpmd(module, getArgument());
    if (!spmd)
      return signalPassFailure();
    SpmdContext layout = spmd.getLayout();
    // Interleaved 1F1B: virtual_stages stages per pp rank.
    int64_t numStages = layout.pp() * layout.virtualStages;
    std::string stagesText =
        layout.virtualStages == 1
            ? "pp = " + std::to_string(numStages)
            : "pp x virtual_stages = " + std::to_string(layout.pp()) + " x " +
                  std::to_string(layout.virtualStages) + " = " +
                  std::to_string(numStages);
    if (numStages == 1 && !split.empty()) {
      module.emitError() << "split points ('" << split
                         << "') need pipeline parallelism (pp > 1)";
      return signalPassFailure();
    }
    // Micro-batches without pipeline stages are one stage: the prologue (the
    // vision work, once per step) is the point.
    if (numStages == 1 && layout.microbatches == 1)
      return;
    auto forward = module.lookupSymbol<func::FuncOp>(functionName);
    if (!forward || forward.isExternal()) {
      module.emitError() << "'" << getArgument() << "': no function @"
                         << functionName << " to split";
      return signalPassFailure();
    }
    if (failed(StageSplitter(forward, numStages, std::move(stagesText), split,
                             getArgument())
                   .run()))
      return signalPassFailure();
  }
};

} // namespace
