"""Sends pictures to hearth's served model with the real `openai` client,
as `image_url` parts, the way Open WebUI and scripts do.

Usage: openai_images.py BASE_URL TOKEN SERVED_MODEL. Reads a JSON object
of named images (base64) on stdin; prints what the client saw as JSON."""

import json
import sys

import openai

base, token, served = sys.argv[1], sys.argv[2], sys.argv[3]
images = json.load(sys.stdin)
client = openai.OpenAI(base_url=base + "/v1", api_key=token, max_retries=0, timeout=300)
question = "What is in this picture?"
out = {}


def picture(name):
    kind = "jpeg" if name.endswith("jpeg") else "png"
    return {"type": "image_url", "image_url": {"url": f"data:image/{kind};base64,{images[name]}"}}


def chat(messages, chat_id):
    r = client.chat.completions.create(model=served, messages=messages, max_tokens=12, temperature=0,
                                       extra_headers={"X-Hearth-Chat": chat_id})
    details = r.usage.prompt_tokens_details
    return {"text": r.choices[0].message.content, "prompt": r.usage.prompt_tokens,
            "cached": details.cached_tokens if details else None}


def refused(messages, chat_id):
    try:
        chat(messages, chat_id)
        return None
    except openai.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        return {"status": e.status_code, "code": body.get("code"), "message": e.message}


system = {"role": "system", "content": "You are a helpful assistant."}
out["text_only"] = chat([system, {"role": "user", "content": question}], "text")
first = [system, {"role": "user", "content": [{"type": "text", "text": question}, picture("red")]}]
out["first"] = chat(first, "photo")
follow = first + [{"role": "assistant", "content": out["first"]["text"]},
                  {"role": "user", "content": "What colour is it?"}]
out["second"] = chat(follow, "photo")

hostile = {
    "remote": {"type": "image_url", "image_url": {"url": "http://127.0.0.1:9/cam.jpg"}},
    "bomb": picture("bomb"),
    "truncated": picture("truncated"),
    "truncated_jpeg": picture("truncated_jpeg"),
    "not_an_image": picture("text"),
}
for name, part in hostile.items():
    out[name] = refused([{"role": "user", "content": [{"type": "text", "text": "What is this?"}, part]}], "hostile")
    # The positive control: a good picture in the same chat.
    out[name + "_control"] = chat([{"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                                                 picture("red")]}], "hostile")
print(json.dumps(out))
