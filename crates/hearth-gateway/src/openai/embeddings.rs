//! `POST /v1/embeddings`: vectors from the served model (mean-pooled and
//! of length 1, as llama-server gives them), as floats or base64.

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use serde_json::{Value, json};

use super::super::connections::ConnectionHandle;
use super::super::http::App;
use super::assistant::MODEL;
use super::error::ApiError;
use super::fields::Fields;

/// The most inputs in one request.
const MAX_INPUTS: usize = 256;

struct Asked {
    model: String,
    inputs: Vec<String>,
    base64: bool,
}

fn read(body: Value) -> Result<Asked, ApiError> {
    let mut f = Fields::new(body)?;
    let model = f.model()?;
    let bad = || {
        ApiError::field(
            "input",
            format!(
                "`input` must be a string or a list of 1 to {MAX_INPUTS} non-empty strings (token lists are not taken)"
            ),
        )
    };
    let inputs: Vec<String> = match f.take("input") {
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        _ => return Err(bad()),
    };
    if inputs.is_empty() || inputs.len() > MAX_INPUTS || inputs.iter().any(|s| s.is_empty()) {
        return Err(bad());
    }
    let base64 = match f.string("encoding_format")?.as_deref() {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(ApiError::field(
                "encoding_format",
                format!("`{other}` is not float or base64"),
            ));
        }
    };
    f.only(
        "dimensions",
        |_| false,
        "the model's vectors have the size they have",
    )?;
    f.accept(&["user"]);
    f.finish()?;
    Ok(Asked {
        model,
        inputs,
        base64,
    })
}

pub(in super::super) async fn embeddings(
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
    let (served, meaning) = match super::target(&app, &asked.model) {
        Ok(super::Target::Served(s)) => (s, false),
        Ok(super::Target::Embedder(s)) => (s, true),
        Ok(super::Target::Assistant) => {
            let name = app.served.as_ref().map(|s| s.name());
            let why = match name {
                Some(n) => {
                    format!("the assistant `{MODEL}` makes no embeddings; ask for model `{n}`")
                }
                None => format!("the assistant `{MODEL}` makes no embeddings"),
            };
            return ApiError::field("model", why).into_response();
        }
        Err(e) => return e.into_response(),
    };
    let embedding = if meaning {
        served.embed_meaning(asked.inputs)
    } else {
        served.embed(asked.inputs)
    };
    let embedded = match tokio::time::timeout(app.shared.reply_timeout, embedding).await {
        Ok(Ok(e)) => e,
        Ok(Err(e)) => return ApiError::from(e).into_response(),
        Err(_) => {
            return ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "the embeddings took longer than `reply_timeout_secs`",
            )
            .into_response();
        }
    };
    let data: Vec<Value> = embedded
        .vectors
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let embedding = if asked.base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({ "object": "embedding", "index": i, "embedding": embedding })
        })
        .collect();
    axum::Json(json!({
        "object": "list",
        "data": data,
        "model": asked.model,
        "usage": { "prompt_tokens": embedded.tokens, "total_tokens": embedded.tokens },
    }))
    .into_response()
}
