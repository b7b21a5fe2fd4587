// RUN: not glimmer-opt %s -glimmer-activation-checkpointing=mode=most 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not glimmer-opt %s -glimmer-activation-checkpointing="mode=full budget=64" 2>&1 | FileCheck %s --check-prefix=MIXED
// RUN: not glimmer-opt %s -glimmer-activation-checkpointing=mode=budget 2>&1 | FileCheck %s --check-prefix=NOBUDGET

// An unknown mode names the modes there are.
// MODE: error: glimmer-activation-checkpointing: unknown mode 'most' (expected none, full, selective or budget)

// A budget is a mode of its own: with another it would be ignored.
// MIXED: error: glimmer-activation-checkpointing: budget=64 is for mode=budget, not mode=full

// Budget mode needs the budget.
// NOBUDGET: error: glimmer-activation-checkpointing: mode=budget needs a budget of zero or more bytes (budget=N)
module {
}
