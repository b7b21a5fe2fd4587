// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh | FileCheck %s
// The layout set on the command line flows through attach-spmd into the mesh.
// RUN: echo 'module {}' | glimmer-opt --spmd=dp_replicate=2,cp=2,tp=2 -glimmer-attach-spmd -glimmer-materialize-mesh | FileCheck %s --check-prefix=CHAINED
// CHAINED: glimmer.mesh @mesh = <["dp_replicate"=2, "dp_shard"=1, "cp"=2, "tp"=2, "pp"=1]>

// Every mesh axis is declared, with size 1 where the layout does not use it,
// so shardings can name any axis.
// CHECK: glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=2, "cp"=4, "tp"=1, "pp"=1]>
// CHECK-LABEL: func.func @mesh_from_recorded_layout
module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2,cp=4">} {
  func.func @mesh_from_recorded_layout() {
    return
  }
}

// -----

// An existing @mesh that matches the layout is kept, not duplicated.
// CHECK: glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=1, "pp"=1]>
// CHECK-NOT: glimmer.mesh
// CHECK-LABEL: func.func @existing_matching_mesh
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
  glimmer.mesh @mesh = <["dp_replicate"=1, "dp_shard"=1, "cp"=2, "tp"=1, "pp"=1]>
  func.func @existing_matching_mesh() {
    return
  }
}
