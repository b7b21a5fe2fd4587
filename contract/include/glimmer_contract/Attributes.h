//===- Attributes.h - Names the compiler and the runtime share --*- C++ -*-===//
//
// Every name of the compiler-runtime contract, defined here once: the
// attributes the compiler puts on a program's functions, their arguments and
// results (the dialect verifies them, the passes read and write them, the
// driver turns the role attributes into the manifest the runtime reads), the
// roles they give compiled functions' arguments and results, and the
// metadata keys of checkpoints.
//
// Plain C++ (no MLIR): each name is a character array, which MLIR's StringRef
// and StringLiteral take as they are.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_CONTRACT_ATTRIBUTES_H
#define GLIMMER_CONTRACT_ATTRIBUTES_H

#include <optional>
#include <string_view>

namespace glimmer {

//===----------------------------------------------------------------------===//
// Roles of arguments and results
//===----------------------------------------------------------------------===//

/// A forward input's name (the importer's).
inline constexpr char kInputAttr[] = "glimmer.input";
/// A parameter's state_dict name (the importer's).
inline constexpr char kParamAttr[] = "glimmer.param";
/// A buffer's state_dict name (the importer's).
inline constexpr char kBufferAttr[] = "glimmer.buffer";
/// A gradient autodiff adds: its parameter's name.
inline constexpr char kGradAttr[] = "glimmer.grad";
/// AdamW's moments autodiff adds: their parameter's name.
inline constexpr char kExpAvgAttr[] = "glimmer.exp_avg";
inline constexpr char kExpAvgSqAttr[] = "glimmer.exp_avg_sq";
/// A unit attribute: @apply_step's step count.
inline constexpr char kStepAttr[] = "glimmer.step";
/// A unit attribute: the index of the micro-batch a call computes.
inline constexpr char kMicrobatchAttr[] = "glimmer.microbatch";
/// Pipeline boundaries, each an index in its cut. A stage's activation
/// arguments and results:
inline constexpr char kActivationAttr[] = "glimmer.activation";
/// The cotangent of a stage's result (an argument of its backward):
inline constexpr char kCotangentAttr[] = "glimmer.cotangent";
/// An activation argument's cotangent (a result of the backward):
inline constexpr char kActivationGradAttr[] = "glimmer.activation_grad";
/// Stage 0's arguments from the prologue, and their cotangents:
inline constexpr char kPrologueAttr[] = "glimmer.prologue";
inline constexpr char kPrologueGradAttr[] = "glimmer.prologue_grad";

/// What an argument or result of a compiled function holds.
enum class Role {
  Input,
  Parameter,
  Buffer,
  Grad,
  ExpAvg,
  ExpAvgSq,
  Step,
  /// The index of the micro-batch a call computes (a host i64 scalar).
  Microbatch,
  Activation,
  Cotangent,
  ActivationGrad,
  Prologue,
  PrologueGrad,
  /// No role attribute (a compiled function's result without a name).
  Other
};

/// What a role attribute's value is: the slot's name (a string), its index
/// in a pipeline cut (an integer, which names the slot), or nothing (a unit
/// attribute).
enum class RoleValue { Name, Index, Unit };

struct RoleAttr {
  Role role;
  const char *attr;
  RoleValue value;
};

/// Every role with its attribute. Where a value carries several (it does
/// not), the last one listed wins.
inline constexpr RoleAttr kRoleAttrs[] = {
    {Role::Input, kInputAttr, RoleValue::Name},
    {Role::Parameter, kParamAttr, RoleValue::Name},
    {Role::Buffer, kBufferAttr, RoleValue::Name},
    {Role::Grad, kGradAttr, RoleValue::Name},
    {Role::ExpAvg, kExpAvgAttr, RoleValue::Name},
    {Role::ExpAvgSq, kExpAvgSqAttr, RoleValue::Name},
    {Role::Step, kStepAttr, RoleValue::Unit},
    {Role::Microbatch, kMicrobatchAttr, RoleValue::Unit},
    {Role::Activation, kActivationAttr, RoleValue::Index},
    {Role::Cotangent, kCotangentAttr, RoleValue::Index},
    {Role::ActivationGrad, kActivationGradAttr, RoleValue::Index},
    {Role::Prologue, kPrologueAttr, RoleValue::Index},
    {Role::PrologueGrad, kPrologueGradAttr, RoleValue::Index}};

/// The role attribute named `attr`, or null.
const RoleAttr *roleAttrNamed(std::string_view attr);
/// The manifest's name of a role: its attribute's name without the dialect
/// prefix ("param"), "other" for Role::Other.
std::string_view roleName(Role role);
std::optional<Role> roleFromName(std::string_view name);

//===----------------------------------------------------------------------===//
// Sharding and pipeline attributes
//===----------------------------------------------------------------------===//

/// A value's #glimmer.sharding (function arguments and results).
inline constexpr char kShardingAttr[] = "glimmer.sharding";
/// An argument or result held as per-rank pieces: the #glimmer.sharding its
/// pieces are cut by.
inline constexpr char kShardedAttr[] = "glimmer.sharded";
/// A result that is still a per-rank partial sum: the mesh axes it is
/// partial over.
inline constexpr char kPartialAttr[] = "glimmer.partial";
/// Propagation's result on an op: one #glimmer.sharding per result.
inline constexpr char kShardingsAttr[] = "glimmer.shardings";
/// An op's sharding rule (a string).
inline constexpr char kShardingRuleAttr[] = "glimmer.sharding_rule";
/// Unit attributes of glimmer.sharding_constraint a seed made: the
/// sequence-parallel plan's, a token split's.
inline constexpr char kSequenceParallelAttr[] = "glimmer.sequence_parallel";
inline constexpr char kTokenSplitAttr[] = "glimmer.token_split";
/// A pipeline stage function's index.
inline constexpr char kStageAttr[] = "glimmer.stage";
/// The function holding stage 0's once-per-step work (a unit attribute).
inline constexpr char kStagePrologueAttr[] = "glimmer.stage_prologue";

//===----------------------------------------------------------------------===//
// Module attributes
//===----------------------------------------------------------------------===//

/// The SPMD layout the module was partitioned for (#glimmer.spmd).
inline constexpr char kSpmdAttr[] = "glimmer.spmd";
/// The importer's record of inputs the traced program holds as constants:
/// each name with the digest of the example's values.
inline constexpr char kTracedInputsAttr[] = "glimmer.traced_inputs";

//===----------------------------------------------------------------------===//
// Checkpoint metadata
//===----------------------------------------------------------------------===//

/// The step count, under the name of the step argument it continues.
inline constexpr const char *kCheckpointStepKey = kStepAttr;
/// The checksum of the content.
inline constexpr char kCheckpointChecksumKey[] = "glimmer.checksum";
/// The layout the run that saved it held the state in.
inline constexpr char kCheckpointLayoutKey[] = "glimmer.layout";
/// Followed by a parameter's name: how it was sharded (the manifest's text).
inline constexpr char kCheckpointShardingPrefix[] = "glimmer.sharding.";

} // namespace glimmer

#endif // GLIMMER_CONTRACT_ATTRIBUTES_H
