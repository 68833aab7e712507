#!/usr/bin/env python3
"""hearth and llama-server driven through the same requests, interleaved.

hearth runs as `hearth bench --stdio` (one JSON request line in, one line of
figures out); llama-server is driven over its OpenAI-compatible HTTP API,
streaming. Every step sends the same request to both, alternating which
goes first, so the machine's drift hits both alike. Only 127.0.0.1 is
contacted; every wait is bounded.

Modes (--mode):
  turns  the multi-turn conversation of `hearth bench` (its system prompt,
         questions, and hearth's replies as the assistant turns), turn by turn;
  six    six conversations of four turns each, visited round-robin, so a
         server with fewer slots than conversations must evict and restore;
  four   four conversations at once, several rounds: hearth batched, hearth
         one after the other, and llama-server with four parallel requests.
Figures go to --out as JSON.
"""

import argparse
import json
import subprocess
import threading
import time
import urllib.request


def wait_ready(base, timeout=180):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.5)
    raise SystemExit("llama-server did not become ready")


def server_turn(base, messages, max_tokens, started=None):
    """One streamed request; figures as hearth reports them."""
    body = json.dumps({
        "messages": messages,
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": True,
        "cache_prompt": True,
    }).encode()
    req = urllib.request.Request(base + "/v1/chat/completions", body,
                                 {"Content-Type": "application/json"})
    started = started or time.perf_counter()
    ms = lambda: (time.perf_counter() - started) * 1e3
    ttft, timings = None, {}
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk.get("choices", []):
                if choice.get("delta", {}).get("content") and ttft is None:
                    ttft = ms()
            timings = chunk.get("timings") or timings
    total = ms()
    return {
        "ttft_ms": ttft if ttft is not None else total,
        "total_ms": total,
        "decoded": timings.get("prompt_n"),
        "completion_tokens": timings.get("predicted_n"),
    }


class Hearth:
    """`hearth bench --stdio` as a child process."""

    def __init__(self, command):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def ask(self, requests):
        self.proc.stdin.write(json.dumps({"requests": requests}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("hearth bench --stdio stopped")
        answer = json.loads(line)
        if "error" in answer:
            raise SystemExit(f"hearth: {answer['error']}")
        for r in answer["replies"]:
            r["decoded"] = r["prompt_tokens"] - r["cached_tokens"]
        return answer

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=120)


def both(step, hearth_fn, server_fn):
    """Runs the two, alternating which goes first by step."""
    if step % 2 == 0:
        h = hearth_fn()
        return h, server_fn()
    s = server_fn()
    return hearth_fn(), s


def mode_turns(hearth, base, scenario):
    messages = [{"role": "system", "content": scenario["system_prompt"]}]
    turns = []
    for i, (question, reply) in enumerate(zip(scenario["questions"], scenario["replies"])):
        messages.append({"role": "user", "content": question})
        request = {"conversation": "side-turns", "messages": messages,
                   "max_tokens": scenario["reply_tokens"]}
        h, s = both(i, lambda: hearth.ask([request])["replies"][0],
                    lambda: server_turn(base, messages, scenario["reply_tokens"]))
        turns.append({"turn": i + 1, "hearth": h, "server": s})
        messages.append({"role": "assistant", "content": reply})
        print(f"turn {i + 1}: hearth {h['ttft_ms']:.0f} ms ({h['decoded']} decoded), "
              f"llama-server {s['ttft_ms']:.0f} ms ({s['decoded']} decoded)", flush=True)
    return {"turns": turns}


NAMES = ["Ana", "Bao", "Chidi", "Dana", "Emil", "Fatima"]


def mode_six(hearth, base, scenario):
    convs = [[{"role": "system",
               "content": f"You are talking with {name}.\n" + scenario["system_prompt"]}]
             for name in NAMES]
    steps = []
    step = 0
    for turn in range(4):
        question, reply = scenario["questions"][turn], scenario["replies"][turn]
        for c, messages in enumerate(convs):
            messages.append({"role": "user", "content": question})
            request = {"conversation": f"side-six-{c}", "messages": messages,
                       "max_tokens": scenario["reply_tokens"]}
            h, s = both(step, lambda: hearth.ask([request])["replies"][0],
                        lambda: server_turn(base, messages, scenario["reply_tokens"]))
            steps.append({"turn": turn + 1, "conversation": c, "hearth": h, "server": s})
            messages.append({"role": "assistant", "content": reply})
            print(f"turn {turn + 1}, {NAMES[c]}: hearth {h['ttft_ms']:.0f} ms ({h['decoded']} decoded), "
                  f"llama-server {s['ttft_ms']:.0f} ms ({s['decoded']} decoded)", flush=True)
            step += 1
    return {"steps": steps}


STORIES = ["a lighthouse keeper and a storm", "a dragon who learns to cook",
           "a girl who builds a robot", "a sailor lost at sea"]


def story(round_, i):
    return [{"role": "system", "content": f"You are a helpful assistant. (round {round_})"},
            {"role": "user", "content": f"Write a long story about {STORIES[i]}."}]


def aggregate(replies, wall_ms):
    tokens = sum(r["completion_tokens"] or 0 for r in replies)
    return {"tokens": tokens, "wall_ms": wall_ms, "tokens_per_s": tokens / wall_ms * 1e3,
            "ttft_ms": [r["ttft_ms"] for r in replies]}


def mode_four(hearth, base, rounds, max_tokens):
    out = []
    for rnd in range(rounds):
        def batched():
            reqs = [{"conversation": f"four-b-{rnd}-{i}", "messages": story(f"b{rnd}", i),
                     "max_tokens": max_tokens} for i in range(4)]
            a = hearth.ask(reqs)
            return aggregate(a["replies"], a["wall_ms"])

        def serial():
            started, replies = time.perf_counter(), []
            for i in range(4):
                before = (time.perf_counter() - started) * 1e3
                r = hearth.ask([{"conversation": f"four-s-{rnd}-{i}", "messages": story(f"s{rnd}", i),
                                 "max_tokens": max_tokens}])["replies"][0]
                r["ttft_ms"] += before
                replies.append(r)
            return aggregate(replies, (time.perf_counter() - started) * 1e3)

        def server():
            started = time.perf_counter()
            replies = [None] * 4

            def one(i):
                replies[i] = server_turn(base, story(f"v{rnd}", i), max_tokens, started)
            threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=900)
            return aggregate(replies, (time.perf_counter() - started) * 1e3)

        runs = [("batched", batched), ("serial", serial), ("server", server)]
        runs = runs[rnd % 3:] + runs[:rnd % 3]
        figures = {name: fn() for name, fn in runs}
        out.append(figures)
        print(f"round {rnd + 1}: " + ", ".join(
            f"{k} {v['tokens_per_s']:.1f} tokens/s" for k, v in figures.items()), flush=True)
    return {"rounds": out, "max_tokens": max_tokens}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--hearth", required=True, help="the hearth binary")
    ap.add_argument("--slots", type=int, help="hearth's KV sequences")
    ap.add_argument("--mode", choices=["turns", "six", "four"], required=True)
    ap.add_argument("--scenario", help="hearth bench's JSON (turns and six)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    base = f"http://127.0.0.1:{args.port}"
    wait_ready(base)
    command = [args.hearth, "bench", "--stdio"]
    if args.slots:
        command += ["--slots", str(args.slots)]
    hearth = Hearth(command)
    try:
        if args.mode == "four":
            result = mode_four(hearth, base, args.rounds, args.max_tokens)
        else:
            scenario = json.load(open(args.scenario))["scenario"]
            fn = mode_turns if args.mode == "turns" else mode_six
            result = fn(hearth, base, scenario)
    finally:
        hearth.close()
    json.dump(result, open(args.out, "w"), indent=2)


if __name__ == "__main__":
    main()
