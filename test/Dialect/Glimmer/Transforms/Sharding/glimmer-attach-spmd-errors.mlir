// RUN: glimmer-opt %s -split-input-file --spmd=cp=4 -glimmer-attach-spmd -verify-diagnostics
// RUN: not glimmer-opt %s -split-input-file -glimmer-attach-spmd='layout=cp=0' 2>&1 | FileCheck %s --check-prefix=BADOPT

// A module compiled for another layout must not be silently relabelled.
// expected-error @+1 {{module is already compiled for SPMD layout "cp=2"; refusing to record "cp=4"}}
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
}

// -----

// An invalid pass option names the option text and the reason.
// BADOPT: error: invalid SPMD layout 'cp=0': degree of 'cp' must be a positive integer, got '0'
module {
}
