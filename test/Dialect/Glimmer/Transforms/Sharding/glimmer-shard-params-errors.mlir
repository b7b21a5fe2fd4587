// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh -glimmer-shard-params -verify-diagnostics
// RUN: not glimmer-opt %S/Inputs/fsdp-without-mesh.mlir -glimmer-shard-params 2>&1 | FileCheck %s --check-prefix=NOMESH
// NOMESH: error: 'glimmer-shard-params' needs @mesh; run glimmer-materialize-mesh first

// Parameters whose dim 0 is not divisible by dp_shard x cp, and scalars,
// stay replicated; one remark names them all. The others are split.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">} {
  // expected-remark @+1 {{FSDP over dp_shard x cp (4 ranks) keeps 2 parameters replicated (dimension 0 not divisible by 4): 'pos' (tensor<5x8xf32>), 'scale' (tensor<f32>)}}
  func.func @some_replicated(%pos: tensor<5x8xf32> {glimmer.param = "pos"}, %scale: tensor<f32> {glimmer.param = "scale"},
                             %w: tensor<8x8xf32> {glimmer.param = "w"}) -> tensor<5x8xf32> {
    %s = glimmer.broadcast_in_dim %scale dims = [] : tensor<f32> -> tensor<5x8xf32>
    %p = glimmer.mul %pos, %s : tensor<5x8xf32>
    %y = glimmer.linear %p, %w : tensor<5x8xf32>, tensor<8x8xf32> -> tensor<5x8xf32>
    return %y : tensor<5x8xf32>
  }
}

// -----

// expected-error @+1 {{'glimmer-materialize-mesh' needs the SPMD layout recorded on the module}}
module {
}

// -----

// A tensor-parallel weight is split on dimension 0 over tp and dp_shard
// together: 6 rows do not make 4 pieces, and the remark says so.
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,tp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=1, "tp"=2, "pp"=1]>
  // expected-remark @+1 {{FSDP over dp_shard (2 ranks) keeps 1 parameter replicated (dimension 0 not divisible by 2): 'col' (tensor<6x8xf32>, already split over tp: 4 pieces)}}
  func.func @tensor_parallel_rows(%x: tensor<2x8xf32>,
      %col: tensor<6x8xf32> {glimmer.param = "col", glimmer.sharding = #glimmer.sharding<@mesh, [{"tp"}, {}]>}) -> tensor<2x6xf32> {
    %y = glimmer.linear %x, %col : tensor<2x8xf32>, tensor<6x8xf32> -> tensor<2x6xf32>
    return %y : tensor<2x6xf32>
  }
}
