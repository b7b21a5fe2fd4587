//===- KernelTable.cpp - The kernel table against the runtime -------------===//
//
// Every entry of glimmer_rt/KernelTable.def, the runtime functions the
// compiler's lowering may call, must be declared by Program.h (what
// generated programs include): a using-declaration of a name that
// namespace glimmer_rt does not declare fails to compile. It names every
// overload and template of the name at once.
//
//===----------------------------------------------------------------------===//

#include "glimmer_rt/Program.h"

namespace glimmer_rt::kernel_table {
#define GLIMMER_RT_KERNEL(name) using glimmer_rt::name;
#include "glimmer_rt/KernelTable.def"
} // namespace glimmer_rt::kernel_table
