#!/usr/bin/env bash
# Side by side on one machine, the same model and the same threads:
#   - hearth's decode speed against llama.cpp's own `llama-bench` (tg128);
#   - hearth's multi-turn time to first token against `llama-server` with its
#     prompt cache on, driven over HTTP with the very same conversation.
#
# llama-bench and llama-server are built from the llama.cpp that the
# llama-cpp-python 0.3.36 sdist vendors, with the same CPU flags as hearth
# (GGML_NATIVE, like `-C target-cpu=native`). Usage: bash benches/compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."

work=target/compare
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
threads=${THREADS:-$(python3 -c 'import os; print(len({l.split(":")[1].strip() for l in open("/proc/cpuinfo") if l.startswith("core id")}) or os.cpu_count())')}
port=${PORT:-18080}
mkdir -p "$work"

if [ ! -x "$work/build/bin/llama-server" ] || [ ! -x "$work/build/bin/llama-bench" ]; then
  echo "== building llama-bench and llama-server from llama-cpp-python 0.3.36's vendor/llama.cpp"
  if [ ! -d "$work/llama_cpp_python-0.3.36" ]; then
    python3 -m pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$work"
    tar xzf "$work/llama_cpp_python-0.3.36.tar.gz" -C "$work"
  fi
  cmake -S "$work/llama_cpp_python-0.3.36/vendor/llama.cpp" -B "$work/build" \
    -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$work/build" --target llama-bench llama-server -j "$(nproc)" >/dev/null
fi

make --no-print-directory model build >/dev/null

echo "== hearth bench"
target/release/hearth bench --json "$work/hearth.json" >/dev/null

# This machine's speed drifts by 20 % from minute to minute, so the speed
# comparison alternates the two, seven rounds, and compares medians.
echo "== speed: llama-bench -t $threads (flash attention off, as hearth on the CPU) and hearth, alternating"
for round in 1 2 3 4 5 6 7; do
  "$work/build/bin/llama-bench" -m "$model" -t "$threads" -p 512 -n 128 -fa 0 -r 1 -o json > "$work/llama-bench-$round.json"
  target/release/hearth bench --speed-only --json "$work/hearth-speed-$round.json" >/dev/null 2>&1
done

echo "== llama-server, prompt cache on, the same conversation over HTTP"
"$work/build/bin/llama-server" -m "$model" -t "$threads" -tb "$threads" -c 8192 -np 1 -fa off \
  --host 127.0.0.1 --port "$port" > "$work/llama-server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
python3 benches/drive_server.py --port "$port" --scenario "$work/hearth.json" --out "$work/server.json"
kill $server 2>/dev/null || true

python3 benches/report.py "$work"
