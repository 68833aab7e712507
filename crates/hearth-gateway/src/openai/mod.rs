//! The OpenAI-compatible API, with two things to ask for by `model`:
//!
//! - **`hearth`, the assistant** ([`assistant`]): hearth's agent with its
//!   tools, memory and history, per conversation;
//! - **the served model** ([`direct`]), by the loaded GGUF's name: a plain,
//!   stateless server over the client's own messages and tools, as
//!   llama-server serves them.
//!
//! Routes: `POST /v1/chat/completions` ([`completions`]),
//! `POST /v1/responses` ([`responses`]), `POST /v1/embeddings`
//! ([`embeddings`]), `GET /v1/models` and `GET /v1/models/{id}`. Every
//! request field is honoured or refused by name ([`fields`]); errors,
//! 404s included, come in OpenAI's shape ([`error`]). A reply never
//! outlives its client: one that hangs up, or a reply past
//! `reply_timeout_secs`, stops generation ([`turn`]).

mod assistant;
mod completions;
mod direct;
mod embeddings;
mod error;
mod fields;
mod file_part;
mod request;
mod responses;
mod turn;

use axum::body::Body;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::connections::ConnectionHandle;
use super::http::{API_BODY_LIMIT, App, admitted_json, guarded};
use assistant::{ForAssistant, MODEL};
use completions::Completion;
use direct::Direct;
use error::ApiError;
use request::Asked;
use turn::Turn;

pub(super) use embeddings::embeddings;
pub(super) use responses::responses;

/// Headers naming a conversation, first found wins: hearth's own, then
/// the chat id Open WebUI forwards.
const CHAT_HEADERS: &[&str] = &["x-hearth-chat", "x-openwebui-chat-id"];

/// The conversation the request's headers name, if any.
fn named_chat(headers: &HeaderMap) -> Option<&str> {
    CHAT_HEADERS
        .iter()
        .find_map(|h| headers.get(*h).and_then(|v| v.to_str().ok()))
}

/// The name of the call `id` among `messages`' earlier calls.
fn call_name(messages: &[hearth_core::chat::ChatMessage], id: &str) -> Option<String> {
    messages
        .iter()
        .rev()
        .flat_map(|m| &m.tool_calls)
        .find(|c| c.id == id)
        .map(|c| c.name.clone())
}

/// Which of the two a request asked for.
enum Target {
    Assistant,
    Served(std::sync::Arc<dyn super::ServedModel>),
    /// The sentence-embedding model served beside the chat model.
    Embedder(std::sync::Arc<dyn super::ServedModel>),
}

/// The names offered: the assistant, and the served model if any.
fn names(app: &App) -> Vec<String> {
    let mut names = vec![MODEL.to_string()];
    names.extend(app.served.as_ref().map(|s| s.name()));
    names.extend(app.served.as_ref().and_then(|s| s.embedding_model()));
    names
}

/// What `model` names, or a 404 listing what there is.
fn target(app: &App, model: &str) -> Result<Target, ApiError> {
    if model == MODEL {
        return Ok(Target::Assistant);
    }
    match &app.served {
        Some(served) if served.name() == model => Ok(Target::Served(served.clone())),
        Some(served) if served.embedding_model().as_deref() == Some(model) => {
            Ok(Target::Embedder(served.clone()))
        }
        _ => Err(ApiError {
            param: Some("model".into()),
            ..ApiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "there is no model `{model}` here; ask for one of: {}",
                    names(app).join(", ")
                ),
            )
            .with_code("model_not_found")
        }),
    }
}

fn model_object(app: &App, id: &str) -> Value {
    json!({ "id": id, "object": "model", "created": app.started, "owned_by": "hearth" })
}

pub(super) async fn models(State(app): State<App>, method: Method, headers: HeaderMap) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return ApiError::from(r).into_response();
    }
    let data: Vec<Value> = names(&app).iter().map(|n| model_object(&app, n)).collect();
    axum::Json(json!({ "object": "list", "data": data })).into_response()
}

pub(super) async fn model(
    State(app): State<App>,
    Path(id): Path<String>,
    method: Method,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return ApiError::from(r).into_response();
    }
    match target(&app, &id) {
        Ok(_) => axum::Json(model_object(&app, &id)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// Any other `/v1` path: a 404 in OpenAI's shape (behind the guard, so
/// it tells a stranger nothing).
pub(super) async fn not_found(
    State(app): State<App>,
    method: Method,
    headers: HeaderMap,
    uri: axum::http::Uri,
) -> Response {
    if let Err(r) = guarded(&app, &method, &headers) {
        return ApiError::from(r).into_response();
    }
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!(
            "{method} {} is not served here: hearth offers /v1/chat/completions, /v1/responses, /v1/embeddings and /v1/models",
            uri.path()
        ),
    )
    .into_response()
}

/// The body of an API request that passed the guard, as JSON.
async fn body(
    app: &App,
    connection: &ConnectionHandle,
    method: &Method,
    headers: &HeaderMap,
    body: Body,
) -> Result<Value, ApiError> {
    admitted_json(app, connection, method, headers, body, API_BODY_LIMIT)
        .await
        .map_err(ApiError::from)
}

/// Starts the reply `asked` wants, from the assistant or the served model.
async fn start(app: &App, headers: &HeaderMap, asked: Asked) -> Result<Turn, ApiError> {
    match target(app, &asked.model)? {
        Target::Assistant => {
            ForAssistant::check(
                !asked.tools.is_empty(),
                &asked.sampling.format,
                app.served.as_ref().map(|s| s.name()).as_deref(),
            )?;
            let asked = ForAssistant {
                messages: asked.messages,
                sampling: asked.sampling,
                user: asked.user,
                documents: asked.documents,
            };
            assistant::start(app, headers, asked).await
        }
        Target::Embedder(_) => Err(ApiError::field(
            "model",
            format!(
                "`{}` makes embeddings, not replies: ask /v1/embeddings",
                asked.model
            ),
        )),
        Target::Served(served) => {
            if let Some((i, doc)) = asked.documents.first() {
                return Err(ApiError::unsupported(
                    &format!("messages[{i}].content"),
                    &format!(
                        "the served model reads no files ({}): ask for model `{}`, the assistant, which reads documents and keeps them for your later questions, or send the text",
                        doc.name,
                        assistant::MODEL
                    ),
                ));
            }
            let asked = Direct {
                messages: asked.messages,
                sampling: asked.sampling,
                tools: asked.tools,
                tool_choice: asked.tool_choice,
                one_call: asked.one_call,
                cache_key: asked.cache_key,
            };
            Ok(direct::start(
                served,
                headers,
                asked,
                app.shared.reply_timeout,
                app.metrics.clone(),
            ))
        }
    }
}

pub(super) async fn completions(
    State(app): State<App>,
    Extension(connection): Extension<ConnectionHandle>,
    method: Method,
    headers: HeaderMap,
    raw: Body,
) -> Response {
    let asked = match body(&app, &connection, &method, &headers, raw)
        .await
        .and_then(Asked::read)
    {
        Ok(a) => a,
        Err(e) => return e.into_response(),
    };
    let (stream, include_usage) = (asked.stream, asked.include_usage);
    let completion = Completion::new(&asked.model);
    let turn = match start(&app, &headers, asked).await {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    if stream {
        completions::stream(completion, turn, include_usage)
    } else {
        completions::respond(completion, turn).await
    }
}
