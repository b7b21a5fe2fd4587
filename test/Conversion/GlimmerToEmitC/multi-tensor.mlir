// RUN: glimmer-translate --emit-cpp %s | FileCheck %s

// adamw_update_list becomes one runtime call on four lists, which are
// released right after it. Lists of the function's arguments (an
// optimizer's parameters and state) are read from the frame in one call,
// and results the function only returns go back to it in one call, each
// list element to its place in the return (new params, then exp_avgs, then
// exp_avg_sqs, here interleaved by parameter). Here the same arguments are
// the parameters and both moments: read with inputList, which leaves the
// frame its handles, so the update cannot replace one of them in place
// while it still reads it as another.
// CHECK-LABEL: void apply_step(
// CHECK: std::vector<glimmer_rt::Tensor> [[P:v[0-9]+]] = glimmer_rt::inputList(v1, {0, 1});
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[G:v[0-9]+]] = glimmer_rt::takeInputList(v1, {2, 3});
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[M:v[0-9]+]] = glimmer_rt::inputList(v1, {0, 1});
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[V:v[0-9]+]] = glimmer_rt::inputList(v1, {0, 1});
// CHECK: std::vector<glimmer_rt::Tensor> [[R:v[0-9]+]] = glimmer_rt::adamwUpdateList([[P]], [[G]], [[M]], [[V]], [[S:v[0-9]+]], 0.001, 0.90000000000000002, 0.999, 1e-08, 0.01, glimmer_rt::Tensor());
// CHECK-NEXT: glimmer_rt::release([[P]]);
// CHECK-NEXT: glimmer_rt::release([[G]]);
// CHECK-NEXT: glimmer_rt::release([[M]]);
// CHECK-NEXT: glimmer_rt::release([[V]]);
// CHECK-NEXT: glimmer_rt::outputList(v1, [[R]], {0, 3, 1, 4, 2, 5});
// CHECK-NOT: glimmer_rt::output(
// CHECK: return;
module {
  func.func @apply_step(%p: tensor<4xf32> {glimmer.param = "p"}, %q: tensor<2x3xf32> {glimmer.param = "q"},
                        %g: tensor<4xbf16>, %h: tensor<2x3xf32>, %step: tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
    %np:2, %nm:2, %nv:2 = glimmer.adamw_update_list (%p, %q), (%g, %h), (%p, %q), (%p, %q), %step
        lr = 1.0e-03 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01
        : (tensor<4xf32>, tensor<2x3xf32>), (tensor<4xbf16>, tensor<2x3xf32>), tensor<i64>
    return %np#0, %nm#0, %nv#0, %np#1, %nm#1, %nv#1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  }

// Arguments read only by the update (an optimizer's state, as the train
// pipeline builds it) leave the frame with their lists (takeInputList):
// the lists then hold the program's only handles, and the runtime updates
// the state in place where the trainer handed it over.
// CHECK-LABEL: void apply_step_distinct(
// CHECK: std::vector<glimmer_rt::Tensor> [[P:v[0-9]+]] = glimmer_rt::takeInputList(v1, {0});
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[G:v[0-9]+]] = glimmer_rt::takeInputList(v1, {1});
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[M:v[0-9]+]] = glimmer_rt::takeInputList(v1, {2});
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[V:v[0-9]+]] = glimmer_rt::takeInputList(v1, {3});
// CHECK: glimmer_rt::adamwUpdateList([[P]], [[G]], [[M]], [[V]],
  func.func @apply_step_distinct(%p: tensor<4xf32> {glimmer.param = "p"}, %g: tensor<4xf32>,
                                 %m: tensor<4xf32>, %v: tensor<4xf32>, %step: tensor<i64>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
    %np, %nm, %nv = glimmer.adamw_update_list (%p), (%g), (%m), (%v), %step
        lr = 1.0e-03 beta1 = 0.9 beta2 = 0.999 eps = 1.0e-08 weight_decay = 0.01
        : (tensor<4xf32>), (tensor<4xf32>), tensor<i64>
    return %np, %nm, %nv : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  }

// convert_list becomes one runtime call with the result type; its input
// list is released after it and each result released after its last use.
// CHECK-LABEL: void grad_step(
// CHECK: std::vector<glimmer_rt::Tensor> [[L:v[0-9]+]] = glimmer_rt::takeInputList(v1, {0, 1});
// CHECK-NEXT: std::vector<glimmer_rt::Tensor> [[C:v[0-9]+]] = glimmer_rt::convertList([[L]], glimmer_rt::DType::BF16);
// CHECK-NEXT: glimmer_rt::release([[L]]);
// CHECK-NEXT: glimmer_rt::Tensor [[A:v[0-9]+]] = glimmer_rt::take([[C]], 0);
// CHECK-NEXT: glimmer_rt::Tensor [[B:v[0-9]+]] = glimmer_rt::take([[C]], 1);
// CHECK-NEXT: glimmer_rt::Tensor [[X:v[0-9]+]] = glimmer_rt::add([[A]], [[B]]);
// CHECK-NEXT: glimmer_rt::release([[A]]);
// CHECK-NEXT: glimmer_rt::release([[B]]);
  func.func @grad_step(%a: tensor<4xf32> {glimmer.param = "a"}, %b: tensor<4xf32> {glimmer.param = "b"}) -> tensor<4xbf16> {
    %c:2 = glimmer.convert_list %a, %b : tensor<4xf32>, tensor<4xf32> to tensor<4xbf16>, tensor<4xbf16>
    %x = glimmer.add %c#0, %c#1 : tensor<4xbf16>
    return %x : tensor<4xbf16>
  }
}
