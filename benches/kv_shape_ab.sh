#!/usr/bin/env bash
# What the size of the KV cache costs llama.cpp's decode, in one process
# (benches/kv_shape_ab.cpp), linked with the very llama.cpp hearth links
# (built by llama_bench_shaped.sh, native CPU flags).
# Usage: bash benches/kv_shape_ab.sh [rounds] [cells per sequence ...]
# (default: 30 rounds of 256, 4096 and 8192 cells; llama.cpp pads to 256).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-30}
shift || true
[ $# -gt 0 ] || set -- 256 4096 8192
bash benches/llama_bench_shaped.sh >/dev/null
b=target/compare/build-crate
s=target/compare/crate-src
g++ -O2 -std=c++17 benches/kv_shape_ab.cpp -I"$s/include" -I"$s/ggml/include" \
  "$b/src/libllama.a" "$b/ggml/src/libggml.a" "$b/ggml/src/libggml-cpu.a" "$b/ggml/src/libggml-base.a" \
  -fopenmp -lpthread -o target/compare/kv_shape_ab
target/compare/kv_shape_ab models/SmolLM2-135M-Instruct.Q4_1.gguf "$rounds" "$@"
