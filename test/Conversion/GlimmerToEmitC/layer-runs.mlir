// RUN: glimmer-translate --emit-cpp --split-input-file %s | FileCheck %s

// A forward of three layers and its backward in reverse order, each one
// loop: the residual stream and the gradient are carried from iteration to
// iteration, parameters are read from the frame by a table, a value the
// same for all layers is given once. The activation each backward call
// reads is kept in the forward loop's store (one column) and dropped by
// the call that reads it last; the parameter gradients go to the frame
// from the loop (a table of result indices); the last iteration's carry is
// the loop's result. What a loop read last is released once it is given
// to the loop.
// CHECK-LABEL: void step(glimmer_rt::Frame&
// CHECK-NOT: callFunction
// CHECK: // 3 iterations of step_layer0 (layers.0 to layers.2)
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[G:v[0-9]+]] = glimmer_rt::tensorList({{v[0-9]+}}, [[E:v[0-9]+]]);
// CHECK-NEXT: glimmer_rt::LayerStore [[S:v[0-9]+]] = glimmer_rt::layerStore(3, 1);
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[R:v[0-9]+]] = glimmer_rt::runLayers(v1, {step_layer0}, 3, [[G]], {1, 1, 0, 3, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0}, {2, 0, -1, -1, 0, -1, 0, -1, -1}, {1, 2, 3}, {}, {}, [[S]]);
// CHECK-NEXT: glimmer_rt::Tensor [[H:v[0-9]+]] = glimmer_rt::take([[R]], 0);
// CHECK-NEXT: glimmer_rt::release([[R]]);
// CHECK-NEXT: // 3 iterations of step_layer1 (layers.2 to layers.0)
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[G2:v[0-9]+]] = glimmer_rt::tensorList([[H]], [[E]]);
// CHECK-NEXT: glimmer_rt::release([[H]]);
// CHECK-NEXT: glimmer_rt::release([[E]]);
// CHECK-NEXT: std::vector<glimmer_rt::LayerStore> [[READS:v[0-9]+]] = glimmer_rt::layerStores([[S]]);
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[R2:v[0-9]+]] = glimmer_rt::runLayers(v1, {step_layer1}, 3, [[G2]], {1, 1, 0, 4, 2, 0, 0, 0, 0, 0, 4, 0, 0, 2, -1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0}, {2, 0, -1, -1, 0, -1, -1, 0, -1}, {3, 2, 1}, {3, 2, 1}, [[READS]], glimmer_rt::LayerStore());
// CHECK-NEXT: glimmer_rt::Tensor [[DX:v[0-9]+]] = glimmer_rt::take([[R2]], 0);
// CHECK-NEXT: glimmer_rt::release([[R2]]);
// CHECK-NEXT: glimmer_rt::output(v1, 0, [[DX]]);
// CHECK-NEXT: return;
module {
  func.func private @step_layer0(%h: tensor<4xf32>, %w: tensor<4xf32>, %e: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = glimmer.mul %h, %w : tensor<4xf32>
    %1 = glimmer.add %0, %e : tensor<4xf32>
    return %1, %0 : tensor<4xf32>, tensor<4xf32>
  }
  func.func private @step_layer1(%g: tensor<4xf32>, %a: tensor<4xf32>, %w: tensor<4xf32>, %e: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = glimmer.mul %g, %w : tensor<4xf32>
    %1 = glimmer.mul %g, %a : tensor<4xf32>
    %2 = glimmer.add %0, %e : tensor<4xf32>
    return %2, %1 : tensor<4xf32>, tensor<4xf32>
  }
  func.func @step(%x: tensor<4xf32> {glimmer.input = "x"}, %w0: tensor<4xf32> {glimmer.param = "layers.0.w"}, %w1: tensor<4xf32> {glimmer.param = "layers.1.w"}, %w2: tensor<4xf32> {glimmer.param = "layers.2.w"}) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %e = glimmer.exp %x : tensor<4xf32>
    %0:2 = call @step_layer0(%x, %w0, %e) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) loc("layers.0")
    %1:2 = call @step_layer0(%0#0, %w1, %e) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) loc("layers.1")
    %2:2 = call @step_layer0(%1#0, %w2, %e) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) loc("layers.2")
    %3:2 = call @step_layer1(%2#0, %2#1, %w2, %e) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) loc("layers.2")
    %4:2 = call @step_layer1(%3#0, %1#1, %w1, %e) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) loc("layers.1")
    %5:2 = call @step_layer1(%4#0, %0#1, %w0, %e) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) loc("layers.0")
    return %5#0, %5#1, %4#1, %3#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }
}

// -----

// Two kinds of layer in turn (a sliding-window layer beside a global one):
// one loop of two calls an iteration; the second call of an iteration
// reads the first's result, the first the second's of the iteration before.
// CHECK-LABEL: void alternating(glimmer_rt::Frame&
// CHECK-NOT: callFunction
// CHECK: // 2 iterations of alternating_layer0 alternating_layer1
// CHECK: glimmer_rt::runLayers(v1, {alternating_layer0, alternating_layer1}, 2, {{v[0-9]+}}, {2, 1, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, {1, -1, -1, -1, -1, 1, 0, -1, -1, 0}, {1, 2, 3, 4}, {}, {}, glimmer_rt::LayerStore());
// CHECK-NOT: callFunction
module {
  func.func private @alternating_layer0(%h: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %0 = glimmer.mul %h, %w : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @alternating_layer1(%h: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %0 = glimmer.add %h, %w : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func @alternating(%x: tensor<4xf32> {glimmer.input = "x"}, %w0: tensor<4xf32> {glimmer.param = "w0"}, %w1: tensor<4xf32> {glimmer.param = "w1"}, %w2: tensor<4xf32> {glimmer.param = "w2"}, %w3: tensor<4xf32> {glimmer.param = "w3"}) -> tensor<4xf32> {
    %0 = call @alternating_layer0(%x, %w0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = call @alternating_layer1(%0, %w1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %2 = call @alternating_layer0(%1, %w2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %3 = call @alternating_layer1(%2, %w3) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %3 : tensor<4xf32>
  }
}

// -----

// Calls whose operands differ in no way a loop reads (values computed
// between the layers, not kept by an earlier loop) stay calls of their
// own.
// CHECK-LABEL: void irregular(glimmer_rt::Frame&
// CHECK-NOT: runLayers
// CHECK: glimmer_rt::callFunction(irregular_layer0
// CHECK: glimmer_rt::callFunction(irregular_layer0
module {
  func.func private @irregular_layer0(%h: tensor<4xf32>) -> tensor<4xf32> {
    %0 = glimmer.exp %h : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func @irregular(%x: tensor<4xf32> {glimmer.input = "x"}) -> tensor<4xf32> {
    %a = glimmer.neg %x : tensor<4xf32>
    %b = glimmer.exp %x : tensor<4xf32>
    %0 = call @irregular_layer0(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = call @irregular_layer0(%b) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = glimmer.add %0, %1 : tensor<4xf32>
    return %2 : tensor<4xf32>
  }
}
