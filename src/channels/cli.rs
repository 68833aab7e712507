//! The terminal as a channel: stdin lines in, replies streamed to stdout.
//!
//! `hearth chat` runs this channel through the same dispatcher and
//! pipeline as the daemon, so the CLI has history, commands and tools.
//! Messages queue rather than interrupt each other (piped input is read
//! faster than it is answered); Ctrl-C sends `/stop`. `/quit`, `/help` and
//! unknown `/words` are answered here, without the pipeline.
//!
//! A tool call that needs approval asks at the prompt: `y` allows it once,
//! `a` always in this session, anything else denies it. The next line
//! typed is the answer. Without a terminal (piped input) nobody can
//! answer, so such calls do not run.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::approval::{Answer, ApprovalRequest, Questions};
use super::{Channel, ChannelError, ChannelMessage, ChannelPolicy, Drafts, Intake, SendMessage};
use futures::future::BoxFuture;

const CLI_HELP: &str = "/image PATH [question] — show the model a picture (a vision model: `[model] mmproj`)\n/quit — leave (also Ctrl-D), stopping any reply being written\nCtrl-C stops a reply that is being written.";

/// The largest picture `/image` reads (the engine's own limits apply after).
const MAX_PICTURE_BYTES: u64 = 20 << 20;

/// `/image PATH [question]`: the picture and the question.
fn picture(line: &str) -> Result<(crate::chat::Image, String), String> {
    let rest = line.trim_start_matches("/image").trim();
    let (path, question) = rest.split_once(' ').unwrap_or((rest, ""));
    if path.is_empty() {
        return Err("/image needs a file: /image PATH [question]".into());
    }
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot read the image {path}: {e}"))?
        .len();
    if size > MAX_PICTURE_BYTES {
        return Err(format!(
            "the image {path} is {} MB, over the {} MB /image reads",
            size.div_ceil(1 << 20),
            MAX_PICTURE_BYTES >> 20
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read the image {path}: {e}"))?;
    Ok((crate::chat::Image::new(bytes), question.trim().to_string()))
}
const SENDER: &str = "user";
/// How the ids of `/stop` messages the chat sends itself begin.
pub const STOP_ID: &str = "cli-stop-";

pub struct CliChannel {
    /// The chat: the session name.
    session: String,
    interactive: bool,
    /// What the current draft has printed.
    printed: Mutex<String>,
    /// A draft is on screen, not yet finished or stopped.
    drafting: AtomicBool,
    forwarded: AtomicUsize,
    /// Messages whose handling ended (counted by the caller, see `handled`).
    answered: AtomicUsize,
    caught_up: tokio::sync::Notify,
    ended: CancellationToken,
    bus: Mutex<Option<Intake>>,
    questions: Questions,
    /// The question the next line answers.
    open_question: Mutex<Option<String>>,
    /// One question at a time.
    asking: tokio::sync::Mutex<()>,
}

impl CliChannel {
    pub fn new(session: &str, interactive: bool) -> Self {
        Self {
            session: session.to_string(),
            interactive,
            printed: Mutex::default(),
            drafting: AtomicBool::new(false),
            forwarded: AtomicUsize::new(0),
            answered: AtomicUsize::new(0),
            caught_up: tokio::sync::Notify::new(),
            ended: CancellationToken::new(),
            bus: Mutex::default(),
            questions: Questions::default(),
            open_question: Mutex::default(),
            asking: tokio::sync::Mutex::default(),
        }
    }

    /// Messages handed to the pipeline so far.
    pub fn forwarded(&self) -> usize {
        self.forwarded.load(Ordering::SeqCst)
    }

    /// Records that one forwarded message has been handled to its end.
    pub fn handled(&self) {
        self.answered.fetch_add(1, Ordering::SeqCst);
        self.caught_up.notify_waiters();
    }

    /// Waits until every forwarded message was handled, so that what this
    /// channel answers itself (`/help`) prints after the replies before it.
    async fn catch_up(&self) {
        loop {
            let notified = self.caught_up.notified();
            if self.answered.load(Ordering::SeqCst) >= self.forwarded() {
                return;
            }
            notified.await;
        }
    }

    /// Cancelled at end of input or `/quit`.
    pub fn ended(&self) -> &CancellationToken {
        &self.ended
    }

    /// Asks the dispatcher to stop the reply being written.
    pub async fn stop_reply(&self) {
        let bus = self.bus.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(bus) = bus {
            let _ = bus.accept(self.message("/stop".into(), 0)).await;
        }
    }

    fn message(&self, content: String, n: usize) -> ChannelMessage {
        // Unique across restarts: memories are saved under message ids.
        let id = match n {
            0 => format!("{STOP_ID}{}", uuid::Uuid::new_v4().simple()),
            n => format!("cli-{n}-{}", uuid::Uuid::new_v4().simple()),
        };
        ChannelMessage::now("cli", id, SENDER, &self.session, &content)
    }

    /// Hands `line` to the open question, if there is one.
    fn answers_question(&self, line: &str) -> bool {
        let Some(id) = self
            .open_question
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return false;
        };
        let answer = match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Answer::Once,
            "a" | "always" => Answer::Always,
            _ => Answer::Deny,
        };
        self.questions.answer(&id, SENDER, answer);
        true
    }

    fn print(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    fn prompt(&self) {
        if self.interactive {
            self.print("> ");
        }
    }

    /// Prints what `text` adds to the draft; a draft that changed earlier
    /// text (a new model round) starts on a new line.
    fn extend_draft(&self, text: &str) {
        let mut printed = self.printed.lock().unwrap_or_else(|e| e.into_inner());
        match text.strip_prefix(printed.as_str()) {
            Some(rest) => self.print(rest),
            None => self.print(&format!("\n{text}")),
        }
        *printed = text.to_string();
    }
}

impl Channel for CliChannel {
    fn name(&self) -> &str {
        "cli"
    }

    fn send<'a>(&'a self, message: &'a SendMessage) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            // A message during a draft (the answer to Ctrl-C's `/stop`)
            // starts on its own line and closes the draft.
            if self.drafting.swap(false, Ordering::SeqCst) {
                self.print("\n");
            }
            self.print(&format!("{}\n", message.content.trim_end()));
            self.prompt();
            Ok(())
        })
    }

    fn durable(&self) -> bool {
        false
    }

    fn listen(&self, tx: Intake) -> BoxFuture<'_, Result<(), ChannelError>> {
        Box::pin(async move {
            *self.bus.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx.clone());
            self.prompt();
            let mut lines = BufReader::new(tokio::io::stdin()).lines();
            loop {
                let line = match lines.next_line().await {
                    Ok(Some(line)) => line,
                    Ok(None) => break,
                    Err(e) => return Err(ChannelError::Other(format!("cannot read stdin: {e}"))),
                };
                if self.answers_question(&line) {
                    continue;
                }
                let text = line.trim();
                if matches!(text, "/quit" | "/exit") {
                    break;
                }
                let local = text.is_empty()
                    || text == "/help"
                    || (text.starts_with('/') && super::commands::parse(text).is_none());
                if local {
                    self.catch_up().await;
                }
                match text {
                    "" => {
                        self.prompt();
                        continue;
                    }
                    "/help" => {
                        self.print(&format!("{}\n{CLI_HELP}\n", super::commands::HELP));
                        self.prompt();
                        continue;
                    }
                    cmd if cmd == "/image" || cmd.starts_with("/image ") => {
                        match picture(cmd) {
                            Ok((image, question)) => {
                                let n = self.forwarded.fetch_add(1, Ordering::SeqCst) + 1;
                                let message = ChannelMessage {
                                    images: vec![image],
                                    ..self.message(question, n)
                                };
                                if tx.accept(message).await.is_err() {
                                    return Ok(());
                                }
                            }
                            Err(why) => {
                                self.print(&format!("{why}\n"));
                                self.prompt();
                            }
                        }
                        continue;
                    }
                    cmd if cmd.starts_with('/')
                        && !cmd.contains(' ')
                        && super::commands::parse(cmd).is_none() =>
                    {
                        self.print(&format!("unknown command {cmd}; /help lists them\n"));
                        self.prompt();
                        continue;
                    }
                    _ => {}
                }
                let n = self.forwarded.fetch_add(1, Ordering::SeqCst) + 1;
                if tx.accept(self.message(text.to_string(), n)).await.is_err() {
                    return Ok(());
                }
            }
            // At the keyboard, leaving does not wait for the reply being
            // written; piped input is answered whole.
            if self.interactive && self.answered.load(Ordering::SeqCst) < self.forwarded() {
                let _ = tx.accept(self.message("/stop".into(), 0)).await;
            }
            self.ended.cancel();
            // Input is over; the daemon side decides when to stop.
            tx.closed().await;
            Ok(())
        })
    }

    fn policy(&self) -> ChannelPolicy {
        ChannelPolicy {
            interrupt_on_new_message: false,
            show_tool_calls: true,
            stream_replies: true,
            one_credential: false,
        }
    }

    fn drafts(&self) -> Option<&dyn Drafts> {
        Some(self)
    }

    fn ask_approval<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> BoxFuture<'a, Result<Option<Answer>, ChannelError>> {
        Box::pin(async move {
            if !self.interactive {
                return Err(ChannelError::Unsupported(
                    "asking for approval without a terminal",
                ));
            }
            let _one = self.asking.lock().await;
            let ticket = self.questions.ask(request);
            let _open = OpenQuestion::new(&self.open_question, &request.id);
            let fresh_line = if self.drafting.load(Ordering::SeqCst) {
                "\n"
            } else {
                ""
            };
            self.print(&format!(
                "{fresh_line}🔐 {} [y = once, a = always in this session, N = no] ",
                request.question()
            ));
            let answer = ticket.wait().await;
            let verdict = match answer {
                Some(a) => a.verdict().to_string(),
                None => format!("no answer within {} s: not run", request.timeout.as_secs()),
            };
            self.print(&format!("→ {verdict}\n"));
            // The verdict ended the line: the draft's next text is printed whole.
            self.printed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            Ok(answer)
        })
    }
}

impl Drafts for CliChannel {
    fn send_draft<'a>(
        &'a self,
        message: &'a SendMessage,
    ) -> BoxFuture<'a, Result<String, ChannelError>> {
        Box::pin(async move {
            self.printed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clear();
            self.drafting.store(true, Ordering::SeqCst);
            self.extend_draft(&message.content);
            Ok("draft".to_string())
        })
    }

    fn update_draft<'a>(
        &'a self,
        _recipient: &'a str,
        _draft_id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            self.extend_draft(text);
            Ok(())
        })
    }

    fn finalize_draft<'a>(
        &'a self,
        _recipient: &'a str,
        _draft_id: &'a str,
        message: &'a SendMessage,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            self.extend_draft(message.content.trim_end());
            self.drafting.store(false, Ordering::SeqCst);
            self.print("\n");
            self.prompt();
            Ok(())
        })
    }

    fn cancel_draft<'a>(
        &'a self,
        _recipient: &'a str,
        _draft_id: &'a str,
    ) -> BoxFuture<'a, Result<(), ChannelError>> {
        Box::pin(async move {
            if self.drafting.swap(false, Ordering::SeqCst) {
                self.print("\n(stopped)\n");
                self.prompt();
            }
            Ok(())
        })
    }
}

/// Marks a question as the one the next line answers, until dropped (the
/// answer came, the time ran out, or the reply was stopped).
struct OpenQuestion<'a> {
    slot: &'a Mutex<Option<String>>,
}

impl<'a> OpenQuestion<'a> {
    fn new(slot: &'a Mutex<Option<String>>, id: &str) -> Self {
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(id.to_string());
        Self { slot }
    }
}

impl Drop for OpenQuestion<'_> {
    fn drop(&mut self) {
        self.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}
