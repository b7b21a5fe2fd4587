// RUN: glimmer-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the glimmer dialect's collectives, of #glimmer.sharding
// checked against a tensor and a mesh (sharding_constraint and the
// glimmer.sharding function argument attribute).

//===----------------------------------------------------------------------===//
// Mesh lookup and axis lists (shared by all collectives)
//===----------------------------------------------------------------------===//

// A collective on a mesh that is not declared.
module {
  func.func @unknown_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.all_reduce' op refers to unknown mesh @mesh}}
    %0 = glimmer.all_reduce sum %x on @mesh ["cp"] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// A symbol that exists but is not a glimmer.mesh.
module {
  func.func @not_a_mesh(%x: tensor<4xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{'glimmer.all_gather' op refers to unknown mesh @not_a_mesh}}
    %0 = glimmer.all_gather %x on @not_a_mesh ["cp"] dim = 0 : tensor<4xf32> -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}

// -----

// An axis the mesh does not have.
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=2]>
  func.func @unknown_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.all_reduce' op mesh has no axis "tp"}}
    %0 = glimmer.all_reduce sum %x on @mesh ["cp", "tp"] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// The same axis listed twice.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @axis_listed_twice(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.all_reduce' op lists mesh axis "cp" twice}}
    %0 = glimmer.all_reduce sum %x on @mesh ["cp", "cp"] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// A collective over no axis at all.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @empty_axis_list(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.all_gather' op expects at least one mesh axis}}
    %0 = glimmer.all_gather %x on @mesh [] dim = 0 : tensor<4xf32> -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Axes are a list of strings (ODS StrArrayAttr constraint).
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @axes_not_strings(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.all_reduce' op attribute 'axes' failed to satisfy constraint: string array attribute}}
    %0 = glimmer.all_reduce sum %x on @mesh [1] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

//===----------------------------------------------------------------------===//
// all_gather
//===----------------------------------------------------------------------===//

// -----

// The gathered dimension must exist.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @all_gather_dim_out_of_range(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
    // expected-error @+1 {{'glimmer.all_gather' op dim 2 is out of range for rank 2}}
    %0 = glimmer.all_gather %x on @mesh ["cp"] dim = 2 : tensor<2x4xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}

// -----

// all_gather keeps the element type.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @all_gather_element_type(%x: tensor<4xf32>) -> tensor<8xbf16> {
    // expected-error @+1 {{'glimmer.all_gather' op expects input and result to have the same element type, got 'f32' and 'bf16'}}
    %0 = glimmer.all_gather %x on @mesh ["cp"] dim = 0 : tensor<4xf32> -> tensor<8xbf16>
    return %0 : tensor<8xbf16>
  }
}

// -----

// The gathered dimension grows by the group size (2 * 3 = 6), not by one axis.
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=3]>
  func.func @all_gather_wrong_result(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
    // expected-error @+1 {{'glimmer.all_gather' op expects result of shape [2, 24], got [2, 8]}}
    %0 = glimmer.all_gather %x on @mesh ["dp_shard", "cp"] dim = 1 : tensor<2x4xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}

// -----

// Gathering along the wrong dimension.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @all_gather_wrong_dim(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
    // expected-error @+1 {{'glimmer.all_gather' op expects result of shape [4, 4], got [2, 8]}}
    %0 = glimmer.all_gather %x on @mesh ["cp"] dim = 0 : tensor<2x4xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}

//===----------------------------------------------------------------------===//
// reduce_scatter
//===----------------------------------------------------------------------===//

// -----

// The scattered dimension must be divisible by the group size.
module {
  glimmer.mesh @mesh = <["cp"=4]>
  func.func @reduce_scatter_indivisible(%g: tensor<2x6xf32>) -> tensor<2x1xf32> {
    // expected-error @+1 {{'glimmer.reduce_scatter' op dimension 1 of size 6 is not divisible by the group size 4}}
    %0 = glimmer.reduce_scatter sum %g on @mesh ["cp"] dim = 1 : tensor<2x6xf32> -> tensor<2x1xf32>
    return %0 : tensor<2x1xf32>
  }
}

// -----

// The scattered dimension shrinks by the group size.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @reduce_scatter_wrong_result(%g: tensor<2x8xf32>) -> tensor<2x8xf32> {
    // expected-error @+1 {{'glimmer.reduce_scatter' op expects result of shape [2, 4], got [2, 8]}}
    %0 = glimmer.reduce_scatter sum %g on @mesh ["cp"] dim = 1 : tensor<2x8xf32> -> tensor<2x8xf32>
    return %0 : tensor<2x8xf32>
  }
}

// -----

// A negative scatter dimension.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @reduce_scatter_negative_dim(%g: tensor<2x8xf32>) -> tensor<2x4xf32> {
    // expected-error @+1 {{'glimmer.reduce_scatter' op dim -1 is out of range for rank 2}}
    %0 = glimmer.reduce_scatter sum %g on @mesh ["cp"] dim = -1 : tensor<2x8xf32> -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}

// -----

// reduce_scatter keeps the element type.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @reduce_scatter_element_type(%g: tensor<8xf32>) -> tensor<4xf64> {
    // expected-error @+1 {{'glimmer.reduce_scatter' op expects input and result to have the same element type, got 'f32' and 'f64'}}
    %0 = glimmer.reduce_scatter sum %g on @mesh ["cp"] dim = 0 : tensor<8xf32> -> tensor<4xf64>
    return %0 : tensor<4xf64>
  }
}

// -----

// reduce_scatter over an axis the mesh lacks.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @reduce_scatter_unknown_axis(%g: tensor<8xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.reduce_scatter' op mesh has no axis "dp"}}
    %0 = glimmer.reduce_scatter max %g on @mesh ["dp"] dim = 0 : tensor<8xf32> -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

//===----------------------------------------------------------------------===//
// all_reduce
//===----------------------------------------------------------------------===//

// -----

// all_reduce returns its operand's type (ODS SameOperandsAndResultType).
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @all_reduce_result_type(%x: tensor<4xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{'glimmer.all_reduce' op requires the same type for all operands and results}}
    %0 = "glimmer.all_reduce"(%x) <{axes = ["cp"], kind = 0 : i32, mesh = @mesh}> : (tensor<4xf32>) -> tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}

// -----

// all_reduce over no axis.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @all_reduce_empty_axes(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.all_reduce' op expects at least one mesh axis}}
    %0 = glimmer.all_reduce sum %x on @mesh [] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

//===----------------------------------------------------------------------===//
// all_to_all
//===----------------------------------------------------------------------===//

// -----

// The split dimension must be divisible by the group size.
module {
  glimmer.mesh @mesh = <["cp"=4]>
  func.func @all_to_all_indivisible(%x: tensor<2x6x4x16xf32>) -> tensor<2x1x16x16xf32> {
    // expected-error @+1 {{'glimmer.all_to_all' op split dimension 1 of size 6 is not divisible by the group size 4}}
    %0 = glimmer.all_to_all %x on @mesh ["cp"] split_dim = 1 concat_dim = 2 : tensor<2x6x4x16xf32> -> tensor<2x1x16x16xf32>
    return %0 : tensor<2x1x16x16xf32>
  }
}

// -----

// The result shape must reflect both the split and the concatenation.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @all_to_all_wrong_result(%x: tensor<2x4x4x16xf32>) -> tensor<2x4x8x16xf32> {
    // expected-error @+1 {{'glimmer.all_to_all' op expects result of shape [2, 2, 8, 16], got [2, 4, 8, 16]}}
    %0 = glimmer.all_to_all %x on @mesh ["cp"] split_dim = 1 concat_dim = 2 : tensor<2x4x4x16xf32> -> tensor<2x4x8x16xf32>
    return %0 : tensor<2x4x8x16xf32>
  }
}

// -----

// split_dim beyond the rank.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @all_to_all_split_dim_out_of_range(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    // expected-error @+1 {{'glimmer.all_to_all' op split_dim 2 is out of range for rank 2}}
    %0 = glimmer.all_to_all %x on @mesh ["cp"] split_dim = 2 concat_dim = 0 : tensor<2x4xf32> -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}

// -----

// concat_dim beyond the rank.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @all_to_all_concat_dim_out_of_range(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    // expected-error @+1 {{'glimmer.all_to_all' op concat_dim 3 is out of range for rank 2}}
    %0 = glimmer.all_to_all %x on @mesh ["cp"] split_dim = 0 concat_dim = 3 : tensor<2x4xf32> -> tensor<2x4xf32>
    return %0 : tensor<2x4xf32>
  }
}

// -----

// all_to_all keeps the element type.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @all_to_all_element_type(%x: tensor<4xi64>) -> tensor<4xi32> {
    // expected-error @+1 {{'glimmer.all_to_all' op expects input and result to have the same element type, got 'i64' and 'i32'}}
    %0 = glimmer.all_to_all %x on @mesh ["cp"] split_dim = 0 concat_dim = 0 : tensor<4xi64> -> tensor<4xi32>
    return %0 : tensor<4xi32>
  }
}

//===----------------------------------------------------------------------===//
// send, recv, ppermute
//===----------------------------------------------------------------------===//

// -----

// A send to a peer past the end of the axis.
module {
  glimmer.mesh @mesh = <["pp"=2]>
  func.func @send_peer_out_of_range(%h: tensor<4xf32>) {
    // expected-error @+1 {{'glimmer.send' op peer 2 is out of range for axis "pp" of size 2}}
    glimmer.send %h to 2 on @mesh "pp" : tensor<4xf32>
    return
  }
}

// -----

// A negative peer.
module {
  glimmer.mesh @mesh = <["pp"=4]>
  func.func @recv_negative_peer() -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.recv' op peer -1 is out of range for axis "pp" of size 4}}
    %0 = glimmer.recv from -1 on @mesh "pp" : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// send along an axis the mesh lacks.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @send_unknown_axis(%h: tensor<4xf32>) {
    // expected-error @+1 {{'glimmer.send' op mesh has no axis "pp"}}
    glimmer.send %h to 1 on @mesh "pp" : tensor<4xf32>
    return
  }
}

// -----

// recv from an undeclared mesh.
module {
  glimmer.mesh @mesh = <["pp"=2]>
  func.func @recv_unknown_mesh() -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.recv' op refers to unknown mesh @pipeline}}
    %0 = glimmer.recv from 0 on @pipeline "pp" : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// ppermute pairs must come in [source, target] pairs.
module {
  glimmer.mesh @mesh = <["pp"=2]>
  func.func @ppermute_odd_pairs(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.ppermute' op expects [source, target] pairs, got an odd number of entries (3)}}
    %0 = glimmer.ppermute %x on @mesh "pp" pairs = [0, 1, 1] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// A rank sends twice.
module {
  glimmer.mesh @mesh = <["pp"=4]>
  func.func @ppermute_duplicate_source(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.ppermute' op source 0 appears twice}}
    %0 = glimmer.ppermute %x on @mesh "pp" pairs = [0, 1, 0, 2] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// A rank receives twice.
module {
  glimmer.mesh @mesh = <["pp"=4]>
  func.func @ppermute_duplicate_target(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.ppermute' op target 3 appears twice}}
    %0 = glimmer.ppermute %x on @mesh "pp" pairs = [0, 3, 1, 3] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// A pair naming a coordinate past the end of the axis.
module {
  glimmer.mesh @mesh = <["pp"=2]>
  func.func @ppermute_peer_out_of_range(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.ppermute' op peer 2 is out of range for axis "pp" of size 2}}
    %0 = glimmer.ppermute %x on @mesh "pp" pairs = [0, 1, 1, 2] : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

//===----------------------------------------------------------------------===//
// sharding_constraint
//===----------------------------------------------------------------------===//

// -----

// The sharding names an undeclared mesh.
module {
  func.func @sharding_constraint_unknown_mesh(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.sharding_constraint' op refers to unknown mesh @mesh}}
    %0 = glimmer.sharding_constraint %x <@mesh, [{}]> : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// One dims entry per tensor dimension.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @sharding_constraint_rank_mismatch(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{'glimmer.sharding_constraint' op sharding has 1 dimensions but the tensor 'tensor<4x8xf32>' has rank 2}}
    %0 = glimmer.sharding_constraint %x <@mesh, [{"cp"}]> : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

// A dimension split over an axis the mesh lacks.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @sharding_constraint_unknown_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    // expected-error @+1 {{'glimmer.sharding_constraint' op sharding uses axis "tp" which mesh @mesh does not have}}
    %0 = glimmer.sharding_constraint %x <@mesh, [{}, {"tp"}]> : tensor<4x8xf32>
    return %0 : tensor<4x8xf32>
  }
}

// -----

// A partial axis the mesh lacks.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @sharding_constraint_unknown_partial_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'glimmer.sharding_constraint' op sharding uses axis "tp" which mesh @mesh does not have}}
    %0 = glimmer.sharding_constraint %x <@mesh, [{"cp"}], partial = ["tp"]> : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// 6 is not divisible by dp_shard * cp = 4.
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=2]>
  func.func @sharding_constraint_indivisible(%x: tensor<6x8xf32>) -> tensor<6x8xf32> {
    // expected-error @+1 {{'glimmer.sharding_constraint' op dimension 0 of size 6 is not divisible by the product of its mesh axes (4)}}
    %0 = glimmer.sharding_constraint %x <@mesh, [{"dp_shard", "cp"}, {}]> : tensor<6x8xf32>
    return %0 : tensor<6x8xf32>
  }
}

// -----

// The constraint returns its operand's type (ODS SameOperandsAndResultType).
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @sharding_constraint_result_type(%x: tensor<4xf32>) -> tensor<2xf32> {
    // expected-error @+1 {{'glimmer.sharding_constraint' op requires the same type for all operands and results}}
    %0 = "glimmer.sharding_constraint"(%x) <{sharding = #glimmer.sharding<@mesh, [{"cp"}]>}> : (tensor<4xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}

//===----------------------------------------------------------------------===//
// glimmer.sharding on function arguments
//===----------------------------------------------------------------------===//

// -----

// An argument sharding whose rank differs from the argument's.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  // expected-error @+1 {{argument #1: sharding has 3 dimensions but the tensor 'tensor<2x8xi64>' has rank 2}}
  func.func @arg_sharding_rank_mismatch(%x: tensor<4xf32>,
      %tokens: tensor<2x8xi64> {glimmer.sharding = #glimmer.sharding<@mesh, [{}, {"cp"}, {}]>}) {
    return
  }
}

// -----

// An argument sharding over an indivisible dimension.
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=4]>
  // expected-error @+1 {{argument #0: dimension 1 of size 6 is not divisible by the product of its mesh axes (4)}}
  func.func @arg_sharding_indivisible(
      %tokens: tensor<2x6xi64> {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {"cp"}]>}) {
    return
  }
}

// -----

// A dynamic dimension is not checked, but the static one next to it is.
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=4]>
  // expected-error @+1 {{argument #0: dimension 1 of size 6 is not divisible by the product of its mesh axes (4)}}
  func.func @arg_sharding_dynamic_then_indivisible(
      %x: tensor<?x6xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {"cp"}]>}) {
    return
  }
}

// -----

// An argument sharding over an axis the mesh lacks.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  // expected-error @+1 {{argument #0: sharding uses axis "dp_shard" which mesh @mesh does not have}}
  func.func @arg_sharding_unknown_axis(
      %tokens: tensor<2x8xi64> {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {}]>}) {
    return
  }
}

// -----

// An argument sharding on an undeclared mesh.
module {
  // expected-error @+1 {{sharding of argument #0 refers to unknown mesh @mesh}}
  func.func @arg_sharding_unknown_mesh(
      %x: tensor<4xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{}]>}) {
    return
  }
}

// -----

// Only ranked tensors can be sharded.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  // expected-error @+1 {{argument #0 has a sharding but is not a ranked tensor}}
  func.func @arg_sharding_not_a_tensor(%x: f32 {glimmer.sharding = #glimmer.sharding<@mesh, []>}) {
    return
  }
}

// -----

// glimmer.sharding must hold a #glimmer.sharding.
module {
  // expected-error @+1 {{'glimmer.sharding' must be a #glimmer.sharding attribute}}
  func.func @arg_sharding_wrong_attribute(%x: tensor<4xf32> {glimmer.sharding = "cp"}) {
    return
  }
}

// -----

// An unknown glimmer argument attribute.
module {
  // expected-error @+1 {{unknown glimmer argument attribute 'glimmer.layout'}}
  func.func @arg_unknown_glimmer_attribute(%x: tensor<4xf32> {glimmer.layout = 1 : i64}) {
    return
  }
}

// -----

// The runtime's description of a per-rank piece (TP, FSDP, both) is one
// #glimmer.sharding with an entry per dimension.
// expected-error @+1 {{argument #0: 'glimmer.sharded' must be a #glimmer.sharding with one entry per dimension of the ranked tensor 'tensor<4xf32>'}}
func.func private @sharded_rank_mismatch(tensor<4xf32> {glimmer.param = "w", glimmer.sharded = #glimmer.sharding<@mesh, [{"dp_shard"}, {}]>})

// -----

// expected-error @+1 {{result #0: 'glimmer.sharded' must be a #glimmer.sharding with one entry per dimension}}
func.func private @sharded_not_a_sharding() -> (tensor<4xf32> {glimmer.sharded = ["dp_shard"]})

// -----

// The axes are distinct mesh axes of the SPMD layout.
// expected-error @+1 {{argument #0: 'glimmer.sharded' must split over distinct mesh axes (dp_replicate, dp_shard, cp, tp, pp)}}
func.func private @sharded_axes_unknown(tensor<4xf32> {glimmer.sharded = #glimmer.sharding<@mesh, [{"fsdp"}]>})

// -----

// A piece is a block of the full tensor, not a partial sum, and something
// is split.
// expected-error @+1 {{argument #0: 'glimmer.sharded' must split at least one dimension and have no partial axes}}
func.func private @sharded_nothing(tensor<4xf32> {glimmer.sharded = #glimmer.sharding<@mesh, [{}]>})

// -----

// A sharding on an argument of a function declaration (no body) is checked
// against the declared type.
glimmer.mesh @mesh = <["cp"=2]>
// expected-error @+1 {{argument #0: dimension 0 of size 3 is not divisible by the product of its mesh axes (2)}}
func.func private @declaration_with_bad_sharding(tensor<3xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"cp"}]>})

// -----

// Result shardings are verified like argument shardings.
glimmer.mesh @mesh = <["cp"=2]>
// expected-error @+1 {{result #0: sharding has 2 dimensions but the tensor 'tensor<4xf32>' has rank 1}}
func.func private @result_sharding_rank_mismatch() -> (tensor<4xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{}, {}]>})

// -----

// Anything else under the glimmer namespace on a result is rejected.
// expected-error @+1 {{unknown glimmer result attribute 'glimmer.foo'}}
func.func private @unknown_result_attr() -> (tensor<4xf32> {glimmer.foo = 1 : i64})

// -----

// The importer's name attributes must be strings.
// expected-error @+1 {{'glimmer.param' must be a string}}
func.func private @param_name_not_string(tensor<4xf32> {glimmer.param = 1 : i64})

// -----

// local_shard needs a dimension divisible by the group.
glimmer.mesh @mesh = <["cp"=4]>
func.func @local_shard_indivisible(%x: tensor<2x6xi64>) -> tensor<2x1xi64> {
  // expected-error @+1 {{dimension 1 of size 6 is not divisible by the group size 4}}
  %0 = glimmer.local_shard %x on @mesh ["cp"] dim = 1 : tensor<2x6xi64> -> tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}

// -----

// local_shard's result is the slice's shape.
glimmer.mesh @mesh = <["cp"=2]>
func.func @local_shard_wrong_result(%x: tensor<2x8xi64>) -> tensor<2x8xi64> {
  // expected-error @+1 {{expects result of shape [2, 4], got [2, 8]}}
  %0 = glimmer.local_shard %x on @mesh ["cp"] dim = 1 : tensor<2x8xi64> -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

// -----

// pvary names axes of its mesh.
glimmer.mesh @mesh = <["cp"=2]>
func.func @pvary_unknown_axis(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'glimmer.pvary' op mesh has no axis "tp"}}
  %0 = glimmer.pvary %x on @mesh ["tp"] : tensor<4xf32>
  return %0 : tensor<4xf32>
}
