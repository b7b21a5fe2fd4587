//===- glimmer-gradcheck.cpp - Check VJP rules by finite differences ------===//
//
//   glimmer-gradcheck FILE.mlir [--samples=N] [--seed=S] [--rtol=R]
//
// For each func.func of FILE that returns a scalar f64: every f64 argument
// is made a trainable parameter and gets seeded random values (standard
// normal); glimmer-autodiff builds @grad_step; the module is compiled and
// run; each gradient element (up to --samples per argument) is compared with
// the central finite difference of the function. Prints one line per
// function, "@name: PASS ..." or "@name: FAIL ...", and exits 1 on any
// failure. Integer operands must be constants inside the function.
//
//===----------------------------------------------------------------------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerOps.h"
#include "glimmer/Dialect/Glimmer/Transforms/Passes.h"
#include "glimmer/Driver/Driver.h"
#include "glimmer_contract/Attributes.h"

#include "mlir/Dialect/EmitC/IR/EmitC.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <random>

namespace cl = llvm::cl;
using namespace mlir;

static cl::opt<std::string> inputPath(cl::Positional, cl::Required,
                                      cl::desc("<file.mlir>"));
static cl::opt<int> samples("samples", cl::init(24),
                            cl::desc("Gradient elements checked per argument"));
static cl::opt<unsigned> seed("seed", cl::init(0), cl::desc("Random seed"));
static cl::opt<double> rtol("rtol", cl::init(1e-6),
                            cl::desc("Relative tolerance"));
static cl::opt<std::string> cacheDir("cache-dir", cl::init(""),
                                     cl::desc("Compiled program cache"));

namespace {

glimmer_rt::Tensor randomTensor(RankedTensorType type, std::mt19937_64 &rng) {
  std::normal_distribution<double> normal;
  std::vector<double> values(type.getNumElements());
  for (double &v : values)
    v = normal(rng);
  return glimmer_rt::constant(glimmer_rt::DType::F64,
                              glimmer_rt::Shape(type.getShape()), values);
}

double run(const glimmer::CompiledFunction &fn,
           const std::vector<glimmer_rt::Tensor> &inputs) {
  glimmer_rt::Frame frame;
  frame.inputs = inputs;
  fn.entry(frame);
  return frame.outputs[0].item(0);
}

/// Checks one function; prints its line and returns whether it passed.
bool check(MLIRContext &context, func::FuncOp original) {
  std::string name = original.getName().str();
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(original.getLoc());
  b.setInsertionPointToEnd(module->getBody());
  // Meshes that shardings and collectives refer to come along.
  for (auto mesh : original->getParentOfType<ModuleOp>().getOps<glimmer::MeshOp>())
    b.clone(*mesh);
  auto func = cast<func::FuncOp>(b.clone(*original));
  func.setSymName("forward");
  auto report = [&](const std::string &message) {
    llvm::outs() << "@" << name << ": FAIL " << message << "\n";
    return false;
  };
  if (func.getNumResults() != 1)
    return report("(expects one scalar f64 result)");
  std::mt19937_64 rng(seed);
  std::vector<glimmer_rt::Tensor> inputs;
  std::vector<unsigned> params;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.getElementType().isF64())
      return report("(argument #" + std::to_string(arg.getArgNumber()) +
                    " is not an f64 tensor; make integer operands constants)");
    func.setArgAttr(
        arg.getArgNumber(), glimmer::kParamAttr,
        b.getStringAttr("arg" + std::to_string(arg.getArgNumber())));
    inputs.push_back(randomTensor(type, rng));
    params.push_back(arg.getArgNumber());
  }
  PassManager pm(&context);
  glimmer::GlimmerAutodiffOptions options;
  options.optimizer = "sgd";
  pm.addPass(glimmer::createGlimmerAutodiff(options));
  pm.addPass(createCanonicalizerPass());
  if (failed(pm.run(*module)))
    return report("(autodiff failed; see the diagnostic above)");
  // @apply_step is not needed here.
  if (auto apply = module->lookupSymbol<func::FuncOp>("apply_step"))
    apply.erase();
  auto gradFunc = module->lookupSymbol<func::FuncOp>("grad_step");
  std::vector<std::string> gradNames;
  for (unsigned i = 1; i < gradFunc.getNumResults(); ++i)
    gradNames.push_back(
        gradFunc.getResultAttrOfType<StringAttr>(i, glimmer::kGradAttr).str());
  auto compiled = glimmer::compileModule(
      context, std::move(module),
      cacheDir.empty() ? glimmer::defaultCacheDir() : std::string(cacheDir),
      nullptr);
  if (failed(compiled))
    return report("(compilation failed)");
  const auto &forward = compiled->program->function("forward");
  const auto &grad = compiled->program->function("grad_step");

  glimmer_rt::Frame frame;
  frame.inputs = inputs;
  grad.entry(frame);
  double loss = frame.outputs[0].item(0);
  if (std::abs(loss - run(forward, inputs)) > 1e-12 * (1 + std::abs(loss)))
    return report("(@grad_step's loss differs from @forward's)");

  double worstAbs = 0, worstRel = 0;
  int checked = 0;
  for (unsigned p : params) {
    std::string argName = "arg" + std::to_string(p);
    glimmer_rt::Tensor g;
    for (size_t k = 0; k < gradNames.size(); ++k)
      if (gradNames[k] == argName)
        g = frame.outputs[k + 1];
    int64_t n = inputs[p].numel();
    std::vector<int64_t> positions;
    if (n <= samples) {
      for (int64_t i = 0; i < n; ++i)
        positions.push_back(i);
    } else {
      std::uniform_int_distribution<int64_t> pick(0, n - 1);
      for (int i = 0; i < samples; ++i)
        positions.push_back(pick(rng));
    }
    for (int64_t i : positions) {
      double x = inputs[p].item(i);
      double h = 1e-6 * std::max(1.0, std::abs(x));
      auto at = [&](double value) {
        std::vector<glimmer_rt::Tensor> shifted = inputs;
        shifted[p] = inputs[p].clone();
        shifted[p].data<double>()[i] = value;
        return run(forward, shifted);
      };
      double fd = (at(x + h) - at(x - h)) / (2 * h);
      double analytic = g.defined() ? g.item(i) : 0.0;
      double abs = std::abs(analytic - fd);
      double rel = abs / std::max(1.0, std::abs(fd));
      worstAbs = std::max(worstAbs, abs);
      worstRel = std::max(worstRel, rel);
      ++checked;
    }
  }
  char line[200];
  std::snprintf(line, sizeof(line),
                "(%d elements, max abs err %.2e, max rel err %.2e, tol %.0e)",
                checked, worstAbs, worstRel, double(rtol));
  if (!(worstRel <= rtol))
    return report(line);
  llvm::outs() << "@" << name << ": PASS " << line << "\n";
  return true;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv, "Glimmer: check VJP rules by finite differences\n");
  DialectRegistry registry;
  registry.insert<glimmer::GlimmerDialect, func::FuncDialect,
                  emitc::EmitCDialect>();
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseSourceFile<ModuleOp>(inputPath, sourceMgr, &context);
  if (!module)
    return 1;
  bool ok = true;
  int count = 0;
  for (auto func : module->getOps<func::FuncOp>()) {
    try {
      ok &= check(context, func);
    } catch (const glimmer_rt::RuntimeError &e) {
      llvm::outs() << "@" << func.getName() << ": FAIL (" << e.what() << ")\n";
      ok = false;
    }
    ++count;
  }
  if (count == 0) {
    llvm::WithColor::error(llvm::errs(), "glimmer-gradcheck")
        << "no function in '" << inputPath << "'\n";
    return 1;
  }
  return ok ? 0 : 1;
}
