# The CPU code of `make test`'s build: llama.cpp's baseline x86-64 module and
# the one module this machine runs best, instead of all fourteen.
#
# With llama-cpp-2's `dynamic-backends`, ggml builds one CPU module per x86
# instruction-set level (GGML_CPU_ALL_VARIANTS: x64, sse42, ... zen4,
# sapphirerapids) and hearth loads the best one the machine runs when it
# starts. That is what a release needs, and 7.5 of a fresh clone's 49 minutes
# on two cores. The tests run on this machine only, so their build keeps two
# modules: `x64`, which every x86-64 runs, and the one ggml's loader would pick
# here (its score, read off /proc/cpuinfo as ggml-cpu/arch/x86/cpu-feats.cpp
# scores it). The binary then loads the same code here as a release build does,
# and still chooses between modules.
#
# How it gets in: cmake/test-build.cmake, which the Makefile's test build
# hands llama.cpp's CMake as CMAKE_PROJECT_INCLUDE, includes this file. The
# build goes to its own profile folder (target/make-test), so `make chat`,
# `make install` and `cargo build --release` never see it. Anything other than Linux on x86-64, or a ggml
# without the variants, is left as it is.
include_guard(GLOBAL)

if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux" OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  return()
endif()
file(STRINGS /proc/cpuinfo hearth_cpu_flags REGEX "^flags[ \t]*:" LIMIT_COUNT 1)
if(NOT hearth_cpu_flags)
  return()
endif()
string(REGEX REPLACE "^flags[ \t]*:[ \t]*" "" hearth_cpu_flags "${hearth_cpu_flags}")
string(REPLACE " " ";" hearth_cpu_flags "${hearth_cpu_flags}")
set_property(GLOBAL PROPERTY HEARTH_CPU_FLAGS "${hearth_cpu_flags}")

# ggml's x86 features as its loader scores them: the feature, its weight,
# and the /proc/cpuinfo flags the loader demands for it.
set(HEARTH_CPU_SCORES
  "FMA|1|fma" "F16C|2|f16c" "SSE42|4|sse4_2" "BMI2|8|bmi2" "AVX|16|avx"
  "AVX2|32|avx2" "AVX_VNNI|64|avx_vnni"
  "AVX512|128|avx512f,avx512cd,avx512vl,avx512dq,avx512bw"
  "AVX512_VBMI|256|avx512vbmi" "AVX512_BF16|512|avx512_bf16"
  "AVX512_VNNI|1024|avx512_vnni" "AMX_INT8|2048|amx_int8")
set_property(GLOBAL PROPERTY HEARTH_CPU_SCORES "${HEARTH_CPU_SCORES}")

# The score ggml's loader gives the variant being added (its GGML_<feature>
# switches are set in the caller's scope), 0 where this machine cannot run it.
function(hearth_variant_score out)
  get_property(flags GLOBAL PROPERTY HEARTH_CPU_FLAGS)
  get_property(scores GLOBAL PROPERTY HEARTH_CPU_SCORES)
  set(score 1)
  set(features "")
  foreach(entry IN LISTS scores)
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 feature)
    list(GET entry 1 weight)
    list(GET entry 2 needs)
    if(NOT GGML_${feature})
      continue()
    endif()
    string(REPLACE "," ";" needs "${needs}")
    foreach(flag IN LISTS needs)
      if(NOT flag IN_LIST flags)
        set(${out} 0 PARENT_SCOPE)
        return()
      endif()
    endforeach()
    math(EXPR score "${score} + ${weight}")
  endforeach()
  set(${out} ${score} PARENT_SCOPE)
endfunction()

# Each variant ggml adds passes through here: x64 is built at once; the others
# are only scored, and the best is built when ggml/src has been read.
function(hearth_filtered_variant tag_name)
  get_property(passing GLOBAL PROPERTY HEARTH_VARIANT_PASSING)
  if(passing OR tag_name STREQUAL "x64")
    _ggml_add_cpu_backend_variant_impl(${tag_name})
    return()
  endif()
  hearth_variant_score(score)
  get_property(best GLOBAL PROPERTY HEARTH_BEST_SCORE)
  if(NOT best)
    set(best 0)
    cmake_language(DEFER CALL hearth_add_best_variant)
  endif()
  if(score GREATER best)
    # Every x86 switch ggml's variant function sets (those it does not
    # score, AMX_TILE and AMX_BF16, too), to add the same variant again.
    set(features "")
    foreach(feature IN ITEMS SSE42 AVX F16C FMA AVX2 BMI2 AVX_VNNI AVX512
                             AVX512_VBMI AVX512_VNNI AVX512_BF16 AMX_TILE AMX_INT8 AMX_BF16)
      if(GGML_${feature})
        list(APPEND features ${feature})
      endif()
    endforeach()
    set_property(GLOBAL PROPERTY HEARTH_BEST_SCORE ${score})
    set_property(GLOBAL PROPERTY HEARTH_BEST_VARIANT ${tag_name} ${features})
  endif()
  message(STATUS "hearth: CPU variant ${tag_name} scored ${score} here")
endfunction()

function(hearth_add_best_variant)
  get_property(best GLOBAL PROPERTY HEARTH_BEST_VARIANT)
  if(NOT best)
    message(STATUS "hearth: this machine runs no CPU variant beyond x64")
    return()
  endif()
  list(GET best 0 tag_name)
  message(STATUS "hearth: the CPU variant this machine runs best: ${tag_name}")
  set_property(GLOBAL PROPERTY HEARTH_VARIANT_PASSING ON)
  ggml_add_cpu_backend_variant(${best})
endfunction()

# ggml defines its variant functions while reading ggml/src, after this file;
# the first variant it adds sets GGML_CPU_TAG_NAME, and at that moment the
# function that builds a variant is wrapped (CMake keeps the one it replaces
# under a leading underscore).
function(hearth_wrap_variants variable access)
  get_property(wrapped GLOBAL PROPERTY HEARTH_VARIANTS_WRAPPED)
  if(wrapped OR NOT access STREQUAL "MODIFIED_ACCESS")
    return()
  endif()
  set_property(GLOBAL PROPERTY HEARTH_VARIANTS_WRAPPED ON)
  function(ggml_add_cpu_backend_variant_impl tag_name)
    hearth_filtered_variant(${tag_name})
  endfunction()
endfunction()
variable_watch(GGML_CPU_TAG_NAME hearth_wrap_variants)
