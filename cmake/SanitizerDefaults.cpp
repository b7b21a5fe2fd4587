// Default sanitizer options, linked into every target of a GLIMMER_SANITIZE
// build (ASAN_OPTIONS / UBSAN_OPTIONS in the environment still override
// them; only an executable's copy takes effect).
//
// allow_user_poisoning=0: LLVM's BumpPtrAllocator (llvm/Support/Allocator.h)
// poisons its slabs and unpoisons each allocation in inline header code, but
// only in files compiled with ASan. The LLVM and MLIR libraries are not, so a
// slab poisoned by this build's copy of that code can be handed out by the
// libraries' copy, which never unpoisons it: a false use-after-poison on the
// first MLIRContext. Real heap, stack and global errors are still caught.
//
// abort_on_error=1: a finding (ASan, LeakSanitizer, or UBSan, which does not
// recover in this build) ends the process with SIGABRT rather than exit code
// 1. Tests of error paths run tools under `not`, which accepts any non-zero
// exit but fails on a crash; with a plain exit code their findings would
// pass unnoticed.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0:abort_on_error=1";
}

extern "C" const char *__ubsan_default_options() {
  return "print_stacktrace=1:abort_on_error=1";
}
