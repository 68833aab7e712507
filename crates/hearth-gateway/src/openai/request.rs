//! A chat completion request as hearth reads it: the client's messages,
//! tools and sampling, every field honoured or refused by name.

use serde_json::Value;

use super::error::ApiError;
use super::fields::{Fields, Sampling, reply_format};
use hearth_core::chat::{Attachment, ChatMessage, Image, ToolCall, ToolChoice, ToolSpec};

/// What a client asked for.
#[derive(Debug)]
pub struct Asked {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub sampling: Sampling,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    /// At most one call per reply (`parallel_tool_calls: false`).
    pub one_call: bool,
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk with the usage.
    pub include_usage: bool,
    pub user: Option<String>,
    /// OpenAI's `prompt_cache_key`: names the conversation for the cache.
    pub cache_key: Option<String>,
    /// The documents of `file` parts, each with the index of its message.
    pub documents: Vec<(usize, Attachment)>,
}

/// Fields that change nothing hearth does: bookkeeping for the client's
/// own service (`metadata`, `store`, `service_tier`, `safety_identifier`),
/// and llama-server's `cache_prompt`, which hearth always does.
const BOOKKEEPING: &[&str] = &[
    "metadata",
    "store",
    "service_tier",
    "safety_identifier",
    "cache_prompt",
];

impl Asked {
    pub fn read(body: Value) -> Result<Self, ApiError> {
        let mut f = Fields::new(body)?;
        let model = f.model()?;
        let mut documents = Vec::new();
        let messages = match f.take("messages") {
            Some(Value::Array(items)) if !items.is_empty() => messages(items, &mut documents)?,
            _ => {
                return Err(ApiError::field(
                    "messages",
                    "`messages` must be a non-empty list",
                ));
            }
        };
        let mut sampling = Sampling::read(&mut f, &["max_completion_tokens", "max_tokens"])?;
        sampling.format = reply_format(f.take("response_format"), "response_format")?;
        let tools = tools(f.take("tools"))?;
        let (tools, tool_choice) = choice(f.take("tool_choice"), tools)?;
        let one_call = f.bool("parallel_tool_calls")? == Some(false);
        let stream = f.bool("stream")?.unwrap_or(false);
        let include_usage = match f.take("stream_options") {
            None => false,
            Some(o) => o
                .get("include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        };
        refuse_unhonoured(&mut f)?;
        let user = f.string("user")?;
        let cache_key = f.string("prompt_cache_key")?;
        f.accept(BOOKKEEPING);
        f.finish()?;
        if !tools.is_empty() && sampling.format != hearth_core::chat::ReplyFormat::Text {
            return Err(ApiError::field(
                "response_format",
                "`response_format` and `tools` cannot be combined here: send one of them",
            ));
        }
        Ok(Self {
            model,
            messages,
            sampling,
            tools,
            tool_choice,
            one_call,
            stream,
            include_usage,
            user,
            cache_key,
            documents,
        })
    }
}

/// The chat completion fields hearth cannot honour, refused unless absent
/// or set to what hearth does anyway.
fn refuse_unhonoured(f: &mut Fields) -> Result<(), ApiError> {
    f.only(
        "n",
        |v| v.as_u64() == Some(1),
        "hearth makes one choice per request; send n = 1 or leave it out",
    )?;
    f.only(
        "logprobs",
        |v| v == &Value::Bool(false),
        "the engine does not report token probabilities",
    )?;
    f.only(
        "top_logprobs",
        |v| v.as_u64() == Some(0),
        "the engine does not report token probabilities",
    )?;
    f.only(
        "logit_bias",
        |v| v.as_object().is_some_and(|m| m.is_empty()),
        "the engine does not bias tokens",
    )?;
    f.only(
        "modalities",
        |v| v == &serde_json::json!(["text"]),
        "hearth answers in text only",
    )?;
    f.only(
        "reasoning_effort",
        |_| false,
        "set `[generation] reasoning` in hearth's config instead",
    )?;
    for name in [
        "audio",
        "prediction",
        "web_search_options",
        "functions",
        "function_call",
    ] {
        f.only(
            name,
            |_| false,
            "hearth does not offer it (for tools, send `tools`)",
        )?;
    }
    Ok(())
}

/// The most tools one request may offer, as OpenAI's API allows.
pub const MOST_TOOLS: usize = 128;

/// `tools`: a list of function tools.
pub fn tools(value: Option<Value>) -> Result<Vec<ToolSpec>, ApiError> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) if items.len() > MOST_TOOLS => Err(ApiError::field(
            "tools",
            format!(
                "{} tools is more than the {MOST_TOOLS} a request may offer",
                items.len()
            ),
        )),
        Some(Value::Array(items)) => items.iter().map(tool).collect(),
        Some(_) => Err(ApiError::field("tools", "`tools` must be a list")),
    }
}

/// The client's messages in hearth's vocabulary.
fn messages(
    items: Vec<Value>,
    documents: &mut Vec<(usize, Attachment)>,
) -> Result<Vec<ChatMessage>, ApiError> {
    let mut out: Vec<ChatMessage> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let at = |what: &str| {
            ApiError::field(&format!("messages[{i}]"), format!("messages[{i}]: {what}"))
        };
        let role = item.get("role").and_then(Value::as_str).unwrap_or("");
        let (text, images, files) = content(item.get("content"), i)?;
        if !(images.is_empty() && files.is_empty()) && role != "user" {
            return Err(at("only a `user` message may hold images and files"));
        }
        documents.extend(files.into_iter().map(|f| (out.len(), f)));
        let message = match role {
            "system" | "developer" => ChatMessage::system(text),
            "user" => ChatMessage {
                images,
                ..ChatMessage::user(text)
            },
            "assistant" => {
                let calls = match item.get("tool_calls") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(calls)) => calls
                        .iter()
                        .map(|c| call(c).map_err(|why| at(&why)))
                        .collect::<Result<_, _>>()?,
                    Some(_) => return Err(at("`tool_calls` must be a list")),
                };
                ChatMessage::assistant_calls(text, calls)
            }
            "tool" => {
                let id = item
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| at("a `tool` message needs `tool_call_id`"))?;
                // The tool's name, from the call it answers.
                let name = super::call_name(&out, id)
                    .or_else(|| item.get("name").and_then(Value::as_str).map(str::to_string))
                    .ok_or_else(|| {
                        at(&format!("no assistant message before it made call `{id}`"))
                    })?;
                ChatMessage::tool_result(id, name, text)
            }
            other => {
                return Err(at(&format!(
                    "role `{other}` is not one of system, developer, user, assistant, tool"
                )));
            }
        };
        out.push(message);
    }
    Ok(out)
}

/// An `image_url` part's picture: a `data:` URL's bytes. A remote URL is
/// never fetched.
fn image(part: &Value, param: &str) -> Result<Image, ApiError> {
    let url = part
        .get("image_url")
        .and_then(|u| u.get("url").or(Some(u)))
        .and_then(Value::as_str)
        .or_else(|| part.get("url").and_then(Value::as_str))
        .unwrap_or("");
    let Some(data) = url.strip_prefix("data:") else {
        return Err(ApiError::field(
            param,
            "hearth does not fetch images from URLs; send the image itself as a `data:image/...;base64,` URL",
        )
        .with_code("image_url_not_fetched"));
    };
    let Some((_, encoded)) = data.split_once(";base64,") else {
        return Err(ApiError::field(
            param,
            "an image's data URL must be base64 (`data:image/png;base64,...`)",
        ));
    };
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map(Image::new)
        .map_err(|e| ApiError::field(param, format!("the image's base64 is damaged: {e}")))
}

/// A message's text, pictures and documents: a string, or text, image and
/// file parts.
pub fn content(
    content: Option<&Value>,
    i: usize,
) -> Result<(String, Vec<Image>, Vec<Attachment>), ApiError> {
    let param = format!("messages[{i}].content");
    let (mut images, mut files) = (Vec::new(), Vec::new());
    let text = parts(content, &param, &mut images, &mut files)?;
    Ok((text, images, files))
}

fn parts(
    content: Option<&Value>,
    param: &str,
    images: &mut Vec<Image>,
    files: &mut Vec<Attachment>,
) -> Result<String, ApiError> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::new();
            for part in parts {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "text" | "input_text" | "output_text" => {
                        texts.push(part.get("text").and_then(Value::as_str).unwrap_or(""))
                    }
                    "image_url" | "input_image" => images.push(image(part, param)?),
                    "file" | "input_file" => files.push(super::file_part::read(part, param)?),
                    other => {
                        return Err(ApiError::unsupported(
                            param,
                            &format!(
                                "content parts of type `{other}` cannot be read; send text, image or file parts"
                            ),
                        ));
                    }
                }
            }
            Ok(texts.join("\n"))
        }
        Some(_) => Err(ApiError::field(
            param,
            "content must be a string or a list of parts",
        )),
    }
}

/// One `tool_calls` entry of an assistant message.
fn call(value: &Value) -> Result<ToolCall, String> {
    let function = value
        .get("function")
        .ok_or("a tool call needs `function`")?;
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a tool call needs `function.name`")?;
    let arguments = match function.get("arguments") {
        Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Default::default()),
        Some(Value::String(s)) => serde_json::from_str(s)
            .map_err(|e| format!("the arguments of call `{name}` are not JSON: {e}"))?,
        Some(v @ Value::Object(_)) => v.clone(),
        _ => Value::Object(Default::default()),
    };
    Ok(ToolCall {
        id: value
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        name: name.to_string(),
        arguments,
    })
}

/// One function tool: chat completions nest it under `function`, the
/// Responses API does not.
pub fn tool(value: &Value) -> Result<ToolSpec, ApiError> {
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("function");
    if kind != "function" {
        return Err(ApiError::unsupported(
            "tools",
            &format!("tools of type `{kind}` are not offered; send function tools"),
        ));
    }
    let function = value.get("function").unwrap_or(value);
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::field("tools", "every tool needs a `name`"))?;
    let spec = ToolSpec {
        name: name.to_string(),
        description: function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        parameters: match function.get("parameters") {
            None | Some(Value::Null) => serde_json::json!({"type": "object", "properties": {}}),
            Some(given) => given.clone(),
        },
    };
    spec.check()
        .map_err(|e| ApiError::field("tools", e.to_string()))?;
    Ok(spec)
}

/// `tool_choice`: `auto`, `none`, `required`, or one named function (then
/// only that tool is offered, and a call is required).
pub fn choice(
    value: Option<Value>,
    tools: Vec<ToolSpec>,
) -> Result<(Vec<ToolSpec>, ToolChoice), ApiError> {
    let bad = |why: &str| ApiError::field("tool_choice", why);
    let named = match value {
        None => return Ok((tools, ToolChoice::Auto)),
        Some(Value::String(s)) => match s.as_str() {
            "auto" => return Ok((tools, ToolChoice::Auto)),
            "none" => return Ok((tools, ToolChoice::None)),
            "required" if tools.is_empty() => return Err(bad("`required` needs `tools`")),
            "required" => return Ok((tools, ToolChoice::Required)),
            other => {
                return Err(bad(&format!(
                    "`{other}` is not auto, none, required or a function"
                )));
            }
        },
        Some(v) => v
            .get("function")
            .and_then(|f| f.get("name"))
            .or_else(|| v.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                bad("name the function: {\"type\": \"function\", \"function\": {\"name\": ...}}")
            })?,
    };
    let tools: Vec<ToolSpec> = tools.into_iter().filter(|t| t.name == named).collect();
    if tools.is_empty() {
        return Err(bad(&format!("no tool is named `{named}`")));
    }
    Ok((tools, ToolChoice::Required))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn read(body: Value) -> Result<Asked, ApiError> {
        Asked::read(body)
    }

    #[test]
    fn every_field_is_honoured_or_refused_by_name() {
        let base = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        assert!(read(base.clone()).is_ok(), "a plain request passes");
        for (field, value) in [
            ("n", json!(2)),
            ("logprobs", json!(true)),
            ("logit_bias", json!({"1": 5})),
            ("audio", json!({"voice": "x"})),
            ("frobnicate", json!(1)),
        ] {
            let mut body = base.clone();
            body[field] = value;
            let e = read(body).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(field), "{e:?}");
            assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
        }
        let mut fine = base.clone();
        fine["n"] = json!(1);
        fine["logprobs"] = json!(false);
        fine["metadata"] = json!({"a": "b"});
        assert!(read(fine).is_ok(), "defaults and bookkeeping pass");
    }

    #[test]
    fn sampling_fields_are_read_and_checked() {
        let asked = read(
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 5, "temperature": 0.5, "seed": 7, "stop": "END",
            "presence_penalty": 1.0, "response_format": {"type": "json_object"}}),
        )
        .unwrap();
        assert_eq!(asked.sampling.max_tokens, Some(5));
        assert_eq!(asked.sampling.stop, ["END"]);
        assert_eq!(
            asked.sampling.format,
            hearth_core::chat::ReplyFormat::JsonObject
        );
        let e = read(json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 9}))
            .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("temperature"));
    }

    #[test]
    fn tool_turns_and_results_are_paired() {
        let asked = read(json!({"model": "m", "messages": [
            {"role": "user", "content": "light on"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "HassTurnOn", "arguments": "{\"name\": \"lamp\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"}],
            "tools": [{"type": "function", "function": {"name": "HassTurnOn", "parameters": {"type": "object"}}}],
            "tool_choice": {"type": "function", "function": {"name": "HassTurnOn"}}}))
        .unwrap();
        assert_eq!(asked.messages[1].tool_calls[0].arguments["name"], "lamp");
        assert_eq!(asked.messages[2].name.as_deref(), Some("HassTurnOn"));
        assert_eq!(asked.tool_choice, ToolChoice::Required);
        let orphan = read(
            json!({"model": "m", "messages": [{"role": "tool", "tool_call_id": "x", "content": "?"}]}),
        );
        assert!(orphan.is_err(), "a result without its call is refused");
    }

    #[test]
    fn an_image_is_kept_and_a_remote_one_refused_never_dropped() {
        let part = |url: &str| {
            json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": url}}]}]})
        };
        let asked = read(part("data:image/png;base64,iVBORw0KGgo=")).unwrap();
        assert_eq!(asked.messages[0].content, "what is this?");
        assert_eq!(&asked.messages[0].images[0].bytes[..], b"\x89PNG\r\n\x1a\n");
        let remote = read(part("http://192.168.1.1/cam.jpg")).unwrap_err();
        assert!(remote.message.contains("does not fetch"), "{remote:?}");
        let damaged = read(part("data:image/png;base64,%%%")).unwrap_err();
        assert!(damaged.message.contains("base64"), "{damaged:?}");
        let text = read(
            json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"}]}]}),
        )
        .unwrap();
        assert!(text.messages[0].images.is_empty(), "text parts alone pass");
    }
}
