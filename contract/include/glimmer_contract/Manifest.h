//===- Manifest.h - What a compiled program declares ------------*- C++ -*-===//
//
// A compiled program carries a manifest: its layout and, for each function,
// every argument and result by role and state_dict name, with its element
// type, rank-local shape and sharding. The compiler writes it into the
// program (manifestFunctionSource); the runtime reads it back when it loads
// the program. Both use this file, so the two cannot disagree on the format.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_CONTRACT_MANIFEST_H
#define GLIMMER_CONTRACT_MANIFEST_H

#include "glimmer_contract/Attributes.h"
#include "glimmer_contract/DType.h"
#include "glimmer_contract/SpmdContext.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace glimmer {

/// An argument or result of a compiled function, identified by role and
/// state_dict name (pipeline boundaries: the index in the cut).
struct Slot {
  Role role = Role::Other;
  std::string name;
  DType dtype = DType::F32;
  /// The rank-local shape.
  std::vector<int64_t> shape;
  /// How the tensor is split over the mesh, as #glimmer.sharding says it:
  /// for each dimension the axes it is split over (first axis major), none
  /// where it is whole; empty when the tensor is replicated. Each rank holds
  /// its block, cut along every split dimension as glimmer.local_shard cuts.
  std::vector<std::vector<std::string>> dimAxes;

  bool isSharded() const;
  /// The manifest's text of `dimAxes`: `-` when replicated, else one
  /// bracketed list of axes per dimension, e.g. `[tp][dp_shard,cp]`.
  std::string shardingText() const;
  /// Parses shardingText() for a tensor of `rank` dimensions; false (with
  /// `error`) when it is malformed.
  bool parseSharding(const std::string &text, size_t rank, std::string &error);
};

/// A compiled function's arguments and results.
struct Signature {
  std::vector<Slot> arguments;
  std::vector<Slot> results;
};

/// What the program's vision merge expects of a batch: every image token of
/// `tokensInput` takes one row of the vision encoder's output, which has
/// `bankRows` rows.
struct VisionMergeCheck {
  std::string tokensInput;
  int64_t imageTokenId = 0;
  int64_t bankRows = 0;
};

/// An input the traced program never read: the trace holds what the model
/// computed from its values as constants, so a batch must carry the same
/// values (`digest`: the runtime's tensorDigest of the example's).
struct TracedInput {
  std::string name;
  std::string digest;
};

/// What a compiled program declares about itself (its manifest).
struct ProgramInfo {
  /// The layout the program was partitioned for.
  SpmdContext layout;
  std::map<std::string, Signature> functions;
  std::vector<VisionMergeCheck> visionChecks;
  std::vector<TracedInput> tracedInputs;

  /// The manifest text (line based).
  std::string toManifest() const;
  /// Parses a manifest; false and `error` on malformed text.
  static bool parseManifest(const std::string &text, ProgramInfo &info,
                            std::string &error);
};

/// The symbol of a compiled program that returns its manifest.
inline constexpr char kManifestSymbol[] = "glimmer_program_manifest";

/// The C++ a program's source ends with: kManifestSymbol, a function
/// returning `manifest`.
std::string manifestFunctionSource(const std::string &manifest);

} // namespace glimmer

#endif // GLIMMER_CONTRACT_MANIFEST_H
