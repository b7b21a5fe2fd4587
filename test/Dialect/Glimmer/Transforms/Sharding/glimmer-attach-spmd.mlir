// RUN: glimmer-opt %s -split-input-file --spmd=dp_shard=2,cp=2 -glimmer-attach-spmd | FileCheck %s
// RUN: echo 'module {}' | glimmer-opt -glimmer-attach-spmd | FileCheck %s --check-prefix=DEFAULT
// RUN: echo 'module {}' | glimmer-opt --spmd=cp=8 -glimmer-attach-spmd='layout=tp=2,sp' | FileCheck %s --check-prefix=OPTION

// The thread's context (set by --spmd=) is recorded canonically; without
// --spmd the default (unsharded) layout is recorded; the pass option wins
// over the thread's context.
// CHECK: module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">}
// DEFAULT: module attributes {glimmer.spmd = #glimmer.spmd<"">}
// OPTION: module attributes {glimmer.spmd = #glimmer.spmd<"tp=2,sp">}
module {
  // CHECK-LABEL: func.func @body_is_untouched
  // CHECK-NEXT: return %arg0
  func.func @body_is_untouched(%arg0: tensor<2x8xi64>) -> tensor<2x8xi64> {
    return %arg0 : tensor<2x8xi64>
  }
}

// -----

// Re-running with the layout already recorded (written non-canonically) is a
// no-op: the attribute is compared as a layout, not as text.
// CHECK: module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=2">}
// CHECK-LABEL: func.func @already_recorded
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2,dp_shard=2,tp=1">} {
  func.func @already_recorded() {
    return
  }
}
