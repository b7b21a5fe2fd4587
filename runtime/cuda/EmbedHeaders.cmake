# Writes OUTPUT: one {"name", R"(text)"} initializer per file of HEADERS (a
# |-separated list), for the NVRTC compile of fused kernels (Fusion.cu).
set(content "// Generated from the runtime's sources by EmbedHeaders.cmake.\n")
string(REPLACE "|" ";" HEADERS "${HEADERS}")
foreach(header ${HEADERS})
  get_filename_component(name ${header} NAME)
  file(READ ${header} text)
  string(APPEND content "{\"${name}\", R\"glimmer_src(${text})glimmer_src\"},\n")
endforeach()
file(WRITE ${OUTPUT} "${content}")
