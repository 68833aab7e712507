//! Errors in OpenAI's shape, on every `/v1` route (404s included):
//! `{"error": {"message", "type", "param", "code"}}`, which the `openai`
//! libraries raise as their own exceptions.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::super::guard::Refusal;
use hearth_core::chat::ProviderError;

/// One refused or failed request.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// The request field at fault.
    pub param: Option<String>,
    pub code: Option<&'static str>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        let code = match status {
            StatusCode::UNAUTHORIZED => Some("invalid_api_key"),
            StatusCode::FORBIDDEN => Some("forbidden"),
            StatusCode::NOT_FOUND => Some("not_found"),
            _ => None,
        };
        Self {
            status,
            message: message.into(),
            param: None,
            code,
        }
    }

    /// A 400 about request field `param`.
    pub fn field(param: &str, message: impl Into<String>) -> Self {
        Self {
            param: Some(param.to_string()),
            ..Self::new(StatusCode::BAD_REQUEST, message)
        }
    }

    /// A field hearth does not honour: refused, never ignored.
    pub fn unsupported(param: &str, why: &str) -> Self {
        Self {
            code: Some("unsupported_parameter"),
            ..Self::field(param, format!("`{param}` is not supported here: {why}"))
        }
    }

    pub fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// The OpenAI error type for this status.
    fn kind(&self) -> &'static str {
        // OpenAI's own: every refusal is an invalid request (the code
        // says which), a busy server is rate limiting, a failure is its own.
        match self.status {
            s if s.is_server_error() => "server_error",
            StatusCode::TOO_MANY_REQUESTS => "rate_limit_error",
            _ => "invalid_request_error",
        }
    }

    /// The body, also sent as an SSE event when a stream fails midway.
    pub fn body(&self) -> serde_json::Value {
        json!({
            "error": {
                "message": self.message,
                "type": self.kind(),
                "param": self.param,
                "code": self.code,
            }
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(self.body())).into_response()
    }
}

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        Self::new(r.status, r.message)
    }
}

impl From<ProviderError> for ApiError {
    fn from(e: ProviderError) -> Self {
        match e {
            ProviderError::ContextOverflow { .. } => {
                Self::field("messages", e.to_string()).with_code("context_length_exceeded")
            }
            ProviderError::InvalidRequest(_) => Self::new(StatusCode::BAD_REQUEST, e.to_string()),
            ProviderError::Busy { .. } => Self::new(StatusCode::TOO_MANY_REQUESTS, e.to_string()),
            ProviderError::Failed(_) => Self::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        }
    }
}
