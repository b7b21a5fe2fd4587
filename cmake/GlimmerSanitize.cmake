# Sanitizer and fuzzer instrumentation, for the compiler's build and for a
# standalone runtime build (both include this file; the first include wins).
#
#   -DGLIMMER_SANITIZE=address,undefined   instrument everything with ASan and
#                                          UBSan (any -fsanitize= list works)
#   -DGLIMMER_ENABLE_FUZZERS=ON            add coverage instrumentation for
#                                          libFuzzer and build fuzz/ (clang)
#
# Both can be on in one build directory: the libFuzzer coverage hooks cost a
# little at run time, and one build serves the sanitizer suite and the fuzz
# targets (scripts/sanitize.sh, docs/Sanitizers.md, docs/Fuzzing.md).
include_guard(GLOBAL)

set(GLIMMER_SANITIZE "" CACHE STRING
  "Sanitizers for every target, as for -fsanitize= (e.g. address,undefined)")
option(GLIMMER_ENABLE_FUZZERS
  "Build the libFuzzer targets in fuzz/ (needs clang)" OFF)

# The shared sanitizer runtime (clang's ASan runtime, which carries UBSan
# too). Every executable of the build links it instead of a static copy, and
# python3 preloads it to load the sanitized extension modules: one runtime
# for the whole process tree, since a tool started from a process that
# preloads the shared runtime must not bring a static one as well (ASan
# refuses to start with both).
set(GLIMMER_SANITIZER_PRELOAD "")
if(GLIMMER_SANITIZE MATCHES "address")
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GLIMMER_SANITIZE=address needs clang (its shared "
      "ASan runtime); configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  execute_process(
    COMMAND ${CMAKE_CXX_COMPILER}
      -print-file-name=libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so
    OUTPUT_VARIABLE GLIMMER_SANITIZER_PRELOAD OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${GLIMMER_SANITIZER_PRELOAD}"
     OR NOT EXISTS "${GLIMMER_SANITIZER_PRELOAD}")
    message(FATAL_ERROR "GLIMMER_SANITIZE=address: ${CMAKE_CXX_COMPILER} has "
      "no shared ASan runtime (install libclang-rt-<version>-dev)")
  endif()
endif()

if(GLIMMER_SANITIZE)
  set(_glimmer_san_flags -fsanitize=${GLIMMER_SANITIZE} -fno-omit-frame-pointer)
  if(GLIMMER_SANITIZE MATCHES "undefined")
    # A UBSan finding must fail the test that triggers it, not just print.
    # vptr and function are off, as in LLVM's own UBSan builds
    # (LLVM_UBSAN_FLAGS), whose headers and libraries this code uses.
    list(APPEND _glimmer_san_flags -fno-sanitize-recover=all
         -fno-sanitize=vptr,function)
  endif()
  add_compile_options(${_glimmer_san_flags})
  add_link_options(-fsanitize=${GLIMMER_SANITIZE})
  if(GLIMMER_SANITIZER_PRELOAD)
    get_filename_component(_glimmer_san_dir ${GLIMMER_SANITIZER_PRELOAD}
                           DIRECTORY)
    # Executables only: a library that named the shared runtime would load
    # it into the fuzz targets too, which keep the static one. The shared
    # runtime reads an executable's default options only from its dynamic
    # symbol table.
    set(_glimmer_exe "$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>")
    add_link_options(
      "$<${_glimmer_exe}:-shared-libsan>"
      "$<${_glimmer_exe}:LINKER:-rpath,${_glimmer_san_dir}>"
      "$<${_glimmer_exe}:LINKER:--export-dynamic-symbol=__asan_default_options>"
      "$<${_glimmer_exe}:LINKER:--export-dynamic-symbol=__ubsan_default_options>")
  endif()
  # Shared libraries take the sanitizer runtime from the process that loads
  # them (the executable, or python3's preload), so their sanitizer symbols
  # stay undefined at link time: LLVM's -z defs must go.
  string(REPLACE "-Wl,-z,defs" "" CMAKE_SHARED_LINKER_FLAGS
         "${CMAKE_SHARED_LINKER_FLAGS}")
  # Default runtime options (why: SanitizerDefaults.cpp), in every target
  # defined from here on.
  add_library(glimmer_sanitizer_defaults OBJECT
    ${CMAKE_CURRENT_LIST_DIR}/SanitizerDefaults.cpp)
  set_target_properties(glimmer_sanitizer_defaults PROPERTIES
    POSITION_INDEPENDENT_CODE ON)
  link_libraries(glimmer_sanitizer_defaults)
  message(STATUS "Glimmer: sanitizers ${GLIMMER_SANITIZE}")
endif()

if(GLIMMER_ENABLE_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GLIMMER_ENABLE_FUZZERS needs clang (libFuzzer), "
      "not ${CMAKE_CXX_COMPILER_ID}; configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  # Coverage and comparison hooks in all code; only the fuzz targets link
  # libFuzzer itself (-fsanitize=fuzzer), so the other tools keep their main.
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "Glimmer: libFuzzer instrumentation on")
endif()
