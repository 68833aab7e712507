"""How soon the engine is free after an OpenAI client hangs up.

Against a running `hearth daemon` whose config has `[engine] slots = 1` (so a
reply still running would hold the next request back): starts a long
streamed reply (greedy, 3,000 tokens asked), reads five chunks, hangs up,
and times the next one-token reply, three times for the served model and
three for the assistant.

Usage: python3 benches/openai_hangup.py BASE_URL TOKEN SERVED_MODEL"""

import json
import sys
import time
import urllib.request

base, token, served = sys.argv[1], sys.argv[2], sys.argv[3]
headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}


def request(body):
    return urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(), headers=headers)


one = {"model": served, "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}
urllib.request.urlopen(request(one)).read()  # the model is loaded
for model in [served, "hearth"]:
    for _ in range(3):
        long = urllib.request.urlopen(request({
            "model": model, "stream": True, "max_tokens": 3000, "temperature": 0,
            "messages": [{"role": "user", "content": "Write a very long essay about the history of the sea."}]}))
        chunks = 0
        while chunks < 5:
            if long.readline().startswith(b"data:"):
                chunks += 1
        long.close()
        began = time.time()
        urllib.request.urlopen(request(one)).read()
        print(f"{model}: hang-up to the next one-token reply {time.time() - began:.3f} s")
