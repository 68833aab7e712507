# `make test`'s CMake settings for the C++ libraries its Cargo build compiles
# with the `cmake` crate (sentencepiece, CTranslate2, Opus, llama.cpp).
#
# The `cmake` crate hands CMAKE_TOOLCHAIN_FILE from the environment to every
# CMake it runs, so this file reaches the build scripts that forward nothing
# else. It changes no compiler and no flag; it only leaves out what no test
# links:
#
# - sentencepiece (through ct2rs's `whisper` feature; hearth never calls it)
#   builds its libraries twice, shared and static, and the crate links the
#   static ones only: the shared pair is 50 of its 105 objects.
#
# The build goes to its own profile folder (target/make-test), so `make chat`,
# `make install` and `cargo build --release` never see it.
set(SPM_ENABLE_SHARED OFF CACHE BOOL "sentencepiece: static libraries only (make test)" FORCE)
