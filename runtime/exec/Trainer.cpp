//===- Trainer.cpp - Run compiled programs on ranks ----------------------===//

#include "glimmer_rt/Trainer.h"
#include "glimmer_rt/Collectives.h"
#include "glimmer_rt/Files.h"

#include "Binding.h"

#ifdef GLIMMER_RT_HAVE_CUDA
#include "glimmer_rt/Nccl.h"
#endif

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <thread>
#include <tuple>

using namespace glimmer_rt;
using glimmer_rt::detail::addGradients;
using glimmer_rt::detail::withMicrobatch;

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

namespace {

const std::pair<Slot::Role, const char *> kRoles[] = {
    {Slot::Input, "input"},     {Slot::Parameter, "param"},
    {Slot::Buffer, "buffer"},   {Slot::Grad, "grad"},
    {Slot::ExpAvg, "exp_avg"},  {Slot::ExpAvgSq, "exp_avg_sq"},
    {Slot::Step, "step"},       {Slot::Microbatch, "microbatch"},
    {Slot::Activation, "activation"}, {Slot::Cotangent, "cotangent"},
    {Slot::ActivationGrad, "activation_grad"}, {Slot::Prologue, "prologue"},
    {Slot::PrologueGrad, "prologue_grad"}, {Slot::Other, "other"}};

std::string join(const std::vector<std::string> &parts) {
  std::string s;
  for (const std::string &p : parts)
    s += (s.empty() ? "" : ",") + p;
  return s.empty() ? "-" : s;
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  if (s == "-")
    return out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep))
    out.push_back(item);
  return out;
}

void writeSlot(std::ostringstream &os, const char *kind, const Slot &slot) {
  const char *role = "other";
  for (auto [r, name] : kRoles)
    if (r == slot.role)
      role = name;
  std::vector<std::string> dims;
  for (int64_t d : slot.shape)
    dims.push_back(std::to_string(d));
  os << kind << ' ' << role << ' ' << (slot.name.empty() ? "-" : slot.name)
     << ' ' << dtypeName(slot.dtype) << ' ' << join(dims) << ' '
     << slot.shardingText() << '\n';
}

bool readSlot(std::istringstream &line, Slot &slot, std::string &error) {
  std::string role, name, dtype, shape, sharding;
  if (!(line >> role >> name >> dtype >> shape >> sharding)) {
    error = "a slot line has too few fields";
    return false;
  }
  bool known = false;
  for (auto [r, n] : kRoles)
    if (role == n) {
      slot.role = r;
      known = true;
    }
  std::optional<DType> type = dtypeFromName(dtype);
  if (!known || !type) {
    error = "unknown role or dtype in slot '" + name + "'";
    return false;
  }
  slot.name = name == "-" ? "" : name;
  slot.dtype = *type;
  slot.shape.clear();
  for (const std::string &d : split(shape, ','))
    slot.shape.push_back(std::stoll(d));
  return slot.parseSharding(sharding, slot.shape.size(), error);
}

} // namespace

bool Slot::isSharded() const {
  for (const auto &axes : dimAxes)
    if (!axes.empty())
      return true;
  return false;
}

std::string Slot::shardingText() const {
  if (!isSharded())
    return "-";
  std::string text;
  for (const auto &axes : dimAxes) {
    text += "[";
    for (size_t i = 0; i < axes.size(); ++i)
      text += (i ? "," : "") + axes[i];
    text += "]";
  }
  return text;
}

bool Slot::parseSharding(const std::string &text, size_t rank,
                         std::string &error) {
  dimAxes.clear();
  if (text == "-")
    return true;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t close = text.find(']', pos);
    if (text[pos] != '[' || close == std::string::npos) {
      error = "malformed sharding '" + text + "' of slot '" + name + "'";
      return false;
    }
    std::string inner = text.substr(pos + 1, close - pos - 1);
    dimAxes.push_back(inner.empty() ? std::vector<std::string>{}
                                    : split(inner, ','));
    pos = close + 1;
  }
  if (dimAxes.size() != rank) {
    error = "the sharding '" + text + "' of slot '" + name + "' has " +
            std::to_string(dimAxes.size()) + " dimensions, its shape " +
            std::to_string(rank);
    return false;
  }
  return true;
}

std::string ProgramInfo::toManifest() const {
  std::ostringstream os;
  os << "glimmer-program-manifest 2\n";
  std::string l = layout.print();
  os << "layout " << (l.empty() ? "-" : l) << '\n';
  for (const VisionMergeCheck &v : visionChecks)
    os << "vision " << v.tokensInput << ' ' << v.imageTokenId << ' '
       << v.bankRows << '\n';
  for (const TracedInput &t : tracedInputs)
    os << "traced " << t.name << ' ' << t.digest << '\n';
  for (const auto &[name, fn] : functions) {
    os << "function " << name << '\n';
    for (const Slot &s : fn.arguments)
      writeSlot(os, "arg", s);
    for (const Slot &s : fn.results)
      writeSlot(os, "result", s);
  }
  return os.str();
}

bool ProgramInfo::parseManifest(const std::string &text, ProgramInfo &info,
                                std::string &error) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "glimmer-program-manifest 2") {
    error = "not a glimmer program manifest (version 2)";
    return false;
  }
  Function *current = nullptr;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind;
    fields >> kind;
    try {
      if (kind == "layout") {
        std::string l;
        fields >> l;
        std::string why;
        auto parsed = SpmdContext::parse(l == "-" ? "" : l, &why);
        if (!parsed) {
          error = "bad layout '" + l + "': " + why;
          return false;
        }
        info.layout = *parsed;
      } else if (kind == "vision") {
        VisionMergeCheck v;
        fields >> v.tokensInput >> v.imageTokenId >> v.bankRows;
        info.visionChecks.push_back(v);
      } else if (kind == "traced") {
        TracedInput t;
        fields >> t.name >> t.digest;
        info.tracedInputs.push_back(t);
      } else if (kind == "function") {
        std::string name;
        fields >> name;
        current = &info.functions[name];
      } else if (kind == "arg" || kind == "result") {
        if (!current) {
          error = "a slot before any function";
          return false;
        }
        Slot slot;
        if (!readSlot(fields, slot, error))
          return false;
        (kind == "arg" ? current->arguments : current->results)
            .push_back(slot);
      } else if (!kind.empty()) {
        error = "unknown manifest line '" + line + "'";
        return false;
      }
    } catch (const std::exception &) {
      error = "malformed manifest line '" + line + "'";
      return false;
    }
  }
  return true;
}

std::string glimmer_rt::manifestFunctionSource(const std::string &manifest) {
  // A raw string literal; the delimiter cannot occur in a manifest.
  return "\nextern \"C\" const char *glimmer_program_manifest() {\n"
         "  return R\"glimmer_manifest(" +
         manifest + ")glimmer_manifest\";\n}\n";
}

std::unique_ptr<CompiledProgram>
CompiledProgram::load(const std::string &libraryPath, std::string &error) {
  auto program = std::unique_ptr<CompiledProgram>(new CompiledProgram());
  program->library = LoadedProgram::load(libraryPath, error);
  if (!program->library)
    return nullptr;
  std::string file = libraryPath.find('/') == std::string::npos
                         ? "./" + libraryPath
                         : libraryPath;
  void *handle = dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
  auto manifest = handle ? reinterpret_cast<const char *(*)()>(
                               dlsym(handle, "glimmer_program_manifest"))
                         : nullptr;
  if (handle)
    dlclose(handle);
  if (!manifest) {
    error = "compiled program '" + libraryPath +
            "' has no manifest (glimmer_program_manifest); was it built from "
            "glimmer-train's generated C++?";
    return nullptr;
  }
  if (!ProgramInfo::parseManifest(manifest(), program->programInfo, error)) {
    error = "compiled program '" + libraryPath + "': " + error;
    return nullptr;
  }
  for (auto &[name, fn] : program->programInfo.functions) {
    fn.entry = program->library->entry(name, error);
    if (!fn.entry)
      return nullptr;
  }
  return program;
}

const Function &CompiledProgram::function(const std::string &name) const {
  auto it = programInfo.functions.find(name);
  if (it == programInfo.functions.end())
    throw RuntimeError("the compiled program has no @" + name +
                       (name == "forward" ? ""
                                          : " (was it compiled for training?)"));
  return it->second;
}

bool glimmer_rt::parseBackend(const std::string &text, Backend &backend) {
  if (text == "cpu")
    backend = Backend::CPU;
  else if (text == "cuda")
    backend = Backend::CUDA;
  else
    return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Ranks
//===----------------------------------------------------------------------===//

struct Ranks::Impl {
  // Thread mode.
  std::unique_ptr<InProcessWorld> inProcess;
#ifdef GLIMMER_RT_HAVE_CUDA
  std::unique_ptr<NcclWorld> nccl;
#endif
  std::chrono::milliseconds timeout{60000};
  /// Indexed like local(); created on the ranks' threads at the first run.
  std::vector<std::unique_ptr<Communicator>> comms;
  std::vector<Device> devices;
  bool processMode = false;

  void abort(const std::string &why) {
    if (inProcess)
      inProcess->abort(why);
#ifdef GLIMMER_RT_HAVE_CUDA
    if (nccl)
      nccl->abort(why);
#endif
  }
};

Ranks::Ranks(const SpmdContext &layout, Backend backend,
             std::chrono::milliseconds timeout)
    : spmd(layout), kind(backend), impl(std::make_unique<Impl>()) {
  int64_t n = layout.worldSize();
  impl->timeout = timeout;
  for (int64_t r = 0; r < n; ++r)
    localRanks.push_back(r);
  impl->comms.resize(n);
  if (backend == Backend::CPU) {
    impl->devices.assign(n, Device::cpu());
    if (n > 1)
      impl->inProcess = std::make_unique<InProcessWorld>(n, timeout);
    return;
  }
  if (!builtWithCuda())
    throw RuntimeError("--backend=cuda: this runtime was built without the "
                       "CUDA backend (configure with nvcc available)");
  int gpus = cudaDeviceCount();
  if (gpus == 0)
    throw RuntimeError("--backend=cuda: no CUDA device is visible");
  if (n > gpus)
    throw RuntimeError("the layout '" + layout.print() + "' has " +
                       std::to_string(n) + " ranks but only " +
                       std::to_string(gpus) +
                       " GPUs are visible (one rank per GPU)");
  for (int64_t r = 0; r < n; ++r)
    impl->devices.push_back(Device::cuda(int(r)));
#ifdef GLIMMER_RT_HAVE_CUDA
  if (n > 1)
    impl->nccl = std::make_unique<NcclWorld>(n, timeout);
#endif
}

Ranks::Ranks(const SpmdContext &layout, Backend backend, int64_t rank,
             Device device, std::unique_ptr<Communicator> comm)
    : spmd(layout), kind(backend), impl(std::make_unique<Impl>()) {
  if (rank < 0 || rank >= layout.worldSize())
    throw RuntimeError("rank " + std::to_string(rank) +
                       " is outside the layout's " +
                       std::to_string(layout.worldSize()) + " ranks");
  localRanks = {rank};
  impl->processMode = true;
  impl->devices = {device};
  impl->comms.push_back(std::move(comm));
}

Ranks::~Ranks() = default;

Device Ranks::device(int64_t rank) const {
  for (size_t i = 0; i < localRanks.size(); ++i)
    if (localRanks[i] == rank)
      return impl->devices[i];
  throw RuntimeError("rank " + std::to_string(rank) +
                     " does not run in this process");
}

void Ranks::run(const std::function<void(int64_t rank)> &fn) {
  size_t n = localRanks.size();
  auto body = [&](size_t i) {
    int64_t r = localRanks[i];
    RankScope rank(RankContext::forRank(spmd, r));
    DeviceScope device(impl->devices[i]);
    // Data checks are read once, by the synchronize that ends the step.
    DeferredChecks checks(impl->devices[i]);
    if (!impl->comms[i]) {
      if (impl->inProcess)
        impl->comms[i] = impl->inProcess->communicator(r);
#ifdef GLIMMER_RT_HAVE_CUDA
      else if (impl->nccl)
        impl->comms[i] = impl->nccl->communicator(r);
#endif
    }
    if (impl->comms[i]) {
      CommScope comm(*impl->comms[i]);
      fn(r);
    } else {
      fn(r);
    }
    // Device errors surface here rather than in a later step.
    synchronize(impl->devices[i]);
  };
  if (n == 1) {
    try {
      body(0);
    } catch (const std::exception &e) {
      if (spmd.worldSize() == 1)
        throw RuntimeError(e.what());
      throw RuntimeError("rank " + std::to_string(localRanks[0]) + ": " +
                         e.what());
    }
    return;
  }
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        body(i);
      } catch (const std::exception &e) {
        errors[i] = e.what();
        impl->abort("rank " + std::to_string(localRanks[i]) + " failed");
      }
    });
  for (std::thread &t : threads)
    t.join();
  // Report the failure that caused the others, not their aborts.
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < n; ++i)
      if (!errors[i].empty() &&
          (pass == 1 || errors[i].find("aborted") == std::string::npos))
        throw RuntimeError("rank " + std::to_string(localRanks[i]) + ": " +
                           errors[i]);
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

namespace {

std::unique_ptr<SafetensorsFile> readFile(const std::string &path) {
  std::string error;
  auto file = SafetensorsFile::read(path, error);
  if (!file)
    throw RuntimeError(error);
  return file;
}

/// The axes dimension `dim` of `slot` is split over.
std::vector<MeshAxis> axesOf(const Slot &slot, size_t dim) {
  std::vector<MeshAxis> axes;
  if (dim >= slot.dimAxes.size())
    return axes;
  for (const std::string &name : slot.dimAxes[dim]) {
    auto axis = glimmer::meshAxisFromName(name);
    if (!axis)
      throw RuntimeError("tensor '" + slot.name + "' is sharded over unknown "
                         "mesh axis '" + name + "'");
    axes.push_back(*axis);
  }
  return axes;
}

int64_t piecesOf(const SpmdContext &layout, const std::vector<MeshAxis> &axes) {
  int64_t n = 1;
  for (MeshAxis a : axes)
    n *= layout.degree(a);
  return n;
}

/// The full (unsharded) shape of a slot.
Shape globalShape(const SpmdContext &layout, const Slot &slot) {
  Shape s = slot.shape;
  for (size_t d = 0; d < s.size(); ++d)
    s[d] *= piecesOf(layout, axesOf(slot, d));
  return s;
}

/// Reads `name` from `file` as a full tensor of `slot` (converting
/// floating-point precision), or throws.
Tensor readFull(const SafetensorsFile &file, const SpmdContext &layout,
                const Slot &slot, const std::string &name, const char *what) {
  const TensorInfo *info = file.find(name);
  if (!info)
    throw RuntimeError(std::string(what) + " has no tensor '" + name + "'");
  Shape expected = globalShape(layout, slot);
  if (info->shape != expected)
    throw RuntimeError("tensor '" + name + "' has shape " +
                       shapeString(info->shape) +
                       " but the program was compiled for " +
                       shapeString(expected));
  if (isFloating(slot.dtype) != isFloating(info->dtype))
    throw RuntimeError("tensor '" + name + "' has dtype " +
                       std::string(dtypeName(info->dtype)) +
                       " but the program expects " +
                       std::string(dtypeName(slot.dtype)));
  Tensor t = readTensor(file, *info);
  return t.dtype() == slot.dtype ? t : convert(t, slot.dtype);
}

/// Rank `rank`'s piece of the full host tensor `full`, on `device`.
Tensor pieceFor(const Tensor &full, const SpmdContext &layout,
                const Slot &slot, int64_t rank, Device device) {
  if (!slot.isSharded())
    return full.to(device);
  RankContext ctx = RankContext::forRank(layout, rank);
  Tensor piece = full;
  for (size_t d = 0; d < slot.dimAxes.size(); ++d) {
    std::vector<MeshAxis> axes = axesOf(slot, d);
    if (!axes.empty())
      piece = pieceAlong(piece, int64_t(d), ctx.groupIndex(axes),
                         piecesOf(layout, axes));
  }
  return piece.clone().to(device);
}

/// The full tensor of a sharded slot from the blocks of `holder`'s group
/// over all of its axes (`pieceOf(rank)`): the blocks that differ only
/// along the last split dimension are joined first, then along the one
/// before, and so on.
template <typename PieceOf>
Tensor assemble(const Slot &slot, const SpmdContext &layout,
                const RankContext &holder, PieceOf pieceOf) {
  std::vector<MeshAxis> all;
  std::vector<size_t> split;
  for (size_t d = 0; d < slot.dimAxes.size(); ++d) {
    std::vector<MeshAxis> axes = axesOf(slot, d);
    all.insert(all.end(), axes.begin(), axes.end());
    if (!axes.empty())
      split.push_back(d);
  }
  // Each block by its index along every split dimension.
  std::map<std::vector<int64_t>, Tensor> blocks;
  for (int64_t r : holder.group(all)) {
    RankContext ctx = RankContext::forRank(layout, r);
    std::vector<int64_t> at;
    for (size_t d : split)
      at.push_back(ctx.groupIndex(axesOf(slot, d)));
    blocks.emplace(at, pieceOf(r));
  }
  for (size_t k = split.size(); k-- > 0;) {
    std::map<std::vector<int64_t>, std::vector<Tensor>> rows;
    for (auto &[at, t] : blocks) {
      std::vector<int64_t> rest(at.begin(), at.begin() + k);
      rows[rest].push_back(t); // std::map: in order of the k-th index
    }
    blocks.clear();
    for (auto &[rest, parts] : rows)
      blocks.emplace(rest, concat(parts, int64_t(split[k])));
  }
  return blocks.begin()->second;
}

} // namespace

void glimmer_rt::checkBatch(const ProgramInfo &program,
                            const SafetensorsFile &data) {
  for (const TracedInput &traced : program.tracedInputs) {
    const TensorInfo *info = data.find(traced.name);
    if (info && tensorDigest(data, *info) != traced.digest)
      throw RuntimeError(
          "the batch's '" + traced.name +
          "' differs from the traced example's: the traced program never "
          "read it (the model used its values in Python), so it holds what "
          "the model computed from them as constants; trace the model on a "
          "batch with these values");
  }
  for (const VisionMergeCheck &check : program.visionChecks) {
    const TensorInfo *info = data.find(check.tokensInput);
    if (!info || isFloating(info->dtype))
      continue;
    Tensor tokens = convert(readTensor(data, *info), DType::I64);
    int64_t count = 0;
    for (int64_t i = 0; i < tokens.numel(); ++i)
      count += tokens.data<int64_t>()[i] == check.imageTokenId;
    if (count != check.bankRows)
      throw RuntimeError(
          "the batch has " + std::to_string(count) + " image tokens (id " +
          std::to_string(check.imageTokenId) + " in '" + check.tokensInput +
          "') but the vision encoder produces " +
          std::to_string(check.bankRows) +
          " rows: every image token must take exactly one vision row");
  }
}

static std::string g17(double v);

/// With pipeline stages, each local rank's stage, the seconds its stage
/// functions ran and the most bytes of boundary activations it kept
/// between forwards and backwards, as a JSON member (empty otherwise).
static std::string pipelineMetrics(const SpmdContext &layout,
                                   const std::vector<int64_t> &local,
                                   const Trainer::StepResult &r) {
  if (r.busySeconds.empty())
    return "";
  std::ostringstream os;
  os << ",\"pipeline\":[";
  for (size_t i = 0; i < local.size(); ++i)
    os << (i ? "," : "") << "{\"rank\":" << local[i] << ",\"stage\":"
       << RankContext::forRank(layout, local[i]).coord(MeshAxis::Pp)
       << ",\"busy_s\":" << g17(r.busySeconds[i])
       << ",\"stash_peak_bytes\":" << r.stashPeakBytes[i] << "}";
  os << "]";
  return os.str();
}

void glimmer_rt::detail::addGradients(std::map<std::string, Tensor> &grads,
                                      const Function &fn,
                                      const std::vector<Tensor> &outputs) {
  for (size_t i = 0; i < fn.results.size(); ++i) {
    const Slot &slot = fn.results[i];
    if (slot.role != Slot::Grad)
      continue;
    auto it = grads.find(slot.name);
    if (it == grads.end())
      grads[slot.name] = outputs[i];
    else
      it->second = add(it->second, outputs[i]);
  }
}

std::vector<Tensor> glimmer_rt::detail::withMicrobatch(
    const Function &fn, std::vector<Tensor> args, int64_t micro) {
  for (size_t i = 0; i < fn.arguments.size(); ++i)
    if (fn.arguments[i].role == Slot::Microbatch)
      args[i] = full(DType::I64, {}, double(micro));
  return args;
}

/// The program's data inputs, read on the host once (each rank moves them
/// to its device).
static Trainer::Inputs readInputs(const std::vector<const Function *> &fns,
                                  const SpmdContext &layout,
                                  const SafetensorsFile &data) {
  Trainer::Inputs inputs;
  for (const Function *fn : fns)
    for (const Slot &slot : fn->arguments)
      if (slot.role == Slot::Input && !inputs.count(slot.name))
        inputs[slot.name] = readFull(data, layout, slot, slot.name, "the data");
  return inputs;
}

double glimmer_rt::runForward(const CompiledProgram &program,
                              const std::string &weightsPath,
                              const SafetensorsFile &data, Ranks &ranks) {
  const Function &fn = program.function("forward");
  auto weights = readFile(weightsPath);
  const SpmdContext &layout = program.layout();
  Trainer::Inputs inputs = readInputs({&fn}, layout, data);
  std::vector<Tensor> full;
  for (const Slot &slot : fn.arguments)
    full.push_back(slot.role == Slot::Input || slot.role == Slot::Microbatch
                       ? Tensor()
                       : readFull(*weights, layout, slot, slot.name,
                                  "the weights"));
  // After binding, so that a mis-shaped batch is reported as such.
  checkBatch(program.info(), data);
  std::vector<double> losses(ranks.local().size());
  ranks.run([&](int64_t rank) {
    Frame frame;
    Device device = ranks.device(rank);
    for (size_t i = 0; i < fn.arguments.size(); ++i)
      frame.inputs.push_back(
          fn.arguments[i].role == Slot::Input
              ? inputs.at(fn.arguments[i].name).to(device)
          : fn.arguments[i].role == Slot::Microbatch
              ? Tensor()
              : pieceFor(full[i], layout, fn.arguments[i], rank, device));
    double loss = 0;
    std::vector<Tensor> args = frame.inputs;
    for (int64_t micro = 0; micro < layout.microbatches; ++micro) {
      frame.inputs = withMicrobatch(fn, args, micro);
      frame.outputs.clear();
      fn.entry(frame);
      if (frame.outputs.empty() || frame.outputs[0].numel() != 1)
        throw RuntimeError("the model's forward does not return a scalar "
                           "loss");
      loss += frame.outputs[0].item(0);
    }
    size_t index = 0;
    while (ranks.local()[index] != rank)
      ++index;
    losses[index] = loss;
  });
  return losses[0];
}

//===----------------------------------------------------------------------===//
// Trainer
//===----------------------------------------------------------------------===//

Trainer::Trainer(const CompiledProgram &program, const std::string &weightsPath,
                 Ranks &ranks)
    : program(program), ranks(ranks), states(ranks.local().size()) {
  if (program.layout().worldSize() != ranks.layout().worldSize())
    throw RuntimeError("the program was partitioned for " +
                       std::to_string(program.layout().worldSize()) +
                       " ranks but runs on " +
                       std::to_string(ranks.layout().worldSize()));
  const SpmdContext &layout = program.layout();
  for (int64_t rank : ranks.local()) {
    Functions f;
    // Stage functions: pipeline stages, or micro-batches with a prologue.
    if (!program.hasFunction("stage_0")) {
      f.grad = &program.function("grad_step");
      f.apply = &program.function("apply_step");
    } else {
      int64_t r = RankContext::forRank(layout, rank).coord(MeshAxis::Pp);
      for (int64_t c = 0; c < layout.virtualStages; ++c) {
        int64_t stage = r + c * layout.pp();
        std::string s = std::to_string(stage);
        f.stages.push_back(stage);
        f.forwards.push_back(&program.function("stage_" + s));
        f.grads.push_back(&program.function("stage_" + s + "_grad"));
      }
      f.apply = &program.function("apply_step_" + std::to_string(r));
      if (r == 0 && program.hasFunction("prologue")) {
        f.prologue = &program.function("prologue");
        f.prologueGrad = &program.function("prologue_grad");
      }
    }
    functions.push_back(f);
    // Parameters the loss does not reach (a vision tower's unused last
    // layer) are arguments of @grad_step but not of @apply_step.
    for (const Function *fn : f.all())
      for (const Slot &slot : fn->arguments) {
        if (slot.role == Slot::Buffer)
          bufferSlots[slot.name] = slot;
        else if (slot.role == Slot::Parameter)
          paramSlots[slot.name] = slot;
      }
  }
  auto weights = readFile(weightsPath);
  load(*weights, "", &RankState::params, Slot::Parameter, "the weights");
  load(*weights, "", &RankState::buffers, Slot::Buffer, "the weights");
  // Zero optimizer state, shaped like each rank's parameters.
  for (size_t i = 0; i < states.size(); ++i)
    for (const Slot &slot : functions[i].apply->arguments) {
      if (slot.role != Slot::ExpAvg && slot.role != Slot::ExpAvgSq)
        continue;
      Tensor z = Tensor::zeros(slot.dtype, slot.shape,
                               ranks.device(ranks.local()[i]));
      (slot.role == Slot::ExpAvg ? states[i].expAvg
                                 : states[i].expAvgSq)[slot.name] = z;
    }
}

size_t Trainer::indexOf(int64_t rank) const {
  size_t index = 0;
  while (ranks.local()[index] != rank)
    ++index;
  return index;
}

std::vector<const Function *> Trainer::Functions::all() const {
  std::vector<const Function *> fns{apply};
  if (grad)
    fns.push_back(grad);
  fns.insert(fns.end(), grads.begin(), grads.end());
  if (prologueGrad)
    fns.push_back(prologueGrad);
  return fns;
}

/// Whether one of `fns` takes the state `name` of `role`.
static bool takes(const std::vector<const Function *> &fns,
                  const std::string &name, Slot::Role role) {
  for (const Function *fn : fns)
    for (const Slot &slot : fn->arguments)
      if (slot.name == name &&
          (slot.role == role ||
           (role == Slot::Parameter && (slot.role == Slot::ExpAvg ||
                                        slot.role == Slot::ExpAvgSq))))
        return true;
  return false;
}

void Trainer::load(const SafetensorsFile &file, const std::string &prefix,
                   State RankState::*which, Slot::Role role,
                   const char *what) {
  const std::map<std::string, Slot> &slots =
      role == Slot::Buffer ? bufferSlots : paramSlots;
  bool checkpoint = std::string(what).rfind("checkpoint", 0) == 0;
  for (const auto &[name, slot] : slots) {
    Slot s = slot;
    // SGD keeps no moments: only the state the optimizer has is loaded;
    // and each pipeline stage only its own.
    std::vector<size_t> holders;
    for (size_t i = 0; i < states.size(); ++i) {
      bool holds = role == Slot::ExpAvg || role == Slot::ExpAvgSq
                       ? (states[i].*which).count(name) > 0
                       : takes(functions[i].all(), name, role);
      if (holds)
        holders.push_back(i);
    }
    if (holders.empty())
      continue;
    if (checkpoint) {
      // A checkpoint resumes bit-exactly only in its own precision.
      const TensorInfo *info = file.find(prefix + name);
      if (info && info->dtype != slot.dtype)
        throw RuntimeError("checkpoint tensor '" + prefix + name + "' is " +
                           std::string(dtypeName(info->dtype)) +
                           " but the program runs in " +
                           std::string(dtypeName(slot.dtype)));
    }
    Tensor full = readFull(file, program.layout(), s, prefix + name, what);
    for (size_t i : holders) {
      int64_t r = ranks.local()[i];
      (states[i].*which)[name] =
          pieceFor(full, program.layout(), s, r, ranks.device(r));
    }
  }
}

std::vector<Tensor> Trainer::bind(const Function &fn, int64_t rank,
                                  const Inputs *data,
                                  const State &grads) const {
  const RankState &state = states[indexOf(rank)];
  Device device = ranks.device(rank);
  std::vector<Tensor> inputs;
  for (const Slot &slot : fn.arguments) {
    switch (slot.role) {
    case Slot::Input:
      inputs.push_back(data->at(slot.name).to(device));
      break;
    case Slot::Parameter:
      inputs.push_back(state.params.at(slot.name));
      break;
    case Slot::Buffer:
      inputs.push_back(state.buffers.at(slot.name));
      break;
    case Slot::Grad:
      inputs.push_back(grads.at(slot.name));
      break;
    case Slot::ExpAvg:
      inputs.push_back(state.expAvg.at(slot.name));
      break;
    case Slot::ExpAvgSq:
      inputs.push_back(state.expAvgSq.at(slot.name));
      break;
    case Slot::Step:
      inputs.push_back(full(DType::I64, {}, double(steps + 1)));
      break;
    case Slot::Microbatch:
      // Set per call (withMicrobatch).
      inputs.push_back(full(DType::I64, {}, 0));
      break;
    case Slot::Activation:
    case Slot::Cotangent:
    case Slot::ActivationGrad:
    case Slot::Prologue:
    case Slot::PrologueGrad:
      // Pipeline boundaries: set per call.
      inputs.push_back(Tensor());
      break;
    case Slot::Other:
      throw RuntimeError("a compiled argument has no name");
    }
  }
  return inputs;
}

Trainer::Batch Trainer::prepare(const SafetensorsFile &data) const {
  std::vector<const Function *> fns;
  for (const Functions &f : functions)
    for (const Function *fn : f.all())
      fns.push_back(fn);
  Inputs inputs = readInputs(fns, program.layout(), data);
  // After binding, so that a mis-shaped batch is reported as such.
  checkBatch(program.info(), data);
  Batch batch;
  for (int64_t rank : ranks.local()) {
    Inputs onDevice;
    for (const auto &[name, tensor] : inputs)
      onDevice[name] = tensor.to(ranks.device(rank));
    batch.perRank.push_back(std::move(onDevice));
  }
  return batch;
}

Trainer::StepResult Trainer::step(const SafetensorsFile &data) {
  return step(prepare(data));
}

Trainer::StepResult Trainer::step(const Batch &batch) {
  if (batch.perRank.size() != ranks.local().size())
    throw RuntimeError("the batch was prepared for another set of ranks");
  if (!functions[0].stages.empty())
    return pipelineStep(batch);
  std::vector<double> losses(states.size()), norms(states.size());
  int64_t microbatches = program.layout().microbatches;
  ranks.run([&](int64_t rank) {
    size_t index = indexOf(rank);
    const Function &grad = *functions[index].grad;
    std::vector<Tensor> args = bind(grad, rank, &batch.perRank[index], {});
    State grads;
    Tensor loss;
    // Each micro-batch's loss and gradients are its share of the global
    // token mean (the program divides by the whole batch's count), so the
    // step's are their sums.
    for (int64_t micro = 0; micro < microbatches; ++micro) {
      Frame frame;
      frame.inputs = withMicrobatch(grad, args, micro);
      grad.entry(frame);
      loss = micro == 0 ? frame.outputs[0] : add(loss, frame.outputs[0]);
      addGradients(grads, grad, frame.outputs);
    }
    // The loss is read after the update is queued: reading it first would
    // wait for the backward to finish, leaving the device idle while the
    // host queues the optimizer step.
    norms[index] = applyStep(rank, grads);
    losses[index] = loss.item(0);
  });
  ++steps;
  return {steps, losses[0], norms[0], {}, {}};
}

double Trainer::applyStep(int64_t rank, const State &grads) {
  size_t index = indexOf(rank);
  const Function &apply = *functions[index].apply;
  Frame frame;
  frame.inputs = bind(apply, rank, nullptr, grads);
  apply.entry(frame);
  RankState &state = states[index];
  for (size_t i = 1; i < apply.results.size(); ++i) {
    const Slot &slot = apply.results[i];
    State &target = slot.role == Slot::Parameter ? state.params
                    : slot.role == Slot::ExpAvg  ? state.expAvg
                                                 : state.expAvgSq;
    target[slot.name] = frame.outputs[i];
  }
  return frame.outputs[0].item(0);
}

Trainer::State Trainer::gather(State RankState::*which) const {
  const SpmdContext &layout = program.layout();
  if (layout.pp() > 1 && !ranks.runsAll())
    throw RuntimeError("pipeline stages hold their parameters on ranks in "
                       "other processes; saving them needs all ranks in one "
                       "process (thread mode)");
  State out;
  // Each tensor from the first rank that holds it (pipeline stages hold
  // their own parameters).
  std::map<std::string, size_t> holder;
  for (size_t i = 0; i < states.size(); ++i)
    for (const auto &entry : states[i].*which)
      holder.emplace(entry.first, i);
  for (const auto &[name, index] : holder) {
    const Tensor &tensor = (states[index].*which).at(name);
    auto slotIt = paramSlots.find(name);
    const Slot *slot = slotIt == paramSlots.end() ? nullptr : &slotIt->second;
    if (!slot || !slot->isSharded()) {
      out[name] = tensor.to(Device::cpu());
      continue;
    }
    if (!ranks.runsAll())
      throw RuntimeError("'" + name + "' is sharded over ranks in other "
                         "processes; saving sharded state needs all ranks "
                         "in one process (thread mode)");
    out[name] = assemble(*slot, layout,
                         RankContext::forRank(layout, ranks.local()[index]),
                         [&](int64_t r) {
                           return (states[size_t(r)].*which)
                               .at(name)
                               .to(Device::cpu());
                         });
  }
  return out;
}

std::map<std::string, Tensor> Trainer::parameters() const {
  return gather(&RankState::params);
}

/// What a checkpoint's glimmer.checksum covers: every tensor's name, dtype,
/// shape and bytes, in file order.
template <typename Range, typename Fn>
static std::string checkpointChecksum(const Range &tensors, Fn describe) {
  ContentHasher hasher;
  for (const auto &t : tensors) {
    auto [name, dtype, shape, data] = describe(t);
    std::string head = name + '\0' + std::string(dtypeName(dtype));
    for (int64_t d : shape)
      head += ',' + std::to_string(d);
    hasher.update(head + '\0');
    hasher.update(data, numElements(shape) * dtypeSize(dtype));
  }
  return "xxh3-128:" + hasher.hex();
}

void Trainer::save(const std::string &path) const {
  State params = gather(&RankState::params);
  State expAvg = gather(&RankState::expAvg);
  State expAvgSq = gather(&RankState::expAvgSq);
  std::vector<TensorView> views;
  auto add = [&](const std::string &prefix, const State &tensors) {
    for (const auto &[name, t] : tensors)
      views.push_back({prefix + name, t.dtype(), t.shape(), t.raw()});
  };
  add("", params);
  add("optimizer.exp_avg.", expAvg);
  add("optimizer.exp_avg_sq.", expAvgSq);
  // The tensors are whole (any layout resumes from them); how this run held
  // them is recorded beside them: the layout, and each sharded parameter's
  // #glimmer.sharding as the manifest writes it (its moments are held
  // alike).
  std::map<std::string, std::string> extra{
      {"glimmer.layout", program.layout().print()}};
  for (const auto &[name, slot] : paramSlots)
    if (slot.isSharded())
      extra["glimmer.sharding." + name] = slot.shardingText();
  writeCheckpoint(path, views, steps, extra);
}

void glimmer_rt::writeCheckpoint(const std::string &path,
                                 const std::vector<TensorView> &tensors,
                                 int64_t step,
                                 const std::map<std::string, std::string> &extra) {
  std::string checksum = checkpointChecksum(tensors, [](const TensorView &v) {
    return std::make_tuple(v.name, v.dtype, v.shape, v.data);
  });
  std::map<std::string, std::string> metadata = extra;
  metadata["format"] = "pt";
  metadata["glimmer.step"] = std::to_string(step);
  metadata["glimmer.checksum"] = checksum;
  // Atomic (writeSafetensors writes a temporary file, fsyncs and renames
  // it), so a crash mid-save leaves the previous checkpoint intact.
  std::string error;
  if (!writeSafetensors(path, tensors, metadata, error))
    throw RuntimeError(error);
}

void Trainer::resume(const std::string &path) {
  auto file = readFile(path);
  auto it = file->metadata().find("glimmer.step");
  if (it == file->metadata().end())
    throw RuntimeError("'" + path +
                       "' is not a glimmer checkpoint (no glimmer.step "
                       "metadata)");
  auto recorded = file->metadata().find("glimmer.checksum");
  if (recorded == file->metadata().end())
    throw RuntimeError("checkpoint '" + path +
                       "' has no glimmer.checksum metadata, so its content "
                       "cannot be verified");
  std::string actual = checkpointChecksum(
      file->tensors(), [&](const TensorInfo &info) {
        return std::make_tuple(info.name, info.dtype, info.shape,
                               static_cast<const void *>(file->data(info)));
      });
  if (actual != recorded->second)
    throw RuntimeError("checkpoint '" + path +
                       "' is corrupt: its content does not match the "
                       "checksum recorded when it was saved");
  std::string what = "checkpoint '" + path + "'";
  load(*file, "", &RankState::params, Slot::Parameter, what.c_str());
  load(*file, "optimizer.exp_avg.", &RankState::expAvg, Slot::ExpAvg,
       what.c_str());
  load(*file, "optimizer.exp_avg_sq.", &RankState::expAvgSq, Slot::ExpAvgSq,
       what.c_str());
  steps = std::stoll(it->second);
}

//===----------------------------------------------------------------------===//
// The loop
//===----------------------------------------------------------------------===//

static std::string g17(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

void glimmer_rt::applyLoopSettings(const LoopOptions &options,
                                   Backend backend) {
  if (options.tf32 && backend != Backend::CUDA)
    throw RuntimeError("--tf32 lets f32 GEMMs on GPUs use TF32, so it needs "
                       "--backend=cuda (the CPU kernels compute in full f32)");
  setAllowTf32(options.tf32);
}

void glimmer_rt::runLoop(const CompiledProgram &program,
                         const SafetensorsFile &data, Ranks &ranks,
                         const LoopOptions &options, std::ostream &out,
                         std::ostream &err) {
  // One process reports (all ranks compute the same loss and norm).
  bool reports = ranks.local().front() == 0;
  std::ofstream metrics;
  if (reports && !options.metricsPath.empty()) {
    metrics.open(options.metricsPath, std::ios::app);
    if (!metrics)
      throw RuntimeError("cannot open --metrics file '" +
                         options.metricsPath + "'");
  }
  auto progress = [&](const std::string &message) {
    if (reports && !options.quiet)
      err << "[" << options.tool << "] " << message << std::endl;
  };
  // Tokens per step, for throughput: the first integer input's elements.
  int64_t tokens = 0;
  const Function &probe = program.function("forward");
  for (const Slot &slot : probe.arguments)
    if (slot.role == Slot::Input && !isFloating(slot.dtype)) {
      tokens = numElements(slot.shape);
      break;
    }
  using Clock = std::chrono::steady_clock;
  if (options.forwardOnly) {
    auto start = Clock::now();
    double loss = runForward(program, options.weightsPath, data, ranks);
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (reports) {
      char line[64];
      std::snprintf(line, sizeof(line), "%.3f", seconds);
      out << "step 0 | loss " << g17(loss) << " | " << line << " s"
          << std::endl;
      if (metrics.is_open())
        metrics << "{\"step\":0,\"loss\":" << g17(loss)
                << ",\"seconds\":" << g17(seconds) << "}\n";
    }
    return;
  }
  Trainer trainer(program, options.weightsPath, ranks);
  if (!options.resumePath.empty()) {
    trainer.resume(options.resumePath);
    progress("resumed from " + options.resumePath + " at step " +
             std::to_string(trainer.stepsDone()));
  }
  // The most memory any of this process's ranks' devices had handed out
  // during a step (reported with --metrics; on the CPU, the host allocator
  // that all thread ranks share).
  std::vector<Device> devices;
  for (int64_t r : ranks.local())
    if (std::find(devices.begin(), devices.end(), ranks.device(r)) ==
        devices.end())
      devices.push_back(ranks.device(r));
  // Every step trains on the same batch: read and copied to the devices
  // once.
  Trainer::Batch batch = trainer.prepare(data);
  for (int64_t i = 0; i < options.steps; ++i) {
    double waitedBefore = 0;
    for (Device d : devices) {
      resetPeakDeviceMemory(d);
      waitedBefore += hostWaitSeconds(d);
    }
    auto start = Clock::now();
    Trainer::StepResult r = trainer.step(batch);
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    // Time the host spent waiting for the devices in this step (the rest
    // went to queueing the work).
    double waited = -waitedBefore;
    for (Device d : devices)
      waited += hostWaitSeconds(d);
    size_t peakBytes = 0;
    for (Device d : devices)
      peakBytes = std::max(peakBytes, peakDeviceMemory(d));
    // The first step is a warm-up (cuBLAS plans, the allocator's cache).
    if (profilingEnabled())
      profileStep(/*count=*/i > 0);
    double tps = seconds > 0 ? double(tokens) / seconds : 0;
    if (!reports)
      continue;
    char rate[32];
    std::snprintf(rate, sizeof(rate), "%.0f", tps);
    out << "step " << r.step << " | loss " << g17(r.loss) << " | grad_norm "
        << g17(r.gradNorm) << " | " << rate << " tok/s" << std::endl;
    if (metrics.is_open())
      metrics << "{\"step\":" << r.step << ",\"loss\":" << g17(r.loss)
              << ",\"grad_norm\":" << g17(r.gradNorm)
              << ",\"tokens_per_s\":" << g17(tps)
              << ",\"seconds\":" << g17(seconds)
              << ",\"peak_device_bytes\":" << peakBytes
              << ",\"host_wait_seconds\":" << g17(waited)
              << pipelineMetrics(program.layout(), ranks.local(), r) << "}"
              << std::endl;
  }
  if (reports && profilingEnabled())
    profileReport(err);
  // One process writes the checkpoint (in process mode the others hold the
  // same replicated state).
  if (!options.savePath.empty() && reports) {
    trainer.save(options.savePath);
    progress("saved step " + std::to_string(trainer.stepsDone()) + " to " +
             options.savePath);
  }
}

void glimmer_rt::parseSyntheticSpec(const std::string &spec,
                                    SyntheticConfig &cfg) {
  std::stringstream entries(spec);
  std::string entry;
  while (std::getline(entries, entry, ',')) {
    size_t eq = entry.find('=');
    std::string key = entry.substr(0, eq);
    long long value = -1;
    if (eq != std::string::npos) {
      char *end = nullptr;
      value = std::strtoll(entry.c_str() + eq + 1, &end, 10);
      if (*end != '\0' || end == entry.c_str() + eq + 1)
        value = -1;
    }
    int64_t *field = key == "batch"        ? &cfg.batch
                     : key == "seq"        ? &cfg.seqLen
                     : key == "images"     ? &cfg.imagesPerSample
                     : key == "vocab"      ? &cfg.vocab
                     : key == "image-size" ? &cfg.imageSize
                     : key == "patch"      ? &cfg.patch
                     : key == "channels"   ? &cfg.channels
                                           : nullptr;
    if (!field)
      throw RuntimeError("unknown synthetic data key '" + key + "'");
    if (value < 0)
      throw RuntimeError("bad value in synthetic data entry '" + entry + "'");
    *field = value;
  }
}
