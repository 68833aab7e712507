#!/usr/bin/env bash
# The release binary (CPU code chosen at run time from the libggml-cpu-*.so
# modules beside it, no -C target-cpu=native) against a static build made
# with -C target-cpu=native (llama.cpp's GGML_NATIVE), alternating round by
# round, since this machine's speed drifts under load. Prints each round's
# prompt and decode tokens/s and the medians.
#
# Usage: bash benches/backends.sh            (builds the native reference in target/native)
#        NATIVE=/path/to/hearth bash benches/backends.sh
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${ROUNDS:-6}
work=target/bench/backends
mkdir -p "$work"
make --no-print-directory model build >/dev/null
native=${NATIVE:-target/native/release/hearth}
if [ ! -x "$native" ]; then
  echo "== building the static native reference in target/native (about 10 minutes)"
  RUSTFLAGS="-C target-cpu=native" cargo build --release --no-default-features --target-dir target/native
fi
target/release/hearth doctor | grep -E "backend|cpucode" || true

for round in $(seq 1 "$rounds"); do
  "$native" bench --speed-only --json "$work/native-$round.json" >/dev/null 2>&1
  target/release/hearth bench --speed-only --json "$work/dynamic-$round.json" >/dev/null 2>&1
done

python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
rows = {k: [json.load(open(f"{work}/{k}-{r}.json")) for r in range(1, rounds + 1)] for k in ("native", "dynamic")}
print(f"{'round':>5} {'native prompt':>14} {'dynamic prompt':>15} {'native decode':>14} {'dynamic decode':>15}")
for r in range(rounds):
    n, d = rows["native"][r], rows["dynamic"][r]
    print(f"{r+1:>5} {n['prompt_tokens_per_s']:>14.0f} {d['prompt_tokens_per_s']:>15.0f} {n['decode_tokens_per_s']:>14.1f} {d['decode_tokens_per_s']:>15.1f}")
med = lambda k, f: statistics.median(x[f] for x in rows[k])
for f, name in (("prompt_tokens_per_s", "prompt"), ("decode_tokens_per_s", "decode")):
    n, d = med("native", f), med("dynamic", f)
    paired = statistics.median(rows["dynamic"][r][f] / rows["native"][r][f] for r in range(rounds))
    print(f"median {name}: native {n:.1f}, dynamic {d:.1f} tokens/s: dynamic/native = {d/n:.3f} (median of per-round ratios {paired:.3f})")
PY
