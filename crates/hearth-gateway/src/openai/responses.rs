//! `POST /v1/responses`, the Responses API, as far as Home Assistant's
//! OpenAI integration and the `openai` client's `responses.create` use
//! it: `input` as text or items (messages, `function_call`,
//! `function_call_output`), `instructions`, function tools, streaming
//! and not. hearth keeps no responses: `previous_response_id` is refused,
//! and the client sends the whole conversation (`store: false`).

use axum::body::{Body, Bytes};
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::super::connections::ConnectionHandle;
use super::super::http::App;
use super::completions::{call_id, sse};
use super::error::ApiError;
use super::fields::{Fields, Sampling, reply_format};
use super::request::{Asked, choice, content, tools};
use super::turn::{Finish, Out, Turn, Whole, whole};
use hearth_core::chat::{Attachment, ChatMessage, ToolCall, Usage};

/// What the Responses API sends that changes nothing hearth does.
const BOOKKEEPING: &[&str] = &[
    "metadata",
    "store",
    "service_tier",
    "safety_identifier",
    "truncation",
    "user",
];

/// A Responses request in the shape chat completions take.
fn read(body: Value) -> Result<Asked, ApiError> {
    let mut f = Fields::new(body)?;
    let model = f.model()?;
    let mut messages = Vec::new();
    let mut documents = Vec::new();
    if let Some(text) = f.string("instructions")? {
        messages.push(ChatMessage::system(text));
    }
    match f.take("input") {
        Some(Value::String(text)) => messages.push(ChatMessage::user(text)),
        Some(Value::Array(items)) => items_into(&items, &mut messages, &mut documents)?,
        _ => {
            return Err(ApiError::field(
                "input",
                "`input` must be text or a list of items",
            ));
        }
    }
    let mut sampling = Sampling::read(&mut f, &["max_output_tokens"])?;
    if let Some(text) = f.take("text") {
        sampling.format = reply_format(text.get("format").cloned(), "text.format")?;
    }
    let tools = tools(f.take("tools"))?;
    let (tools, tool_choice) = choice(f.take("tool_choice"), tools)?;
    let one_call = f.bool("parallel_tool_calls")? == Some(false);
    let stream = f.bool("stream")?.unwrap_or(false);
    let cache_key = f.string("prompt_cache_key")?;
    let user = f.take("user").and_then(|v| v.as_str().map(str::to_string));
    f.only(
        "previous_response_id",
        |_| false,
        "hearth keeps no responses; send the whole conversation as `input`",
    )?;
    f.only(
        "background",
        |v| v == &Value::Bool(false),
        "replies are made while the request waits",
    )?;
    f.only(
        "include",
        |v| v.as_array().is_some_and(Vec::is_empty),
        "hearth has nothing more to include",
    )?;
    f.only(
        "reasoning",
        |_| false,
        "set `[generation] reasoning` in hearth's config instead",
    )?;
    f.only(
        "top_logprobs",
        |v| v.as_u64() == Some(0),
        "the engine does not report token probabilities",
    )?;
    f.accept(BOOKKEEPING);
    f.finish()?;
    Ok(Asked {
        model,
        messages,
        sampling,
        tools,
        tool_choice,
        one_call,
        stream,
        include_usage: true,
        user,
        cache_key,
        documents,
    })
}

/// `input` items as messages.
fn items_into(
    items: &[Value],
    messages: &mut Vec<ChatMessage>,
    documents: &mut Vec<(usize, Attachment)>,
) -> Result<(), ApiError> {
    for (i, item) in items.iter().enumerate() {
        let at = |why: &str| ApiError::field(&format!("input[{i}]"), format!("input[{i}]: {why}"));
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        let text = |key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match kind {
            "message" => {
                let (content, images, files) = content(item.get("content"), i)?;
                let role = item.get("role").and_then(Value::as_str).unwrap_or("");
                if !(images.is_empty() && files.is_empty()) && role != "user" {
                    return Err(at("only a `user` message may hold images and files"));
                }
                documents.extend(files.into_iter().map(|f| (messages.len(), f)));
                let message = match role {
                    "system" | "developer" => ChatMessage::system(content),
                    "user" => ChatMessage {
                        images,
                        ..ChatMessage::user(content)
                    },
                    "assistant" => ChatMessage::assistant(content),
                    other => {
                        return Err(at(&format!(
                            "role `{other}` is not system, developer, user or assistant"
                        )));
                    }
                };
                messages.push(message);
            }
            "function_call" => {
                let arguments = match text("arguments").trim() {
                    "" => json!({}),
                    a => serde_json::from_str(a)
                        .map_err(|e| at(&format!("the arguments are not JSON: {e}")))?,
                };
                let call = ToolCall {
                    id: text("call_id"),
                    name: text("name"),
                    arguments,
                };
                // Calls of one turn join the assistant message before them.
                match messages.last_mut() {
                    Some(last) if last.role == hearth_core::chat::Role::Assistant => {
                        last.tool_calls.push(call)
                    }
                    _ => messages.push(ChatMessage::assistant_calls("", vec![call])),
                }
            }
            "function_call_output" => {
                let id = text("call_id");
                let name = super::call_name(messages, &id)
                    .ok_or_else(|| at(&format!("no function_call before it has call_id `{id}`")))?;
                let output = match item.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                messages.push(ChatMessage::tool_result(id, name, output));
            }
            // A reasoning item of an earlier reply: its summary is not
            // part of the conversation the model reads.
            "reasoning" => {}
            other => return Err(at(&format!("items of type `{other}` cannot be read"))),
        }
    }
    Ok(())
}

pub(in super::super) async fn responses(
    State(app): State<App>,
    Extension(connection): Extension<ConnectionHandle>,
    method: Method,
    headers: HeaderMap,
    raw: Body,
) -> Response {
    let asked = match super::body(&app, &connection, &method, &headers, raw)
        .await
        .and_then(read)
    {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    let stream = asked.stream;
    let head = Head {
        id: format!("resp_{}", uuid::Uuid::new_v4().simple()),
        created: chrono::Utc::now().timestamp(),
        model: asked.model.clone(),
    };
    let turn = match super::start(&app, &headers, asked).await {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    if stream {
        streamed(head, turn)
    } else {
        match whole(turn).await {
            Ok(w) => axum::Json(head.response(&w, output(&head, &w))).into_response(),
            Err(e) => e.into_response(),
        }
    }
}

/// What every rendering of one response repeats.
struct Head {
    id: String,
    created: i64,
    model: String,
}

impl Head {
    fn response(&self, w: &Whole, output: Vec<Value>) -> Value {
        let done = w.finish.is_some();
        let incomplete = w.finish == Some(Finish::Length);
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": if !done { "in_progress" } else if incomplete { "incomplete" } else { "completed" },
            "incomplete_details": if incomplete { json!({"reason": "max_output_tokens"}) } else { Value::Null },
            "error": null,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": true,
            "tool_choice": "auto",
            "tools": [],
            "usage": if done { usage(&w.usage) } else { Value::Null },
        })
    }
}

fn usage(u: &Usage) -> Value {
    json!({
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": { "cached_tokens": super::turn::own_cached(u) },
        "output_tokens": u.completion_tokens,
        "output_tokens_details": { "reasoning_tokens": 0 },
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    })
}

fn message_item(id: &str, text: &str, status: &str) -> Value {
    let content = if status == "completed" {
        json!([{ "type": "output_text", "text": text, "annotations": [] }])
    } else {
        json!([])
    };
    json!({ "type": "message", "id": id, "status": status, "role": "assistant", "content": content })
}

fn call_item(c: &ToolCall, call_id: &str, status: &str) -> Value {
    let arguments = if status == "completed" {
        c.arguments.to_string()
    } else {
        String::new()
    };
    json!({
        "type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
        "name": c.name, "arguments": arguments, "status": status,
    })
}

/// The output items of a whole reply: its text, then its calls.
fn output(head: &Head, w: &Whole) -> Vec<Value> {
    let mut items = Vec::new();
    if !w.text.is_empty() || w.calls.is_empty() {
        items.push(message_item(
            &format!("msg_{}", &head.id[5..]),
            &w.text,
            "completed",
        ));
    }
    items.extend(
        w.calls
            .iter()
            .map(|c| call_item(c, &call_id(c), "completed")),
    );
    items
}

/// The reply as the Responses API's server-sent events.
fn streamed(head: Head, turn: Turn) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(32);
    tokio::spawn(
        Events {
            head,
            tx,
            sequence: 0,
            output: Vec::new(),
        }
        .run(turn),
    );
    sse(rx)
}

/// One streamed response's events, numbered in order.
struct Events {
    head: Head,
    tx: mpsc::Sender<Bytes>,
    sequence: u64,
    /// Items finished so far.
    output: Vec<Value>,
}

impl Events {
    async fn send(&mut self, kind: &str, mut event: Value) -> bool {
        event["type"] = json!(kind);
        event["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        self.tx
            .send(Bytes::from(format!("event: {kind}\ndata: {event}\n\n")))
            .await
            .is_ok()
    }

    async fn run(mut self, mut turn: Turn) {
        let mut w = Whole::default();
        let start = self.head.response(&w, Vec::new());
        if !self
            .send("response.created", json!({ "response": start.clone() }))
            .await
            || !self
                .send("response.in_progress", json!({ "response": start }))
                .await
        {
            return;
        }
        let message_id = format!("msg_{}", &self.head.id[5..]);
        let mut open = false;
        while let Some(out) = turn.recv().await {
            let sent = match out {
                Out::Text(t) => {
                    if !open {
                        open = true;
                        if !self.open_message(&message_id).await {
                            return;
                        }
                    }
                    w.text.push_str(&t);
                    let index = self.output.len();
                    self.send("response.output_text.delta", json!({
                        "item_id": message_id, "output_index": index, "content_index": 0, "delta": t, "logprobs": [],
                    })).await
                }
                Out::Reasoning(_) => true,
                Out::Call(c) => {
                    if std::mem::take(&mut open) && !self.close_message(&message_id, &w.text).await
                    {
                        return;
                    }
                    self.call(&c).await
                }
                Out::Done { usage, finish } => {
                    if open && !self.close_message(&message_id, &w.text).await {
                        return;
                    }
                    (w.usage, w.finish) = (usage, Some(finish));
                    let done = self.head.response(&w, std::mem::take(&mut self.output));
                    let kind = if finish == Finish::Length {
                        "response.incomplete"
                    } else {
                        "response.completed"
                    };
                    self.send(kind, json!({ "response": done })).await;
                    return;
                }
                Out::Failed(e) => {
                    let body = e.body()["error"].clone();
                    self.send("error", json!({ "code": body["code"], "message": body["message"], "param": body["param"] })).await;
                    return;
                }
            };
            if !sent {
                return;
            }
        }
    }

    async fn open_message(&mut self, id: &str) -> bool {
        let index = self.output.len();
        self.send(
            "response.output_item.added",
            json!({ "output_index": index, "item": message_item(id, "", "in_progress") }),
        )
        .await
            && self
                .send(
                    "response.content_part.added",
                    json!({
                        "item_id": id, "output_index": index, "content_index": 0,
                        "part": { "type": "output_text", "text": "", "annotations": [] },
                    }),
                )
                .await
    }

    async fn close_message(&mut self, id: &str, text: &str) -> bool {
        let index = self.output.len();
        let part = json!({ "type": "output_text", "text": text, "annotations": [] });
        let item = message_item(id, text, "completed");
        let sent = self.send("response.output_text.done", json!({
            "item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": [],
        })).await
            && self.send("response.content_part.done", json!({ "item_id": id, "output_index": index, "content_index": 0, "part": part })).await
            && self.send("response.output_item.done", json!({ "output_index": index, "item": item.clone() })).await;
        self.output.push(item);
        sent
    }

    async fn call(&mut self, c: &ToolCall) -> bool {
        let index = self.output.len();
        let id = call_id(c);
        let item = call_item(c, &id, "completed");
        let arguments = c.arguments.to_string();
        let sent = self.send("response.output_item.added", json!({ "output_index": index, "item": call_item(c, &id, "in_progress") })).await
            && self.send("response.function_call_arguments.delta", json!({ "item_id": item["id"], "output_index": index, "delta": arguments })).await
            && self.send("response.function_call_arguments.done", json!({ "item_id": item["id"], "output_index": index, "arguments": arguments, "name": c.name })).await
            && self.send("response.output_item.done", json!({ "output_index": index, "item": item.clone() })).await;
        self.output.push(item);
        sent
    }
}
