# hearth — the two commands of the README, and a benchmark.
#
#   make chat    prerequisites, the default model, a release build, then the chat
#   make test    prerequisites, the test models, every test
#   make bench   speed, prompt-cache reuse and restart figures (hearth bench)
#   make gpu     the CUDA backend library, built from the llama.cpp sources
#                hearth vendors, installed beside the binary (CMake and nvcc
#                only; no Rust toolchain needed on the GPU machine)
#
# Prerequisites (cmake, clang, libclang-dev for llama.cpp's bindings; python3
# with pip for the model fetch; bubblewrap, the sandbox tool commands run in)
# are installed with apt-get when running as root on Debian/Ubuntu; otherwise
# the exact command to run is printed. Without bubblewrap hearth falls back to
# Landlock, so a non-root build goes on with a note.

CARGO ?= cargo
HEARTH := target/release/hearth
APT_PACKAGES := cmake clang libclang-dev python3-pip bubblewrap

.PHONY: chat test bench build prereqs model test-models test-clients clean gpu

# The llama.cpp that hearth links: llama-cpp-sys-2's vendored copy, at the
# version Cargo.lock pins. On a machine without Rust, copy that folder there
# and name it: make gpu LLAMA_SRC=/path/to/llama.cpp
LLAMA_SYS_VERSION := $(shell sed -n '/^name = "llama-cpp-sys-2"$$/{n;s/^version = "\(.*\)"$$/\1/p;}' Cargo.lock 2>/dev/null)
CARGO_HOME ?= $(HOME)/.cargo
LLAMA_SRC ?= $(firstword $(wildcard $(CARGO_HOME)/registry/src/*/llama-cpp-sys-2-$(LLAMA_SYS_VERSION)/llama.cpp))
CUDA_PATH ?= /usr/local/cuda
CMAKE ?= cmake
# Where hearth finds the library: beside the binary (or set [engine] backends_dir).
GPU_DEST ?= target/release
GPU_BUILD ?= target/gpu-build
# CUDA architectures to compile for; "native" is the GPU of this machine.
CUDA_ARCHS ?= native

chat: prereqs model build
	$(HEARTH) chat

test: prereqs test-models test-clients
	$(CARGO) test --release --all-targets

bench: prereqs model build
	$(HEARTH) bench --json target/bench/hearth-bench.json

build:
	$(CARGO) build --release

model:
	python3 models/fetch

test-models:
	python3 models/fetch smollm2-135m gemma3-270m

# The real client libraries some tests drive hearth with (the `openai`
# package, the Prometheus text parser), pinned, beside the build.
PYCLIENTS := target/pyclients
test-clients: $(PYCLIENTS)/.installed
$(PYCLIENTS)/.installed: tests/clients/requirements.txt
	rm -rf $(PYCLIENTS)
	python3 -m pip install --quiet --disable-pip-version-check --no-warn-conflicts --target $(PYCLIENTS) -r tests/clients/requirements.txt
	touch $@

prereqs:
	@missing=""; \
	command -v cmake >/dev/null 2>&1 || missing="$$missing cmake"; \
	command -v clang >/dev/null 2>&1 || missing="$$missing clang"; \
	if command -v dpkg >/dev/null 2>&1; then \
	  dpkg -s libclang-dev >/dev/null 2>&1 || missing="$$missing libclang-dev"; \
	else \
	  ls /usr/lib*/libclang*.so* /usr/lib/*/libclang*.so* /usr/lib/llvm*/lib/libclang*.so* >/dev/null 2>&1 || missing="$$missing libclang-dev"; \
	fi; \
	python3 -m pip --version >/dev/null 2>&1 || missing="$$missing python3-pip"; \
	if ! command -v bwrap >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    missing="$$missing bubblewrap"; \
	  else \
	    echo "note: bubblewrap is not installed; tools will be contained by Landlock. For the stronger sandbox: sudo apt-get install -y bubblewrap"; \
	  fi; \
	fi; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing build prerequisites:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "missing build prerequisites:$$missing"; \
	    echo "install them with: sudo apt-get install -y$$missing"; \
	    exit 1; \
	  fi; \
	fi; \
	command -v $(CARGO) >/dev/null 2>&1 || { echo "cargo not found: install Rust from https://rustup.rs"; exit 1; }

clean:
	$(CARGO) clean

gpu:
	@nvcc="$$(command -v nvcc 2>/dev/null)"; \
	[ -n "$$nvcc" ] || { [ -x "$(CUDA_PATH)/bin/nvcc" ] && nvcc="$(CUDA_PATH)/bin/nvcc"; }; \
	missing=""; \
	[ -n "$$nvcc" ] || missing="$$missing\n  nvcc (the CUDA toolkit): not on PATH nor in $(CUDA_PATH)/bin; install it (https://developer.nvidia.com/cuda-downloads, or apt-get install nvidia-cuda-toolkit) or set CUDA_PATH"; \
	command -v $(CMAKE) >/dev/null 2>&1 || missing="$$missing\n  cmake: apt-get install cmake"; \
	[ -f "$(LLAMA_SRC)/ggml/CMakeLists.txt" ] || missing="$$missing\n  the llama.cpp sources of llama-cpp-sys-2 $(LLAMA_SYS_VERSION): run cargo fetch, or set LLAMA_SRC=/path/to/llama.cpp"; \
	if [ -n "$$missing" ]; then printf "make gpu: cannot build the CUDA backend; missing:$$missing\n" >&2; exit 1; fi; \
	echo "building the CUDA backend from $(LLAMA_SRC) with $$nvcc"; \
	$(CMAKE) -S "$(LLAMA_SRC)/ggml" -B "$(GPU_BUILD)" -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_CUDA_COMPILER="$$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$(CUDA_ARCHS)" \
	  -DGGML_CUDA=ON -DGGML_BACKEND_DL=ON -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
	  -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF && \
	$(CMAKE) --build "$(GPU_BUILD)" --config Release --target ggml-cuda -j "$$(nproc)" && \
	lib="$$(find "$(GPU_BUILD)" -name libggml-cuda.so -type f | head -n 1)" && \
	[ -n "$$lib" ] || { echo "make gpu: the build made no libggml-cuda.so" >&2; exit 1; }; \
	mkdir -p "$(GPU_DEST)" && install -m 0755 "$$lib" "$(GPU_DEST)/libggml-cuda.so" && \
	echo "installed $(GPU_DEST)/libggml-cuda.so; hearth loads it at start (check with: hearth doctor)"
