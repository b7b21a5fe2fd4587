// RUN: glimmer-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the glimmer dialect's elementwise and shape ops, its
// attributes (#glimmer.mesh, #glimmer.sharding, #glimmer.spmd) and the
// dialect-level attribute verifier.

//===----------------------------------------------------------------------===//
// ODS-generated type and attribute constraints
//===----------------------------------------------------------------------===//

// Dynamic shapes are rejected: every glimmer tensor is statically shaped.
func.func @dynamic_shape(%arg0: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'glimmer.neg' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<?x8xf32>'}}
  %0 = glimmer.neg %arg0 : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Unary float ops reject integer tensors.
func.func @unary_integer_operand(%arg0: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'glimmer.exp' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float values, but got 'tensor<4xi32>'}}
  %0 = glimmer.exp %arg0 : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Binary ops reject boolean tensors (numeric only).
func.func @binary_bool_operand(%arg0: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'glimmer.add' op operand #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = glimmer.add %arg0, %arg0 : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// Element types outside the supported set (i8) are rejected.
func.func @constant_unsupported_element_type() -> tensor<4xi8> {
  // expected-error @+1 {{'glimmer.constant' op result #0 must be statically shaped tensor of 16-bit float or bfloat16 type or 32-bit float or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = glimmer.constant dense<1> : tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// The constant's value and result must have the same type.
func.func @constant_type_mismatch() -> tensor<4xf64> {
  // expected-error @+1 {{'glimmer.constant' op failed to verify that all of {value, output} have same type}}
  %0 = "glimmer.constant"() <{value = dense<1.0> : tensor<4xf32>}> : () -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// Binary ops need identical operand and result types.
func.func @binary_type_mismatch(%arg0: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'glimmer.add' op requires the same type for all operands and results}}
  %0 = "glimmer.add"(%arg0, %arg0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// An unknown reduction kind keyword.
func.func @reduce_unknown_kind(%arg0: tensor<2x8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'kind' [sum, max, min]}}
  %0 = glimmer.reduce prod %arg0 dims = [1] : tensor<2x8xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// An unknown gelu approximation keyword.
func.func @gelu_unknown_approximation(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'approximate' [none, tanh]}}
  %0 = glimmer.gelu %arg0 approximate = fast : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An out-of-range enum value in the generic form.
func.func @compare_direction_out_of_range(%arg0: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error @+1 {{invalid properties {direction = 9 : i32} for op glimmer.compare: Invalid attribute `direction` in property conversion: 9 : i32}}
  %0 = "glimmer.compare"(%arg0, %arg0) <{direction = 9 : i32}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// compare's result must be i1 of the operands' shape.
func.func @compare_wrong_result_shape(%arg0: tensor<4xf32>) -> tensor<5xi1> {
  // expected-error @+1 {{'glimmer.compare' op failed to verify that result is i1 of the operands' shape}}
  %0 = "glimmer.compare"(%arg0, %arg0) <{direction = 0 : i32}> : (tensor<4xf32>, tensor<4xf32>) -> tensor<5xi1>
  return %0 : tensor<5xi1>
}

// -----

// compare's operands must have the same type.
func.func @compare_operand_mismatch(%arg0: tensor<4xf32>, %arg1: tensor<4xf16>) -> tensor<4xi1> {
  // expected-error @+1 {{'glimmer.compare' op failed to verify that all of {lhs, rhs} have same type}}
  %0 = "glimmer.compare"(%arg0, %arg1) <{direction = 0 : i32}> : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// glimmer.mesh must be a direct child of a module.
func.func @mesh_not_in_module() {
  // expected-error @+1 {{'glimmer.mesh' op expects parent op 'builtin.module'}}
  glimmer.mesh @mesh = <["cp"=2]>
  return
}

// -----

// The mesh op's attribute must be a #glimmer.mesh.
// expected-error @+1 {{invalid properties {mesh = 2 : i64, sym_name = "mesh"} for op glimmer.mesh: Invalid attribute `mesh` in property conversion: 2 : i64}}
"glimmer.mesh"() <{sym_name = "mesh", mesh = 2 : i64}> : () -> ()

//===----------------------------------------------------------------------===//
// Elementwise and shape op verifiers
//===----------------------------------------------------------------------===//

// -----

// select's condition must have the shape of the values (Elementwise trait).
func.func @select_condition_shape(%cond: tensor<2x4xi1>, %a: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.select' op all non-scalar operands/results must have the same shape and base type}}
  %0 = glimmer.select %cond, %a, %a : tensor<2x4xi1>, tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// convert may change the element type but not the shape (Elementwise trait).
func.func @convert_shape_change(%arg0: tensor<2x8xf32>) -> tensor<8x2xf16> {
  // expected-error @+1 {{'glimmer.convert' op all non-scalar operands/results must have the same shape and base type}}
  %0 = glimmer.convert %arg0 : tensor<2x8xf32> to tensor<8x2xf16>
  return %0 : tensor<8x2xf16>
}

// -----

// sum_squares needs at least one input.
func.func @sum_squares_no_inputs() -> tensor<f32> {
  // expected-error @+1 {{'glimmer.sum_squares' op expects at least one input}}
  %0 = "glimmer.sum_squares"() : () -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// sum_squares' inputs have the result's element type (an f64 input is not
// narrowed into an f32 sum) ...
func.func @sum_squares_mixed_types(%a: tensor<2xf32>, %b: tensor<2xf64>) -> tensor<f32> {
  // expected-error @+1 {{'glimmer.sum_squares' op input #1 of type 'tensor<2xf64>' is neither of the result's element type 'f32' nor bf16 under an f32 result}}
  %0 = glimmer.sum_squares %a, %b : tensor<2xf32>, tensor<2xf64> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// ... or are bf16 under an f32 result only (not under f64).
func.func @sum_squares_bf16_into_f64(%a: tensor<2xbf16>) -> tensor<f64> {
  // expected-error @+1 {{'glimmer.sum_squares' op input #0 of type 'tensor<2xbf16>' is neither of the result's element type 'f64' nor bf16 under an f32 result}}
  %0 = glimmer.sum_squares %a : tensor<2xbf16> -> tensor<f64>
  return %0 : tensor<f64>
}

// -----

// sum_squares' result is a scalar ...
func.func @sum_squares_not_scalar(%a: tensor<2xf32>) -> tensor<1xf32> {
  // expected-error @+1 {{'glimmer.sum_squares' op expects result of shape []}}
  %0 = glimmer.sum_squares %a : tensor<2xf32> -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

// ... of the inputs' element type (or f32 for bf16 inputs).
func.func @sum_squares_result_type(%a: tensor<2xf32>) -> tensor<f64> {
  // expected-error @+1 {{'glimmer.sum_squares' op input #0 of type 'tensor<2xf32>' is neither of the result's element type 'f64' nor bf16 under an f32 result}}
  %0 = glimmer.sum_squares %a : tensor<2xf32> -> tensor<f64>
  return %0 : tensor<f64>
}

// -----

// reduce needs at least one dimension.
func.func @reduce_no_dims(%arg0: tensor<2x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.reduce' op expects at least one dimension to reduce}}
  %0 = glimmer.reduce sum %arg0 dims = [] : tensor<2x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A reduced dimension beyond the input's rank.
func.func @reduce_dim_out_of_range(%arg0: tensor<2x8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'glimmer.reduce' op dim 2 is out of range for rank 2}}
  %0 = glimmer.reduce sum %arg0 dims = [2] : tensor<2x8xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Reduced dimensions must be sorted.
func.func @reduce_dims_unsorted(%arg0: tensor<2x8xf32>) -> tensor<f32> {
  // expected-error @+1 {{'glimmer.reduce' op expects dims sorted and unique, got [1, 0]}}
  %0 = glimmer.reduce sum %arg0 dims = [1, 0] : tensor<2x8xf32> -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Reduced dimensions must be unique.
func.func @reduce_dims_repeated(%arg0: tensor<2x8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'glimmer.reduce' op expects dims sorted and unique, got [1, 1]}}
  %0 = glimmer.reduce max %arg0 dims = [1, 1] : tensor<2x8xf32> -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Without keep_dims the reduced dimension disappears.
func.func @reduce_result_shape(%arg0: tensor<2x8xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'glimmer.reduce' op expects result of shape [2], got [2, 1]}}
  %0 = glimmer.reduce sum %arg0 dims = [1] : tensor<2x8xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// reduce keeps the element type.
func.func @reduce_element_type(%arg0: tensor<2x8xf32>) -> tensor<2xf16> {
  // expected-error @+1 {{'glimmer.reduce' op expects input and result to have the same element type, got 'f32' and 'f16'}}
  %0 = glimmer.reduce sum %arg0 dims = [1] : tensor<2x8xf32> -> tensor<2xf16>
  return %0 : tensor<2xf16>
}

// -----

// A negative cumsum dimension.
func.func @cumsum_negative_dim(%arg0: tensor<2x8xi64>) -> tensor<2x8xi64> {
  // expected-error @+1 {{'glimmer.cumsum' op dim -1 is out of range for rank 2}}
  %0 = glimmer.cumsum %arg0 dim = -1 : tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

// -----

// argsort's dimension must lie in the input's rank.
func.func @argsort_dim(%arg0: tensor<2x8xf32>) -> tensor<2x8xi64> {
  // expected-error @+1 {{'glimmer.argsort' op dim 2 is out of range for rank 2}}
  %0 = glimmer.argsort %arg0 dim = 2 : tensor<2x8xf32> -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

// -----

// A zero-dim tensor has no dimension to sort.
func.func @argsort_scalar(%arg0: tensor<f32>) -> tensor<i64> {
  // expected-error @+1 {{'glimmer.argsort' op dim 0 is out of range for rank 0}}
  %0 = glimmer.argsort %arg0 dim = 0 : tensor<f32> -> tensor<i64>
  return %0 : tensor<i64>
}

// -----

// argsort's positions are i64 of the input's shape.
func.func @argsort_result(%arg0: tensor<2x8xf32>) -> tensor<2x8xi32> {
  // expected-error @+1 {{'glimmer.argsort' op expects result of type 'tensor<2x8xi64>', got 'tensor<2x8xi32>'}}
  %0 = glimmer.argsort %arg0 dim = 1 : tensor<2x8xf32> -> tensor<2x8xi32>
  return %0 : tensor<2x8xi32>
}

// -----

// stop_gradient returns its operand's type.
func.func @stop_gradient_type(%arg0: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error @+1 {{'glimmer.stop_gradient' op requires the same type for all operands and results}}
  %0 = "glimmer.stop_gradient"(%arg0) : (tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// iota has no dimension to count along on a scalar.
func.func @iota_scalar() -> tensor<i64> {
  // expected-error @+1 {{'glimmer.iota' op dim 0 is out of range for rank 0}}
  %0 = glimmer.iota dim = 0 : tensor<i64>
  return %0 : tensor<i64>
}

// -----

// reshape must preserve the number of elements.
func.func @reshape_element_count(%arg0: tensor<2x8xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'glimmer.reshape' op cannot reshape 16 elements [2, 8] into 15 elements [3, 5]}}
  %0 = glimmer.reshape %arg0 : tensor<2x8xf32> -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// reshape must preserve the element type.
func.func @reshape_element_type(%arg0: tensor<2x8xf32>) -> tensor<16xi32> {
  // expected-error @+1 {{'glimmer.reshape' op expects input and result to have the same element type, got 'f32' and 'i32'}}
  %0 = glimmer.reshape %arg0 : tensor<2x8xf32> -> tensor<16xi32>
  return %0 : tensor<16xi32>
}

// -----

// The permutation must name every dimension.
func.func @transpose_permutation_length(%arg0: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  // expected-error @+1 {{'glimmer.transpose' op expects a permutation of 3 dimensions, got [1, 0]}}
  %0 = glimmer.transpose %arg0 permutation = [1, 0] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}

// -----

// A repeated entry is not a permutation.
func.func @transpose_not_a_permutation(%arg0: tensor<2x3x4xf32>) -> tensor<2x2x3xf32> {
  // expected-error @+1 {{'glimmer.transpose' op permutation [0, 0, 1] is not a permutation of [0, 3)}}
  %0 = glimmer.transpose %arg0 permutation = [0, 0, 1] : tensor<2x3x4xf32> -> tensor<2x2x3xf32>
  return %0 : tensor<2x2x3xf32>
}

// -----

// A permutation entry beyond the rank.
func.func @transpose_entry_out_of_range(%arg0: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'glimmer.transpose' op permutation [1, 2] is not a permutation of [0, 2)}}
  %0 = glimmer.transpose %arg0 permutation = [1, 2] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// The result shape must be the permuted input shape.
func.func @transpose_result_shape(%arg0: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{'glimmer.transpose' op expects result of shape [4, 3, 2], got [2, 3, 4]}}
  %0 = glimmer.transpose %arg0 permutation = [2, 1, 0] : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// broadcast_in_dim needs one entry per input dimension.
func.func @broadcast_dims_length(%arg0: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.broadcast_in_dim' op expects one result dimension per input dimension (1), got [0, 1]}}
  %0 = glimmer.broadcast_in_dim %arg0 dims = [0, 1] : tensor<8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// A broadcast dimension beyond the result's rank.
func.func @broadcast_dim_out_of_range(%arg0: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.broadcast_in_dim' op broadcast dimension 2 is out of range for rank 2}}
  %0 = glimmer.broadcast_in_dim %arg0 dims = [2] : tensor<8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Broadcast dimensions must be strictly increasing (no transposition).
func.func @broadcast_dims_not_increasing(%arg0: tensor<8x2xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.broadcast_in_dim' op expects strictly increasing dims, got [1, 0]}}
  %0 = glimmer.broadcast_in_dim %arg0 dims = [1, 0] : tensor<8x2xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Only size-1 dimensions can be expanded.
func.func @broadcast_size_mismatch(%arg0: tensor<4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.broadcast_in_dim' op cannot broadcast input dimension 0 of size 4 to result dimension 1 of size 8}}
  %0 = glimmer.broadcast_in_dim %arg0 dims = [1] : tensor<4xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// broadcast_in_dim keeps the element type.
func.func @broadcast_element_type(%arg0: tensor<8xf32>) -> tensor<2x8xbf16> {
  // expected-error @+1 {{'glimmer.broadcast_in_dim' op expects input and result to have the same element type, got 'f32' and 'bf16'}}
  %0 = glimmer.broadcast_in_dim %arg0 dims = [1] : tensor<8xf32> -> tensor<2x8xbf16>
  return %0 : tensor<2x8xbf16>
}

// -----

// slice bounds must have one entry per dimension.
func.func @slice_bounds_length(%arg0: tensor<2x8xi64>) -> tensor<2x7xi64> {
  // expected-error @+1 {{'glimmer.slice' op expects start, limit and stride of length 2}}
  %0 = glimmer.slice %arg0 start = [0, 1] limit = [2, 8] stride = [1] : tensor<2x8xi64> -> tensor<2x7xi64>
  return %0 : tensor<2x7xi64>
}

// -----

// A zero stride.
func.func @slice_zero_stride(%arg0: tensor<2x8xi64>) -> tensor<2x7xi64> {
  // expected-error @+1 {{'glimmer.slice' op stride of dimension 1 must be positive, got 0}}
  %0 = glimmer.slice %arg0 start = [0, 1] limit = [2, 8] stride = [1, 0] : tensor<2x8xi64> -> tensor<2x7xi64>
  return %0 : tensor<2x7xi64>
}

// -----

// A limit past the end of the dimension.
func.func @slice_limit_out_of_bounds(%arg0: tensor<2x8xi64>) -> tensor<2x9xi64> {
  // expected-error @+1 {{'glimmer.slice' op slice [0, 9) of dimension 1 is out of bounds for size 8}}
  %0 = glimmer.slice %arg0 start = [0, 0] limit = [2, 9] stride = [1, 1] : tensor<2x8xi64> -> tensor<2x9xi64>
  return %0 : tensor<2x9xi64>
}

// -----

// A start after the limit.
func.func @slice_start_after_limit(%arg0: tensor<8xi64>) -> tensor<0xi64> {
  // expected-error @+1 {{'glimmer.slice' op slice [5, 3) of dimension 0 is out of bounds for size 8}}
  %0 = glimmer.slice %arg0 start = [5] limit = [3] stride = [1] : tensor<8xi64> -> tensor<0xi64>
  return %0 : tensor<0xi64>
}

// -----

// A strided slice rounds up: [1, 8) with stride 3 keeps 3 elements, not 2.
func.func @slice_result_shape(%arg0: tensor<8xi64>) -> tensor<2xi64> {
  // expected-error @+1 {{'glimmer.slice' op expects result of shape [3], got [2]}}
  %0 = glimmer.slice %arg0 start = [1] limit = [8] stride = [3] : tensor<8xi64> -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

// concat without inputs (only expressible in the generic form).
func.func @concat_no_inputs() -> tensor<0xf32> {
  // expected-error @+1 {{'glimmer.concat' op expects at least one input}}
  %0 = "glimmer.concat"() <{dim = 0 : i64}> : () -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

// A concatenation dimension beyond the rank.
func.func @concat_dim_out_of_range(%arg0: tensor<2x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.concat' op dim 2 is out of range for rank 2}}
  %0 = glimmer.concat %arg0, %arg0 dim = 2 : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Inputs of different ranks.
func.func @concat_rank_mismatch(%arg0: tensor<2x4xf32>, %arg1: tensor<2x4x1xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'glimmer.concat' op input #1 of type 'tensor<2x4x1xf32>' does not match input #0 of type 'tensor<2x4xf32>'}}
  %0 = glimmer.concat %arg0, %arg1 dim = 0 : tensor<2x4xf32>, tensor<2x4x1xf32> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Inputs of different element types.
func.func @concat_element_type_mismatch(%arg0: tensor<2x4xf32>, %arg1: tensor<2x4xf16>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'glimmer.concat' op input #1 of type 'tensor<2x4xf16>' does not match input #0 of type 'tensor<2x4xf32>'}}
  %0 = glimmer.concat %arg0, %arg1 dim = 0 : tensor<2x4xf32>, tensor<2x4xf16> -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Inputs must agree outside the concatenation dimension.
func.func @concat_other_dim_mismatch(%arg0: tensor<2x4xf32>, %arg1: tensor<3x4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.concat' op input #1 differs from input #0 in dimension 0 (3 vs 2)}}
  %0 = glimmer.concat %arg0, %arg1 dim = 1 : tensor<2x4xf32>, tensor<3x4xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// The result's concatenated extent must be the sum of the inputs'.
func.func @concat_result_shape(%arg0: tensor<2x1x16xf32>, %arg1: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'glimmer.concat' op expects result of shape [2, 5, 16], got [2, 4, 16]}}
  %0 = glimmer.concat %arg0, %arg1 dim = 1 : tensor<2x1x16xf32>, tensor<2x4x16xf32> -> tensor<2x4x16xf32>
  return %0 : tensor<2x4x16xf32>
}

// -----

// concat keeps the element type.
func.func @concat_result_element_type(%arg0: tensor<2xi64>) -> tensor<4xi32> {
  // expected-error @+1 {{'glimmer.concat' op expects inputs and result to have the same element type, got 'i64' and 'i32'}}
  %0 = glimmer.concat %arg0, %arg0 dim = 0 : tensor<2xi64>, tensor<2xi64> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// pad needs low and high entries for every dimension.
func.func @pad_length(%arg0: tensor<2x7xi64>) -> tensor<2x8xi64> {
  // expected-error @+1 {{'glimmer.pad' op expects low and high padding of length 2}}
  %0 = glimmer.pad %arg0 low = [0, 0] high = [1] value = 0.0 : tensor<2x7xi64> -> tensor<2x8xi64>
  return %0 : tensor<2x8xi64>
}

// -----

// Negative padding (cropping) is not supported.
func.func @pad_negative(%arg0: tensor<2x7xi64>) -> tensor<1x7xi64> {
  // expected-error @+1 {{'glimmer.pad' op padding of dimension 0 must be non-negative}}
  %0 = glimmer.pad %arg0 low = [-1, 0] high = [0, 0] value = 0.0 : tensor<2x7xi64> -> tensor<1x7xi64>
  return %0 : tensor<1x7xi64>
}

// -----

// The padded shape is input + low + high.
func.func @pad_result_shape(%arg0: tensor<2x7xi64>) -> tensor<2x9xi64> {
  // expected-error @+1 {{'glimmer.pad' op expects result of shape [2, 8], got [2, 9]}}
  %0 = glimmer.pad %arg0 low = [0, 0] high = [0, 1] value = -100.0 : tensor<2x7xi64> -> tensor<2x9xi64>
  return %0 : tensor<2x9xi64>
}

// -----

// pad keeps the element type.
func.func @pad_element_type(%arg0: tensor<2x7xi64>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'glimmer.pad' op expects input and result to have the same element type, got 'i64' and 'f32'}}
  %0 = glimmer.pad %arg0 low = [0, 0] high = [0, 1] value = 0.0 : tensor<2x7xi64> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

//===----------------------------------------------------------------------===//
// #glimmer.mesh
//===----------------------------------------------------------------------===//

// -----

// A mesh axis with an empty name.
module {
  // expected-error @+1 {{mesh axis names must be non-empty}}
  glimmer.mesh @mesh = <[""=2]>
}

// -----

// A mesh axis declared twice.
module {
  // expected-error @+1 {{mesh axis "cp" is declared twice}}
  glimmer.mesh @mesh = <["cp"=2, "tp"=2, "cp"=4]>
}

// -----

// A mesh axis of size zero.
module {
  // expected-error @+1 {{mesh axis "tp" must have a positive size, got 0}}
  glimmer.mesh @mesh = <["cp"=2, "tp"=0]>
}

// -----

// A mesh axis of negative size, written as a standalone attribute.
// expected-error @+1 {{mesh axis "cp" must have a positive size, got -2}}
func.func @mesh_negative_size() attributes {test.mesh = #glimmer.mesh<["cp"=-2]>} {
  return
}

// -----

// A mesh axis without a size.
module {
  // expected-error @+1 {{expected '='}}
  glimmer.mesh @mesh = <["cp", "tp"=2]>
}

// -----

// Mesh axis names are strings, not bare identifiers.
module {
  // expected-error @+1 {{expected string}}
  glimmer.mesh @mesh = <[cp=2]>
}

//===----------------------------------------------------------------------===//
// #glimmer.sharding
//===----------------------------------------------------------------------===//

// -----

// One axis split over two dimensions.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @sharding_axis_in_two_dims(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    // expected-error @+1 {{mesh axis "cp" is used more than once in a sharding}}
    %0 = glimmer.sharding_constraint %arg0 <@mesh, [{"cp"}, {"cp"}]> : tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
}

// -----

// An axis both splitting a dimension and marked partial.
module {
  glimmer.mesh @mesh = <["tp"=2]>
  func.func @sharding_axis_split_and_partial(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{mesh axis "tp" is used more than once in a sharding}}
    %0 = glimmer.sharding_constraint %arg0 <@mesh, [{"tp"}], partial = ["tp"]> : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// The same axis listed twice for one dimension.
// expected-error @+1 {{mesh axis "dp" is used more than once in a sharding}}
func.func @sharding_axis_twice_in_dim() attributes {test.sharding = #glimmer.sharding<@mesh, [{"dp", "dp"}]>} {
  return
}

// -----

// The sharding's mesh must be a flat symbol reference.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  func.func @sharding_nested_symbol(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{invalid kind of attribute specified}}
    %0 = glimmer.sharding_constraint %arg0 <@outer::@mesh, [{"cp"}]> : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Only `partial` may follow the dimension list.
// expected-error @+1 {{expected 'partial'}}
func.func @sharding_unknown_keyword() attributes {test.sharding = #glimmer.sharding<@mesh, [{}], pending = ["tp"]>} {
  return
}

//===----------------------------------------------------------------------===//
// #glimmer.spmd
//===----------------------------------------------------------------------===//

// -----

// An unknown SPMD key.
// expected-error @+1 {{invalid SPMD layout: unknown key 'ep' in SPMD layout (expected one of dp_replicate, dp_shard, cp, tp, pp, sp, microbatches, virtual_stages, schedule, balancer)}}
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2,ep=2">} {
}

// -----

// A key given twice.
// expected-error @+1 {{invalid SPMD layout: duplicate key 'cp' in SPMD layout}}
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2,cp=4">} {
}

// -----

// A degree of zero.
// expected-error @+1 {{invalid SPMD layout: degree of 'cp' must be a positive integer, got '0'}}
module attributes {glimmer.spmd = #glimmer.spmd<"cp=0">} {
}

// -----

// A degree without a value.
// expected-error @+1 {{invalid SPMD layout: key 'tp' needs a value (a positive integer degree)}}
module attributes {glimmer.spmd = #glimmer.spmd<"tp">} {
}

// -----

// Sequence parallelism needs a tensor-parallel axis.
// expected-error @+1 {{invalid SPMD layout: 'sp' (sequence parallelism) shards activations over the tp axis and needs tp > 1}}
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2,sp">} {
}

// -----

// A stray comma.
// expected-error @+1 {{invalid SPMD layout: empty entry in SPMD layout 'cp=2,,tp=2' (stray ',')}}
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2,,tp=2">} {
}

// -----

// An unknown pipeline schedule.
// expected-error @+1 {{invalid SPMD layout: unknown pipeline schedule 'zb' (expected 1f1b, gpipe or interleaved_1f1b)}}
module attributes {glimmer.spmd = #glimmer.spmd<"pp=2,schedule=zb">} {
}

// -----

// An unknown CP load balancer.
// expected-error @+1 {{invalid SPMD layout: unknown CP load balancer 'zigzag' (expected head_tail or contiguous)}}
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2,balancer=zigzag">} {
}

// -----

// A non-positive microbatch count.
// expected-error @+1 {{invalid SPMD layout: 'microbatches' must be a positive integer, got '0'}}
module attributes {glimmer.spmd = #glimmer.spmd<"microbatches=0">} {
}

// -----

// sp takes no value or a boolean.
// expected-error @+1 {{invalid SPMD layout: 'sp' takes no value or one of true|false, got 'yes'}}
module attributes {glimmer.spmd = #glimmer.spmd<"tp=2,sp=yes">} {
}

// -----

// The layout must be a quoted string.
// expected-error @+1 {{expected string}}
module attributes {glimmer.spmd = #glimmer.spmd<cp>} {
}

//===----------------------------------------------------------------------===//
// Dialect attribute verifier
//===----------------------------------------------------------------------===//

// -----

// glimmer.spmd belongs on the module, not on a function.
// expected-error @+1 {{'glimmer.spmd' may only be attached to a builtin.module}}
func.func @spmd_on_func() attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  return
}

// -----

// glimmer.spmd must hold a #glimmer.spmd attribute.
// expected-error @+1 {{'glimmer.spmd' must be a #glimmer.spmd attribute}}
module attributes {glimmer.spmd = "cp=2"} {
}

// -----

// glimmer.traced_inputs maps input names to digests: a digest that is not a
// string is rejected.
// expected-error @+1 {{'glimmer.traced_inputs' is a dictionary of input names to digests, on a module}}
module attributes {glimmer.traced_inputs = {mm_token_type_ids = 3 : i64}} {
}

// -----

// glimmer.traced_inputs belongs on the module.
// expected-error @+1 {{'glimmer.traced_inputs' is a dictionary of input names to digests, on a module}}
func.func @traced_inputs_on_func() attributes {glimmer.traced_inputs = {ids = "xxh3-128:00"}} {
  return
}

// -----

// A glimmer-prefixed attribute the dialect does not know.
// expected-error @+1 {{unknown glimmer attribute 'glimmer.layout' on an operation}}
module attributes {glimmer.layout = #glimmer.spmd<"cp=2">} {
}

// -----

// glimmer.sharding is an argument attribute, not an operation attribute.
module {
  glimmer.mesh @mesh = <["cp"=2]>
  // expected-error @+1 {{unknown glimmer attribute 'glimmer.sharding' on an operation}}
  func.func @sharding_on_op() attributes {glimmer.sharding = #glimmer.sharding<@mesh, []>} {
    return
  }
}

// -----

// An unknown glimmer attribute mnemonic.
// expected-error @+1 {{unknown attribute `layout` in dialect `glimmer`}}
func.func @unknown_attribute_mnemonic() attributes {test.attr = #glimmer.layout<"cp=2">} {
  return
}

// -----

// Propagation's per-result shardings: one per result.
glimmer.mesh @mesh = <["tp"=2]>
func.func @shardings_count(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'glimmer.shardings' must list one #glimmer.sharding per result (1)}}
  %0 = glimmer.exp %x {glimmer.shardings = []} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Each entry must fit its result (here: 7 is not divisible by tp = 2).
glimmer.mesh @mesh = <["tp"=2]>
func.func @shardings_indivisible(%x: tensor<7xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{result #0: dimension 0 of size 7 is not divisible by the product of its mesh axes (2)}}
  %0 = glimmer.exp %x {glimmer.shardings = [#glimmer.sharding<@mesh, [{"tp"}]>]} : tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

// The sharding-rule annotation is a string.
func.func @sharding_rule_not_string(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'glimmer.sharding_rule' must be a string}}
  %0 = glimmer.exp %x {glimmer.sharding_rule = 1 : i64} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// The sequence-parallel mark belongs on sharding constraints only.
func.func @sequence_parallel_elsewhere(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'glimmer.sequence_parallel' is a unit attribute of glimmer.sharding_constraint}}
  %0 = glimmer.exp %x {glimmer.sequence_parallel} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Micro-batches cut their dimension into equal pieces.
func.func @microbatch_indivisible(%x: tensor<6x4xi64>, %mb: tensor<i64>) -> tensor<1x4xi64> {
  // expected-error @+1 {{cannot cut dimension 0 of size 6 into 4 equal micro-batches}}
  %0 = glimmer.microbatch_slice %x[%mb] pieces = 4 dim = 0 : tensor<6x4xi64>, tensor<i64> -> tensor<1x4xi64>
  return %0 : tensor<1x4xi64>
}

// -----

// The result is one piece.
func.func @microbatch_wrong_result(%x: tensor<8x4xi64>, %mb: tensor<i64>) -> tensor<4x4xi64> {
  // expected-error @+1 {{expects result of shape [2, 4], got [4, 4]}}
  %0 = glimmer.microbatch_slice %x[%mb] pieces = 4 dim = 0 : tensor<8x4xi64>, tensor<i64> -> tensor<4x4xi64>
  return %0 : tensor<4x4xi64>
}

// -----

// The index is a scalar.
func.func @microbatch_index_not_scalar(%x: tensor<8x4xi64>, %mb: tensor<1xi64>) -> tensor<2x4xi64> {
  // expected-error @+1 {{expects a scalar micro-batch index}}
  %0 = glimmer.microbatch_slice %x[%mb] pieces = 4 dim = 0 : tensor<8x4xi64>, tensor<1xi64> -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}

// -----

// The micro-batch mark is a unit attribute.
// expected-error @+1 {{'glimmer.microbatch' must be a unit attribute}}
func.func private @microbatch_mark_not_unit(tensor<i64> {glimmer.microbatch = 1 : i64})

// -----

// A fusion's results share one index space.
func.func @fusion_results_of_two_shapes(%x: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<32xf32>) {
  // expected-error @+1 {{expects results of one shape, got [8, 4] and [32]}}
  %r:2 = glimmer.fusion(%x) : (tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<32xf32>) {
  ^bb0(%a: tensor<8x4xf32>):
    %e = glimmer.exp %a : tensor<8x4xf32>
    %f = glimmer.reshape %e : tensor<8x4xf32> -> tensor<32xf32>
    glimmer.yield %e, %f : tensor<8x4xf32>, tensor<32xf32>
  }
  return %r#0, %r#1 : tensor<8x4xf32>, tensor<32xf32>
}

// -----

// Only ops a fused kernel computes element by element may be in the body.
func.func @fusion_with_a_gemm(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>) -> tensor<8x4xf32> {
  %r = glimmer.fusion(%x, %w) : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32> {
  ^bb0(%a: tensor<8x4xf32>, %b: tensor<4x4xf32>):
    // expected-error @+1 {{cannot be part of a glimmer.fusion body}}
    %l = glimmer.linear %a, %b : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
    glimmer.yield %l : tensor<8x4xf32>
  }
  return %r : tensor<8x4xf32>
}

// -----

// Integer arithmetic is no fused op (only conversions read integers).
func.func @fusion_with_integer_add(%x: tensor<8xi64>) -> tensor<8xf32> {
  %r = glimmer.fusion(%x) : (tensor<8xi64>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xi64>):
    // expected-error @+1 {{cannot be part of a glimmer.fusion body}}
    %s = glimmer.add %a, %a : tensor<8xi64>
    %f = glimmer.convert %s : tensor<8xi64> to tensor<8xf32>
    glimmer.yield %f : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

// The body's arguments are the inputs.
func.func @fusion_argument_types(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{expects the body's arguments to have the inputs' types}}
  %r = glimmer.fusion(%x) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf64>):
    %e = glimmer.exp %a : tensor<8xf64>
    %f = glimmer.convert %e : tensor<8xf64> to tensor<8xf32>
    glimmer.yield %f : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}

// -----

// glimmer.yield gives the results.
func.func @fusion_yield_types(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{expects glimmer.yield's values to have the results' types}}
  %r = glimmer.fusion(%x) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf32>):
    %e = glimmer.convert %a : tensor<8xf32> to tensor<8xbf16>
    glimmer.yield %e : tensor<8xbf16>
  }
  return %r : tensor<8xf32>
}

// -----

// The body sees only its arguments.
func.func @fusion_reads_outside(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %r = glimmer.fusion(%x) : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%a: tensor<8xf32>):
    // expected-error @+1 {{using value defined outside the region}}
    %s = glimmer.add %a, %y : tensor<8xf32>
    glimmer.yield %s : tensor<8xf32>
  }
  return %r : tensor<8xf32>
}
