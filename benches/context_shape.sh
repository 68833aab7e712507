#!/usr/bin/env bash
# How much of decode speed the shape of hearth's context costs llama.cpp
# itself: `llama-bench` (tg128, flash attention off) as it comes, and with
# hearth's default context (4 sequences of 8,192 cells, batch 512), and two
# shapes between, alternating round by round.
#
# llama-bench is built from the very llama.cpp that hearth links (the
# llama-cpp-sys-2 crate's vendored tree). That tree ships without the tools'
# sources, so llama-bench.cpp comes from llama-cpp-python 0.3.36's tree (as
# in compare.sh; llama.h differs only in its state version numbers), with
# three environment overrides added: LB_NCTX, LB_NSEQ, LB_NB.
# Usage: bash benches/context_shape.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${1:-6}
work=target/compare
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
crate=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/llama-cpp-sys-2-"$(sed -n '/name = "llama-cpp-sys-2"/{n;s/version = "\(.*\)"/\1/p}' Cargo.lock)"/llama.cpp | head -1)
src=$work/crate-src
build=$work/build-crate
python_tree=$work/llama_cpp_python-0.3.36/vendor/llama.cpp
[ -d "$python_tree" ] || { echo "run benches/compare.sh once first (it unpacks llama-cpp-python's tree)"; exit 1; }

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

tg() { "$build/bin/llama-bench" -m "$model" -t "${THREADS:-2}" -p 0 -n 128 -fa 0 -r 2 -o json 2>/dev/null |
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
