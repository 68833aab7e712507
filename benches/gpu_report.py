#!/usr/bin/env python3
"""The tables of one benches/gpu.sh run: python3 benches/gpu_report.py OUT"""

import json
import os
import statistics
import sys

out = sys.argv[1]


def load(name):
    path = os.path.join(out, name)
    return json.load(open(path)) if os.path.exists(path) else None


def common(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


print(open(os.path.join(out, "gpu.txt")).read().strip())
cpu, gpu = load("bench-cpu.json"), load("bench-gpu.json")
if cpu and gpu:
    print("\n| hearth bench | CPU (gpu_layers = 0) | GPU (all layers) |")
    print("|---|---|---|")
    print(f"| prompt, tokens/s | {cpu['prompt_tokens_per_s']:.0f} | {gpu['prompt_tokens_per_s']:.0f} |")
    print(f"| decode, tokens/s | {cpu['decode_tokens_per_s']:.1f} | {gpu['decode_tokens_per_s']:.1f} |")
    for name, b in (("CPU", cpu), ("GPU", gpu)):
        t10 = b["multi_turn"][-1]
        r = b["restart"]
        print(
            f"{name}: turn 10 decoded {t10['decoded_with_reuse']} of {t10['prompt_tokens']} prompt tokens "
            f"(TTFT {t10['ttft_ms_with_reuse']:.1f} ms; {t10['ttft_ms_without_reuse']:.1f} ms without reuse); "
            f"after a restart decoded {r['decoded_after_restart']} of {r['prompt_tokens']} "
            f"(TTFT {r['ttft_ms_after_restart']:.1f} ms, cold {r['ttft_ms_cold']:.1f} ms)"
        )
    a, b = cpu["scenario"]["replies"], gpu["scenario"]["replies"]
    same = sum(x == y for x, y in zip(a, b))
    print(f"\ngreedy replies of the 10-turn conversation, CPU against GPU: {same} of {len(a)} identical")
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            n = common(x, y)
            print(f"  turn {i + 1}: first {n} characters equal; CPU {x[n:n + 40]!r} / GPU {y[n:n + 40]!r}")
            break

par = load("parallel-gpu.json")
if par:
    total = par["conversations"] * len(par["rounds"])
    print(
        f"\nparallel {par['conversations']} on the GPU: batched {par['batched_tokens_per_s']:.0f} tokens/s, "
        f"one at a time {par['serial_tokens_per_s']:.0f} ({par['ratio']:.2f}x); mean TTFT "
        f"{par['batched_ttft_ms']:.1f} ms batched, {par['serial_ttft_ms']:.1f} ms serial; "
        f"replies identical both ways: {par['identical_replies']} of {total}"
    )

rounds = []
for i in range(1, 8):
    mine, bench, after = load(f"hearth-speed-{i}.json"), load(f"llama-bench-{i}.json"), load(f"llama-bench-{i + 1}.json")
    if not (mine and bench):
        continue
    tg = lambda b: next(r["avg_ts"] for r in b if r.get("n_gen", 0) > 0)
    pp = lambda b: next(r["avg_ts"] for r in b if r.get("n_prompt", 0) > 0)
    lb_tg = (tg(bench) + tg(after)) / 2 if after else tg(bench)
    lb_pp = (pp(bench) + pp(after)) / 2 if after else pp(bench)
    rounds.append((mine["decode_tokens_per_s"], lb_tg, mine["prompt_tokens_per_s"], lb_pp))
if rounds:
    med = lambda i: statistics.median(r[i] for r in rounds)
    ratio = lambda i, j: statistics.median(r[i] / r[j] for r in rounds)
    print(f"\n| GPU, {len(rounds)} alternating rounds (medians) | hearth | llama-bench -ngl 99 -fa 1 | ratio |")
    print("|---|---|---|---|")
    print(f"| decode, tokens/s (tg128) | {med(0):.1f} | {med(1):.1f} | {ratio(0, 1):.3f} |")
    print(f"| prompt, tokens/s (pp512) | {med(2):.0f} | {med(3):.0f} | {ratio(2, 3):.3f} |")
    print("per-round decode ratios (llama-bench: mean of the runs before and after): "
          + ", ".join(f"{r[0] / r[1]:.3f}" for r in rounds))
part = load("hearth-speed-part.json")
if part:
    print(f"12 layers on the GPU, the rest on the CPU: prompt {part['prompt_tokens_per_s']:.0f}, "
          f"decode {part['decode_tokens_per_s']:.1f} tokens/s")
squeeze = os.path.join(out, "squeeze.txt")
if os.path.exists(squeeze):
    print("\nwith little GPU memory free:\n" + open(squeeze).read().strip())
