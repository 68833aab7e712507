"""Sends documents to hearth with the real `openai` client: `file` parts to
the assistant (`model: "hearth"`) in Chat Completions, an `input_file` in
the Responses API, and what hearth refuses by name.

Usage: openai_files.py BASE_URL TOKEN SERVED_MODEL. Reads a JSON object of
named files (base64) on stdin; prints what the client saw as JSON."""

import json
import sys

import openai

base, token, served = sys.argv[1], sys.argv[2], sys.argv[3]
files = json.load(sys.stdin)
client = openai.OpenAI(base_url=base + "/v1", api_key=token, max_retries=0, timeout=600)
question = "What happens to late submissions?"
out = {}


def part(name, filename):
    return {"type": "file", "file": {"filename": filename,
                                     "file_data": f"data:application/pdf;base64,{files[name]}"}}


def chat(content, chat_id, model="hearth"):
    r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}],
                                       max_tokens=8, temperature=0, extra_headers={"X-Hearth-Chat": chat_id})
    return {"text": r.choices[0].message.content, "prompt": r.usage.prompt_tokens}


def refused(ask):
    try:
        ask()
        return None
    except openai.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        return {"status": e.status_code, "code": body.get("code"), "message": e.message}


# The control first: the same question in a chat that was sent nothing.
out["without"] = chat(question, "control")
out["with"] = chat([{"type": "text", "text": question}, part("reader", "reader.pdf")], "student")
out["later"] = chat("Tell me about late submissions again", "student")
out["other"] = chat("Tell me about late submissions again", "someone-else")
r = client.responses.create(
    model="hearth", max_output_tokens=8, extra_headers={"X-Hearth-Chat": "responses"},
    input=[{"role": "user", "content": [
        {"type": "input_text", "text": "What does this say?"},
        {"type": "input_file", "filename": "notes.pdf",
         "file_data": f"data:application/pdf;base64,{files['notes']}"}]}])
out["responses"] = {"prompt": r.usage.input_tokens, "text": r.output_text}
out["served"] = refused(lambda: chat([{"type": "text", "text": question}, part("reader", "reader.pdf")],
                                     "served", model=served))
out["file_id"] = refused(lambda: chat([{"type": "text", "text": question},
                                       {"type": "file", "file": {"file_id": "file-abc123"}}], "hostile"))
out["program"] = chat([{"type": "text", "text": question}, part("program", "syllabus.pdf")], "hostile")
# The positive control: a good file in the same chat.
out["program_control"] = chat([{"type": "text", "text": question}, part("reader", "reader.pdf")], "hostile")
print(json.dumps(out))
