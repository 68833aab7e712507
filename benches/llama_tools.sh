#!/usr/bin/env bash
# Builds llama.cpp's own `llama-bench` and `llama-server` into
# target/compare/build/bin, from the llama.cpp that the llama-cpp-python
# 0.3.36 sdist vendors (its sha256 checked against PyPI's), with the same CPU
# flags as hearth (GGML_NATIVE, like `-C target-cpu=native`). Used by
# compare.sh (speed) and `make bench-tools` (benches/bfcl.py).
set -euo pipefail
cd "$(dirname "$0")/.."

work=target/compare
mkdir -p "$work"
if [ -x "$work/build/bin/llama-server" ] && [ -x "$work/build/bin/llama-bench" ]; then
  exit 0
fi
if [ ! -d "$work/llama_cpp_python-0.3.36" ]; then
  echo "== downloading llama-cpp-python 0.3.36's sources (for its vendor/llama.cpp)"
  python3 - "$work" <<'PY'
import hashlib, json, sys, urllib.parse, urllib.request
# The project's JSON lists every release (the per-version address is not
# always served).
index = "https://pypi.org/pypi/llama-cpp-python/json"
meta = json.load(urllib.request.urlopen(index))
sdist = next(u for u in meta["releases"]["0.3.36"] if u["packagetype"] == "sdist")
# A mirror may give the file's address relative to the index's.
data = urllib.request.urlopen(urllib.parse.urljoin(index, sdist["url"])).read()
if hashlib.sha256(data).hexdigest() != sdist["digests"]["sha256"]:
    sys.exit("llama-cpp-python 0.3.36: the download does not match PyPI's sha256")
open(f"{sys.argv[1]}/llama_cpp_python-0.3.36.tar.gz", "wb").write(data)
PY
  tar xzf "$work/llama_cpp_python-0.3.36.tar.gz" -C "$work"
fi
echo "== building llama-bench and llama-server (a few minutes on two cores)"
cmake -S "$work/llama_cpp_python-0.3.36/vendor/llama.cpp" -B "$work/build" \
  -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$work/build" --target llama-bench llama-server -j "$(nproc)" >/dev/null
