#!/usr/bin/env python3
"""Drive llama-server through hearth's multi-turn scenario and time each turn.

The conversation is the one `hearth bench` used: its system prompt, its
questions, and hearth's own replies as the assistant turns, so both systems
see exactly the same prompts. Time to first token is measured from sending
the request to the first streamed content, as hearth bench measures it.
Only 127.0.0.1 is contacted; every wait is bounded.
"""

import argparse
import json
import time
import urllib.request


def wait_ready(base, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.5)
    raise SystemExit("llama-server did not become ready")


def turn(base, messages, max_tokens):
    body = json.dumps({
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "cache_prompt": True,
        "timings_per_token": False,
    }).encode()
    req = urllib.request.Request(base + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    started = time.perf_counter()
    ttft = None
    prompt_n = None
    with urllib.request.urlopen(req, timeout=300) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices", []):
                if choice.get("delta", {}).get("content") and ttft is None:
                    ttft = (time.perf_counter() - started) * 1e3
            timings = chunk.get("timings")
            if timings:
                prompt_n = timings.get("prompt_n")
    if ttft is None:
        ttft = (time.perf_counter() - started) * 1e3
    return ttft, prompt_n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--scenario", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    scenario = json.load(open(args.scenario))["scenario"]
    wait_ready(base)
    messages = [{"role": "system", "content": scenario["system_prompt"]}]
    turns = []
    for question, reply in zip(scenario["questions"], scenario["replies"]):
        messages.append({"role": "user", "content": question})
        ttft, prompt_n = turn(base, messages, scenario["reply_tokens"])
        turns.append({"ttft_ms": ttft, "prompt_tokens_processed": prompt_n})
        messages.append({"role": "assistant", "content": reply})
        print(f"turn {len(turns)}: {ttft:.0f} ms ({prompt_n} prompt tokens processed)")
    json.dump({"turns": turns}, open(args.out, "w"), indent=2)


if __name__ == "__main__":
    main()
