module attributes {glimmer.spmd = #glimmer.spmd<"tp=2">} {
}
