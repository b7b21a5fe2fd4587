// RUN: glimmer-opt %s -split-input-file | glimmer-opt -split-input-file | FileCheck %s
// RUN: glimmer-opt %s -split-input-file -mlir-print-op-generic | glimmer-opt -split-input-file | FileCheck %s

// Round-trip tests for the collectives on named mesh axes, #glimmer.sharding
// on function arguments, and the glimmer.spmd module attribute.

// all_gather along one axis: the gathered dimension grows by the axis size.
// CHECK-LABEL: func.func @all_gather_one_axis
// CHECK: glimmer.all_gather %{{.*}} on @mesh ["cp"] dim = 2 : tensor<2x2x4x16xf32> -> tensor<2x2x8x16xf32>
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=2]>
  func.func @all_gather_one_axis(%k: tensor<2x2x4x16xf32>) -> tensor<2x2x8x16xf32> {
    %0 = glimmer.all_gather %k on @mesh ["cp"] dim = 2 : tensor<2x2x4x16xf32> -> tensor<2x2x8x16xf32>
    return %0 : tensor<2x2x8x16xf32>
  }
}

// -----

// all_gather over two axes multiplies their sizes; works on integers.
// CHECK-LABEL: func.func @all_gather_two_axes
// CHECK: glimmer.all_gather %{{.*}} on @mesh ["dp_shard", "cp"] dim = 0 : tensor<1x8xi64> -> tensor<6x8xi64>
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=3]>
  func.func @all_gather_two_axes(%x: tensor<1x8xi64>) -> tensor<6x8xi64> {
    %0 = glimmer.all_gather %x on @mesh ["dp_shard", "cp"] dim = 0 : tensor<1x8xi64> -> tensor<6x8xi64>
    return %0 : tensor<6x8xi64>
  }
}

// -----

// reduce_scatter with every reduction kind.
// CHECK-LABEL: func.func @reduce_scatter_kinds
// CHECK: glimmer.reduce_scatter sum %{{.*}} on @mesh ["cp"] dim = 2 : tensor<2x2x8x16xf32> -> tensor<2x2x4x16xf32>
// CHECK: glimmer.reduce_scatter max %{{.*}} on @mesh ["cp"] dim = 2 : tensor<2x2x8x16xf32> -> tensor<2x2x4x16xf32>
// CHECK: glimmer.reduce_scatter min %{{.*}} on @mesh ["cp"] dim = 0 : tensor<2x2x8x16xf32> -> tensor<1x2x8x16xf32>
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @reduce_scatter_kinds(%g: tensor<2x2x8x16xf32>)
      -> (tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>, tensor<1x2x8x16xf32>) {
    %0 = glimmer.reduce_scatter sum %g on @mesh ["cp"] dim = 2 : tensor<2x2x8x16xf32> -> tensor<2x2x4x16xf32>
    %1 = glimmer.reduce_scatter max %g on @mesh ["cp"] dim = 2 : tensor<2x2x8x16xf32> -> tensor<2x2x4x16xf32>
    %2 = glimmer.reduce_scatter min %g on @mesh ["cp"] dim = 0 : tensor<2x2x8x16xf32> -> tensor<1x2x8x16xf32>
    return %0, %1, %2 : tensor<2x2x4x16xf32>, tensor<2x2x4x16xf32>, tensor<1x2x8x16xf32>
  }
}

// -----

// all_reduce of a scalar count over two axes, and a max over one axis.
// CHECK-LABEL: func.func @all_reduce
// CHECK: glimmer.all_reduce sum %{{.*}} on @mesh ["dp_shard", "cp"] : tensor<i64>
// CHECK: glimmer.all_reduce max %{{.*}} on @mesh ["tp"] : tensor<4x8xf32>
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=2, "tp"=2]>
  func.func @all_reduce(%count: tensor<i64>, %x: tensor<4x8xf32>) -> (tensor<i64>, tensor<4x8xf32>) {
    %0 = glimmer.all_reduce sum %count on @mesh ["dp_shard", "cp"] : tensor<i64>
    %1 = glimmer.all_reduce max %x on @mesh ["tp"] : tensor<4x8xf32>
    return %0, %1 : tensor<i64>, tensor<4x8xf32>
  }
}

// -----

// pvary: a replicated value entering per-rank work split over tp (identity
// forward, all_reduce backward).
// CHECK-LABEL: func.func @pvary
// CHECK: glimmer.pvary %{{.*}} on @mesh ["tp"] : tensor<2x16x32xf32>
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=2, "tp"=2]>
  func.func @pvary(%x: tensor<2x16x32xf32>) -> tensor<2x16x32xf32> {
    %0 = glimmer.pvary %x on @mesh ["tp"] : tensor<2x16x32xf32>
    return %0 : tensor<2x16x32xf32>
  }
}

// -----

// all_to_all: split heads/concat sequence (Ulysses), and split = concat dim.
// CHECK-LABEL: func.func @all_to_all
// CHECK: glimmer.all_to_all %{{.*}} on @mesh ["cp"] split_dim = 1 concat_dim = 2 : tensor<2x4x4x16xf32> -> tensor<2x2x8x16xf32>
// CHECK: glimmer.all_to_all %{{.*}} on @mesh ["cp"] split_dim = 0 concat_dim = 0 : tensor<4xi64> -> tensor<4xi64>
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @all_to_all(%x: tensor<2x4x4x16xf32>, %y: tensor<4xi64>) -> (tensor<2x2x8x16xf32>, tensor<4xi64>) {
    %0 = glimmer.all_to_all %x on @mesh ["cp"] split_dim = 1 concat_dim = 2 : tensor<2x4x4x16xf32> -> tensor<2x2x8x16xf32>
    %1 = glimmer.all_to_all %y on @mesh ["cp"] split_dim = 0 concat_dim = 0 : tensor<4xi64> -> tensor<4xi64>
    return %0, %1 : tensor<2x2x8x16xf32>, tensor<4xi64>
  }
}

// -----

// send/recv between pipeline stages along "pp", peers at both ends of the axis.
// CHECK-LABEL: func.func @send_recv
// CHECK: glimmer.send %{{.*}} to 1 on @mesh "pp" : tensor<2x8x16xf32>
// CHECK: %[[H:.*]] = glimmer.recv from 0 on @mesh "pp" : tensor<2x8x16xf32>
// CHECK: return %[[H]] : tensor<2x8x16xf32>
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "pp"=2]>
  func.func @send_recv(%h: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
    glimmer.send %h to 1 on @mesh "pp" : tensor<2x8x16xf32>
    %0 = glimmer.recv from 0 on @mesh "pp" : tensor<2x8x16xf32>
    return %0 : tensor<2x8x16xf32>
  }
}

// -----

// ppermute: a swap, a full rotation, and an empty permutation (all zeros).
// CHECK-LABEL: func.func @ppermute
// CHECK: glimmer.ppermute %{{.*}} on @mesh "pp" pairs = [0, 1, 1, 0] : tensor<4xf32>
// CHECK: glimmer.ppermute %{{.*}} on @mesh "cp" pairs = [0, 1, 1, 2, 2, 3, 3, 0] : tensor<4xf32>
// CHECK: glimmer.ppermute %{{.*}} on @mesh "pp" pairs = [] : tensor<4xf32>
module {
  glimmer.mesh @mesh = <["cp"=4, "pp"=2]>
  func.func @ppermute(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %0 = glimmer.ppermute %x on @mesh "pp" pairs = [0, 1, 1, 0] : tensor<4xf32>
    %1 = glimmer.ppermute %x on @mesh "cp" pairs = [0, 1, 1, 2, 2, 3, 3, 0] : tensor<4xf32>
    %2 = glimmer.ppermute %x on @mesh "pp" pairs = [] : tensor<4xf32>
    return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Collectives may refer to a mesh with a name other than @mesh.
// CHECK: glimmer.mesh @tp_mesh = <["tp"=4]>
// CHECK-LABEL: func.func @collective_on_named_mesh
// CHECK: glimmer.all_reduce sum %{{.*}} on @tp_mesh ["tp"] : tensor<8xbf16>
module {
  glimmer.mesh @tp_mesh = <["tp"=4]>
  func.func @collective_on_named_mesh(%x: tensor<8xbf16>) -> tensor<8xbf16> {
    %0 = glimmer.all_reduce sum %x on @tp_mesh ["tp"] : tensor<8xbf16>
    return %0 : tensor<8xbf16>
  }
}

// -----

// glimmer.sharding on func args: split dims, replicated dims, and no sharding.
// CHECK-LABEL: func.func @sharding_on_func_args
// CHECK-SAME: %{{.*}}: tensor<2x8xi64> {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {"cp"}]>}
// CHECK-SAME: %{{.*}}: tensor<32x16xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{}, {}]>}
// CHECK-SAME: %{{.*}}: tensor<f32>)
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=2]>
  func.func @sharding_on_func_args(
      %tokens: tensor<2x8xi64> {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {"cp"}]>},
      %table: tensor<32x16xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{}, {}]>},
      %lr: tensor<f32>) {
    return
  }
}

// -----

// Partial (pending-sum) axes, alone and next to a dim split over two axes.
// CHECK-LABEL: func.func @sharding_partial_axes
// CHECK-SAME: {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}], partial = ["tp"]>}
// CHECK-SAME: {glimmer.sharding = #glimmer.sharding<@mesh, [], partial = ["dp_shard", "tp"]>}
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=2, "tp"=2]>
  func.func @sharding_partial_axes(
      %x: tensor<8x16xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard", "cp"}, {}], partial = ["tp"]>},
      %loss: tensor<f32> {glimmer.sharding = #glimmer.sharding<@mesh, [], partial = ["dp_shard", "tp"]>}) {
    return
  }
}

// -----

// A dynamic dim may be split over any axis (divisibility is a run-time fact).
// CHECK-LABEL: func.func @sharding_dynamic_dim_on_func_arg
// CHECK-SAME: tensor<?x8xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"cp"}, {}]>}
module {
  glimmer.mesh @mesh = <["cp"=3]>
  func.func @sharding_dynamic_dim_on_func_arg(
      %x: tensor<?x8xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"cp"}, {}]>}) {
    return
  }
}

// -----

// glimmer.spmd prints canonically: defaults omitted, keys in canonical order.
// CHECK: module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">}
// CHECK-LABEL: func.func @spmd_module_attr
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2, dp_shard=2, tp=1">} {
  func.func @spmd_module_attr() {
    return
  }
}

// -----

// Every SPMD key: degrees, sp (needs tp > 1), microbatches, schedule, balancer.
// CHECK: module attributes {glimmer.spmd = #glimmer.spmd<"dp_replicate=2,dp_shard=2,cp=2,tp=2,pp=2,sp,microbatches=4,schedule=gpipe,balancer=contiguous">}
// CHECK-LABEL: func.func @spmd_all_keys
module attributes {glimmer.spmd = #glimmer.spmd<"dp_replicate=2,dp_shard=2,cp=2,tp=2,pp=2,sp=true,microbatches=4,schedule=gpipe,balancer=contiguous">} {
  func.func @spmd_all_keys() {
    return
  }
}

// -----

// Explicit defaults are dropped; the default layout prints as "".
// CHECK: module attributes {glimmer.spmd = #glimmer.spmd<"">}
// CHECK-LABEL: func.func @spmd_default_layout
module attributes {glimmer.spmd = #glimmer.spmd<"schedule=1f1b,balancer=head_tail,sp=false,microbatches=1">} {
  func.func @spmd_default_layout() {
    return
  }
}

// -----

// A whole program: spmd layout, mesh, sharded args, constraint, collectives.
// CHECK: module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">}
// CHECK: glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
// CHECK-LABEL: func.func @spmd_program
// CHECK-SAME: {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {"cp"}, {}]>}
// CHECK: glimmer.sharding_constraint %{{.*}} <@mesh, [{"dp_shard"}, {"cp"}, {}]> : tensor<2x8x16xf32>
// CHECK: glimmer.all_gather %{{.*}} on @mesh ["cp"] dim = 1 : tensor<2x8x16xf32> -> tensor<2x16x16xf32>
// CHECK: glimmer.all_reduce sum %{{.*}} on @mesh ["dp_shard", "cp"] : tensor<f32>
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
  func.func @spmd_program(%x: tensor<2x8x16xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{"dp_shard"}, {"cp"}, {}]>},
                          %loss: tensor<f32>) -> (tensor<2x16x16xf32>, tensor<f32>) {
    %0 = glimmer.sharding_constraint %x <@mesh, [{"dp_shard"}, {"cp"}, {}]> : tensor<2x8x16xf32>
    %1 = glimmer.all_gather %0 on @mesh ["cp"] dim = 1 : tensor<2x8x16xf32> -> tensor<2x16x16xf32>
    %2 = glimmer.all_reduce sum %loss on @mesh ["dp_shard", "cp"] : tensor<f32>
    return %1, %2 : tensor<2x16x16xf32>, tensor<f32>
  }
}

// -----

// Shardings on a declaration's arguments and results, and the importer's
// name attributes, round-trip.
glimmer.mesh @mesh = <["cp"=2]>
// CHECK-LABEL: func.func private @declaration_with_shardings
// CHECK-SAME: {glimmer.param = "layers.0.w", glimmer.sharding = #glimmer.sharding<@mesh, [{"cp"}]>}
// CHECK-SAME: -> (tensor<4xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{}]>})
func.func private @declaration_with_shardings(tensor<4xf32> {glimmer.param = "layers.0.w", glimmer.sharding = #glimmer.sharding<@mesh, [{"cp"}]>}) -> (tensor<4xf32> {glimmer.sharding = #glimmer.sharding<@mesh, [{}]>})

// -----

// local_shard keeps this rank's slice of a replicated value.
glimmer.mesh @mesh = <["cp"=4]>
// CHECK-LABEL: func.func @local_shard_of_sequence
// CHECK: glimmer.local_shard %{{.*}} on @mesh ["cp"] dim = 1 : tensor<2x16xi64> -> tensor<2x4xi64>
func.func @local_shard_of_sequence(%x: tensor<2x16xi64>) -> tensor<2x4xi64> {
  %0 = glimmer.local_shard %x on @mesh ["cp"] dim = 1 : tensor<2x16xi64> -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}
