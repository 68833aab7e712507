#!/usr/bin/env python3
"""Print hearth against llama.cpp's tools: ratios from one compare.sh run."""

import json
import sys

hearth = json.load(open(sys.argv[1]))
bench = json.load(open(sys.argv[2]))
server = json.load(open(sys.argv[3]))["turns"]

tg = next(r["avg_ts"] for r in bench if r.get("n_gen", 0) > 0)
pp = next(r["avg_ts"] for r in bench if r.get("n_prompt", 0) > 0)
print()
print("| measure | hearth | llama.cpp | ratio |")
print("|---|---|---|---|")
print(f"| decode, tokens/s (llama-bench tg128) | {hearth['decode_tokens_per_s']:.1f} | {tg:.1f} | {hearth['decode_tokens_per_s'] / tg:.2f} |")
print(f"| prompt, tokens/s (llama-bench pp512) | {hearth['prompt_tokens_per_s']:.0f} | {pp:.0f} | {hearth['prompt_tokens_per_s'] / pp:.2f} |")
print()
print("| turn | hearth TTFT ms | llama-server TTFT ms | ratio | tokens decoded (hearth / server) |")
print("|---|---|---|---|---|")
for h, s in zip(hearth["multi_turn"], server):
    print(f"| {h['turn']} | {h['ttft_ms_with_reuse']:.0f} | {s['ttft_ms']:.0f} | {h['ttft_ms_with_reuse'] / s['ttft_ms']:.2f} | {h['decoded_with_reuse']} / {s['prompt_tokens_processed']} |")
later = list(zip(hearth["multi_turn"], server))[1:]
mean = lambda xs: sum(xs) / len(xs)
print()
print(f"turns 2-10, mean TTFT: hearth {mean([h['ttft_ms_with_reuse'] for h, _ in later]):.0f} ms, "
      f"llama-server {mean([s['ttft_ms'] for _, s in later]):.0f} ms")
print(f"restart: first turn with a saved conversation {hearth['restart']['ttft_ms_after_restart']:.0f} ms "
      f"against {hearth['restart']['ttft_ms_cold']:.0f} ms cold ({hearth['restart']['ratio']:.2f}x); "
      "llama-server keeps no cache across a restart")
