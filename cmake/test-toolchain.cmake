# `make test`'s toolchain file: the `cmake` crate hands CMAKE_TOOLCHAIN_FILE
# from the environment to every CMake build it runs (ct2rs's CTranslate2
# among them), which llama-cpp-sys-2's CMAKE_PROJECT_INCLUDE does not reach.
# It changes no compiler and no flag; it only has those builds include
# cmake/test-build.cmake after their project(), as llama.cpp's does.
if(NOT DEFINED CMAKE_PROJECT_INCLUDE)
  set(CMAKE_PROJECT_INCLUDE "${CMAKE_CURRENT_LIST_DIR}/test-build.cmake")
endif()
