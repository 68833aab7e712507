#!/usr/bin/env python3
"""Print hearth against llama.cpp's tools: ratios from one compare.sh run."""

import json
import statistics
import sys

work = sys.argv[1]
speed_only = sys.argv[2:] == ["speed"]

def bench_speeds(i):
    bench = json.load(open(f"{work}/llama-bench-{i}.json"))
    tg = next(r["avg_ts"] for r in bench if r.get("n_gen", 0) > 0)
    pp = next(r["avg_ts"] for r in bench if r.get("n_prompt", 0) > 0)
    return tg, pp


rounds = []
for i in range(1, 8):
    mine = json.load(open(f"{work}/hearth-speed-{i}.json"))
    tg, pp = bench_speeds(i)
    rounds.append((mine["decode_tokens_per_s"], tg, mine["prompt_tokens_per_s"], pp))
med = lambda i: statistics.median(r[i] for r in rounds)
ratio = lambda i, j: statistics.median(r[i] / r[j] for r in rounds)
print()
print("| measure (median of 7 alternating rounds) | hearth | llama.cpp | ratio (median of per-round ratios) |")
print("|---|---|---|---|")
print(f"| decode, tokens/s (llama-bench tg128) | {med(0):.1f} | {med(1):.1f} | {ratio(0, 1):.3f} |")
print(f"| prompt, tokens/s (llama-bench pp512) | {med(2):.0f} | {med(3):.0f} | {ratio(2, 3):.3f} |")
print("per-round decode ratios: " + ", ".join(f"{r[0] / r[1]:.3f}" for r in rounds))
try:
    shaped = [json.load(open(f"{work}/llama-bench-shaped-{i}.json"))[0]["avg_ts"] for i in range(1, 8)]
    shape = json.load(open(f"{work}/hearth-speed-1.json"))
except (FileNotFoundError, KeyError):
    shaped = None
if shaped:
    # llama.cpp holding what hearth holds: the same cells per conversation,
    # conversations and batch (llama_bench_shaped.sh).
    cells = f"{shape['slots']} x {shape['context_per_conversation']:,} cells, batch {shape['batch_size']}"
    print(f"llama-bench tg128 with hearth's context ({cells}): median {statistics.median(shaped):.1f} tokens/s; "
          f"hearth against it {statistics.median(r[0] / s for r, s in zip(rounds, shaped)):.3f}, "
          f"it against plain llama-bench {statistics.median(s / r[1] for r, s in zip(rounds, shaped)):.3f} "
          "(medians of per-round ratios)")
try:
    after = [bench_speeds(i) for i in range(2, 9)]
except FileNotFoundError:
    after = None
if after:
    # Each hearth run against the mean of the llama-bench runs just before
    # and just after it: drift within a round cancels to first order.
    dec = statistics.median(r[0] / ((r[1] + a[0]) / 2) for r, a in zip(rounds, after))
    pro = statistics.median(r[2] / ((r[3] + a[1]) / 2) for r, a in zip(rounds, after))
    print(f"against the llama-bench runs before and after each (median): decode {dec:.3f}, prompt {pro:.3f}")

if speed_only:
    sys.exit()
hearth = json.load(open(f"{work}/hearth.json"))
mean = lambda xs: sum(xs) / len(xs)
turns = json.load(open(f"{work}/turns.json"))["turns"]
print()
print("One conversation, turn by turn (interleaved):")
print()
print("| turn | hearth TTFT ms | llama-server TTFT ms | ratio | prompt tokens decoded (hearth / server) |")
print("|---|---|---|---|---|")
for t in turns:
    h, s = t["hearth"], t["server"]
    print(f"| {t['turn']} | {h['ttft_ms']:.0f} | {s['ttft_ms']:.0f} | {h['ttft_ms'] / s['ttft_ms']:.2f} | {h['decoded']} / {s['decoded']} |")
later = turns[1:]
print()
print(f"turns 2-{len(turns)}, mean TTFT: hearth {mean([t['hearth']['ttft_ms'] for t in later]):.0f} ms, "
      f"llama-server {mean([t['server']['ttft_ms'] for t in later]):.0f} ms; "
      f"per-turn ratio median {statistics.median(t['hearth']['ttft_ms'] / t['server']['ttft_ms'] for t in later):.2f}")
print(f"restart: first turn with a saved conversation {hearth['restart']['ttft_ms_after_restart']:.0f} ms "
      f"against {hearth['restart']['ttft_ms_cold']:.0f} ms cold ({hearth['restart']['ratio']:.2f}x); "
      "llama-server keeps no cache across a restart")

six = json.load(open(f"{work}/six.json"))["steps"]
print()
print("Six conversations, four turns each, round-robin (interleaved):")
print()
print("| turn | hearth mean TTFT ms | llama-server mean TTFT ms | prompt tokens decoded, all six (hearth / server) |")
print("|---|---|---|---|")
for turn in sorted({s["turn"] for s in six}):
    ss = [s for s in six if s["turn"] == turn]
    print(f"| {turn} | {mean([s['hearth']['ttft_ms'] for s in ss]):.0f} | {mean([s['server']['ttft_ms'] for s in ss]):.0f} | "
          f"{sum(s['hearth']['decoded'] for s in ss)} / {sum(s['server']['decoded'] or 0 for s in ss)} |")

four = json.load(open(f"{work}/four.json"))
rounds4 = four["rounds"]
print()
print(f"Four conversations at once, up to {four['max_tokens']} tokens each, {len(rounds4)} rounds (medians):")
print()
print("| | aggregate decode tokens/s | mean TTFT ms | slowest TTFT ms |")
print("|---|---|---|---|")
for key, label in [("batched", "hearth, batched"), ("serial", "hearth, one after the other"), ("server", "llama-server -np 4")]:
    tps = statistics.median(r[key]["tokens_per_s"] for r in rounds4)
    ttft = statistics.median(mean(r[key]["ttft_ms"]) for r in rounds4)
    worst = statistics.median(max(r[key]["ttft_ms"]) for r in rounds4)
    print(f"| {label} | {tps:.1f} | {ttft:.0f} | {worst:.0f} |")
ratio = lambda a, b: statistics.median(r[a]["tokens_per_s"] / r[b]["tokens_per_s"] for r in rounds4)
print()
print(f"per-round ratios (median): batched / serial {ratio('batched', 'serial'):.2f}, "
      f"batched / llama-server {ratio('batched', 'server'):.2f}")
