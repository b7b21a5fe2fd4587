//===- Enums.h - Enums compiled programs pass to the runtime ----*- C++ -*-===//
//
// Defined once, in plain C++ (no MLIR), for the compiler and the runtime
// alike: the runtime's kernel API takes these types (glimmer_rt::Reduction
// is glimmer::abi::Reduction), and the balancer is the SPMD layout's own
// CpBalancer. The dialect's attribute enums (GlimmerAttrs.td) are generated
// by ODS, which cannot adopt an existing C++ enum; GlimmerAttrs.cpp checks
// each of their cases against these at compile time, so the two cannot
// drift apart unnoticed, and the EmitC lowering spells their enumerators by
// the same names.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_CONTRACT_ENUMS_H
#define GLIMMER_CONTRACT_ENUMS_H

#include "glimmer_contract/SpmdContext.h"

namespace glimmer::abi {

/// glimmer.reduce, glimmer.all_reduce, glimmer.reduce_scatter.
enum class Reduction : unsigned { Sum = 0, Max = 1, Min = 2 };
/// glimmer.compare.
enum class CompareDir : unsigned { EQ = 0, NE, LT, LE, GT, GE };
/// glimmer.rope.
enum class RopeStyle : unsigned { Interleaved = 0, Half = 1 };
/// glimmer.cp_permute (the SPMD layout's balancer).
using Balancer = ::glimmer::CpBalancer;

} // namespace glimmer::abi

#endif // GLIMMER_CONTRACT_ENUMS_H
