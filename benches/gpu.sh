#!/usr/bin/env bash
# hearth on a machine with an NVIDIA GPU and no Rust toolchain: the CUDA
# backend built there with `make gpu`, then the checks and figures of the
# README's "On a GPU" section.
#
#   bash benches/gpu.sh pack DIR     here, after `make build`: the stripped
#                                    binary and its libraries, llama.cpp's
#                                    sources and the test model, into DIR
#   bash benches/gpu.sh run DIR OUT  there, from a checkout (for the Makefile):
#     1. `make gpu` (timed) and CUDA `llama-bench` from the same sources;
#     2. `hearth doctor` with the backend beside the binary;
#     3. `hearth bench` on the CPU and on the GPU: the ten greedy replies of
#        its conversation compared, the KV cache saved and restored across a
#        restart with the model on the GPU;
#     4. `hearth bench --parallel 4` on the GPU: batched against one at a
#        time, replies compared;
#     5. `hearth bench --speed-only` and `llama-bench -ngl 99 -fa 1`,
#        alternating round by round;
#     6. part of the model offloaded, and a KV cache far larger than the GPU.
# Logs and JSON go to OUT; benches/gpu_report.py prints the tables.
set -uo pipefail
cd "$(dirname "$0")/.."
model_name=SmolLM2-135M-Instruct.Q4_1.gguf

pack() {
  local dir=$1 stage
  stage=$(mktemp -d)
  mkdir -p "$dir" "$stage/bin"
  strip --strip-all -o "$stage/bin/hearth" target/release/hearth
  for lib in target/release/lib*.so*; do
    if [ -L "$lib" ]; then cp -P "$lib" "$stage/bin/"; else strip --strip-unneeded -o "$stage/bin/${lib##*/}" "$lib"; fi
  done
  XZ_OPT=-9e tar cJf "$dir/hearth.tar.xz" -C "$stage" bin
  local version src
  version=$(sed -n '/^name = "llama-cpp-sys-2"$/{n;s/^version = "\(.*\)"$/\1/p;}' Cargo.lock)
  src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$version"/llama.cpp | head -n 1)
  # The crate ships llama.cpp without its tools; llama-bench comes from the
  # llama.cpp that llama-cpp-python 0.3.36 vendors (as in benches/compare.sh,
  # ggml 0.25.3 against the crate's 0.26.0), built alone among the tools.
  local sdist=target/compare/llama_cpp_python-0.3.36.tar.gz
  [ -f "$sdist" ] || python3 -m pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d target/compare
  mkdir -p "$stage/src"
  tar cf - -C "$(dirname "$src")" --exclude=llama.cpp/docs --exclude=llama.cpp/gguf-py \
    --exclude=llama.cpp/models --exclude=llama.cpp/tests --exclude=llama.cpp/examples llama.cpp | tar xf - -C "$stage/src"
  chmod -R u+w "$stage/src"
  tar xzf "$sdist" -C "$stage" llama_cpp_python-0.3.36/vendor/llama.cpp/tools/llama-bench
  rm -rf "$stage/src/llama.cpp/tools/llama-bench"
  mv "$stage/llama_cpp_python-0.3.36/vendor/llama.cpp/tools/llama-bench" "$stage/src/llama.cpp/tools/"
  echo 'add_subdirectory(llama-bench)' > "$stage/src/llama.cpp/tools/CMakeLists.txt"
  XZ_OPT=-9e tar cJf "$dir/llama.cpp.tar.xz" -C "$stage/src" llama.cpp
  cp "models/$model_name" "$dir/"
  rm -rf "$stage"
  du -b "$dir"/*
}

config() { # config NAME GPU_LAYERS [MODEL_LINE [ENGINE_LINE]]: a config under $run
  cat > "$run/$1.toml" <<EOF
[model]
path = "$model"
gpu_layers = $2
${3:-}
[engine]
backends_dir = "$run/bin"
${4:-}
[data]
dir = "$run/data-$1"
[log]
level = "warn"
EOF
}

unpack() { # unpack TAR.XZ DIR, with Python where xz is missing
  if command -v xz >/dev/null; then tar xJf "$1" -C "$2"
  else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"; fi
}

squeeze() { # squeeze MIB: a process holds all but MIB of the GPU's memory
  rm -f "$run/squeeze.ready"
  python3 - "$1" "$run/squeeze.ready" <<'PY' &
import sys, time, torch
leave = int(sys.argv[1]) << 20
free, _ = torch.cuda.mem_get_info()
held = torch.empty(max(free - leave, 0), dtype=torch.uint8, device="cuda")
open(sys.argv[2], "w").write(str(free - leave))
time.sleep(600)
PY
  squeezer=$!
  for _ in $(seq 1 60); do [ -f "$run/squeeze.ready" ] && return 0; sleep 1; done
  echo "squeeze: torch did not take the memory"; kill "$squeezer"; return 1
}

run_checks() {
  local dir=$1 out=$2
  run=$dir/run
  model=$dir/$model_name
  mkdir -p "$run" "$out"
  export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free --format=csv | tee "$out/gpu.txt"
  nproc | sed 's/^/cores: /' | tee -a "$out/gpu.txt"
  [ -x "$run/bin/hearth" ] || [ ! -f "$dir/hearth.tar.xz" ] || unpack "$dir/hearth.tar.xz" "$run"
  [ -d "$run/llama.cpp" ] || unpack "$dir/llama.cpp.tar.xz" "$run"

  if [ -z "${SKIP_BUILD:-}" ] && { [ ! -x "$run/gpu-build/bin/llama-bench" ] || [ ! -f "$run/bin/libggml-cuda.so" ]; }; then
    echo "== make gpu"
    local start=$(date +%s)
    make --no-print-directory gpu LLAMA_SRC="$run/llama.cpp" GPU_DEST="$run/bin" GPU_BUILD="$run/gpu-build" \
      GPU_CMAKE_FLAGS="-DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_COMMON=ON" > "$out/make-gpu.log" 2>&1 \
      || { tail -n 40 "$out/make-gpu.log"; return 1; }
    echo "make gpu: $(( $(date +%s) - start )) s on $(nproc) cores" | tee -a "$out/gpu.txt"
    start=$(date +%s)
    cmake --build "$run/gpu-build" --target llama-bench -j "$(nproc)" > "$out/llama-bench-build.log" 2>&1 \
      || { tail -n 40 "$out/llama-bench-build.log"; return 1; }
    echo "llama-bench after it: $(( $(date +%s) - start )) s" | tee -a "$out/gpu.txt"
    ls -l "$run/bin/libggml-cuda.so" | tee -a "$out/gpu.txt"
  fi
  [ -z "${BUILD_ONLY:-}" ] || return 0
  [ -f "$model" ] || { echo "no model at $model"; return 1; }
  sha256sum "$model" | tee -a "$out/gpu.txt"
  local hearth=$run/bin/hearth lb=$run/gpu-build/bin/llama-bench
  config cpu 0
  config gpu '"auto"'
  config part 12
  config fixed 99

  echo "== doctor"
  "$hearth" doctor --config "$run/gpu.toml" > "$out/doctor-gpu.txt" 2>&1; echo "rc=$?" >> "$out/doctor-gpu.txt"
  grep -E "gpu|backend|load" "$out/doctor-gpu.txt"
  "$hearth" doctor --config "$run/part.toml" 2>&1 | grep -E "load" | tee "$out/doctor-part.txt"

  echo "== bench on the GPU"
  timeout 300 "$hearth" bench --config "$run/gpu.toml" --json "$out/bench-gpu.json" > "$out/bench-gpu.txt" 2>&1; echo "rc=$?"
  tail -n 25 "$out/bench-gpu.txt"
  echo "== speed, alternating with llama-bench"
  for round in 1 2 3 4; do
    "$lb" -m "$model" -ngl 99 -fa 1 -p 512 -n 128 -r 1 -o json > "$out/llama-bench-$round.json" 2>> "$out/llama-bench.err"
    "$hearth" bench --speed-only --config "$run/gpu.toml" --json "$out/hearth-speed-$round.json" > /dev/null 2>&1
  done
  "$lb" -m "$model" -ngl 99 -fa 1 -p 512 -n 128 -r 1 -o json > "$out/llama-bench-5.json" 2>> "$out/llama-bench.err"
  "$hearth" bench --speed-only --config "$run/part.toml" --json "$out/hearth-speed-part.json" > /dev/null 2>&1

  echo "== parallel 4 on the GPU"
  timeout 300 "$hearth" bench --parallel 4 --rounds 3 --config "$run/gpu.toml" --json "$out/parallel-gpu.json" > "$out/parallel-gpu.txt" 2>&1; echo "rc=$?"
  tail -n 8 "$out/parallel-gpu.txt"

  echo "== bench on the CPU (its greedy replies against the GPU's)"
  timeout 300 "$hearth" bench --config "$run/cpu.toml" --json "$out/bench-cpu.json" > "$out/bench-cpu.txt" 2>&1; echo "rc=$?"
  echo "== little GPU memory free (another process holds the rest)"
  for leave in ${SQUEEZE:-1600 400}; do
    squeeze "$leave" || break
    nvidia-smi --query-gpu=memory.free --format=csv,noheader | sed "s/^/free with $leave MiB left: /" | tee -a "$out/squeeze.txt"
    for name in gpu fixed; do
      echo "-- $leave MiB left, $name:" >> "$out/squeeze.txt"
      timeout 120 "$hearth" doctor --config "$run/$name.toml" > "$out/doctor-$name-$leave.txt" 2>&1
      echo "rc=$?" >> "$out/doctor-$name-$leave.txt"
      grep -E "^(ok|FAIL|warn|info)? *(gpu|load)|rc=|abort|error|CUDA" "$out/doctor-$name-$leave.txt" | head -n 6 | tee -a "$out/squeeze.txt"
      timeout 120 "$hearth" ask --config "$run/$name.toml" "Say hello." > "$out/ask-$name-$leave.txt" 2>&1
      echo "ask rc=$?: $(head -c 300 "$out/ask-$name-$leave.txt" | tr '\n' ' ')" | tee -a "$out/squeeze.txt"
    done
    kill "$squeezer"; wait "$squeezer" 2>/dev/null
  done
  python3 benches/gpu_report.py "$out" | tee "$out/report.md"
}

case "${1:-}" in
  pack) pack "${2:?DIR}" ;;
  run) run_checks "${2:?DIR}" "${3:?OUT}" ;;
  *) echo "usage: bash benches/gpu.sh pack DIR | run DIR OUT" >&2; exit 2 ;;
esac
