//! The OpenAI chat-completions wire format: the request body, the streamed
//! chunks, and what an error response means.

use serde_json::{Value, json};

use crate::chat::{ChatMessage, ChatRequest, ProviderError, Role, ToolChoice, Usage};

/// Error codes that mean "the prompt is too long", as OpenAI, llama-server
/// and compatible servers send them in `error.code` or `error.type`.
const OVERFLOW_CODES: [&str; 3] = [
    "context_length_exceeded",
    "exceed_context_size_error",
    "request_too_large",
];

/// The body of a streaming chat-completions request.
///
/// `native`: the offered tools go in the `tools` field, assistant turns
/// carry their `tool_calls` and results go back as `tool` turns with the
/// call's id (OpenAI's function calling). Otherwise calls travel in the
/// text (the XML dispatcher describes the tools in the system prompt), no
/// `tools` field is sent, and a `tool` turn goes as a user turn.
pub fn request_body(model: &str, request: &ChatRequest, native: bool) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| {
            if native {
                native_message(m)
            } else {
                text_message(m)
            }
        })
        .collect();
    let sampling = &request.sampling;
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": { "include_usage": true },
        "max_tokens": sampling.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
    });
    if let Some(seed) = sampling.seed {
        body["seed"] = json!(seed);
    }
    let stops: Vec<&String> = sampling.stop.iter().filter(|s| !s.is_empty()).collect();
    if !stops.is_empty() {
        // OpenAI takes at most four.
        body["stop"] = json!(stops.into_iter().take(4).collect::<Vec<_>>());
    }
    let tools = request.offered_tools();
    if native && !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
        body["tool_choice"] = json!(match request.tool_choice {
            ToolChoice::Required => "required",
            ToolChoice::Auto | ToolChoice::None => "auto",
        });
    }
    body
}

fn text_message(m: &ChatMessage) -> Value {
    let role = match m.role {
        Role::Tool => "user",
        other => other.as_str(),
    };
    json!({ "role": role, "content": content(m) })
}

/// A turn's content: its text, or with pictures, `image_url` parts (data
/// URLs) and then a text part.
fn content(m: &ChatMessage) -> Value {
    if m.images.is_empty() {
        return json!(m.content);
    }
    let mut parts: Vec<Value> = m
        .images
        .iter()
        .map(|i| json!({ "type": "image_url", "image_url": { "url": i.data_url() } }))
        .collect();
    if !m.content.is_empty() {
        parts.push(json!({ "type": "text", "text": m.content }));
    }
    Value::Array(parts)
}

fn native_message(m: &ChatMessage) -> Value {
    match m.role {
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": m.content,
        }),
        Role::Assistant if !m.tool_calls.is_empty() => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "type": "function",
                        "function": { "name": c.name, "arguments": c.arguments.to_string() },
                    })
                })
                .collect();
            let content = if m.content.is_empty() {
                Value::Null
            } else {
                json!(m.content)
            };
            json!({ "role": "assistant", "content": content, "tool_calls": calls })
        }
        other => json!({ "role": other.as_str(), "content": content(m) }),
    }
}

/// A piece of a streamed tool call: the first names it, the rest add to
/// its arguments (a JSON text cut anywhere).
#[derive(Debug, Default, PartialEq)]
pub struct CallDelta {
    /// Which call of the reply it belongs to.
    pub index: u64,
    pub id: Option<String>,
    pub name: Option<String>,
    pub arguments: Option<String>,
}

/// What one streamed chunk carries.
#[derive(Debug, Default, PartialEq)]
pub struct Chunk {
    pub content: Option<String>,
    pub reasoning: Option<String>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    pub calls: Vec<CallDelta>,
}

/// Reads one `data:` payload (not `[DONE]`).
pub fn parse_chunk(data: &str) -> Result<Chunk, ProviderError> {
    let value: Value = serde_json::from_str(data).map_err(|e| {
        ProviderError::Failed(format!("the provider sent a chunk that is not JSON: {e}"))
    })?;
    if let Some(error) = value.get("error") {
        return Err(ProviderError::Failed(format!(
            "the provider failed while answering: {}",
            error_message(error)
        )));
    }
    let choice = value.get("choices").and_then(|c| c.get(0));
    let delta = choice.and_then(|c| c.get("delta"));
    let text = |key: &str| {
        delta
            .and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let usage = value.get("usage").filter(|u| !u.is_null()).map(|u| {
        let count = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0) as u32;
        Usage {
            prompt_tokens: count(u.get("prompt_tokens")),
            cached_tokens: count(u.pointer("/prompt_tokens_details/cached_tokens")),
            completion_tokens: count(u.get("completion_tokens")),
            ..Usage::default()
        }
    });
    let calls = delta
        .and_then(|d| d.get("tool_calls"))
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let field =
                        |path: &str| c.pointer(path).and_then(Value::as_str).map(str::to_string);
                    CallDelta {
                        index: c.get("index").and_then(Value::as_u64).unwrap_or(i as u64),
                        id: field("/id").filter(|s| !s.is_empty()),
                        name: field("/function/name").filter(|s| !s.is_empty()),
                        arguments: field("/function/arguments"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Chunk {
        calls,
        content: text("content"),
        reasoning: text("reasoning_content").or_else(|| text("reasoning")),
        finish_reason: choice
            .and_then(|c| c.get("finish_reason"))
            .and_then(Value::as_str)
            .map(str::to_string),
        usage,
    })
}

/// What an unsuccessful HTTP answer means, from its status and body.
pub fn classify_error(provider: &str, status: u16, body: &str) -> ProviderError {
    let value: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let error = value.get("error").unwrap_or(&value);
    let field = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or("");
    let overflow = status == 413
        || OVERFLOW_CODES.contains(&field("code"))
        || OVERFLOW_CODES.contains(&field("type"));
    if overflow {
        let number = |key: &str| error.get(key).and_then(Value::as_u64).unwrap_or(0) as u32;
        return ProviderError::ContextOverflow {
            needed: number("n_prompt_tokens"),
            limit: number("n_ctx"),
        };
    }
    let message = match error_message(error) {
        m if m.is_empty() => short(body),
        m => m,
    };
    match status {
        401 | 403 => ProviderError::Failed(format!(
            "{provider} refused the API key (HTTP {status}): {message}; check its `api_key` or OPENAI_API_KEY"
        )),
        // Out of quota will not pass by waiting; a rate limit will.
        429 if field("code") == "insufficient_quota" => {
            ProviderError::Failed(format!("{provider} is out of quota (HTTP 429): {message}"))
        }
        429 => ProviderError::Busy {
            message: format!("{provider} is rate limiting (HTTP 429): {message}"),
            retry_after_secs: None,
        },
        _ => ProviderError::Failed(format!("{provider} answered HTTP {status}: {message}")),
    }
}

fn error_message(error: &Value) -> String {
    match error {
        Value::String(s) => short(s),
        other => short(other.get("message").and_then(Value::as_str).unwrap_or("")),
    }
}

/// At most 300 characters of a provider's message.
fn short(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::{ChatMessage, SamplingParams};

    #[test]
    fn pictures_go_as_data_url_parts_before_the_text() {
        let png = crate::chat::Image::new(b"\x89PNG\r\n\x1a\n...".to_vec());
        let turn = ChatMessage {
            images: vec![png],
            ..ChatMessage::user("what is this?")
        };
        for native in [true, false] {
            let request = ChatRequest::new(
                "c",
                vec![turn.clone(), ChatMessage::assistant("a cat")],
                SamplingParams::greedy(8),
            );
            let body = request_body("gpt-x", &request, native);
            let parts = &body["messages"][0]["content"];
            assert_eq!(parts[0]["type"], "image_url");
            let url = parts[0]["image_url"]["url"].as_str().unwrap();
            assert!(url.starts_with("data:image/png;base64,iVBOR"), "{url}");
            assert_eq!(parts[1], json!({"type": "text", "text": "what is this?"}));
            // A turn without pictures stays a plain string.
            assert_eq!(body["messages"][1]["content"], "a cat");
        }
    }

    #[test]
    fn the_body_carries_the_conversation_and_sampling() {
        let mut sampling = SamplingParams::greedy(64);
        sampling.stop = vec!["</s>".into(), String::new()];
        let request = ChatRequest::new(
            "c",
            vec![
                ChatMessage::system("be brief"),
                ChatMessage::user("hi"),
                ChatMessage::new(Role::Tool, "42"),
            ],
            sampling,
        );
        let body = request_body("gpt-x", &request, false);
        assert_eq!(body["model"], "gpt-x");
        assert_eq!(body["stream"], true);
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["stop"], json!(["</s>"]));
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["system", "user", "user"]);
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn native_bodies_carry_tools_calls_and_results_with_ids() {
        let mut request = ChatRequest::new(
            "c",
            vec![
                ChatMessage::user("save it"),
                ChatMessage {
                    tool_calls: vec![crate::chat::ToolCall {
                        id: "call_1".into(),
                        name: "file_write".into(),
                        arguments: json!({"path": "a.txt"}),
                    }],
                    ..ChatMessage::assistant("")
                },
                ChatMessage {
                    tool_call_id: Some("call_1".into()),
                    ..ChatMessage::new(Role::Tool, "written")
                },
            ],
            SamplingParams::greedy(64),
        );
        request.tools = vec![crate::chat::ToolSpec {
            name: "file_write".into(),
            description: "Write a file".into(),
            parameters: json!({"type": "object"}),
        }];
        let body = request_body("gpt-x", &request, true);
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["tools"][0]["function"]["name"], "file_write");
        assert_eq!(body["tool_choice"], "auto");
        let call = &body["messages"][1];
        assert_eq!(call["content"], Value::Null);
        assert_eq!(call["tool_calls"][0]["id"], "call_1");
        // Arguments travel as a JSON text, as OpenAI sends them.
        assert_eq!(
            call["tool_calls"][0]["function"]["arguments"],
            r#"{"path":"a.txt"}"#
        );
        assert_eq!(body["messages"][2]["role"], "tool");
        assert_eq!(body["messages"][2]["tool_call_id"], "call_1");
        request.tool_choice = ToolChoice::None;
        assert!(request_body("gpt-x", &request, true).get("tools").is_none());
    }

    #[test]
    fn chunks_give_tool_call_pieces() {
        let first = parse_chunk(
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"file_read","arguments":""}}]},"finish_reason":null}]}"#,
        )
        .unwrap();
        assert_eq!(
            first.calls,
            [CallDelta {
                index: 0,
                id: Some("call_9".into()),
                name: Some("file_read".into()),
                arguments: Some(String::new()),
            }]
        );
        let more = parse_chunk(
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"finish_reason":null}]}"#,
        )
        .unwrap();
        assert_eq!(more.calls[0].arguments.as_deref(), Some(r#"{"pa"#));
        assert_eq!(more.calls[0].name, None);
    }

    #[test]
    fn chunks_give_text_reasoning_finish_and_usage() {
        let chunk = parse_chunk(
            r#"{"choices":[{"delta":{"content":"Hel","reasoning_content":"hmm"},"finish_reason":null}]}"#,
        )
        .unwrap();
        assert_eq!(chunk.content.as_deref(), Some("Hel"));
        assert_eq!(chunk.reasoning.as_deref(), Some("hmm"));
        assert_eq!(chunk.finish_reason, None);
        let last = parse_chunk(
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}}"#,
        )
        .unwrap();
        let usage = last.usage.unwrap();
        assert_eq!(
            (
                usage.prompt_tokens,
                usage.cached_tokens,
                usage.completion_tokens
            ),
            (12, 8, 3)
        );
        assert!(matches!(
            parse_chunk(r#"{"error":{"message":"overloaded"}}"#),
            Err(ProviderError::Failed(m)) if m.contains("overloaded")
        ));
        assert!(parse_chunk("not json").is_err());
    }

    #[test]
    fn errors_are_classified_by_code_not_by_phrase() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert!(matches!(
            classify_error("openai", 400, openai),
            ProviderError::ContextOverflow { .. }
        ));
        let llama_server = r#"{"error":{"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
        assert!(matches!(
            classify_error("openai", 400, llama_server),
            ProviderError::ContextOverflow {
                needed: 9000,
                limit: 8192
            }
        ));
        let key = classify_error(
            "openai",
            401,
            r#"{"error":{"message":"Incorrect API key"}}"#,
        );
        assert!(key.to_string().contains("refused the API key"), "{key}");
        let limited = classify_error(
            "openai",
            429,
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
        );
        assert!(matches!(limited, ProviderError::Busy { .. }), "{limited}");
        let quota = classify_error(
            "openai",
            429,
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
        );
        assert!(
            matches!(&quota, ProviderError::Failed(m) if m.contains("out of quota")),
            "{quota}"
        );
        let gateway = classify_error("openai", 502, "<html>Bad Gateway</html>");
        assert!(gateway.to_string().contains("HTTP 502"), "{gateway}");
        assert!(gateway.to_string().contains("Bad Gateway"), "{gateway}");
    }
}
