// RUN: glimmer-opt %s -split-input-file | glimmer-opt -split-input-file | FileCheck %s
// RUN: glimmer-opt %s -split-input-file -mlir-print-op-generic | glimmer-opt -split-input-file | FileCheck %s

// Round-trip tests for the mesh/sharding annotations and the elementwise and
// shape core of the glimmer dialect.

// A mesh with the five pipeline axes, printed without the #glimmer.mesh prefix.
// CHECK: glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
// CHECK-LABEL: func.func @mesh_five_axes
module {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=2, "tp"=1, "pp"=1]>
  func.func @mesh_five_axes() {
    return
  }
}

// -----

// A mesh with hand-written axis names, a single axis, and an empty mesh.
// CHECK: glimmer.mesh @one = <["x"=8]>
// CHECK: glimmer.mesh @empty = <[]>
// CHECK-LABEL: func.func @mesh_custom_and_empty
module {
  glimmer.mesh @one = <["x"=8]>
  glimmer.mesh @empty = <[]>
  func.func @mesh_custom_and_empty() {
    return
  }
}

// -----

// Axis names that need escaping survive printing and re-parsing.
// CHECK: glimmer.mesh @mesh = <["a\22b"=2, "c"=1]>
// CHECK-LABEL: func.func @mesh_escaped_axis_name
// CHECK: glimmer.sharding_constraint %{{.*}} <@mesh, [{"a\22b"}]> : tensor<8xf32>
module {
  glimmer.mesh @mesh = <["a\"b"=2, "c"=1]>
  func.func @mesh_escaped_axis_name(%arg0: tensor<8xf32>) -> tensor<8xf32> {
    %0 = glimmer.sharding_constraint %arg0 <@mesh, [{"a\"b"}]> : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}

// -----

// sharding_constraint: a dim split over two axes, and a replicated dim.
// CHECK-LABEL: func.func @sharding_constraint_two_axes
// CHECK: %[[R:.*]] = glimmer.sharding_constraint %{{.*}} <@mesh, [{"dp_shard", "cp"}, {}]> : tensor<8x16xf32>
// CHECK: return %[[R]] : tensor<8x16xf32>
module {
  glimmer.mesh @mesh = <["dp_shard"=2, "cp"=2]>
  func.func @sharding_constraint_two_axes(%arg0: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %0 = glimmer.sharding_constraint %arg0 <@mesh, [{"dp_shard", "cp"}, {}]> : tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}

// -----

// sharding_constraint on a rank-0 tensor (empty dims) with a partial axis.
// CHECK-LABEL: func.func @sharding_constraint_scalar_partial
// CHECK: glimmer.sharding_constraint %{{.*}} <@mesh, [], partial = ["tp"]> : tensor<f32>
module {
  glimmer.mesh @mesh = <["tp"=4]>
  func.func @sharding_constraint_scalar_partial(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = glimmer.sharding_constraint %arg0 <@mesh, [], partial = ["tp"]> : tensor<f32>
    return %0 : tensor<f32>
  }
}

// -----

// sharding_constraint on an integer tensor, split on the inner dimension.
// CHECK-LABEL: func.func @sharding_constraint_integer
// CHECK: glimmer.sharding_constraint %{{.*}} <@mesh, [{}, {"cp"}]> : tensor<2x8xi64>
module {
  glimmer.mesh @mesh = <["cp"=4]>
  func.func @sharding_constraint_integer(%arg0: tensor<2x8xi64>) -> tensor<2x8xi64> {
    %0 = glimmer.sharding_constraint %arg0 <@mesh, [{}, {"cp"}]> : tensor<2x8xi64>
    return %0 : tensor<2x8xi64>
  }
}

// -----

// constant: splat and non-splat float, integer and boolean constants.
// CHECK-LABEL: func.func @constants
// CHECK: glimmer.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK: glimmer.constant dense<[1, 2, 3]> : tensor<3xi64>
// CHECK: glimmer.constant dense<[true, false]> : tensor<2xi1>
// CHECK: glimmer.constant dense<-1.000000e+00> : tensor<bf16>
func.func @constants() -> (tensor<4xf32>, tensor<3xi64>, tensor<2xi1>, tensor<bf16>) {
  %0 = glimmer.constant dense<0.5> : tensor<4xf32>
  %1 = glimmer.constant dense<[1, 2, 3]> : tensor<3xi64>
  %2 = glimmer.constant dense<[true, false]> : tensor<2xi1>
  %3 = glimmer.constant dense<-1.0> : tensor<bf16>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<3xi64>, tensor<2xi1>, tensor<bf16>
}

// -----

// All floating-point unary elementwise ops.
// CHECK-LABEL: func.func @unary_elementwise
// CHECK: glimmer.neg %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.exp %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.log %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.sqrt %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.rsqrt %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.tanh %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.erf %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.sigmoid %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.silu %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.relu %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.sin %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.cos %{{.*}} : tensor<2x8xf32>
func.func @unary_elementwise(%arg0: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = glimmer.neg %arg0 : tensor<2x8xf32>
  %1 = glimmer.exp %0 : tensor<2x8xf32>
  %2 = glimmer.log %1 : tensor<2x8xf32>
  %3 = glimmer.sqrt %2 : tensor<2x8xf32>
  %4 = glimmer.rsqrt %3 : tensor<2x8xf32>
  %5 = glimmer.tanh %4 : tensor<2x8xf32>
  %6 = glimmer.erf %5 : tensor<2x8xf32>
  %7 = glimmer.sigmoid %6 : tensor<2x8xf32>
  %8 = glimmer.silu %7 : tensor<2x8xf32>
  %9 = glimmer.relu %8 : tensor<2x8xf32>
  %10 = glimmer.sin %9 : tensor<2x8xf32>
  %11 = glimmer.cos %10 : tensor<2x8xf32>
  return %11 : tensor<2x8xf32>
}

// -----

// Unary ops on the other float widths and on a rank-0 tensor.
// CHECK-LABEL: func.func @unary_other_float_types
// CHECK: glimmer.exp %{{.*}} : tensor<4xbf16>
// CHECK: glimmer.tanh %{{.*}} : tensor<4xf16>
// CHECK: glimmer.sqrt %{{.*}} : tensor<f64>
func.func @unary_other_float_types(%arg0: tensor<4xbf16>, %arg1: tensor<4xf16>, %arg2: tensor<f64>)
    -> (tensor<4xbf16>, tensor<4xf16>, tensor<f64>) {
  %0 = glimmer.exp %arg0 : tensor<4xbf16>
  %1 = glimmer.tanh %arg1 : tensor<4xf16>
  %2 = glimmer.sqrt %arg2 : tensor<f64>
  return %0, %1, %2 : tensor<4xbf16>, tensor<4xf16>, tensor<f64>
}

// -----

// gelu: the default `approximate = none` is elided; tanh is printed.
// CHECK-LABEL: func.func @gelu_approximations
// CHECK: glimmer.gelu %{{.*}} : tensor<2x8xf32>
// CHECK-NEXT: glimmer.gelu %{{.*}} : tensor<2x8xf32>
// CHECK-NEXT: glimmer.gelu %{{.*}} approximate = tanh : tensor<2x8xf32>
func.func @gelu_approximations(%arg0: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = glimmer.gelu %arg0 : tensor<2x8xf32>
  %1 = glimmer.gelu %arg0 approximate = none : tensor<2x8xf32>
  %2 = glimmer.gelu %arg0 approximate = tanh : tensor<2x8xf32>
  return %0, %1, %2 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// All binary elementwise ops on floats.
// CHECK-LABEL: func.func @binary_elementwise_float
// CHECK: glimmer.add %{{.*}}, %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.sub %{{.*}}, %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.mul %{{.*}}, %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.div %{{.*}}, %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.max %{{.*}}, %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.min %{{.*}}, %{{.*}} : tensor<2x8xf32>
// CHECK: glimmer.pow %{{.*}}, %{{.*}} : tensor<2x8xf32>
func.func @binary_elementwise_float(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = glimmer.add %arg0, %arg1 : tensor<2x8xf32>
  %1 = glimmer.sub %0, %arg1 : tensor<2x8xf32>
  %2 = glimmer.mul %1, %arg1 : tensor<2x8xf32>
  %3 = glimmer.div %2, %arg1 : tensor<2x8xf32>
  %4 = glimmer.max %3, %arg1 : tensor<2x8xf32>
  %5 = glimmer.min %4, %arg1 : tensor<2x8xf32>
  %6 = glimmer.pow %5, %arg1 : tensor<2x8xf32>
  return %6 : tensor<2x8xf32>
}

// -----

// Binary elementwise ops also accept integer tensors (i32 and i64).
// CHECK-LABEL: func.func @binary_elementwise_integer
// CHECK: glimmer.add %{{.*}}, %{{.*}} : tensor<2x8xi64>
// CHECK: glimmer.max %{{.*}}, %{{.*}} : tensor<2x8xi64>
// CHECK: glimmer.mul %{{.*}}, %{{.*}} : tensor<3xi32>
func.func @binary_elementwise_integer(%arg0: tensor<2x8xi64>, %arg1: tensor<3xi32>) -> (tensor<2x8xi64>, tensor<3xi32>) {
  %0 = glimmer.add %arg0, %arg0 : tensor<2x8xi64>
  %1 = glimmer.max %0, %arg0 : tensor<2x8xi64>
  %2 = glimmer.mul %arg1, %arg1 : tensor<3xi32>
  return %1, %2 : tensor<2x8xi64>, tensor<3xi32>
}

// -----

// compare: every direction; the i1 result type is inferred from the operands.
// CHECK-LABEL: func.func @compare_directions
// CHECK: %{{.*}} = glimmer.compare eq, %{{.*}}, %{{.*}} : tensor<2x8xi64>
// CHECK: %{{.*}} = glimmer.compare ne, %{{.*}}, %{{.*}} : tensor<2x8xi64>
// CHECK: %{{.*}} = glimmer.compare lt, %{{.*}}, %{{.*}} : tensor<2x8xi64>
// CHECK: %{{.*}} = glimmer.compare le, %{{.*}}, %{{.*}} : tensor<2x8xi64>
// CHECK: %{{.*}} = glimmer.compare gt, %{{.*}}, %{{.*}} : tensor<2x8xi64>
// CHECK: %{{.*}} = glimmer.compare ge, %{{.*}}, %{{.*}} : tensor<2x8xi64>
// CHECK: return {{.*}} : tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>
func.func @compare_directions(%arg0: tensor<2x8xi64>, %arg1: tensor<2x8xi64>)
    -> (tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>) {
  %0 = glimmer.compare eq, %arg0, %arg1 : tensor<2x8xi64>
  %1 = glimmer.compare ne, %arg0, %arg1 : tensor<2x8xi64>
  %2 = glimmer.compare lt, %arg0, %arg1 : tensor<2x8xi64>
  %3 = glimmer.compare le, %arg0, %arg1 : tensor<2x8xi64>
  %4 = glimmer.compare gt, %arg0, %arg1 : tensor<2x8xi64>
  %5 = glimmer.compare ge, %arg0, %arg1 : tensor<2x8xi64>
  return %0, %1, %2, %3, %4, %5 : tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>, tensor<2x8xi1>
}

// -----

// compare on floats and on booleans (i1 operands), including rank 0.
// CHECK-LABEL: func.func @compare_float_and_bool
// CHECK: glimmer.compare lt, %{{.*}}, %{{.*}} : tensor<f32>
// CHECK: glimmer.compare eq, %{{.*}}, %{{.*}} : tensor<4xi1>
func.func @compare_float_and_bool(%arg0: tensor<f32>, %arg1: tensor<4xi1>) -> (tensor<i1>, tensor<4xi1>) {
  %0 = glimmer.compare lt, %arg0, %arg0 : tensor<f32>
  %1 = glimmer.compare eq, %arg1, %arg1 : tensor<4xi1>
  return %0, %1 : tensor<i1>, tensor<4xi1>
}

// -----

// select between float tensors and between integer tensors.
// CHECK-LABEL: func.func @select
// CHECK: glimmer.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8xi1>, tensor<2x8xf32>
// CHECK: glimmer.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8xi1>, tensor<2x8xi64>
func.func @select(%cond: tensor<2x8xi1>, %a: tensor<2x8xf32>, %b: tensor<2x8xf32>,
                  %i: tensor<2x8xi64>) -> (tensor<2x8xf32>, tensor<2x8xi64>) {
  %0 = glimmer.select %cond, %a, %b : tensor<2x8xi1>, tensor<2x8xf32>
  %1 = glimmer.select %cond, %i, %i : tensor<2x8xi1>, tensor<2x8xi64>
  return %0, %1 : tensor<2x8xf32>, tensor<2x8xi64>
}

// -----

// convert: float widths, float->int, bool->float, and identity (not folded).
// CHECK-LABEL: func.func @convert
// CHECK: glimmer.convert %{{.*}} : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK: glimmer.convert %{{.*}} : tensor<2x8xf32> to tensor<2x8xi64>
// CHECK: glimmer.convert %{{.*}} : tensor<2x8xi1> to tensor<2x8xf32>
// CHECK: glimmer.convert %{{.*}} : tensor<2x8xf32> to tensor<2x8xf32>
func.func @convert(%arg0: tensor<2x8xbf16>, %arg1: tensor<2x8xi1>)
    -> (tensor<2x8xi64>, tensor<2x8xf32>, tensor<2x8xf32>) {
  %0 = glimmer.convert %arg0 : tensor<2x8xbf16> to tensor<2x8xf32>
  %1 = glimmer.convert %0 : tensor<2x8xf32> to tensor<2x8xi64>
  %2 = glimmer.convert %arg1 : tensor<2x8xi1> to tensor<2x8xf32>
  %3 = glimmer.convert %2 : tensor<2x8xf32> to tensor<2x8xf32>
  return %1, %2, %3 : tensor<2x8xi64>, tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

// reduce: every kind, keep_dims, and several dims down to a scalar.
// CHECK-LABEL: func.func @reduce
// CHECK: glimmer.reduce sum %{{.*}} dims = [1] : tensor<2x8xf32> -> tensor<2xf32>
// CHECK: glimmer.reduce max %{{.*}} dims = [1] keep_dims : tensor<2x8xf32> -> tensor<2x1xf32>
// CHECK: glimmer.reduce min %{{.*}} dims = [0, 1] : tensor<2x8xi64> -> tensor<i64>
// CHECK: glimmer.reduce sum %{{.*}} dims = [0, 2] keep_dims : tensor<2x3x4xi32> -> tensor<1x3x1xi32>
func.func @reduce(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xi64>, %arg2: tensor<2x3x4xi32>)
    -> (tensor<2xf32>, tensor<2x1xf32>, tensor<i64>, tensor<1x3x1xi32>) {
  %0 = glimmer.reduce sum %arg0 dims = [1] : tensor<2x8xf32> -> tensor<2xf32>
  %1 = glimmer.reduce max %arg0 dims = [1] keep_dims : tensor<2x8xf32> -> tensor<2x1xf32>
  %2 = glimmer.reduce min %arg1 dims = [0, 1] : tensor<2x8xi64> -> tensor<i64>
  %3 = glimmer.reduce sum %arg2 dims = [0, 2] keep_dims : tensor<2x3x4xi32> -> tensor<1x3x1xi32>
  return %0, %1, %2, %3 : tensor<2xf32>, tensor<2x1xf32>, tensor<i64>, tensor<1x3x1xi32>
}

// -----

// sum_squares of tensors of different shapes (a scalar among them), of a
// single bf16 tensor, and of bf16 among f32 inputs under an f32 result.
// CHECK-LABEL: func.func @sum_squares
// CHECK: glimmer.sum_squares %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8xf32>, tensor<f32>, tensor<3xf32> -> tensor<f32>
// CHECK: glimmer.sum_squares %{{.*}} : tensor<4xbf16> -> tensor<bf16>
// CHECK: glimmer.sum_squares %{{.*}}, %{{.*}} : tensor<4xbf16>, tensor<3xf32> -> tensor<f32>
func.func @sum_squares(%a: tensor<2x8xf32>, %b: tensor<f32>, %c: tensor<3xf32>, %d: tensor<4xbf16>) -> (tensor<f32>, tensor<bf16>, tensor<f32>) {
  %0 = glimmer.sum_squares %a, %b, %c : tensor<2x8xf32>, tensor<f32>, tensor<3xf32> -> tensor<f32>
  %1 = glimmer.sum_squares %d : tensor<4xbf16> -> tensor<bf16>
  %2 = glimmer.sum_squares %d, %c : tensor<4xbf16>, tensor<3xf32> -> tensor<f32>
  return %0, %1, %2 : tensor<f32>, tensor<bf16>, tensor<f32>
}

// -----

// cumsum along the first and the last dimension.
// CHECK-LABEL: func.func @cumsum
// CHECK: glimmer.cumsum %{{.*}} dim = 1 : tensor<2x8xi64>
// CHECK: glimmer.cumsum %{{.*}} dim = 0 : tensor<2x8xf32>
func.func @cumsum(%arg0: tensor<2x8xi64>, %arg1: tensor<2x8xf32>) -> (tensor<2x8xi64>, tensor<2x8xf32>) {
  %0 = glimmer.cumsum %arg0 dim = 1 : tensor<2x8xi64>
  %1 = glimmer.cumsum %arg1 dim = 0 : tensor<2x8xf32>
  return %0, %1 : tensor<2x8xi64>, tensor<2x8xf32>
}

// -----

// argsort ascending along the last dimension (i64 positions of the input's
// shape) and descending along the first, of integers.
// CHECK-LABEL: func.func @argsort
// CHECK: glimmer.argsort %{{.*}} dim = 1 : tensor<2x8xf32> -> tensor<2x8xi64>
// CHECK: glimmer.argsort %{{.*}} dim = 0 descending : tensor<2x8xi32> -> tensor<2x8xi64>
func.func @argsort(%arg0: tensor<2x8xf32>, %arg1: tensor<2x8xi32>) -> (tensor<2x8xi64>, tensor<2x8xi64>) {
  %0 = glimmer.argsort %arg0 dim = 1 : tensor<2x8xf32> -> tensor<2x8xi64>
  %1 = glimmer.argsort %arg1 dim = 0 descending : tensor<2x8xi32> -> tensor<2x8xi64>
  return %0, %1 : tensor<2x8xi64>, tensor<2x8xi64>
}

// -----

// stop_gradient of a float and of an integer tensor.
// CHECK-LABEL: func.func @stop_gradient
// CHECK: glimmer.stop_gradient %{{.*}} : tensor<4x1xf32>
// CHECK: glimmer.stop_gradient %{{.*}} : tensor<3xi64>
func.func @stop_gradient(%arg0: tensor<4x1xf32>, %arg1: tensor<3xi64>) -> (tensor<4x1xf32>, tensor<3xi64>) {
  %0 = glimmer.stop_gradient %arg0 : tensor<4x1xf32>
  %1 = glimmer.stop_gradient %arg1 : tensor<3xi64>
  return %0, %1 : tensor<4x1xf32>, tensor<3xi64>
}

// -----

// iota on integer and float tensors.
// CHECK-LABEL: func.func @iota
// CHECK: glimmer.iota dim = 1 : tensor<2x8xi64>
// CHECK: glimmer.iota dim = 0 : tensor<16xf32>
func.func @iota() -> (tensor<2x8xi64>, tensor<16xf32>) {
  %0 = glimmer.iota dim = 1 : tensor<2x8xi64>
  %1 = glimmer.iota dim = 0 : tensor<16xf32>
  return %0, %1 : tensor<2x8xi64>, tensor<16xf32>
}

// -----

// reshape: splitting heads, flattening to 1-D, to and from rank 0.
// CHECK-LABEL: func.func @reshape
// CHECK: glimmer.reshape %{{.*}} : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
// CHECK: glimmer.reshape %{{.*}} : tensor<2x8x4x16xf32> -> tensor<1024xf32>
// CHECK: glimmer.reshape %{{.*}} : tensor<1x1xi64> -> tensor<i64>
// CHECK: glimmer.reshape %{{.*}} : tensor<i64> -> tensor<1xi64>
func.func @reshape(%arg0: tensor<2x8x64xf32>, %arg1: tensor<1x1xi64>) -> (tensor<1024xf32>, tensor<1xi64>) {
  %0 = glimmer.reshape %arg0 : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %1 = glimmer.reshape %0 : tensor<2x8x4x16xf32> -> tensor<1024xf32>
  %2 = glimmer.reshape %arg1 : tensor<1x1xi64> -> tensor<i64>
  %3 = glimmer.reshape %2 : tensor<i64> -> tensor<1xi64>
  return %1, %3 : tensor<1024xf32>, tensor<1xi64>
}

// -----

// transpose: swapping heads and sequence, and a full reversal.
// CHECK-LABEL: func.func @transpose
// CHECK: glimmer.transpose %{{.*}} permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
// CHECK: glimmer.transpose %{{.*}} permutation = [2, 1, 0] : tensor<2x3x4xi64> -> tensor<4x3x2xi64>
func.func @transpose(%arg0: tensor<2x8x4x16xf32>, %arg1: tensor<2x3x4xi64>) -> (tensor<2x4x8x16xf32>, tensor<4x3x2xi64>) {
  %0 = glimmer.transpose %arg0 permutation = [0, 2, 1, 3] : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>
  %1 = glimmer.transpose %arg1 permutation = [2, 1, 0] : tensor<2x3x4xi64> -> tensor<4x3x2xi64>
  return %0, %1 : tensor<2x4x8x16xf32>, tensor<4x3x2xi64>
}

// -----

// broadcast_in_dim: new leading dim, size-1 expansion, scalar (empty dims).
// CHECK-LABEL: func.func @broadcast_in_dim
// CHECK: glimmer.broadcast_in_dim %{{.*}} dims = [1] : tensor<8xf32> -> tensor<2x8xf32>
// CHECK: glimmer.broadcast_in_dim %{{.*}} dims = [0, 1] : tensor<2x1xf32> -> tensor<2x8xf32>
// CHECK: glimmer.broadcast_in_dim %{{.*}} dims = [] : tensor<i64> -> tensor<2x8xi64>
func.func @broadcast_in_dim(%arg0: tensor<8xf32>, %arg1: tensor<2x1xf32>, %arg2: tensor<i64>)
    -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi64>) {
  %0 = glimmer.broadcast_in_dim %arg0 dims = [1] : tensor<8xf32> -> tensor<2x8xf32>
  %1 = glimmer.broadcast_in_dim %arg1 dims = [0, 1] : tensor<2x1xf32> -> tensor<2x8xf32>
  %2 = glimmer.broadcast_in_dim %arg2 dims = [] : tensor<i64> -> tensor<2x8xi64>
  return %0, %1, %2 : tensor<2x8xf32>, tensor<2x8xf32>, tensor<2x8xi64>
}

// -----

// slice: unit stride, non-dividing stride (rounds up), and an empty slice.
// CHECK-LABEL: func.func @slice
// CHECK: glimmer.slice %{{.*}} start = [0, 1] limit = [2, 8] stride = [1, 1] : tensor<2x8xi64> -> tensor<2x7xi64>
// CHECK: glimmer.slice %{{.*}} start = [0, 1] limit = [2, 8] stride = [1, 3] : tensor<2x8xi64> -> tensor<2x3xi64>
// CHECK: glimmer.slice %{{.*}} start = [4] limit = [4] stride = [1] : tensor<8xf32> -> tensor<0xf32>
func.func @slice(%arg0: tensor<2x8xi64>, %arg1: tensor<8xf32>) -> (tensor<2x7xi64>, tensor<2x3xi64>, tensor<0xf32>) {
  %0 = glimmer.slice %arg0 start = [0, 1] limit = [2, 8] stride = [1, 1] : tensor<2x8xi64> -> tensor<2x7xi64>
  %1 = glimmer.slice %arg0 start = [0, 1] limit = [2, 8] stride = [1, 3] : tensor<2x8xi64> -> tensor<2x3xi64>
  %2 = glimmer.slice %arg1 start = [4] limit = [4] stride = [1] : tensor<8xf32> -> tensor<0xf32>
  return %0, %1, %2 : tensor<2x7xi64>, tensor<2x3xi64>, tensor<0xf32>
}

// -----

// concat: two inputs of different extents, three inputs, and a single input.
// CHECK-LABEL: func.func @concat
// CHECK: glimmer.concat %{{.*}}, %{{.*}} dim = 1 : tensor<2x1x16xf32>, tensor<2x4x16xf32> -> tensor<2x5x16xf32>
// CHECK: glimmer.concat %{{.*}}, %{{.*}}, %{{.*}} dim = 0 : tensor<2xi64>, tensor<2xi64>, tensor<2xi64> -> tensor<6xi64>
// CHECK: glimmer.concat %{{.*}} dim = 0 : tensor<2xi64> -> tensor<2xi64>
func.func @concat(%arg0: tensor<2x1x16xf32>, %arg1: tensor<2x4x16xf32>, %arg2: tensor<2xi64>)
    -> (tensor<2x5x16xf32>, tensor<6xi64>, tensor<2xi64>) {
  %0 = glimmer.concat %arg0, %arg1 dim = 1 : tensor<2x1x16xf32>, tensor<2x4x16xf32> -> tensor<2x5x16xf32>
  %1 = glimmer.concat %arg2, %arg2, %arg2 dim = 0 : tensor<2xi64>, tensor<2xi64>, tensor<2xi64> -> tensor<6xi64>
  %2 = glimmer.concat %arg2 dim = 0 : tensor<2xi64> -> tensor<2xi64>
  return %0, %1, %2 : tensor<2x5x16xf32>, tensor<6xi64>, tensor<2xi64>
}

// -----

// pad: high-only with a negative fill, and both sides of a float tensor.
// CHECK-LABEL: func.func @pad
// CHECK: glimmer.pad %{{.*}} low = [0, 0] high = [0, 1] value = -1.000000e+02 : tensor<2x7xi64> -> tensor<2x8xi64>
// CHECK: glimmer.pad %{{.*}} low = [1, 2] high = [3, 0] value = 0.000000e+00 : tensor<2x2xf32> -> tensor<6x4xf32>
func.func @pad(%arg0: tensor<2x7xi64>, %arg1: tensor<2x2xf32>) -> (tensor<2x8xi64>, tensor<6x4xf32>) {
  %0 = glimmer.pad %arg0 low = [0, 0] high = [0, 1] value = -100.0 : tensor<2x7xi64> -> tensor<2x8xi64>
  %1 = glimmer.pad %arg1 low = [1, 2] high = [3, 0] value = 0.0 : tensor<2x2xf32> -> tensor<6x4xf32>
  return %0, %1 : tensor<2x8xi64>, tensor<6x4xf32>
}

// -----

// microbatch_slice keeps the current micro-batch's samples; the index is the
// function's micro-batch argument.
// CHECK-LABEL: func.func @microbatch_of_batch
// CHECK: glimmer.microbatch_slice %{{.*}}[%{{.*}}] pieces = 4 dim = 0 : tensor<8x16xi64>, tensor<i64> -> tensor<2x16xi64>
func.func @microbatch_of_batch(%x: tensor<8x16xi64>, %mb: tensor<i64> {glimmer.microbatch}) -> tensor<2x16xi64> {
  %0 = glimmer.microbatch_slice %x[%mb] pieces = 4 dim = 0 : tensor<8x16xi64>, tensor<i64> -> tensor<2x16xi64>
  return %0 : tensor<2x16xi64>
}

// -----

// fusion: a body over its block arguments, two results of one shape.
// CHECK-LABEL: func.func @fusion_two_results
// CHECK: %{{.*}}:2 = glimmer.fusion(%{{.*}}, %{{.*}}) : (tensor<8x4xbf16>, tensor<4xbf16>) -> (tensor<8x4xbf16>, tensor<8x4xbf16>) {
// CHECK: ^bb0(%{{.*}}: tensor<8x4xbf16>, %{{.*}}: tensor<4xbf16>):
// CHECK: glimmer.yield %{{.*}}, %{{.*}} : tensor<8x4xbf16>, tensor<8x4xbf16>
func.func @fusion_two_results(%x: tensor<8x4xbf16>, %w: tensor<4xbf16>) -> (tensor<8x4xbf16>, tensor<8x4xbf16>) {
  %r:2 = glimmer.fusion(%x, %w) : (tensor<8x4xbf16>, tensor<4xbf16>) -> (tensor<8x4xbf16>, tensor<8x4xbf16>) {
  ^bb0(%a: tensor<8x4xbf16>, %b: tensor<4xbf16>):
    %wb = glimmer.broadcast_in_dim %b dims = [1] : tensor<4xbf16> -> tensor<8x4xbf16>
    %m = glimmer.mul %a, %wb : tensor<8x4xbf16>
    %s = glimmer.silu %m : tensor<8x4xbf16>
    glimmer.yield %m, %s : tensor<8x4xbf16>, tensor<8x4xbf16>
  }
  return %r#0, %r#1 : tensor<8x4xbf16>, tensor<8x4xbf16>
}

// -----

// The trigonometric, hyperbolic, expm1/log1p, abs and rounding ops.
// CHECK-LABEL: func.func @unary_math
// CHECK: glimmer.tan %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.asin %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.acos %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.atan %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.sinh %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.cosh %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.asinh %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.acosh %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.atanh %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.expm1 %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.log1p %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.abs %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.floor %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.ceil %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.trunc %{{.*}} : tensor<2x8xf64>
// CHECK: glimmer.round %{{.*}} : tensor<2x8xf64>
func.func @unary_math(%arg0: tensor<2x8xf64>) -> tensor<2x8xf64> {
  %0 = glimmer.tan %arg0 : tensor<2x8xf64>
  %1 = glimmer.asin %0 : tensor<2x8xf64>
  %2 = glimmer.acos %1 : tensor<2x8xf64>
  %3 = glimmer.atan %2 : tensor<2x8xf64>
  %4 = glimmer.sinh %3 : tensor<2x8xf64>
  %5 = glimmer.cosh %4 : tensor<2x8xf64>
  %6 = glimmer.asinh %5 : tensor<2x8xf64>
  %7 = glimmer.acosh %6 : tensor<2x8xf64>
  %8 = glimmer.atanh %7 : tensor<2x8xf64>
  %9 = glimmer.expm1 %8 : tensor<2x8xf64>
  %10 = glimmer.log1p %9 : tensor<2x8xf64>
  %11 = glimmer.abs %10 : tensor<2x8xf64>
  %12 = glimmer.floor %11 : tensor<2x8xf64>
  %13 = glimmer.ceil %12 : tensor<2x8xf64>
  %14 = glimmer.trunc %13 : tensor<2x8xf64>
  %15 = glimmer.round %14 : tensor<2x8xf64>
  return %15 : tensor<2x8xf64>
}
