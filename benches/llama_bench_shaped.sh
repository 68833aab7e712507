#!/usr/bin/env bash
# Builds `llama-bench` from the very llama.cpp that hearth links (the
# llama-cpp-sys-2 crate's vendored tree), able to run with hearth's context
# shape, and prints its path. That tree ships without the tools' sources, so
# llama-bench.cpp comes from llama-cpp-python 0.3.36's tree (unpacked by
# compare.sh; llama.h differs only in its state version numbers), with three
# environment overrides added: LB_NCTX (cells in all), LB_NSEQ (sequences),
# LB_NB (batch and micro-batch). Used by compare.sh and context_shape.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

work=target/compare
crate=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$(sed -n '/name = "llama-cpp-sys-2"/{n;s/version = "\(.*\)"/\1/p}' Cargo.lock)"/llama.cpp | head -1)
src=$work/crate-src
build=$work/build-crate
python_tree=$work/llama_cpp_python-0.3.36/vendor/llama.cpp
[ -d "$python_tree" ] || { echo "run benches/compare.sh once first (it unpacks llama-cpp-python's tree)" >&2; exit 1; }

if [ ! -x "$build/bin/llama-bench" ] || ! grep -q LB_NSEQ "$src/tools/llama-bench/llama-bench.cpp"; then
  rm -rf "$src" "$build"
  cp -r "$crate" "$src"
  cp "$python_tree"/tools/llama-bench/* "$src/tools/llama-bench/"
  echo 'add_subdirectory(llama-bench)' > "$src/tools/CMakeLists.txt"
  python3 - "$src/tools/llama-bench/llama-bench.cpp" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
anchor = "        cparams.swa_full        = false;\n"
assert anchor in text, "llama-bench.cpp changed: no swa_full line to patch after"
text = text.replace(anchor, anchor + """        if (getenv("LB_NCTX")) cparams.n_ctx = atoi(getenv("LB_NCTX"));
        if (getenv("LB_NSEQ")) cparams.n_seq_max = atoi(getenv("LB_NSEQ"));
        if (getenv("LB_NB")) { cparams.n_batch = atoi(getenv("LB_NB")); cparams.n_ubatch = cparams.n_batch; }
""")
open(path, "w").write(text)
PY
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_APP=OFF >/dev/null
  cmake --build "$build" --target llama-bench -j "$(nproc)" >/dev/null
fi
echo "$build/bin/llama-bench"
