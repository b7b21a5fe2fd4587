//===- GlimmerAttrs.cpp - Glimmer attributes ------------------------------===//

#include "glimmer/Dialect/Glimmer/IR/GlimmerAttrs.h"
#include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.h"
#include "glimmer_contract/Enums.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace glimmer;

#include "glimmer/Dialect/Glimmer/IR/GlimmerEnums.cpp.inc"

// The dialect's attribute enums are ODS's; the one definition the runtime
// and the compiler share is glimmer_contract/Enums.h. Every case must agree.
#define GLIMMER_SAME_CASE(Ods, Abi, Name)                                      \
  static_assert(static_cast<unsigned>(Ods::Name) ==                            \
                    static_cast<unsigned>(Abi::Name),                          \
                #Ods "::" #Name " differs from glimmer_contract/Enums.h");
GLIMMER_SAME_CASE(ReductionKind, abi::Reduction, Sum)
GLIMMER_SAME_CASE(ReductionKind, abi::Reduction, Max)
GLIMMER_SAME_CASE(ReductionKind, abi::Reduction, Min)
GLIMMER_SAME_CASE(CompareDirection, abi::CompareDir, EQ)
GLIMMER_SAME_CASE(CompareDirection, abi::CompareDir, NE)
GLIMMER_SAME_CASE(CompareDirection, abi::CompareDir, LT)
GLIMMER_SAME_CASE(CompareDirection, abi::CompareDir, LE)
GLIMMER_SAME_CASE(CompareDirection, abi::CompareDir, GT)
GLIMMER_SAME_CASE(CompareDirection, abi::CompareDir, GE)
GLIMMER_SAME_CASE(RopeStyle, abi::RopeStyle, Interleaved)
GLIMMER_SAME_CASE(RopeStyle, abi::RopeStyle, Half)
GLIMMER_SAME_CASE(Balancer, abi::Balancer, HeadTail)
GLIMMER_SAME_CASE(Balancer, abi::Balancer, Contiguous)
#undef GLIMMER_SAME_CASE
static_assert(
    getMaxEnumValForReductionKind() == 2 &&
        getMaxEnumValForCompareDirection() == 5 &&
        getMaxEnumValForRopeStyle() == 1 && getMaxEnumValForBalancer() == 1,
    "a dialect enum gained a case: add it to glimmer_contract/Enums.h");

#define GET_ATTRDEF_CLASSES
#include "glimmer/Dialect/Glimmer/IR/GlimmerAttrs.cpp.inc"

void GlimmerDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "glimmer/Dialect/Glimmer/IR/GlimmerAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// MeshAttr
//===----------------------------------------------------------------------===//

// #glimmer.mesh<["cp"=2, "tp"=4]>
Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> names;
  SmallVector<int64_t> sizes;
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size;
    if (parser.parseString(&name) || parser.parseEqual() ||
        parser.parseInteger(size))
      return failure();
    names.push_back(StringAttr::get(parser.getContext(), name));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseLess() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseAxis) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<MeshAttr>(parser.getContext(), names, sizes);
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(llvm::zip(getAxisNames(), getAxisSizes()), printer,
                        [&](auto axis) {
                          printer.printString(std::get<0>(axis).getValue());
                          printer << "=" << std::get<1>(axis);
                        });
  printer << "]>";
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> axisNames,
                               ArrayRef<int64_t> axisSizes) {
  if (axisNames.size() != axisSizes.size())
    return emitError() << "mesh has " << axisNames.size() << " axis names but "
                       << axisSizes.size() << " sizes";
  llvm::SmallSet<StringRef, 8> seen;
  for (auto [name, size] : llvm::zip(axisNames, axisSizes)) {
    if (name.getValue().empty())
      return emitError() << "mesh axis names must be non-empty";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis \"" << name.getValue()
                         << "\" is declared twice";
    if (size < 1)
      return emitError() << "mesh axis \"" << name.getValue()
                         << "\" must have a positive size, got " << size;
  }
  return success();
}

std::optional<int64_t> MeshAttr::getAxisSize(StringRef name) const {
  for (auto [axisName, size] : llvm::zip(getAxisNames(), getAxisSizes()))
    if (axisName.getValue() == name)
      return size;
  return std::nullopt;
}

int64_t MeshAttr::getNumDevices() const {
  int64_t n = 1;
  for (int64_t s : getAxisSizes())
    n *= s;
  return n;
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

static ParseResult parseAxisList(AsmParser &parser,
                                 AsmParser::Delimiter delimiter,
                                 SmallVectorImpl<Attribute> &axes) {
  return parser.parseCommaSeparatedList(delimiter, [&]() -> ParseResult {
    std::string name;
    if (parser.parseString(&name))
      return failure();
    axes.push_back(StringAttr::get(parser.getContext(), name));
    return success();
  });
}

// #glimmer.sharding<@mesh, [{"a", "b"}, {}], partial = ["c"]>
Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<Attribute> dims;
  SmallVector<Attribute> partial;
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma())
    return {};
  auto parseDim = [&]() -> ParseResult {
    SmallVector<Attribute> axes;
    if (parseAxisList(parser, AsmParser::Delimiter::Braces, axes))
      return failure();
    dims.push_back(ArrayAttr::get(parser.getContext(), axes));
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        parseAxisList(parser, AsmParser::Delimiter::Square, partial))
      return {};
  }
  if (parser.parseGreater())
    return {};
  MLIRContext *ctx = parser.getContext();
  return parser.getChecked<ShardingAttr>(ctx, mesh, ArrayAttr::get(ctx, dims),
                                         ArrayAttr::get(ctx, partial));
}

static void printAxes(AsmPrinter &printer, ArrayAttr axes) {
  llvm::interleaveComma(axes, printer, [&](Attribute a) {
    printer.printString(cast<StringAttr>(a).getValue());
  });
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(getDims(), printer, [&](Attribute dim) {
    printer << "{";
    printAxes(printer, cast<ArrayAttr>(dim));
    printer << "}";
  });
  printer << "]";
  if (!getPartial().empty()) {
    printer << ", partial = [";
    printAxes(printer, getPartial());
    printer << "]";
  }
  printer << ">";
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     FlatSymbolRefAttr mesh, ArrayAttr dims, ArrayAttr partial) {
  if (!mesh)
    return emitError() << "sharding needs a mesh symbol";
  llvm::SmallSet<StringRef, 8> seen;
  auto checkAxis = [&](Attribute a) -> LogicalResult {
    auto name = dyn_cast<StringAttr>(a);
    if (!name)
      return emitError() << "sharding axes must be strings";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis \"" << name.getValue()
                         << "\" is used more than once in a sharding";
    return success();
  };
  for (Attribute dim : dims) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitError() << "each sharded dimension must be a list of axes";
    for (Attribute a : axes)
      if (failed(checkAxis(a)))
        return failure();
  }
  for (Attribute a : partial)
    if (failed(checkAxis(a)))
      return failure();
  return success();
}

SmallVector<StringRef> ShardingAttr::getDimAxes(unsigned dim) const {
  SmallVector<StringRef> out;
  for (Attribute a : cast<ArrayAttr>(getDims()[dim]))
    out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

SmallVector<StringRef> ShardingAttr::getPartialAxes() const {
  SmallVector<StringRef> out;
  for (Attribute a : getPartial())
    out.push_back(cast<StringAttr>(a).getValue());
  return out;
}

LogicalResult
ShardingAttr::verifyFor(function_ref<InFlightDiagnostic()> emitError,
                        RankedTensorType type, MeshAttr mesh) const {
  if (static_cast<int64_t>(getDims().size()) != type.getRank())
    return emitError() << "sharding has " << getDims().size()
                       << " dimensions but the tensor " << type << " has rank "
                       << type.getRank();
  auto axisSize = [&](StringRef name) -> FailureOr<int64_t> {
    std::optional<int64_t> size = mesh.getAxisSize(name);
    if (!size)
      return emitError() << "sharding uses axis \"" << name
                         << "\" which mesh " << getMesh() << " does not have";
    return *size;
  };
  for (unsigned d = 0, e = type.getRank(); d < e; ++d) {
    int64_t product = 1;
    for (StringRef name : getDimAxes(d)) {
      FailureOr<int64_t> size = axisSize(name);
      if (failed(size))
        return failure();
      product *= *size;
    }
    // A dynamic size is only known at run time; it cannot be checked here.
    if (!type.isDynamicDim(d) && type.getDimSize(d) % product != 0)
      return emitError() << "dimension " << d << " of size "
                         << type.getDimSize(d)
                         << " is not divisible by the product of its mesh axes ("
                         << product << ")";
  }
  for (StringRef name : getPartialAxes())
    if (failed(axisSize(name)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// SpmdAttr
//===----------------------------------------------------------------------===//

SpmdAttr SpmdAttr::get(MLIRContext *context, const SpmdContext &c) {
  return Base::get(context, ArrayRef<int64_t>(c.degrees), c.sp,
                   c.microbatches, c.virtualStages,
                   static_cast<unsigned>(c.schedule),
                   static_cast<unsigned>(c.balancer));
}

SpmdContext SpmdAttr::getLayout() const {
  SpmdContext c;
  for (auto [i, d] : llvm::enumerate(getDegrees()))
    c.degrees[i] = d;
  c.sp = getSp();
  c.microbatches = getMicrobatches();
  c.virtualStages = getVirtualStages();
  c.schedule = static_cast<PipelineSchedule>(getSchedule());
  c.balancer = static_cast<CpBalancer>(getBalancer());
  return c;
}

// #glimmer.spmd<"dp_shard=2,cp=2">: the same grammar as --spmd=.
Attribute SpmdAttr::parse(AsmParser &parser, Type) {
  std::string text;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseString(&text) || parser.parseGreater())
    return {};
  std::string error;
  std::optional<SpmdContext> context = SpmdContext::parse(text, &error);
  if (!context) {
    parser.emitError(loc) << "invalid SPMD layout: " << error;
    return {};
  }
  return SpmdAttr::get(parser.getContext(), *context);
}

void SpmdAttr::print(AsmPrinter &printer) const {
  printer << "<\"" << getLayout().print() << "\">";
}
