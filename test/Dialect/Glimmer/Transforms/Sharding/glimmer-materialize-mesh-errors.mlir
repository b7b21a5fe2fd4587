// RUN: glimmer-opt %s -split-input-file -glimmer-materialize-mesh -verify-diagnostics

// A pass that needs the layout reports its absence instead of guessing.
// expected-error @+1 {{'glimmer-materialize-mesh' needs the SPMD layout recorded on the module; run glimmer-attach-spmd first}}
module {
}

// -----

// A hand-written @mesh that disagrees with the recorded layout is an error.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=4">} {
  // expected-error @+1 {{symbol @mesh already exists and does not match the recorded SPMD layout}}
  glimmer.mesh @mesh = <["cp"=2]>
}

// -----

// So is a non-mesh symbol named @mesh.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=4">} {
  // expected-error @+1 {{symbol @mesh already exists}}
  func.func @mesh() {
    return
  }
}
