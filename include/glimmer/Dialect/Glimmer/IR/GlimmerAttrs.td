//===- GlimmerAttrs.td - Glimmer attributes ----------------*- tablegen -*-===//

#ifndef GLIMMER_DIALECT_GLIMMER_IR_GLIMMERATTRS_TD
#define GLIMMER_DIALECT_GLIMMER_IR_GLIMMERATTRS_TD

include "glimmer/Dialect/Glimmer/IR/GlimmerDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

class Glimmer_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Glimmer_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Glimmer_ReductionKind : I32EnumAttr<"ReductionKind", "reduction kind", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">]> {
  let cppNamespace = "::glimmer";
}

def Glimmer_CompareDirection : I32EnumAttr<"CompareDirection",
    "elementwise comparison", [
    I32EnumAttrCase<"EQ", 0, "eq">, I32EnumAttrCase<"NE", 1, "ne">,
    I32EnumAttrCase<"LT", 2, "lt">, I32EnumAttrCase<"LE", 3, "le">,
    I32EnumAttrCase<"GT", 4, "gt">, I32EnumAttrCase<"GE", 5, "ge">]> {
  let cppNamespace = "::glimmer";
}

def Glimmer_Balancer : I32EnumAttr<"Balancer",
    "context-parallel load balancer", [
    I32EnumAttrCase<"HeadTail", 0, "head_tail">,
    I32EnumAttrCase<"Contiguous", 1, "contiguous">]> {
  let cppNamespace = "::glimmer";
}

def Glimmer_RopeStyle : I32EnumAttr<"RopeStyle", "rotary embedding layout", [
    I32EnumAttrCase<"Interleaved", 0, "interleaved">,
    I32EnumAttrCase<"Half", 1, "half">]> {
  let cppNamespace = "::glimmer";
}

def Glimmer_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU approximation", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Tanh", 1, "tanh">]> {
  let cppNamespace = "::glimmer";
}

//===----------------------------------------------------------------------===//
// Mesh, sharding and SPMD layout
//===----------------------------------------------------------------------===//

def Glimmer_MeshAttr : Glimmer_Attr<"Mesh", "mesh"> {
  let summary = "A device mesh with named axes";
  let description = [{
    An ordered list of named axes with their sizes, outermost first. The
    pipeline uses the axes `dp_replicate, dp_shard, cp, tp, pp`; other names
    are allowed for hand-written programs. Names are unique, sizes positive.

    ```mlir
    #glimmer.mesh<["dp_shard"=2, "cp"=4]>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::StringAttr">:$axisNames,
                        ArrayRefParameter<"int64_t">:$axisSizes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The size of the named axis, or nullopt when the mesh has no such axis.
    std::optional<int64_t> getAxisSize(::llvm::StringRef name) const;
    /// The product of all axis sizes.
    int64_t getNumDevices() const;
  }];
}

def Glimmer_ShardingAttr : Glimmer_Attr<"Sharding", "sharding"> {
  let summary = "How a tensor is distributed over a mesh";
  let description = [{
    For each tensor dimension, the ordered list of mesh axes it is split over
    (major to minor; `{}` means replicated along that dimension), plus the
    *partial* axes: the tensor held by each rank is a pending sum over those
    axes. An axis appears at most once in the whole attribute.

    ```mlir
    // dim 0 split over dp_shard then cp, dim 1 replicated, partial over tp.
    #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {} ], partial = ["tp"]>
    ```
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        "::mlir::ArrayAttr":$dims,
                        "::mlir::ArrayAttr":$partial);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The axis names that split dimension `dim`.
    ::llvm::SmallVector<::llvm::StringRef> getDimAxes(unsigned dim) const;
    /// The partial (pending-sum) axis names.
    ::llvm::SmallVector<::llvm::StringRef> getPartialAxes() const;
    /// Checks this sharding against a tensor type and the mesh it names;
    /// reports through `emitError` and fails on a mismatch.
    ::llvm::LogicalResult verifyFor(
        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError,
        ::mlir::RankedTensorType type, MeshAttr mesh) const;
  }];
}

def Glimmer_SpmdAttr : Glimmer_Attr<"Spmd", "spmd"> {
  let summary = "The parallel layout a program is compiled for";
  let description = [{
    Records a `glimmer::SpmdContext` on the module, in the same textual form
    as `--spmd=`, printed canonically (defaults omitted). Every pass after
    `glimmer-attach-spmd` reads the layout from here, so a test is
    reproducible from the IR alone.

    ```mlir
    module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2,sp">} {}
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$degrees, "bool":$sp,
                        "int64_t":$microbatches, "int64_t":$virtualStages,
                        "unsigned":$schedule,
                        "unsigned":$balancer);
  let hasCustomAssemblyFormat = 1;
  let builders = [
    AttrBuilder<(ins "const ::glimmer::SpmdContext &":$layout)>
  ];
  let skipDefaultBuilders = 1;
  let extraClassDeclaration = [{
    /// The layout as a plain C++ value.
    ::glimmer::SpmdContext getLayout() const;
  }];
}

#endif // GLIMMER_DIALECT_GLIMMER_IR_GLIMMERATTRS_TD
