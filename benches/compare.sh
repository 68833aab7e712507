#!/usr/bin/env bash
# Side by side on one machine, the same model and the same threads, every
# comparison interleaved round by round or turn by turn (this machine's speed
# drifts by up to 3x under load; runs one after the other do not compare):
#   1. decode and prompt speed: hearth against llama.cpp's `llama-bench`;
#   2. one multi-turn conversation, turn by turn: hearth against `llama-server`
#      (prompt cache on), driven through the very same requests;
#   3. six conversations of four turns, visited round-robin: hearth (4 KV
#      sequences, RAM behind them) against llama-server with its default
#      slots and --cache-ram;
#   4. four conversations at once: hearth batched, hearth one after the other,
#      and llama-server -np 4: aggregate decode tokens/s, time to first token.
#
# llama-bench and llama-server are built from the llama.cpp that the
# llama-cpp-python 0.3.36 sdist vendors, with the same CPU flags as hearth
# (GGML_NATIVE, like `-C target-cpu=native`). Usage: bash benches/compare.sh
# [speed] (speed: part 1 alone, about 6 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."

work=target/compare
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
threads=${THREADS:-$(python3 -c 'import os; print(len({l.split(":")[1].strip() for l in open("/proc/cpuinfo") if l.startswith("core id")}) or os.cpu_count())')}
port=${PORT:-18080}
mkdir -p "$work"

bash benches/llama_tools.sh

make --no-print-directory model build >/dev/null

if [ "${1:-}" != speed ]; then
  echo "== hearth bench"
  target/release/hearth bench --json "$work/hearth.json" >/dev/null
fi

# This machine's speed drifts by 20 % from minute to minute, so the speed
# comparison alternates the two, seven rounds, and compares medians.
echo "== speed: llama-bench -t $threads (flash attention off, as hearth on the CPU), hearth, and llama-bench with hearth's context, alternating"
# llama-bench runs once more at the end, so each hearth run also has a
# llama-bench run right after it (report.py gives both ratios).
# Each round also runs llama-bench built from the very llama.cpp hearth links
# with hearth's own context shape (cells per conversation x conversations,
# batch), read from hearth's figures: what llama.cpp itself decodes at when it
# holds what hearth holds.
shaped=$(bash benches/llama_bench_shaped.sh)
for round in 1 2 3 4 5 6 7; do
  "$work/build/bin/llama-bench" -m "$model" -t "$threads" -p 512 -n 128 -fa 0 -r 1 -o json > "$work/llama-bench-$round.json"
  target/release/hearth bench --speed-only --json "$work/hearth-speed-$round.json" >/dev/null 2>&1
  read -r cells nseq nb < <(python3 -c 'import json,sys; h=json.load(open(sys.argv[1])); print(h["context_per_conversation"]*h["slots"], h["slots"], h["batch_size"])' "$work/hearth-speed-$round.json")
  LB_NCTX=$cells LB_NSEQ=$nseq LB_NB=$nb "$shaped" -m "$model" -t "$threads" -p 0 -n 128 -fa 0 -r 1 -o json > "$work/llama-bench-shaped-$round.json"
done
"$work/build/bin/llama-bench" -m "$model" -t "$threads" -p 512 -n 128 -fa 0 -r 1 -o json > "$work/llama-bench-8.json"
if [ "${1:-}" = speed ]; then python3 benches/report.py "$work" speed; exit; fi

server=
serve() { # serve LOG ARGS...: llama-server on $port until the next serve
  [ -z "$server" ] || { kill "$server"; wait "$server" 2>/dev/null || true; }
  local log=$1; shift
  "$work/build/bin/llama-server" -m "$model" -t "$threads" -tb "$threads" -fa off \
    --host 127.0.0.1 --port "$port" "$@" > "$work/$log" 2>&1 &
  server=$!
}
trap '[ -z "$server" ] || kill $server 2>/dev/null || true' EXIT
side() { python3 benches/side_by_side.py --port "$port" --hearth target/release/hearth "$@"; }

echo "== one conversation, turn by turn: hearth and llama-server (default slots, --cache-ram 2048)"
serve llama-server-default.log -c 16384 --cache-ram 2048
side --mode turns --scenario "$work/hearth.json" --out "$work/turns.json"
echo "== six conversations x four turns, round-robin: hearth (4 sequences) and the same llama-server"
side --mode six --slots 4 --scenario "$work/hearth.json" --out "$work/six.json"
echo "== four at once: hearth batched, hearth serial, llama-server -np 4"
serve llama-server-np4.log -c 4096 -np 4
side --mode four --slots 4 --rounds "${ROUNDS:-6}" --out "$work/four.json"

python3 benches/report.py "$work"
