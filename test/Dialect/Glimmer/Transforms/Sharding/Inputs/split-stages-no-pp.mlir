// A layout without pipeline parallelism, for glimmer-split-stages' options.
module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
}
