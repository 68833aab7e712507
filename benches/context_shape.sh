#!/usr/bin/env bash
# How much of decode speed the shape of hearth's context costs llama.cpp
# itself: `llama-bench` (tg128, flash attention off) as it comes, and with
# hearth's default context (4 sequences of 8,192 cells, batch 512), and two
# shapes between, alternating round by round.
#
# llama-bench is built from the very llama.cpp that hearth links, by
# llama_bench_shaped.sh.
# Usage: bash benches/context_shape.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-6}
work=target/compare
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
bench=$(bash benches/llama_bench_shaped.sh)

tg() { "$bench" -m "$model" -t "${THREADS:-2}" -p 0 -n 128 -fa 0 -r 2 -o json 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["avg_ts"])'; }
out=$work/context_shape.tsv
echo -e "round\tplain\t1x8192\t4x256\t4x8192_b512" > "$out"
for round in $(seq "$rounds"); do
  a=$(tg); b=$(LB_NCTX=8192 tg); c=$(LB_NCTX=1024 LB_NSEQ=4 tg); d=$(LB_NCTX=32768 LB_NSEQ=4 LB_NB=512 tg)
  echo -e "$round\t$a\t$b\t$c\t$d" | tee -a "$out"
done
python3 - "$out" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
for shape in ("1x8192", "4x256", "4x8192_b512"):
    ratios = [float(r[shape]) / float(r["plain"]) for r in rows]
    print(f"{shape}: median {statistics.median(float(r[shape]) for r in rows):.1f} tokens/s, "
          f"{statistics.median(ratios):.3f} x plain (per-round ratios {', '.join(f'{x:.3f}' for x in ratios)})")
print(f"plain: median {statistics.median(float(r['plain']) for r in rows):.1f} tokens/s")
PY
