#!/usr/bin/env python3
"""Tool calling on public data: the Berkeley Function Calling Leaderboard's
single-turn questions (PyPI `bfcl-eval`, Apache-2.0) through hearth's
OpenAI-compatible API (the plain served model) and through llama.cpp's own
`llama-server --jinja`, on the same GGUF, the same cases, case by case
interleaved (the one asked first alternates).

Each request is what BFCL's OpenAI function-calling handler sends: the
question's messages, the functions turned into OpenAI tools by BFCL's own
`convert_to_tool` (its type mapping: dict -> object, float -> number,
tuple -> array, any -> string...), temperature 0, and
`parallel_tool_calls: true` (OpenAI's default), and a token limit (400,
the same for both: a small model on the CPU may otherwise write until its
context is full). Each answer is decoded as
that handler decodes it and scored by BFCL's own AST checker; irrelevance
cases pass when no call is made, as BFCL scores them.

Also counted, per category and server: malformed calls (arguments that are
not a JSON object, a tool that was not offered), calls printed as text (no
`tool_calls`, but call markup in the content), replies that made a call
where none was wanted, HTTP errors, and latency.

With `--distractors N`, two more rows: `multiple+N`, each `multiple` case
with N functions of other BFCL cases mixed among its own (the order
shuffled by the case id), every one sent; and `multiple+N picked`, the same
list narrowed by hearth's choice by relevance (`hearth tools pick --most
4`, what the assistant offers a small model), sent to both servers alike.
The picked row also counts how often the right function was among those
picked.

Usage (`make bench-tools` runs it with the defaults):
  python3 benches/bfcl.py [--cases N|all] [--model GGUF] [--template JINJA]
      [--categories simple_python,multiple,...] [--threads T] [--json OUT]
      [--distractors N]
"""

import argparse
import json
import os
import pathlib
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
CATEGORIES = ["simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance"]
TOKEN = "bench-token-0123456789abcdef"
# Call markup a reply may carry in its text when a call was not read.
CALL_MARKUP = ["<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=", "<|tool_call"]


def bfcl():
    """BFCL's loaders, type mapping and AST checker. Its model registry
    imports every provider's SDK; the checker only asks it whether a model
    writes `a.b` as `a_b`, which every OpenAI-compatible handler does."""
    sys.path.insert(0, str(ROOT / "target" / "bfcl"))
    registry = types.ModuleType("bfcl_eval.constants.model_config")

    class OpenAiStyle:
        underscore_to_dot = True

    class Every(dict):
        def __missing__(self, key):
            return OpenAiStyle()

    registry.MODEL_CONFIG_MAPPING = Every()
    sys.modules["bfcl_eval.constants.model_config"] = registry
    from bfcl_eval.constants.enums import Language, ModelStyle
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
    from bfcl_eval.model_handler.utils import convert_to_tool
    from bfcl_eval.utils import (
        is_empty_output,
        is_function_calling_format_output,
        load_dataset_entry,
        load_ground_truth_entry,
    )

    return types.SimpleNamespace(
        language=Language.PYTHON,
        tools=lambda functions: convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS),
        check=ast_checker,
        is_empty=is_empty_output,
        is_call_list=is_function_calling_format_output,
        cases=load_dataset_entry,
        answers=load_ground_truth_entry,
    )


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body, timeout=600):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            return r.status, json.load(r), time.monotonic() - started
    except urllib.error.HTTPError as e:
        return e.code, {"error": e.read().decode(errors="replace")}, time.monotonic() - started
    except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
        return 0, {"error": str(e)}, time.monotonic() - started


class Server:
    """A child process serving /v1/chat/completions."""

    def __init__(self, name, command, env, base, model, log):
        self.name, self.base, self.model = name, base, model
        self.log = open(log, "w")
        self.process = subprocess.Popen(command, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, within=600):
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                sys.exit(f"{self.name} ended while starting (exit {self.process.returncode}); see {self.log.name}")
            status, _, _ = post(f"{self.base}/v1/chat/completions", {
                "model": self.model, "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}, timeout=60)
            if status == 200:
                return
            time.sleep(0.5)
        sys.exit(f"{self.name} did not answer within {within} s; see {self.log.name}")

    def alive(self):
        return self.process.poll() is None

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def hearth(args, work):
    port = free_port()
    template = f'chat_template = "{pathlib.Path(args.template).resolve()}"\n' if args.template else ""
    config = work / "hearth.toml"
    config.write_text(
        f'[model]\npath = "{pathlib.Path(args.model).resolve()}"\n{template}threads = {args.threads}\n'
        f'context_size = {args.context}\n[engine]\nslots = 1\n'
        f'[channels.gateway]\nlisten = "127.0.0.1:{port}"\ntoken = "{TOKEN}"\nreply_timeout_secs = 600\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}
    env.update(HOME=str(work), HEARTH_DATA_DIR=str(work / "data"), RUST_LOG="warn")
    model = pathlib.Path(args.model).stem
    command = [str(ROOT / "target/release/hearth"), "--config", str(config), "daemon"]
    return Server("hearth", command, env, f"http://127.0.0.1:{port}", model, work / "hearth.log")


def llama_server(args, work):
    port = free_port()
    command = [args.llama_server, "-m", args.model, "--jinja", "--host", "127.0.0.1", "--port", str(port),
               "-t", str(args.threads), "-c", str(args.context), "-np", "1", "--no-webui"]
    if args.template:
        command += ["--chat-template-file", args.template]
    return Server("llama-server", command, dict(os.environ), f"http://127.0.0.1:{port}", "model",
                  work / "llama-server.log")


def decode(message):
    """BFCL's OpenAI handler's decoding: `[{name: arguments}]`, or the text
    when there are no calls (which its checker then fails to decode)."""
    calls = message.get("tool_calls")
    if not calls:
        content = message.get("content")
        if content:
            raise ValueError("the reply is text, not calls")
        return []
    return [{c["function"]["name"]: json.loads(c["function"]["arguments"])} for c in calls]


def faults(message, tools):
    """Malformed calls and calls printed as text in one reply."""
    offered = {t["function"]["name"] for t in tools}
    malformed = 0
    for c in message.get("tool_calls") or []:
        try:
            arguments = json.loads(c["function"]["arguments"])
            if not isinstance(arguments, dict) or c["function"]["name"] not in offered:
                malformed += 1
        except (ValueError, KeyError, TypeError):
            malformed += 1
    text = message.get("content") or ""
    # A call in the text: a family's call markup, or a JSON object naming
    # an offered tool (not any code that mentions "name" and "arguments").
    named = {m.group(1) for m in re.finditer(r'"name"\s*:\s*"([^"]+)"', text)}
    as_text = not message.get("tool_calls") and (
        any(m in text for m in CALL_MARKUP) or bool(named & offered)
    )
    return malformed, int(as_text)


def score(b, category, case, answer, message):
    """Whether BFCL's checker passes the reply, and the decoded calls."""
    try:
        decoded = decode(message)
    except (ValueError, KeyError, TypeError):
        decoded = None
    if category == "irrelevance":
        called = decoded is not None and not b.is_empty(decoded)
        return not called, decoded, called
    if decoded is None or not b.is_call_list(decoded):
        return False, decoded, bool(decoded)
    result = b.check(case["function"], decoded, answer["ground_truth"], b.language, category, "hearth-bench")
    return bool(result["valid"]), decoded, bool(decoded)


def picked(entries, n):
    """`n` cases spread evenly over the category (all of them for `all`)."""
    if n is None or n >= len(entries):
        return entries
    return [entries[(k * len(entries)) // n] for k in range(n)]


def distractors(b, n):
    """Per `multiple` case, its functions with `n` of other BFCL cases'
    (simple_python and multiple, none named like its own) mixed in."""
    pool = {}
    for category in ["simple_python", "multiple"]:
        for case in b.cases(category):
            for f in case["function"]:
                pool.setdefault(f["name"], f)
    names = sorted(pool)

    def mixed(case):
        rng = random.Random(case["id"])
        own = {f["name"] for f in case["function"]}
        others = rng.sample([name for name in names if name not in own], n)
        functions = case["function"] + [pool[name] for name in others]
        rng.shuffle(functions)
        return functions

    return mixed


def hearth_pick(config, work, question, tools, most=4):
    """The tools hearth offers a small model for this question."""
    listed = work / "pick.json"
    listed.write_text(json.dumps(tools))
    text = " ".join(m["content"] for m in question if m["role"] == "user")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}
    env.update(HOME=str(work), HEARTH_DATA_DIR=str(work / "data"))
    out = subprocess.run([str(ROOT / "target/release/hearth"), "--config", str(config), "tools", "pick", text,
                          "--from", str(listed), "--most", str(most)],
                         env=env, capture_output=True, text=True, check=True)
    chosen = set(out.stdout.split())
    return [t for t in tools if t["function"]["name"] in chosen]


def variants(b, args, work):
    """(row, category for loading and checking, tools for a case) of each row."""
    rows = [(c, c, lambda case: b.tools(case["function"])) for c in args.categories]
    if args.distractors:
        mixed = distractors(b, args.distractors)
        row = f"multiple+{args.distractors}"
        rows.append((row, "multiple", lambda case: b.tools(mixed(case))))
        rows.append((f"{row} picked", "multiple",
                     lambda case: hearth_pick(work / "hearth.toml", work, case["question"][0], b.tools(mixed(case)))))
    return rows


def run(args):
    b = bfcl()
    work = pathlib.Path(tempfile.mkdtemp(prefix="bfcl-", dir=ROOT / "target"))
    servers = [hearth(args, work), llama_server(args, work)]
    try:
        for s in servers:
            s.wait_ready()
        records = []
        for row, category, tools_of in variants(b, args, work):
            cases = picked(b.cases(category), args.cases)
            answers = {a["id"]: a for a in b.answers(category)} if category != "irrelevance" else {}
            for i, case in enumerate(cases):
                tools = tools_of(case)
                offered = {t["function"]["name"] for t in tools}
                right = [name for call in answers.get(case["id"], {}).get("ground_truth", []) for name in call]
                kept = all(name.replace(".", "_") in offered for name in right)
                order = servers if i % 2 == 0 else servers[::-1]
                for s in order:
                    body = {"model": s.model, "messages": case["question"][0], "tools": tools,
                            "temperature": 0, "parallel_tool_calls": True, "max_tokens": args.max_tokens}
                    status, reply, seconds = post(f"{s.base}/v1/chat/completions", body)
                    record = {"server": s.name, "category": row, "id": case["id"], "status": status,
                              "seconds": round(seconds, 3), "alive": s.alive(), "tools": len(tools),
                              "right_offered": kept}
                    if status == 200:
                        message = reply["choices"][0]["message"]
                        ok, decoded, called = score(b, category, case, answers.get(case["id"]), message)
                        malformed, as_text = faults(message, tools)
                        record.update(ok=ok, called=called, malformed=malformed, as_text=as_text,
                                      calls=decoded, content=message.get("content"),
                                      prompt_tokens=reply.get("usage", {}).get("prompt_tokens"))
                    else:
                        record.update(ok=False, called=False, malformed=0, as_text=0, error=reply.get("error"))
                    records.append(record)
                    if not record["alive"]:
                        sys.exit(f"{s.name} died on {case['id']}; see {s.log.name}")
                print(f"{case['id']}: " + "  ".join(
                    f"{r['server']} {'pass' if r['ok'] else 'fail'}" for r in records[-2:]), flush=True)
        return records
    finally:
        for s in servers:
            s.stop()


def table(records, categories):
    names = ["hearth", "llama-server"]
    lines = ["| category | cases | " + " | ".join(f"{n} accuracy" for n in names)
             + " | malformed (h / l) | printed as text (h / l) | called when none fit (h / l) | errors (h / l) | median s (h / l) |",
             "|---|---:|" + "---:|" * (len(names) + 5)]
    for category in categories + ["overall"]:
        rows = {n: [r for r in records if r["server"] == n and (category == "overall" or r["category"] == category)]
                for n in names}
        if not rows["hearth"]:
            continue
        n_cases = len(rows["hearth"])
        acc = [f"{sum(r['ok'] for r in rows[n]) / len(rows[n]):.1%} ({sum(r['ok'] for r in rows[n])})" for n in names]
        pair = lambda f: " / ".join(str(sum(f(r) for r in rows[n])) for n in names)
        none_fit = " / ".join(
            str(sum(r["called"] for r in rows[n] if r["category"] == "irrelevance")) for n in names)
        median = " / ".join(f"{statistics.median(r['seconds'] for r in rows[n]):.2f}" for n in names)
        lines.append(f"| {category} | {n_cases} | " + " | ".join(acc)
                     + f" | {pair(lambda r: r['malformed'])} | {pair(lambda r: r['as_text'])}"
                     + f" | {none_fit} | {pair(lambda r: r['status'] != 200)} | {median} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default="20", help="cases per category, spread evenly; `all` for every one")
    p.add_argument("--model", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("--template", help="a Jinja chat template file for both servers (default: the model's own)")
    p.add_argument("--categories", default=",".join(CATEGORIES))
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--context", type=int, default=8192)
    p.add_argument("--max-tokens", type=int, default=400, help="the reply's limit, the same for both")
    p.add_argument("--llama-server", default=str(ROOT / "target/compare/build/bin/llama-server"))
    p.add_argument("--json", help="where to write every case's record")
    p.add_argument("--distractors", type=int, default=0,
                   help="also `multiple` with N other cases' functions mixed in, all sent and as hearth picks them")
    args = p.parse_args()
    args.cases = None if args.cases == "all" else int(args.cases)
    args.categories = args.categories.split(",")
    started = time.time()
    records = run(args)
    rows = list(dict.fromkeys(r["category"] for r in records))
    out = table(records, rows)
    for row in rows:
        if row.endswith("picked"):
            mine = [r for r in records if r["category"] == row and r["server"] == "hearth"]
            kept = sum(r["right_offered"] for r in mine)
            tools = statistics.median(r["tools"] for r in mine)
            out += f"\n\n{row}: the right function was among those picked in {kept} of {len(mine)} cases (median {tools:.0f} tools sent)"
    print()
    print(f"model {pathlib.Path(args.model).name}, template {args.template or 'its own'}, "
          f"{args.cases or 'all'} cases per category, {time.time() - started:.0f} s")
    print(out)
    if args.json:
        pathlib.Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(args.json).write_text(json.dumps({"args": vars(args), "records": records}, indent=1))


if __name__ == "__main__":
    main()
