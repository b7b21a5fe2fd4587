module attributes {glimmer.spmd = #glimmer.spmd<"dp_shard=2">} {
}
