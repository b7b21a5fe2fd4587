// RUN: glimmer-opt %s -split-input-file -canonicalize | FileCheck %s

// Folders of the glimmer dialect: identity converts (and exact round
// trips) and reshapes fold away, constants are kept and uniqued.

// A convert to the operand's own type folds to the operand.
// CHECK-LABEL: func.func @convert_same_type_folds
// CHECK-SAME: (%[[ARG:.*]]: tensor<2x8xf32>)
// CHECK-NOT: glimmer.convert
// CHECK: return %[[ARG]] : tensor<2x8xf32>
func.func @convert_same_type_folds(%arg0: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = glimmer.convert %arg0 : tensor<2x8xf32> to tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A convert that changes the element type is kept.
// CHECK-LABEL: func.func @convert_other_type_kept
// CHECK: %[[C:.*]] = glimmer.convert %{{.*}} : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK: return %[[C]] : tensor<2x8xf32>
func.func @convert_other_type_kept(%arg0: tensor<2x8xbf16>) -> tensor<2x8xf32> {
  %0 = glimmer.convert %arg0 : tensor<2x8xbf16> to tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// bf16 -> f32 -> f32 -> bf16: the identity convert folds, then the exact
// widening and the narrowing back to bf16 (mixed precision's backward).
// CHECK-LABEL: func.func @convert_round_trip_folds
// CHECK-SAME: (%[[ARG:.*]]: tensor<4xbf16>)
// CHECK-NOT: glimmer.convert
// CHECK: return %[[ARG]] : tensor<4xbf16>
func.func @convert_round_trip_folds(%arg0: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = glimmer.convert %arg0 : tensor<4xbf16> to tensor<4xf32>
  %1 = glimmer.convert %0 : tensor<4xf32> to tensor<4xf32>
  %2 = glimmer.convert %1 : tensor<4xf32> to tensor<4xbf16>
  return %2 : tensor<4xbf16>
}

// -----

// f32 -> bf16 -> f32 rounds: kept.
// CHECK-LABEL: func.func @convert_rounding_round_trip_kept
// CHECK: %[[DOWN:.*]] = glimmer.convert %{{.*}} : tensor<4xf32> to tensor<4xbf16>
// CHECK-NEXT: %[[UP:.*]] = glimmer.convert %[[DOWN]] : tensor<4xbf16> to tensor<4xf32>
// CHECK-NEXT: return %[[UP]] : tensor<4xf32>
func.func @convert_rounding_round_trip_kept(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %0 = glimmer.convert %arg0 : tensor<4xf32> to tensor<4xbf16>
  %1 = glimmer.convert %0 : tensor<4xbf16> to tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// A reshape to the operand's own type folds to the operand.
// CHECK-LABEL: func.func @reshape_same_type_folds
// CHECK-SAME: (%[[ARG:.*]]: tensor<2x8x64xf32>)
// CHECK-NOT: glimmer.reshape
// CHECK: return %[[ARG]] : tensor<2x8x64xf32>
func.func @reshape_same_type_folds(%arg0: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %0 = glimmer.reshape %arg0 : tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  return %0 : tensor<2x8x64xf32>
}

// -----

// A shape-changing reshape is kept; the identity reshape after it folds.
// CHECK-LABEL: func.func @reshape_other_shape_kept
// CHECK: %[[R:.*]] = glimmer.reshape %{{.*}} : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
// CHECK-NOT: glimmer.reshape
// CHECK: return %[[R]] : tensor<2x8x4x16xf32>
func.func @reshape_other_shape_kept(%arg0: tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32> {
  %0 = glimmer.reshape %arg0 : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %1 = glimmer.reshape %0 : tensor<2x8x4x16xf32> -> tensor<2x8x4x16xf32>
  return %1 : tensor<2x8x4x16xf32>
}

// -----

// A reshape and its inverse are not folded together (no such pattern).
// CHECK-LABEL: func.func @reshape_inverse_pair_kept
// CHECK: %[[A:.*]] = glimmer.reshape %{{.*}} : tensor<2x8xf32> -> tensor<16xf32>
// CHECK: %[[B:.*]] = glimmer.reshape %[[A]] : tensor<16xf32> -> tensor<2x8xf32>
// CHECK: return %[[B]]
func.func @reshape_inverse_pair_kept(%arg0: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = glimmer.reshape %arg0 : tensor<2x8xf32> -> tensor<16xf32>
  %1 = glimmer.reshape %0 : tensor<16xf32> -> tensor<2x8xf32>
  return %1 : tensor<2x8xf32>
}

// -----

// A used constant stays; identical constants are uniqued into one.
// CHECK-LABEL: func.func @constants_uniqued
// CHECK: %[[C:.*]] = glimmer.constant dense<5.000000e-01> : tensor<4xf32>
// CHECK-NOT: glimmer.constant
// CHECK: %[[S:.*]] = glimmer.add %[[C]], %[[C]] : tensor<4xf32>
// CHECK: return %[[S]] : tensor<4xf32>
func.func @constants_uniqued() -> tensor<4xf32> {
  %0 = glimmer.constant dense<0.5> : tensor<4xf32>
  %1 = glimmer.constant dense<0.5> : tensor<4xf32>
  %2 = glimmer.add %0, %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Different constants, or equal values of different types, stay distinct.
// CHECK-LABEL: func.func @constants_distinct
// CHECK-DAG: glimmer.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK-DAG: glimmer.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-DAG: glimmer.constant dense<1> : tensor<4xi64>
// CHECK: return
func.func @constants_distinct() -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi64>) {
  %0 = glimmer.constant dense<1.0> : tensor<4xf32>
  %1 = glimmer.constant dense<2.0> : tensor<4xf32>
  %2 = glimmer.constant dense<1> : tensor<4xi64>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xi64>
}

// -----

// An unused constant is erased (it is Pure).
// CHECK-LABEL: func.func @unused_constant_erased
// CHECK-NOT: glimmer.constant
// CHECK: return %{{.*}} : tensor<2xi64>
func.func @unused_constant_erased(%arg0: tensor<2xi64>) -> tensor<2xi64> {
  %0 = glimmer.constant dense<[1, 2]> : tensor<2xi64>
  return %arg0 : tensor<2xi64>
}

// -----

// An identity convert of a constant folds to the constant.
// CHECK-LABEL: func.func @convert_of_constant
// CHECK: %[[C:.*]] = glimmer.constant dense<[1, 2, 3]> : tensor<3xi64>
// CHECK-NOT: glimmer.convert
// CHECK: return %[[C]] : tensor<3xi64>
func.func @convert_of_constant() -> tensor<3xi64> {
  %0 = glimmer.constant dense<[1, 2, 3]> : tensor<3xi64>
  %1 = glimmer.convert %0 : tensor<3xi64> to tensor<3xi64>
  return %1 : tensor<3xi64>
}
