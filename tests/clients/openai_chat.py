"""Drives hearth's OpenAI-compatible API with the real `openai` package.

Usage: openai_chat.py BASE_URL TOKEN. Prints one JSON object: what the
client saw (texts, finish reasons, the errors it raised)."""

import json
import sys

import openai

base, token = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base + "/v1", api_key=token, max_retries=0, timeout=120)
out = {"models": [m.id for m in client.models.list()]}

whole = client.chat.completions.create(
    model="hearth",
    messages=[
        {"role": "system", "content": "a client's own prompt, added to hearth's for this turn"},
        {"role": "user", "content": "my name is Ada"},
    ],
    user="ada",
)
out["whole"] = whole.choices[0].message.content
out["whole_finish"] = whole.choices[0].finish_reason
out["object"] = whole.object

pieces, finish = [], None
stream = client.chat.completions.create(
    model="hearth",
    messages=[{"role": "user", "content": [{"type": "text", "text": "tell me a story about Bob"}]}],
    stream=True,
    extra_headers={"X-Hearth-Chat": "bob"},
)
for chunk in stream:
    if chunk.choices:
        if chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        finish = chunk.choices[0].finish_reason or finish
out["pieces"], out["stream_finish"] = pieces, finish

again = client.chat.completions.create(
    model="hearth", messages=[{"role": "user", "content": "what is my name?"}], user="ada"
)
out["ada_again"] = again.choices[0].message.content

stranger = openai.OpenAI(base_url=base + "/v1", api_key="not-the-token-0123456789", max_retries=0)
try:
    stranger.chat.completions.create(model="hearth", messages=[{"role": "user", "content": "hi"}])
    out["wrong_key"] = None
except openai.AuthenticationError as e:
    out["wrong_key"] = {"status": e.status_code, "code": e.code, "message": e.message}

try:
    client.chat.completions.create(model="hearth", messages=[{"role": "assistant", "content": "hi"}])
    out["no_user"] = None
except openai.BadRequestError as e:
    out["no_user"] = {"status": e.status_code, "message": e.message}

print(json.dumps(out))
