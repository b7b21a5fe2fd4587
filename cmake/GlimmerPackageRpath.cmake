# Run at install time (python_bindings/CMakeLists.txt, component
# glimmer-package) on each shared object and executable installed into the
# Python package, whose prefix is the `glimmer` directory of a site-packages:
# its RUNPATH is rewritten relative to the file ($ORIGIN), so the package
# works wherever it is installed or moved:
#   - the build tree's lib/         -> the package's lib/
#   - directories of the site-packages that LibTorch came from (torch/lib,
#     nvidia/...)                   -> the same below the package's parent,
#     the site-packages the package and torch are installed into
#   - anything else in the build or source tree is dropped;
#   - everything else (system directories: LLVM, CUDA) stays.
# The relative paths are shorter than the absolute ones they replace, so
# they fit in the RUNPATH entry the linker wrote.
# Whether `path` is `prefix` or lies below it (`found`), and what follows
# `prefix/` (`rest`); a plain string comparison, since paths may hold regex
# characters.
function(_glimmer_below path prefix found rest)
  string(LENGTH "${prefix}/" n)
  string(SUBSTRING "${path}/" 0 ${n} head)
  set(${found} FALSE PARENT_SCOPE)
  set(${rest} "" PARENT_SCOPE)
  if(head STREQUAL "${prefix}/")
    set(${found} TRUE PARENT_SCOPE)
    string(SUBSTRING "${path}/" ${n} -1 tail)
    string(REGEX REPLACE "/$" "" tail "${tail}")
    set(${rest} "${tail}" PARENT_SCOPE)
  endif()
endfunction()

function(glimmer_package_rpath file subdir build_dir source_dir torch_site)
  file(READ_ELF "${file}" RUNPATH old)
  if(NOT old)
    return()
  endif()
  if(subdir STREQUAL ".")
    set(package "$ORIGIN")
  else()
    set(package "$ORIGIN/..")
  endif()
  string(REPLACE ":" ";" entries "${old}")
  set(new "")
  foreach(entry IN LISTS entries)
    _glimmer_below("${entry}" "${torch_site}" in_torch torch_rest)
    _glimmer_below("${entry}" "${build_dir}" in_build unused)
    _glimmer_below("${entry}" "${source_dir}" in_source unused)
    if(entry STREQUAL "${build_dir}/lib" OR entry STREQUAL "$ORIGIN/../lib")
      list(APPEND new "${package}/lib")
    elseif(in_torch AND torch_rest)
      list(APPEND new "${package}/../${torch_rest}")
    elseif(NOT in_build AND NOT in_source AND NOT entry STREQUAL "")
      list(APPEND new "${entry}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES new)
  string(REPLACE ";" ":" new "${new}")
  file(RPATH_SET FILE "${file}" NEW_RPATH "${new}")
endfunction()
