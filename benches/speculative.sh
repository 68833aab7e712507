#!/usr/bin/env bash
# Speculative decoding against plain decoding, interleaved round by round
# (`hearth bench --speculative`: the same requests answered by an engine
# that drafts and one that does not, in alternating order), on chat and on
# replies that quote their prompt:
#   1. prompt lookup on this machine's CPU (SmolLM2-135M Q4_1);
#   2. prompt lookup on the test device: hearth-rpc-server on 127.0.0.1;
#   3. a draft model: SmolLM2 Q4_1 drafting for a copy of itself widened to
#      F32 (tests/clients/requantize.py), the only larger model with its
#      vocabulary to be had here. It shows the path and its acceptance, not
#      what a real 1.7B target would gain.
# Usage: bash benches/speculative.sh [ROUNDS] [REPLY_TOKENS]
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-5}
tokens=${2:-128}
work=target/bench/speculative
model=$PWD/models/SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p "$work"
make --no-print-directory model build rpc-server test-clients >/dev/null

config() { # NAME MODEL ENGINE-LINES
  printf '[data]\ndir = "%s"\n[model]\npath = "%s"\n[engine]\n%b\n' \
    "$PWD/$work/data-$1" "$2" "$3" > "$work/$1.toml"
  echo "$work/$1.toml"
}
bench() { # NAME CONFIG
  echo "== $1"
  target/release/hearth --config "$2" bench --speculative --rounds "$rounds" \
    --reply-tokens "$tokens" --json "$work/$1.json" 2>/dev/null
}

bench cpu "$(config cpu "$model" 'speculative = "lookup"')"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
target/rpc/server/hearth-rpc-server --host 127.0.0.1 --port "$port" --threads "$(nproc)" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 1
bench device "$(config device "$model" "backends_dir = \"$PWD/target/rpc/client\"\nrpc_servers = [\"127.0.0.1:$port\"]")"
kill $server; trap - EXIT

wide=$work/SmolLM2-135M-Instruct.F32.gguf
[ -f "$wide" ] || PYTHONPATH=target/pyclients python3 tests/clients/requantize.py "$model" "$wide" f32
bench draft-model "$(config draft-model "$PWD/$wide" "speculative = \"draft\"\ndraft_model = \"$model\"")"
