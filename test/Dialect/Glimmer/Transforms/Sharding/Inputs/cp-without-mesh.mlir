module attributes {glimmer.spmd = #glimmer.spmd<"cp=2">} {
}
