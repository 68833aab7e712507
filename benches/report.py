#!/usr/bin/env python3
"""Print hearth against llama.cpp's tools: ratios from one compare.sh run."""

import json
import statistics
import sys

work = sys.argv[1]
hearth = json.load(open(f"{work}/hearth.json"))
server = json.load(open(f"{work}/server.json"))["turns"]

rounds = []
for i in range(1, 8):
    bench = json.load(open(f"{work}/llama-bench-{i}.json"))
    mine = json.load(open(f"{work}/hearth-speed-{i}.json"))
    tg = next(r["avg_ts"] for r in bench if r.get("n_gen", 0) > 0)
    pp = next(r["avg_ts"] for r in bench if r.get("n_prompt", 0) > 0)
    rounds.append((mine["decode_tokens_per_s"], tg, mine["prompt_tokens_per_s"], pp))
med = lambda i: statistics.median(r[i] for r in rounds)
ratio = lambda i, j: statistics.median(r[i] / r[j] for r in rounds)
print()
print("| measure (median of 7 alternating rounds) | hearth | llama.cpp | ratio (median of per-round ratios) |")
print("|---|---|---|---|")
print(f"| decode, tokens/s (llama-bench tg128) | {med(0):.1f} | {med(1):.1f} | {ratio(0, 1):.2f} |")
print(f"| prompt, tokens/s (llama-bench pp512) | {med(2):.0f} | {med(3):.0f} | {ratio(2, 3):.2f} |")
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
