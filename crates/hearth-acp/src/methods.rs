//! The requests and notifications an editor sends: `initialize`,
//! `session/new`, `session/prompt` (put on the bus, answered when the
//! reply is sent) and `session/cancel` (`/stop` for the session's turn).

use serde_json::{Value, json};

use super::rpc::{INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND};
use super::{AcpChannel, NAME, PROTOCOL_VERSION, SENDER, STOP_ID, Turn};
use hearth_channel::{Accepted, ChannelMessage, Intake};

impl AcpChannel {
    pub(super) async fn call(
        &self,
        intake: &Intake,
        id: Option<Value>,
        method: &str,
        params: Value,
    ) {
        let answer = match method {
            "initialize" => Ok(json!({
                "protocolVersion": PROTOCOL_VERSION,
                "agentCapabilities": {
                    "loadSession": false,
                    "promptCapabilities": { "image": true, "audio": false, "embeddedContext": false },
                },
                "authMethods": [],
                "agentInfo": { "name": "hearth", "version": env!("CARGO_PKG_VERSION") },
            })),
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(&params),
            "session/prompt" => match &id {
                Some(id) => match self.prompt(intake, id.clone(), &params).await {
                    // Answered when the reply is sent.
                    Ok(()) => return,
                    Err(e) => Err(e),
                },
                None => return,
            },
            "session/cancel" => {
                self.cancel(intake, &params).await;
                return;
            }
            other => Err((METHOD_NOT_FOUND, format!("hearth does not offer `{other}`"))),
        };
        // Notifications are never answered.
        let Some(id) = id else { return };
        match answer {
            Ok(result) => self.peer.answer(id, result).await,
            Err((code, message)) => self.peer.fail(id, code, &message).await,
        };
    }

    fn new_session(&self, params: &Value) -> Result<Value, (i64, String)> {
        if !params.get("cwd").is_some_and(Value::is_string) {
            return Err((INVALID_PARAMS, "`cwd` must be a path".into()));
        }
        let id = format!("sess_{}", uuid::Uuid::new_v4().simple());
        self.state().sessions.insert(id.clone());
        Ok(json!({ "sessionId": id }))
    }

    /// Puts a prompt on the bus; its answer comes with the reply.
    async fn prompt(
        &self,
        intake: &Intake,
        request: Value,
        params: &Value,
    ) -> Result<(), (i64, String)> {
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let text = prompt_text(params.get("prompt"));
        let images = prompt_images(params.get("prompt")).map_err(|why| (INVALID_PARAMS, why))?;
        let id = format!("acp-{}", uuid::Uuid::new_v4().simple());
        {
            let mut state = self.state();
            if !state.sessions.contains(&session) {
                return Err((
                    INVALID_PARAMS,
                    format!("no session `{session}`; start one with session/new"),
                ));
            }
            if state.turns.values().any(|t| t.session == session) {
                return Err((
                    INVALID_REQUEST,
                    "a prompt is still being answered in this session; send session/cancel first"
                        .into(),
                ));
            }
            if text.is_empty() && images.is_empty() {
                return Err((INVALID_PARAMS, "`prompt` holds no text or image".into()));
            }
            state.turns.insert(
                id.clone(),
                Turn {
                    request,
                    session: session.clone(),
                    streamed: false,
                    running: Vec::new(),
                    approved: Vec::new(),
                    cancelled: false,
                },
            );
        }
        let message = ChannelMessage {
            images,
            ..message(&id, &session, &text)
        };
        match intake.accept(message).await {
            Ok(Accepted::Queued) => Ok(()),
            Ok(Accepted::Known { .. }) | Err(_) => {
                self.state().turns.remove(&id);
                self.changed.notify_waiters();
                Err((INVALID_REQUEST, "hearth is shutting down".into()))
            }
        }
    }

    /// `session/cancel`: `/stop` for the session's turn.
    async fn cancel(&self, intake: &Intake, params: &Value) {
        let session = params
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or("");
        let running = self
            .state()
            .turns
            .values_mut()
            .find(|t| t.session == session && !t.cancelled)
            .map(|t| t.cancelled = true)
            .is_some();
        if running {
            let id = format!("{STOP_ID}{}", uuid::Uuid::new_v4().simple());
            let _ = intake.accept(message(&id, session, "/stop")).await;
        }
    }
}

/// The text of a prompt's content blocks: text as is, links and embedded
/// resources by their address and text.
fn prompt_text(prompt: Option<&Value>) -> String {
    let blocks = prompt
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let parts: Vec<String> = blocks
        .iter()
        .filter_map(|b| match b.get("type").and_then(Value::as_str) {
            Some("text") => b.get("text").and_then(Value::as_str).map(str::to_string),
            Some("resource_link") => b
                .get("uri")
                .and_then(Value::as_str)
                .map(|u| format!("<{u}>")),
            Some("resource") => {
                let r = b.get("resource")?;
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                r.get("text")
                    .and_then(Value::as_str)
                    .map(|t| format!("<{uri}>\n{t}"))
            }
            _ => None,
        })
        .collect();
    parts.join("\n\n").trim().to_string()
}

/// The most bytes one image block may hold (the engine's own limits apply after).
const MAX_IMAGE_BYTES: usize = 20 << 20;

/// The pictures of a prompt's `image` blocks (base64 `data`), in order.
fn prompt_images(prompt: Option<&Value>) -> Result<Vec<hearth_core::chat::Image>, String> {
    use base64::Engine as _;
    let blocks = prompt
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("image"))
        .map(|b| {
            let data = b.get("data").and_then(Value::as_str).unwrap_or("");
            if data.len() / 4 * 3 > MAX_IMAGE_BYTES {
                return Err(format!(
                    "an image block is over the {} MB hearth takes",
                    MAX_IMAGE_BYTES >> 20
                ));
            }
            base64::engine::general_purpose::STANDARD
                .decode(data)
                .map(hearth_core::chat::Image::new)
                .map_err(|e| format!("an image block's `data` is not base64: {e}"))
        })
        .filter(|i| i.as_ref().map_or(true, |i| !i.is_empty()))
        .collect()
}

fn message(id: &str, session: &str, text: &str) -> ChannelMessage {
    ChannelMessage::now(NAME, id.to_string(), SENDER, session, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_read_text_links_and_resources() {
        let prompt = json!([
            { "type": "text", "text": "look at" },
            { "type": "resource_link", "uri": "file:///a.rs", "name": "a.rs" },
            { "type": "resource", "resource": { "uri": "file:///b.rs", "text": "fn b() {}" } },
            { "type": "image", "data": "", "mimeType": "image/png" },
        ]);
        assert_eq!(
            prompt_text(Some(&prompt)),
            "look at\n\n<file:///a.rs>\n\n<file:///b.rs>\nfn b() {}"
        );
        assert_eq!(prompt_text(Some(&json!("not blocks"))), "");
    }

    #[test]
    fn image_blocks_become_pictures_and_bad_ones_are_refused() {
        let prompt = json!([
            { "type": "text", "text": "what is this?" },
            { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" },
            { "type": "image", "data": "", "mimeType": "image/png" },
        ]);
        let images = prompt_images(Some(&prompt)).unwrap();
        assert_eq!(images.len(), 1, "an empty block is no picture");
        assert_eq!(images[0].media_type(), Some("image/png"));
        let bad = json!([{ "type": "image", "data": "@@not base64", "mimeType": "image/png" }]);
        assert!(
            prompt_images(Some(&bad))
                .unwrap_err()
                .contains("not base64")
        );
        let big = json!([{ "type": "image", "data": "A".repeat(30 << 20) }]);
        assert!(prompt_images(Some(&big)).unwrap_err().contains("20 MB"));
        assert!(
            prompt_images(Some(&json!("not blocks")))
                .unwrap()
                .is_empty()
        );
    }
}
