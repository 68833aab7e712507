//! The OpenAI chat-completions wire format: the request body, the streamed
//! chunks, and what an error response means.

use serde_json::{Value, json};

use crate::chat::{ChatRequest, ProviderError, Role, Usage};

/// Error codes that mean "the prompt is too long", as OpenAI, llama-server
/// and compatible servers send them in `error.code` or `error.type`.
const OVERFLOW_CODES: [&str; 3] = [
    "context_length_exceeded",
    "exceed_context_size_error",
    "request_too_large",
];

/// The body of a streaming chat-completions request.
///
/// Tool calls travel in the text (the XML dispatcher describes the tools in
/// the system prompt), so no `tools` field is sent; a `tool` turn, which
/// only the native dispatcher writes, goes as a user turn.
pub fn request_body(model: &str, request: &ChatRequest) -> Value {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::Tool => "user",
                other => other.as_str(),
            };
            json!({ "role": role, "content": m.content })
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
    body
}

/// What one streamed chunk carries.
#[derive(Debug, Default, PartialEq)]
pub struct Chunk {
    pub content: Option<String>,
    pub reasoning: Option<String>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
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
    Ok(Chunk {
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
        429 => ProviderError::Failed(format!(
            "{provider} is rate limiting or out of quota (HTTP 429): {message}"
        )),
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
        let body = request_body("gpt-x", &request);
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
        let gateway = classify_error("openai", 502, "<html>Bad Gateway</html>");
        assert!(gateway.to_string().contains("HTTP 502"), "{gateway}");
        assert!(gateway.to_string().contains("Bad Gateway"), "{gateway}");
    }
}
