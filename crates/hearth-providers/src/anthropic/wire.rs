//! The Anthropic Messages API wire format: the request body, the streamed
//! events, and what an error response means (from Anthropic's published
//! API reference: messages, streaming, errors).

use serde_json::{Value, json};

use crate::chat::{ChatMessage, ChatRequest, ProviderError, Role, ToolChoice};

/// The API version hearth speaks (`anthropic-version`).
pub const VERSION: &str = "2023-06-01";

/// The body of a streaming Messages request. System turns go in `system`;
/// an assistant turn carries its calls as `tool_use` blocks; a tool result
/// goes back in a user turn as a `tool_result` block naming its call.
/// Turns of one role in a row are merged: the API wants them alternating.
pub fn request_body(model: &str, request: &ChatRequest) -> Value {
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for m in &request.messages {
        let Some((role, blocks)) = blocks(m) else {
            if m.role == Role::System {
                system.push(m.content.as_str());
            }
            continue;
        };
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({ "role": role, "content": blocks })),
        }
    }
    let sampling = &request.sampling;
    let mut body = json!({
        "model": model,
        "max_tokens": sampling.max_tokens.max(1),
        "messages": messages,
        "stream": true,
        "temperature": sampling.temperature.clamp(0.0, 1.0),
    });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    let stops: Vec<&String> = sampling
        .stop
        .iter()
        .filter(|s| !s.trim().is_empty())
        .collect();
    if !stops.is_empty() {
        body["stop_sequences"] = json!(stops);
    }
    let tools = request.offered_tools();
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
        body["tool_choice"] = json!({
            "type": match request.tool_choice {
                ToolChoice::Required => "any",
                ToolChoice::Auto | ToolChoice::None => "auto",
            }
        });
    }
    body
}

/// A turn's role and content blocks; `None` for a system turn (or an
/// empty one, which the API refuses).
fn blocks(m: &ChatMessage) -> Option<(&'static str, Vec<Value>)> {
    let text = |t: &str| json!({ "type": "text", "text": t });
    match m.role {
        Role::System => None,
        Role::User if m.content.is_empty() && m.images.is_empty() => None,
        Role::User => {
            // Pictures first, as Anthropic advises, then the text.
            let mut blocks: Vec<Value> = m
                .images
                .iter()
                .map(|i| {
                    json!({ "type": "image", "source": {
                        "type": "base64",
                        "media_type": i.media_type().unwrap_or("image/png"),
                        "data": i.base64(),
                    }})
                })
                .collect();
            if !m.content.is_empty() {
                blocks.push(text(&m.content));
            }
            Some(("user", blocks))
        }
        Role::Assistant => {
            let mut blocks = Vec::new();
            if !m.content.trim().is_empty() {
                blocks.push(text(&m.content));
            }
            blocks.extend(m.tool_calls.iter().map(
                |c| json!({ "type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments }),
            ));
            (!blocks.is_empty()).then_some(("assistant", blocks))
        }
        Role::Tool => Some((
            "user",
            vec![match &m.tool_call_id {
                Some(id) => {
                    json!({ "type": "tool_result", "tool_use_id": id, "content": m.content })
                }
                // A result of a call made in text (hearth's XML protocol).
                None => text(&m.content),
            }],
        )),
    }
}

/// One streamed event, as far as hearth reads it.
#[derive(Debug, PartialEq)]
pub enum Event {
    /// `message_start`: the prompt's tokens, and how many came from the
    /// provider's cache.
    Start {
        input: u32,
        cached: u32,
    },
    /// `content_block_start` of a `tool_use` block.
    CallStart {
        index: u64,
        id: String,
        name: String,
    },
    Text(String),
    Thinking(String),
    /// `input_json_delta`: a piece of block `index`'s arguments.
    CallArguments {
        index: u64,
        json: String,
    },
    /// `content_block_stop`.
    BlockStop {
        index: u64,
    },
    /// `message_delta`: why the reply stopped, and its tokens so far.
    Stop {
        reason: Option<String>,
        output: u32,
    },
    /// `message_stop`.
    End,
    /// `ping`, signatures, and anything newer than this reader.
    Other,
}

/// Reads one event's `data` payload.
pub fn parse_event(provider: &str, data: &str) -> Result<Event, ProviderError> {
    let v: Value = serde_json::from_str(data).map_err(|e| {
        ProviderError::Failed(format!("{provider} sent an event that is not JSON: {e}"))
    })?;
    let str_at = |path: &str| v.pointer(path).and_then(Value::as_str).unwrap_or("");
    let num_at = |path: &str| v.pointer(path).and_then(Value::as_u64).unwrap_or(0);
    let index = num_at("/index");
    Ok(match str_at("/type") {
        "message_start" => Event::Start {
            input: (num_at("/message/usage/input_tokens")
                + num_at("/message/usage/cache_read_input_tokens")
                + num_at("/message/usage/cache_creation_input_tokens")) as u32,
            cached: num_at("/message/usage/cache_read_input_tokens") as u32,
        },
        "content_block_start" => match str_at("/content_block/type") {
            "tool_use" => Event::CallStart {
                index,
                id: str_at("/content_block/id").to_string(),
                name: str_at("/content_block/name").to_string(),
            },
            "text" if !str_at("/content_block/text").is_empty() => {
                Event::Text(str_at("/content_block/text").to_string())
            }
            _ => Event::Other,
        },
        "content_block_delta" => match str_at("/delta/type") {
            "text_delta" => Event::Text(str_at("/delta/text").to_string()),
            "thinking_delta" => Event::Thinking(str_at("/delta/thinking").to_string()),
            "input_json_delta" => Event::CallArguments {
                index,
                json: str_at("/delta/partial_json").to_string(),
            },
            _ => Event::Other,
        },
        "content_block_stop" => Event::BlockStop { index },
        "message_delta" => Event::Stop {
            reason: v
                .pointer("/delta/stop_reason")
                .and_then(Value::as_str)
                .map(str::to_string),
            output: num_at("/usage/output_tokens") as u32,
        },
        "message_stop" => Event::End,
        "error" => return Err(classify(provider, None, &v, None)),
        _ => Event::Other,
    })
}

/// What an unsuccessful HTTP answer means, from its status, body and
/// `retry-after` header.
pub fn classify_error(
    provider: &str,
    status: u16,
    body: &str,
    retry_after: Option<u64>,
) -> ProviderError {
    let value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    classify(provider, Some(status), &value, retry_after).or_body(body)
}

fn classify(
    provider: &str,
    status: Option<u16>,
    v: &Value,
    retry_after: Option<u64>,
) -> ProviderError {
    let kind = v
        .pointer("/error/type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let message = v
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim()
        .to_string();
    if kind == "request_too_large" || status == Some(413) || message.contains("prompt is too long")
    {
        // "prompt is too long: 210000 tokens > 200000 maximum"
        let numbers: Vec<u32> = message
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect();
        return ProviderError::ContextOverflow {
            needed: numbers.first().copied().unwrap_or(0),
            limit: numbers.get(1).copied().unwrap_or(0),
        };
    }
    match (kind, status) {
        ("overloaded_error", _) | (_, Some(529)) => ProviderError::Busy {
            message: format!("{provider} is overloaded: {message}"),
            retry_after_secs: retry_after,
        },
        ("rate_limit_error", _) | (_, Some(429)) => ProviderError::Busy {
            message: format!("{provider} is rate limiting: {message}"),
            retry_after_secs: retry_after,
        },
        ("authentication_error" | "permission_error", _) | (_, Some(401 | 403)) => {
            ProviderError::Failed(format!(
                "{provider} refused the API key: {message}; check its `api_key` or ANTHROPIC_API_KEY"
            ))
        }
        ("invalid_request_error", _) => {
            ProviderError::InvalidRequest(format!("{provider} refused the request: {message}"))
        }
        (_, Some(code)) => {
            ProviderError::Failed(format!("{provider} answered HTTP {code}: {message}"))
        }
        (_, None) => ProviderError::Failed(format!("{provider} failed while answering: {message}")),
    }
}

trait OrBody {
    fn or_body(self, body: &str) -> Self;
}

impl OrBody for ProviderError {
    /// A message left empty (a body that was not Anthropic's JSON, from a
    /// proxy) is filled with the start of the body.
    fn or_body(self, body: &str) -> Self {
        let short: String = body.trim().chars().take(300).collect();
        match self {
            ProviderError::Failed(m) if m.ends_with(": ") => {
                ProviderError::Failed(format!("{m}{short}"))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{SamplingParams, ToolCall, ToolSpec};

    #[test]
    fn pictures_go_as_base64_image_blocks_before_the_text() {
        let jpeg = crate::chat::Image::new(vec![0xff, 0xd8, 0xff, 0xe0, 1, 2]);
        let request = ChatRequest::new(
            "c",
            vec![
                ChatMessage {
                    images: vec![jpeg.clone()],
                    ..ChatMessage::user("")
                },
                ChatMessage::assistant("a photo"),
                ChatMessage {
                    images: vec![jpeg],
                    ..ChatMessage::user("and this?")
                },
            ],
            SamplingParams::greedy(8),
        );
        let body = request_body("claude", &request);
        let first = &body["messages"][0]["content"];
        assert_eq!(
            first.as_array().map(Vec::len),
            Some(1),
            "a picture alone is a turn"
        );
        assert_eq!(first[0]["type"], "image");
        assert_eq!(first[0]["source"]["media_type"], "image/jpeg");
        assert_eq!(first[0]["source"]["data"], "/9j/4AEC");
        let last = &body["messages"][2]["content"];
        assert_eq!(
            (last[0]["type"].as_str(), last[1]["text"].as_str()),
            (Some("image"), Some("and this?"))
        );
    }

    #[test]
    fn system_tools_calls_and_results_take_anthropic_shapes() {
        let mut request = ChatRequest::new(
            "c",
            vec![
                ChatMessage::system("be brief"),
                ChatMessage::user("save it"),
                ChatMessage {
                    tool_calls: vec![ToolCall {
                        id: "toolu_1".into(),
                        name: "file_write".into(),
                        arguments: json!({"path": "a.txt"}),
                    }],
                    ..ChatMessage::assistant("Saving.")
                },
                ChatMessage {
                    tool_call_id: Some("toolu_1".into()),
                    ..ChatMessage::new(Role::Tool, "written")
                },
                ChatMessage::user("thanks"),
            ],
            SamplingParams::greedy(64),
        );
        request.tools = vec![ToolSpec {
            name: "file_write".into(),
            description: "Write".into(),
            parameters: json!({"type": "object"}),
        }];
        let body = request_body("claude-x", &request);
        assert_eq!(body["system"], "be brief");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(body["tool_choice"]["type"], "auto");
        let m = body["messages"].as_array().unwrap();
        assert_eq!(
            m.len(),
            3,
            "the result and the next words are one user turn: {m:?}"
        );
        assert_eq!(m[1]["content"][1]["type"], "tool_use");
        assert_eq!(m[1]["content"][1]["id"], "toolu_1");
        assert_eq!(m[2]["role"], "user");
        assert_eq!(m[2]["content"][0]["type"], "tool_result");
        assert_eq!(m[2]["content"][0]["tool_use_id"], "toolu_1");
        assert_eq!(m[2]["content"][1]["text"], "thanks");
    }

    #[test]
    fn events_and_errors_are_read_by_type() {
        let e = |d: &str| parse_event("anthropic", d).unwrap();
        assert_eq!(
            e(
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_9","name":"file_read","input":{}}}"#
            ),
            Event::CallStart {
                index: 1,
                id: "toolu_9".into(),
                name: "file_read".into()
            }
        );
        assert_eq!(
            e(
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#
            ),
            Event::CallArguments {
                index: 1,
                json: r#"{"pa"#.into()
            }
        );
        assert_eq!(
            e(
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#
            ),
            Event::Thinking("hmm".into())
        );
        assert_eq!(e(r#"{"type":"ping"}"#), Event::Other);
        assert!(matches!(
            parse_event(
                "anthropic",
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            Err(ProviderError::Busy { .. })
        ));
        assert!(matches!(
            classify_error(
                "anthropic",
                529,
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                None
            ),
            ProviderError::Busy {
                retry_after_secs: None,
                ..
            }
        ));
        assert!(matches!(
            classify_error(
                "anthropic",
                429,
                r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
                Some(7)
            ),
            ProviderError::Busy {
                retry_after_secs: Some(7),
                ..
            }
        ));
        assert!(matches!(
            classify_error(
                "anthropic",
                400,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
                None
            ),
            ProviderError::ContextOverflow {
                needed: 210000,
                limit: 200000
            }
        ));
        let key = classify_error(
            "anthropic",
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
            None,
        );
        assert!(key.to_string().contains("ANTHROPIC_API_KEY"), "{key}");
        let proxy = classify_error("anthropic", 502, "<html>Bad Gateway</html>", None);
        assert!(proxy.to_string().contains("Bad Gateway"), "{proxy}");
    }
}
