# `make test`'s hooks into llama.cpp's CMake build (the Makefile hands this
# file over as CMAKE_PROJECT_INCLUDE; llama-cpp-sys-2's build script passes
# CMAKE_* variables on, and CMake includes the file after each project()).
# The build goes to its own profile folder (target/make-test), so `make chat`,
# `make install` and `cargo build --release` never see it.
#
# Two cuts, neither of which leaves out code the tests run (CTranslate2's
# build includes this file through cmake/test-toolchain.cmake):
# - cmake/test-cpu-variants.cmake: this machine's CPU module and the x86-64
#   baseline, not all fourteen.
# - The libraries around the model at -O1 instead of CMake's Release -O3:
#   llama.cpp's `common` (argument, chat and JSON parsing), `mtmd` (the image
#   and audio encoders' graph building and preprocessing) and the vendored
#   HTTP library. The compute is ggml's, built as before; these are the
#   heaviest files to compile (clip.cpp 30.5 CPU-seconds at -O3, 11.6 at
#   -O1; docs/DEVELOPING.md has the figures). llama.cpp itself (sampling,
#   grammars, tokenizers) keeps -O3. Likewise CTranslate2's layers, models
#   and decoding and its logging library, while its kernels and operators
#   (src/cpu, src/ops) and ruy keep -O3.
include_guard(GLOBAL)

include("${CMAKE_CURRENT_LIST_DIR}/test-cpu-variants.cmake")

if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  return()
endif()

function(hearth_test_lower_optimisation)
  foreach(target IN ITEMS llama-common mtmd cpp-httplib spdlog)
    if(TARGET ${target})
      # After CMAKE_CXX_FLAGS_RELEASE on the command line: the last -O wins.
      target_compile_options(${target} PRIVATE -O1)
    endif()
  endforeach()
  # CTranslate2 (through cmake/test-toolchain.cmake): its compute (src/cpu,
  # src/ops) keeps -O3; the layers, models, decoding and I/O around it -O1.
  if(TARGET ctranslate2)
    get_target_property(sources ctranslate2 SOURCES)
    foreach(source IN LISTS sources)
      # Its own files are named from its folder (src/...); the per-ISA
      # copies of its kernels are generated in the build folder, by path.
      if(IS_ABSOLUTE "${source}" OR NOT source MATCHES "^src/.*\\.cc$"
          OR source MATCHES "^src/(cpu|ops)/")
        continue()
      endif()
      set_property(SOURCE "${source}" APPEND PROPERTY COMPILE_OPTIONS -O1)
    endforeach()
  endif()
endfunction()

# At the end of the top-level CMakeLists, when every target exists.
cmake_language(DEFER CALL hearth_test_lower_optimisation)
