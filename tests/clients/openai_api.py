"""Drives hearth's OpenAI-compatible API as the programs people point at it
do, with the real `openai`, `litellm` and `langchain-openai` packages.

Usage: openai_api.py BASE_URL TOKEN SERVED_MODEL. Prints one JSON object:
what each client saw. The test (tests/openai_api.rs) judges it."""

import json
import math
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network

import openai

base, token, served = sys.argv[1], sys.argv[2], sys.argv[3]
client = openai.OpenAI(base_url=base + "/v1", api_key=token, max_retries=0, timeout=300)
out = {}
began = time.monotonic()


def mark(what):
    """Progress on stderr, which the test shows if the script runs too long."""
    print(f"{time.monotonic() - began:7.1f} s  {what}", file=sys.stderr, flush=True)


def refused(call):
    """The status, param and message of the error a call raises (None if none)."""
    try:
        call()
        return None
    except openai.APIStatusError as e:
        body = e.body if isinstance(e.body, dict) else {}
        return {"status": e.status_code, "param": body.get("param"), "code": body.get("code"), "message": e.message}


def chat(messages, **kw):
    r = client.chat.completions.create(model=kw.pop("model", served), messages=messages, **kw)
    c = r.choices[0]
    calls = [{"name": t.function.name, "arguments": t.function.arguments, "id": t.id} for t in (c.message.tool_calls or [])]
    return {"text": c.message.content, "finish": c.finish_reason, "calls": calls,
            "usage": r.usage.model_dump() if r.usage else None}


story = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]

mark('models')
# The models on offer, and one that is not.
out["models"] = [m.id for m in client.models.list()]
out["retrieved"] = client.models.retrieve(served).id
out["missing_model"] = refused(lambda: client.models.retrieve("no-such-model"))
out["missing_chat_model"] = refused(lambda: chat(story, model="gpt-4o"))
out["missing_route"] = refused(lambda: client.completions.create(model=served, prompt="hi"))

mark('honoured fields')
# Honoured fields change the output as they should.
out["five"] = chat(story, max_tokens=5)
out["five_new_name"] = chat(story, max_completion_tokens=5)
free = chat(story, max_tokens=40, temperature=0)
out["free"] = free
words = free["text"].split()
stop_word = words[len(words) // 2] if len(words) > 4 else words[-1]
out["stop_word"] = stop_word
out["stopped"] = chat(story, max_tokens=40, temperature=0, stop=[stop_word])
out["greedy_again"] = chat(story, max_tokens=40, temperature=0)
hot = dict(max_tokens=24, temperature=1.5, top_p=1.0)
out["seed_a"] = chat(story, seed=7, **hot)["text"]
out["seed_a_again"] = chat(story, seed=7, **hot)["text"]
out["seed_b"] = chat(story, seed=8, **hot)["text"]
out["seed_c"] = chat(story, seed=9, **hot)["text"]
out["penalised"] = chat(story, max_tokens=40, temperature=0, presence_penalty=2.0, frequency_penalty=2.0)
schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"]}
out["json_schema"] = chat([{"role": "user", "content": "Describe a person."}], max_tokens=60,
                          response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": schema}})
out["json_object"] = chat([{"role": "user", "content": "Describe a dog."}], max_tokens=60,
                          response_format={"type": "json_object"})

mark('refused fields')
# Refused by name, never ignored.
out["n2"] = refused(lambda: chat(story, n=2))
out["logprobs"] = refused(lambda: chat(story, logprobs=True))
out["unknown_field"] = refused(lambda: chat(story, extra_body={"mirostat": 2}))
out["image"] = refused(lambda: chat([{"role": "user", "content": [
    {"type": "text", "text": "What is in this picture?"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}]))

mark('streamed')
# Streamed, with the usage chunk asked for.
pieces, finish, usage = [], None, None
for chunk in client.chat.completions.create(model=served, messages=story, max_tokens=8, stream=True,
                                            stream_options={"include_usage": True}):
    if chunk.choices:
        pieces.append(chunk.choices[0].delta.content or "")
        finish = chunk.choices[0].finish_reason or finish
    if chunk.usage:
        usage = chunk.usage.model_dump()
out["streamed"] = {"text": "".join(pieces), "finish": finish, "usage": usage}

mark('Home Assistant')
# Home Assistant: its system prompt, a HassTurnOn tool; then the call's
# result sent back. Home Assistant sends tool_choice auto, but SmolLM2 only
# ever reaches a call by copying hearth's instructions into it, which is
# not taken as a call (tests/copied_calls.rs): the call is required here,
# to see its shape through each client.
ha_system = ("You are a voice assistant for Home Assistant.\nAnswer questions about the world truthfully.\n"
             "Answer in plain text. Keep it simple and to the point.\n"
             "When controlling Home Assistant always call the intent tools. Use HassTurnOn to turn on devices.\n"
             "An overview of the areas and the devices in this smart home:\n- names: Kitchen Light\n  domain: light\n  areas: Kitchen")
turn_on = {"type": "function", "function": {
    "name": "HassTurnOn", "description": "Turns on/opens/presses a device or entity.",
    "parameters": {"type": "object", "properties": {
        "name": {"type": "string"}, "area": {"type": "string"},
        "domain": {"type": "array", "items": {"type": "string"}}}}}}
ha = [{"role": "system", "content": ha_system}, {"role": "user", "content": "turn on the kitchen light"}]
first = chat(ha, tools=[turn_on], tool_choice="required", max_tokens=120)
out["ha_call"] = first
if first["calls"]:
    call = first["calls"][0]
    ha_follow = ha + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": call["arguments"]}}]},
        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"success": True, "targets": ["Kitchen Light"]})},
    ]
    out["ha_follow"] = chat(ha_follow, tools=[turn_on], tool_choice="auto", max_tokens=60)
out["assistant_tools"] = refused(lambda: chat(ha, model="hearth", tools=[turn_on]))

mark('Open WebUI')
# Open WebUI: a conversation of four turns resent whole, no `user`, with
# another chat's turn sent in between.
webui, webui_turns = [{"role": "user", "content": "Hello! What is a good name for a cat?"}], []
other = [{"role": "user", "content": "Tell me one fact about the moon."}]
for question in ["Why that name?", "And one for a dog?", "Thank you, goodbye."]:
    r = chat(webui, max_tokens=24, temperature=0)
    webui_turns.append(r["usage"])
    if question == "And one for a dog?":
        out["other_chat"] = chat(other, max_tokens=24, temperature=0)
    webui += [{"role": "assistant", "content": r["text"]}, {"role": "user", "content": question}]
webui_turns.append(chat(webui, max_tokens=24, temperature=0)["usage"])
out["webui_usage"] = webui_turns

mark('The Responses API')
# The Responses API, as Home Assistant's OpenAI integration uses it.
r = client.responses.create(model=served, input="Say hello to the kitchen.", max_output_tokens=12, store=False)
out["responses_text"] = {"text": r.output_text, "status": r.status, "usage": r.usage.model_dump()}
events, text, final = [], [], None
for event in client.responses.create(model=served, input=[{"role": "user", "content": "Say hello."}],
                                     max_output_tokens=8, stream=True):
    events.append(event.type)
    if event.type == "response.output_text.delta":
        text.append(event.delta)
    if event.type in ("response.completed", "response.incomplete"):
        final = event.response
out["responses_stream"] = {"events": events, "text": "".join(text), "final": final.output_text,
                           "status": final.status, "usage": final.usage.model_dump()}
ha_tool = {"type": "function", "name": "HassTurnOn", "description": turn_on["function"]["description"],
           "parameters": turn_on["function"]["parameters"], "strict": False}
r = client.responses.create(model=served, instructions=ha_system, input=[{"role": "user", "content": "turn on the kitchen light"}],
                            tools=[ha_tool], tool_choice="required", max_output_tokens=120, store=False)
calls = [{"name": o.name, "arguments": o.arguments, "call_id": o.call_id} for o in r.output if o.type == "function_call"]
out["responses_call"] = calls
if calls:
    c = calls[0]
    r = client.responses.create(model=served, instructions=ha_system, max_output_tokens=40, store=False, tools=[ha_tool], input=[
        {"role": "user", "content": "turn on the kitchen light"},
        {"type": "function_call", "name": c["name"], "arguments": c["arguments"], "call_id": c["call_id"]},
        {"type": "function_call_output", "call_id": c["call_id"], "output": "{\"success\": true}"}])
    out["responses_follow"] = {"text": r.output_text, "status": r.status}
out["previous_response"] = refused(lambda: client.responses.create(model=served, input="hi", previous_response_id="resp_x"))

mark('Embeddings')
# Embeddings.
e = client.embeddings.create(model=served, input=["a small cat", "a little kitten", "the stock market"])
vectors = [d.embedding for d in e.data]
out["embeddings"] = {"count": len(vectors), "dims": [len(v) for v in vectors],
                     "norms": [math.sqrt(sum(x * x for x in v)) for v in vectors],
                     "tokens": e.usage.prompt_tokens}
out["assistant_embeddings"] = refused(lambda: client.embeddings.create(model="hearth", input="x"))
# The memory's sentence-embedding model, served under its own name.
minilm = "all-MiniLM-L6-v2.F16"
m = client.embeddings.create(model=minilm, input=[
    "I'm allergic to penicillin", "What medicine can't I take?", "the stock market"])
mv = [d.embedding for d in m.data]
dot = lambda a, b: sum(x * y for x, y in zip(a, b))
out["meaning"] = {"listed": minilm in [x.id for x in client.models.list()],
                  "dims": [len(v) for v in mv], "close": dot(mv[0], mv[1]), "far": dot(mv[0], mv[2])}
out["meaning_chat"] = refused(lambda: client.chat.completions.create(
    model=minilm, messages=[{"role": "user", "content": "hi"}]))

mark('The assistant')
# The assistant: the client's system message is added to hearth's own.
out["assistant"] = chat([{"role": "system", "content": "Answer in one word."},
                         {"role": "user", "content": "What colour is the sky?"}], model="hearth", max_tokens=6,
                        user="openai-api-test")

mark('litellm')
# litellm, as a proxy or a script would call it.
import litellm

litellm.suppress_debug_info = True

r = litellm.completion(model="openai/" + served, api_base=base + "/v1", api_key=token, messages=story, max_tokens=5)
out["litellm"] = {"text": r.choices[0].message.content, "finish": r.choices[0].finish_reason,
                  "completion_tokens": r.usage.completion_tokens}
r = litellm.completion(model="openai/hearth", api_base=base + "/v1", api_key=token,
                       messages=[{"role": "user", "content": "hello"}], max_tokens=8, user="litellm-user")
out["litellm_assistant"] = {"text": r.choices[0].message.content, "finish": r.choices[0].finish_reason}
try:
    litellm.completion(model="openai/" + served, api_base=base + "/v1", api_key=token, messages=story, n=3)
    out["litellm_n3"] = None
except Exception as e:  # litellm wraps the 400 in its own exception types
    out["litellm_n3"] = {"kind": type(e).__name__, "message": str(e)}

mark('LangChain')
# LangChain.
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

llm = ChatOpenAI(model=served, base_url=base + "/v1", api_key=token, max_tokens=5, temperature=0, max_retries=0)
m = llm.invoke("Write a long story about a river.")
out["langchain"] = {"text": m.content, "finish": m.response_metadata.get("finish_reason"),
                    "usage": m.usage_metadata}
tooled = ChatOpenAI(model=served, base_url=base + "/v1", api_key=token, max_tokens=120, temperature=0,
                    max_retries=0).bind_tools([turn_on], tool_choice="required")
m = tooled.invoke([("system", ha_system), ("human", "turn on the kitchen light")])
out["langchain_tools"] = [{"name": c["name"], "args": c["args"]} for c in m.tool_calls]
emb = OpenAIEmbeddings(model=served, base_url=base + "/v1", api_key=token, check_embedding_ctx_length=False)
out["langchain_embeddings"] = len(emb.embed_query("a small cat"))

mark("done")
print(json.dumps(out))
