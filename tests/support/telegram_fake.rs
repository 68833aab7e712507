//! A fake Telegram Bot API server (axum on 127.0.0.1:0) for tests.
//!
//! It speaks the real protocol (`/bot<token>/<method>`, JSON or multipart in,
//! `{"ok":…}` out) for what hearth uses: getMe, getWebhookInfo, deleteWebhook,
//! getUpdates (offset, long-poll timeout, `allowed_updates`), sendMessage
//! (with inline keyboards), editMessageText, editMessageReplyMarkup,
//! answerCallbackQuery, deleteMessage, sendChatAction, setMessageReaction,
//! sendPhoto, sendDocument, sendVoice, getFile and file downloads. It checks
//! what Telegram checks (text length in UTF-16 units, HTML well-formedness,
//! allowed reaction emoji, unchanged edits, callback data of 1-64 bytes,
//! callback queries answered once) and can misbehave on demand: a 429 with
//! `retry_after` for the next K calls, a 502 "down" mode, refused entities.
//!
//! Tests inject user messages with [`FakeTelegram::inject`], press inline
//! buttons with [`FakeTelegram::press`], and read what the bot did, in
//! order, with [`FakeTelegram::calls`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::{any, get};
use serde_json::{Value, json};
use tokio::sync::Notify;

mod server;

#[allow(unused_imports)]
pub use server::{shown_text, visible};

pub const BOT_ID: i64 = 999_000;
pub const BOT_USERNAME: &str = "hearth_test_bot";
pub const TOKEN: &str = "123456:TEST-token";

/// One request the bot made.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    /// JSON fields; for multipart, text fields as strings and each file as
    /// `{"file_name": …, "size": …}`.
    pub params: Value,
    /// The HTTP status the fake answered.
    pub status: u16,
    pub at: Instant,
}

impl Call {
    pub fn str(&self, key: &str) -> Option<String> {
        match self.params.get(key)? {
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }

    pub fn i64(&self, key: &str) -> Option<i64> {
        match self.params.get(key)? {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.parse().ok(),
            _ => None,
        }
    }

    pub fn ok(&self) -> bool {
        self.status == 200
    }
}

/// A user message to inject.
#[derive(Debug, Clone)]
pub struct Incoming {
    pub user_id: i64,
    pub username: Option<String>,
    /// Defaults to the user's private chat (same id as the user).
    pub chat_id: Option<i64>,
    pub text: Option<String>,
    pub thread_id: Option<i64>,
    /// A photo's bytes (served through getFile).
    pub photo: Option<Vec<u8>>,
    /// A document's name and bytes.
    pub document: Option<(String, Vec<u8>)>,
    /// A voice note's bytes and the seconds Telegram says it lasts.
    pub voice: Option<(Vec<u8>, u32)>,
    pub caption: Option<String>,
    /// The message replies to this message of the bot.
    pub reply_to_bot: Option<i64>,
}

impl Incoming {
    pub fn text(user_id: i64, text: &str) -> Self {
        Self {
            user_id,
            username: None,
            chat_id: None,
            text: Some(text.to_string()),
            thread_id: None,
            photo: None,
            document: None,
            voice: None,
            caption: None,
            reply_to_bot: None,
        }
    }
}

#[derive(Debug, Clone)]
struct Stored {
    text: String,
    parse_mode: Option<String>,
    /// The inline keyboard, as sent (`{"inline_keyboard": [[button…]…]}`).
    markup: Option<Value>,
}

#[derive(Debug, Clone)]
pub struct Upload {
    pub method: String,
    pub chat_id: i64,
    pub file_name: String,
    pub bytes: Vec<u8>,
}

#[derive(Default)]
struct Inner {
    /// Updates not yet confirmed, in id order.
    updates: Vec<Value>,
    next_update_id: i64,
    next_message_id: i64,
    calls: Vec<Call>,
    messages: HashMap<(i64, i64), Stored>,
    /// file_id → (file_path, bytes)
    files: HashMap<String, (String, Vec<u8>)>,
    uploads: Vec<Upload>,
    /// (retry_after seconds, calls left to refuse)
    rate_limit: Option<(u64, u32)>,
    down: bool,
    reject_entities: bool,
    /// The highest offset a getUpdates asked for.
    confirmed: i64,
    /// The update kinds the last getUpdates asked for (`None`: the default).
    allowed_updates: Option<Vec<String>>,
    /// Callback queries delivered and not yet answered.
    open_queries: Vec<String>,
    next_query: i64,
    /// Chats whose user blocked the bot: sends there answer 403.
    blocked: Vec<i64>,
    /// sendMessage calls held without an answer.
    holds: Vec<Hold>,
}

/// A sendMessage the fake holds without answering (the daemon is killed
/// meanwhile): matched by chat and a piece of its text.
#[derive(Debug, Clone)]
pub struct Hold {
    pub chat_id: i64,
    pub containing: String,
    /// Applied (the chat shows it) before the answer is held, or held
    /// before anything happens.
    pub applied: bool,
}

struct Shared {
    inner: Mutex<Inner>,
    news: Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The running fake; it stops when dropped.
pub struct FakeTelegram {
    /// The base URL to give the channel as `api_url`.
    pub url: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeTelegram {
    pub async fn start() -> Self {
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                next_update_id: 1000,
                next_message_id: 1,
                ..Inner::default()
            }),
            news: Notify::new(),
        });
        let app = Router::new()
            .route("/file/{bot}/{*path}", get(server::download))
            .route("/{bot}/{method}", any(server::method))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url: format!("http://{addr}"),
            shared,
            server,
        }
    }

    /// Queues a user message as an update; returns (update id, message id).
    pub fn inject(&self, m: Incoming) -> (i64, i64) {
        let mut s = self.shared.lock();
        let update_id = s.next_update_id;
        s.next_update_id += 1;
        let message_id = s.next_message_id;
        s.next_message_id += 1;
        let chat_id = m.chat_id.unwrap_or(m.user_id);
        let mut from = json!({"id": m.user_id, "is_bot": false, "first_name": "User"});
        if let Some(u) = &m.username {
            from["username"] = json!(u);
        }
        let chat = if chat_id < 0 {
            json!({"id": chat_id, "type": "supergroup", "title": "Group", "is_forum": m.thread_id.is_some()})
        } else {
            json!({"id": chat_id, "type": "private", "first_name": "User"})
        };
        let mut msg = json!({
            "message_id": message_id,
            "date": 1_700_000_000,
            "chat": chat,
            "from": from,
        });
        if let Some(t) = &m.text {
            msg["text"] = json!(t);
        }
        if let Some(t) = m.thread_id {
            msg["message_thread_id"] = json!(t);
            msg["is_topic_message"] = json!(true);
        }
        if let Some(c) = &m.caption {
            msg["caption"] = json!(c);
        }
        if let Some(bytes) = m.photo {
            let small = add_file(
                &mut s,
                "photos/small.jpg",
                bytes[..bytes.len().min(4)].to_vec(),
            );
            let big = add_file(&mut s, &format!("photos/file_{message_id}.jpg"), bytes);
            msg["photo"] = json!([
                {"file_id": small, "file_unique_id": format!("u{small}"), "width": 90, "height": 90},
                {"file_id": big, "file_unique_id": format!("u{big}"), "width": 1280, "height": 960},
            ]);
        }
        if let Some((name, bytes)) = m.document {
            let id = add_file(&mut s, &format!("documents/file_{message_id}"), bytes);
            // As Telegram does, from the name the sender's app gave.
            let mime = match name.rsplit('.').next().unwrap_or("") {
                "png" => "image/png",
                "jpg" | "jpeg" => "image/jpeg",
                "ogg" | "oga" => "audio/ogg",
                "wav" => "audio/x-wav",
                "mp3" => "audio/mpeg",
                "txt" => "text/plain",
                _ => "application/octet-stream",
            };
            msg["document"] = json!({"file_id": id, "file_unique_id": format!("u{id}"),
                "file_name": name, "mime_type": mime});
        }
        if let Some((bytes, duration)) = m.voice {
            let id = add_file(&mut s, &format!("voice/file_{message_id}.oga"), bytes);
            msg["voice"] = json!({"file_id": id, "file_unique_id": format!("u{id}"),
                "duration": duration, "mime_type": "audio/ogg"});
        }
        if let Some(bot_msg) = m.reply_to_bot {
            msg["reply_to_message"] = json!({
                "message_id": bot_msg, "date": 1_700_000_000, "chat": msg["chat"].clone(),
                "from": {"id": BOT_ID, "is_bot": true, "first_name": "hearth", "username": BOT_USERNAME},
                "text": "earlier reply",
            });
        }
        s.updates
            .push(json!({"update_id": update_id, "message": msg}));
        drop(s);
        self.shared.news.notify_waiters();
        (update_id, message_id)
    }

    /// Queues any update body (e.g. `{"edited_message": …}`); returns its id.
    pub fn inject_raw(&self, mut body: Value) -> i64 {
        let mut s = self.shared.lock();
        let id = s.next_update_id;
        s.next_update_id += 1;
        body["update_id"] = json!(id);
        s.updates.push(body);
        drop(s);
        self.shared.news.notify_waiters();
        id
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.shared.lock().calls.clone()
    }

    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.method == method)
            .collect()
    }

    /// The successful calls of `method`.
    pub fn ok_calls_of(&self, method: &str) -> Vec<Call> {
        self.calls_of(method).into_iter().filter(Call::ok).collect()
    }

    /// Files the bot uploaded.
    pub fn uploads(&self) -> Vec<Upload> {
        self.shared.lock().uploads.clone()
    }

    /// The current text of a message the bot sent, as a reader sees it.
    pub fn message_text(&self, chat_id: i64, message_id: i64) -> Option<String> {
        self.shared
            .lock()
            .messages
            .get(&(chat_id, message_id))
            .map(|m| shown_text(&m.text, m.parse_mode.as_deref()))
    }

    /// The labels of the inline buttons a bot message shows now.
    pub fn keyboard(&self, chat_id: i64, message_id: i64) -> Vec<String> {
        let s = self.shared.lock();
        let Some(markup) = s
            .messages
            .get(&(chat_id, message_id))
            .and_then(|m| m.markup.clone())
        else {
            return Vec::new();
        };
        server::buttons(&markup)
            .into_iter()
            .map(|(label, _)| label)
            .collect()
    }

    /// The bot's messages in `chat` that show buttons now, oldest first.
    pub fn with_buttons(&self, chat_id: i64) -> Vec<i64> {
        let s = self.shared.lock();
        let mut ids: Vec<i64> = s
            .messages
            .iter()
            .filter(|((chat, _), m)| {
                *chat == chat_id
                    && m.markup
                        .as_ref()
                        .is_some_and(|k| !server::buttons(k).is_empty())
            })
            .map(|((_, id), _)| *id)
            .collect();
        ids.sort();
        ids
    }

    /// A message with buttons the bot sent before this test's bot started
    /// (a question left open by an earlier run); returns its id.
    pub fn earlier_bot_message(&self, chat_id: i64, text: &str, markup: Value) -> i64 {
        let mut s = self.shared.lock();
        let id = s.next_message_id;
        s.next_message_id += 1;
        s.messages.insert(
            (chat_id, id),
            Stored {
                text: text.to_string(),
                parse_mode: None,
                markup: Some(markup),
            },
        );
        id
    }

    /// `user_id` presses the button labelled `label` under a bot message, as
    /// Telegram reports it: a `callback_query` update carrying the message
    /// and the button's data. Fails when no such button is shown.
    pub fn press(
        &self,
        user_id: i64,
        chat_id: i64,
        message_id: i64,
        label: &str,
    ) -> Result<i64, String> {
        let mut s = self.shared.lock();
        let stored = s
            .messages
            .get(&(chat_id, message_id))
            .cloned()
            .ok_or_else(|| format!("no message {message_id} in chat {chat_id}"))?;
        let markup = stored.markup.clone().unwrap_or(Value::Null);
        let data = server::buttons(&markup)
            .into_iter()
            .find(|(l, _)| l == label)
            .map(|(_, data)| data)
            .ok_or_else(|| format!("message {message_id} shows no button `{label}`"))?;
        s.next_query += 1;
        let query_id = format!("{}", 4_400_000_000_000_000_000i64 + s.next_query);
        let mut message = server::message_json(
            chat_id,
            message_id,
            None,
            json!({"text": shown_text(&stored.text, stored.parse_mode.as_deref())}),
        );
        message["reply_markup"] = markup;
        let update_id = s.next_update_id;
        s.next_update_id += 1;
        s.updates.push(json!({
            "update_id": update_id,
            "callback_query": {
                "id": query_id,
                "from": {"id": user_id, "is_bot": false, "first_name": "User"},
                "message": message,
                "chat_instance": format!("-{}", chat_id.unsigned_abs()),
                "data": data,
            }
        }));
        drop(s);
        self.shared.news.notify_waiters();
        Ok(update_id)
    }

    /// The user deletes a message of the bot's (edits of it fail from now on).
    pub fn user_deletes(&self, chat_id: i64, message_id: i64) {
        self.shared.lock().messages.remove(&(chat_id, message_id));
    }

    /// The next `count` Bot API calls (getUpdates and getMe excepted) answer
    /// 429 with `retry_after` seconds.
    pub fn rate_limit(&self, retry_after: u64, count: u32) {
        self.shared.lock().rate_limit = Some((retry_after, count));
    }

    /// Down: every call answers 502 with an HTML page, as a broken proxy does.
    pub fn set_down(&self, down: bool) {
        self.shared.lock().down = down;
        self.shared.news.notify_waiters();
    }

    /// Refuse every message sent with a parse_mode ("can't parse entities").
    pub fn reject_entities(&self, reject: bool) {
        self.shared.lock().reject_entities = reject;
    }

    /// The user of `chat_id` blocks the bot: sends there answer 403
    /// "Forbidden: bot was blocked by the user", as Telegram does.
    pub fn block_chat(&self, chat_id: i64) {
        self.shared.lock().blocked.push(chat_id);
    }

    /// Holds the next sendMessage matching `hold` forever (once).
    pub fn hold(&self, hold: Hold) {
        self.shared.lock().holds.push(hold);
    }

    /// Whether a held sendMessage has arrived (and is being held).
    pub fn holding(&self) -> bool {
        self.calls_of("sendMessage").iter().any(|c| c.status == 0)
    }

    /// What the chat shows of the bot's messages now, oldest first
    /// (deleted ones gone, edited ones as edited).
    pub fn chat(&self, chat_id: i64) -> Vec<String> {
        let s = self.shared.lock();
        let mut ids: Vec<i64> = s
            .messages
            .keys()
            .filter(|(c, _)| *c == chat_id)
            .map(|(_, id)| *id)
            .collect();
        ids.sort();
        ids.iter()
            .map(|id| {
                let m = &s.messages[&(chat_id, *id)];
                shown_text(&m.text, m.parse_mode.as_deref())
            })
            .collect()
    }

    /// The offset of the latest getUpdates (updates below it are confirmed).
    pub fn confirmed_offset(&self) -> i64 {
        self.shared.lock().confirmed
    }

    /// Waits until at least `count` successful calls of `method` were made.
    pub async fn wait_for(&self, method: &str, count: usize, within: Duration) -> Vec<Call> {
        let deadline = Instant::now() + within;
        loop {
            let calls = self.ok_calls_of(method);
            if calls.len() >= count {
                return calls;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {count} {method} calls; got {}: {:?}",
                calls.len(),
                self.calls().iter().map(|c| &c.method).collect::<Vec<_>>()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn add_file(s: &mut Inner, path: &str, bytes: Vec<u8>) -> String {
    let id = format!("file{}", s.files.len() + 1);
    s.files.insert(id.clone(), (path.to_string(), bytes));
    id
}
