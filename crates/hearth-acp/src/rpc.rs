//! JSON-RPC 2.0 over newline-delimited JSON, as ACP's stdio transport
//! carries it: one message per line, each side both asks and answers.
//!
//! [`Peer`] writes (one line at a time, whole) and keeps the requests this
//! side sent until their answers come; [`Incoming`] is what a read line
//! was.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;

/// JSON-RPC's error codes.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// A line read from the other side.
#[derive(Debug)]
pub enum Incoming {
    /// A request (it has an id) or a notification (`id` is `None`).
    Call {
        id: Option<Value>,
        method: String,
        params: Value,
    },
    /// The answer to a request of ours.
    Answer {
        id: Value,
        result: Result<Value, Value>,
    },
    /// Not JSON-RPC: the error to answer with (`id` when one was readable).
    Bad {
        id: Value,
        code: i64,
        message: String,
    },
}

impl Incoming {
    pub fn parse(line: &str) -> Self {
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                return Incoming::Bad {
                    id: Value::Null,
                    code: PARSE_ERROR,
                    message: format!("not JSON: {e}"),
                };
            }
        };
        let id = value.get("id").cloned();
        let bad = |message: &str| Incoming::Bad {
            id: id.clone().unwrap_or(Value::Null),
            code: INVALID_REQUEST,
            message: message.to_string(),
        };
        if value.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return bad("`jsonrpc` must be \"2.0\"");
        }
        match value.get("method") {
            Some(Value::String(method)) => Incoming::Call {
                id,
                method: method.clone(),
                params: value.get("params").cloned().unwrap_or(Value::Null),
            },
            Some(_) => bad("`method` must be a string"),
            None => match (id.clone(), value.get("result"), value.get("error")) {
                (Some(id), Some(result), None) => Incoming::Answer {
                    id,
                    result: Ok(result.clone()),
                },
                (Some(id), None, Some(error)) => Incoming::Answer {
                    id,
                    result: Err(error.clone()),
                },
                _ => bad("neither a request nor an answer"),
            },
        }
    }
}

/// This side of the connection: what it writes, and its open requests.
pub struct Peer {
    out: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    next: AtomicU64,
    waiting: Mutex<HashMap<u64, oneshot::Sender<Result<Value, Value>>>>,
}

impl Peer {
    pub fn new(out: Box<dyn AsyncWrite + Send + Unpin>) -> Self {
        Self {
            out: tokio::sync::Mutex::new(out),
            next: AtomicU64::new(1),
            waiting: Mutex::default(),
        }
    }

    fn waiting(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Result<Value, Value>>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes one message as one line; false when the other side is gone.
    async fn write(&self, message: Value) -> bool {
        let mut line = message.to_string();
        line.push('\n');
        let mut out = self.out.lock().await;
        out.write_all(line.as_bytes()).await.is_ok() && out.flush().await.is_ok()
    }

    pub async fn notify(&self, method: &str, params: Value) -> bool {
        self.write(json!({ "jsonrpc": "2.0", "method": method, "params": params }))
            .await
    }

    pub async fn answer(&self, id: Value, result: Value) -> bool {
        self.write(json!({ "jsonrpc": "2.0", "id": id, "result": result }))
            .await
    }

    pub async fn fail(&self, id: Value, code: i64, message: &str) -> bool {
        self.write(json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": { "code": code, "message": message },
        }))
        .await
    }

    /// Sends a request; its answer (result or error object), or `None` when
    /// the other side went away first.
    pub async fn request(&self, method: &str, params: Value) -> Option<Result<Value, Value>> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = oneshot::channel();
        self.waiting().insert(id, tx);
        let sent = self
            .write(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        if !sent {
            self.waiting().remove(&id);
            return None;
        }
        rx.await.ok()
    }

    /// Hands an answer to the request it answers; false when none waits.
    pub fn answered(&self, id: &Value, result: Result<Value, Value>) -> bool {
        let waiter = id.as_u64().and_then(|id| self.waiting().remove(&id));
        waiter.is_some_and(|w| w.send(result).is_ok())
    }

    /// The other side is gone: every open request ends unanswered.
    pub fn close(&self) {
        self.waiting().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_as_json_rpc_says() {
        assert!(matches!(
            Incoming::parse(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#),
            Incoming::Call { id: Some(_), .. }
        ));
        assert!(matches!(
            Incoming::parse(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#),
            Incoming::Call { id: None, .. }
        ));
        assert!(matches!(
            Incoming::parse(r#"{"jsonrpc":"2.0","id":7,"result":{"outcome":{}}}"#),
            Incoming::Answer { result: Ok(_), .. }
        ));
        assert!(matches!(
            Incoming::parse("{not json"),
            Incoming::Bad {
                code: PARSE_ERROR,
                ..
            }
        ));
        assert!(matches!(
            Incoming::parse(r#"{"id":1,"method":"initialize"}"#),
            Incoming::Bad {
                code: INVALID_REQUEST,
                ..
            }
        ));
    }
}
