//! The Telegram channel against a fake Bot API server on 127.0.0.1: real
//! teloxide requests, real long polling, real multipart uploads.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth::channels::telegram::{Allowlist, TelegramSettings, utf16_len};
use hearth::channels::{
    Channel, ChannelError, ChannelMessage, Drafts, Presence, SendMessage, TelegramChannel,
};
use hearth::config::{Secret, StreamMode};
use hearth::workspace::Workspaces;
use support::telegram_fake::{BOT_USERNAME, FakeTelegram, Incoming, TOKEN, visible};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

fn settings(fake: &FakeTelegram, dir: &Path, allowed: &[&str]) -> TelegramSettings {
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    TelegramSettings {
        token: Secret::new(TOKEN),
        api_url: fake.url.clone(),
        allowlist: Allowlist::new(&allowed.iter().map(|a| a.to_string()).collect::<Vec<_>>()),
        mention_only: true,
        stream_mode: StreamMode::Partial,
        draft_interval: Duration::from_millis(300),
        interrupt_on_new_message: true,
        ack_reactions: true,
        show_tool_calls: false,
        workspaces: Workspaces::new(&workspace, false),
        state_dir: dir.join("state"),
        poll_timeout: Duration::from_secs(5),
        max_rate_limit_retries: 5,
    }
}

fn channel(fake: &FakeTelegram, dir: &Path, allowed: &[&str]) -> Arc<TelegramChannel> {
    Arc::new(TelegramChannel::new(settings(fake, dir, allowed)).unwrap())
}

type Listener = JoinHandle<Result<(), ChannelError>>;

fn listen(ch: &Arc<TelegramChannel>, bus: usize) -> (mpsc::Receiver<ChannelMessage>, Listener) {
    let (tx, rx) = hearth::channels::Intake::queue(bus);
    let ch = ch.clone();
    (rx, tokio::spawn(async move { ch.listen(tx).await }))
}

async fn recv(rx: &mut mpsc::Receiver<ChannelMessage>) -> ChannelMessage {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a message on the bus within 10 s")
        .expect("the bus is open")
}

/// Waits until the channel has confirmed update `id` (polled past it).
async fn confirmed(fake: &FakeTelegram, id: i64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while fake.confirmed_offset() <= id {
        assert!(Instant::now() < deadline, "update {id} never confirmed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn an_allowed_user_reaches_the_bus_and_a_stranger_gets_one_refusal() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ch = channel(&fake, dir.path(), &["42", "@Alice"]);
    fake.inject(Incoming::text(42, "hello"));
    let mut by_name = Incoming::text(7, "hi from alice");
    by_name.username = Some("alice".into());
    fake.inject(by_name);
    fake.inject(Incoming::text(13, "let me in"));
    let (last, _) = fake.inject(Incoming::text(13, "please"));
    let (mut rx, _listener) = listen(&ch, 10);

    let first = recv(&mut rx).await;
    assert_eq!(
        (first.sender.as_str(), first.content.as_str()),
        ("42", "hello")
    );
    assert_eq!(first.reply_target, "42");
    assert_eq!(first.channel, "telegram");
    assert!(first.id.starts_with("42:"), "{}", first.id);
    let second = recv(&mut rx).await;
    assert_eq!(
        (second.sender.as_str(), second.content.as_str()),
        ("7", "hi from alice")
    );

    confirmed(&fake, last).await;
    assert!(
        rx.try_recv().is_err(),
        "nothing of the stranger's reaches the bus"
    );
    let sent = fake.ok_calls_of("sendMessage");
    assert_eq!(sent.len(), 1, "one refusal for two messages: {sent:?}");
    assert_eq!(sent[0].i64("chat_id"), Some(13));
    assert!(
        sent[0].str("text").unwrap().contains("13"),
        "the refusal shows the user id"
    );
}

#[tokio::test]
async fn a_long_reply_arrives_as_ordered_parts_within_the_limit() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ch = channel(&fake, dir.path(), &["42"]);
    let mut reply = String::new();
    let mut n = 0;
    while reply.chars().count() < 10_000 {
        for _ in 0..8 {
            reply.push_str(&format!("Line {n:04}: a < b & 😀 **bold** words\n"));
            n += 1;
        }
        reply.push('\n');
    }
    let reply: String = reply.chars().take(10_000).collect();
    ch.send(&SendMessage::new("42", reply.clone()))
        .await
        .unwrap();

    let parts = fake.ok_calls_of("sendMessage");
    assert!(parts.len() >= 3, "{} parts", parts.len());
    assert!(fake.calls_of("sendMessage").iter().all(|c| c.ok()));
    let shown: Vec<String> = parts
        .iter()
        .map(|c| visible(&c.str("text").unwrap()))
        .collect();
    for part in &shown {
        assert!(
            utf16_len(part) <= 4096,
            "a part of {} units",
            utf16_len(part)
        );
    }
    // In order, nothing lost: the parts read back as the reply (markup and
    // the whitespace at the cuts aside).
    let squash = |s: &str| s.replace("**", "").split_whitespace().collect::<String>();
    assert_eq!(squash(&shown.join("\n")), squash(&reply));
    // Cut at paragraph breaks: every part but the last ends a paragraph's last line.
    for part in &shown[..shown.len() - 1] {
        assert!(
            part.ends_with("words"),
            "cut inside a line: …{}",
            &part[part.len() - 20..]
        );
    }
}

#[tokio::test]
async fn a_rate_limited_send_waits_and_is_delivered_once() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ch = channel(&fake, dir.path(), &["42"]);
    fake.rate_limit(1, 3);
    let started = Instant::now();
    ch.send(&SendMessage::new("42", "hello")).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "retry_after honoured"
    );
    let calls = fake.calls_of("sendMessage");
    let statuses: Vec<u16> = calls.iter().map(|c| c.status).collect();
    assert_eq!(statuses, [429, 429, 429, 200]);

    // Edits too: a draft's final edit under flood control.
    let draft = ch
        .send_draft(&SendMessage::new("42", "draft"))
        .await
        .unwrap();
    fake.rate_limit(1, 2);
    ch.finalize_draft("42", &draft, &SendMessage::new("42", "final"))
        .await
        .unwrap();
    let edits: Vec<u16> = fake
        .calls_of("editMessageText")
        .iter()
        .map(|c| c.status)
        .collect();
    assert_eq!(edits, [429, 429, 200]);
    assert_eq!(
        fake.message_text(42, draft.parse().unwrap()).as_deref(),
        Some("final")
    );
}

#[tokio::test]
async fn when_the_api_is_down_listen_fails_and_a_new_listen_resumes_exactly_once() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ch = channel(&fake, dir.path(), &["42"]);
    let (mut rx, listener) = listen(&ch, 10);
    fake.inject(Incoming::text(42, "before"));
    assert_eq!(recv(&mut rx).await.content, "before");

    fake.set_down(true);
    let ended = tokio::time::timeout(Duration::from_secs(30), listener)
        .await
        .expect("listen ends while the API is down")
        .unwrap();
    assert!(matches!(ended, Err(ChannelError::Network(_))), "{ended:?}");
    fake.inject(Incoming::text(42, "during 1"));
    let (last, _) = fake.inject(Incoming::text(42, "during 2"));
    fake.set_down(false);

    // The supervisor's restart: a new listen on the same channel.
    let (mut rx, _listener) = listen(&ch, 10);
    assert_eq!(recv(&mut rx).await.content, "during 1");
    assert_eq!(recv(&mut rx).await.content, "during 2");
    confirmed(&fake, last).await;
    assert!(rx.try_recv().is_err(), "nothing handled twice");
}

#[tokio::test]
async fn the_offset_survives_a_new_channel_so_nothing_is_lost_or_repeated() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    for text in ["one", "two", "three"] {
        fake.inject(Incoming::text(42, text));
    }
    // A bus of one: "one" goes on it, then the listener blocks with "two"
    // in hand, unacknowledged, when the daemon stops.
    let first = channel(&fake, dir.path(), &["42"]);
    let (mut rx, listener) = listen(&first, 1);
    let polls = fake
        .wait_for("getUpdates", 1, Duration::from_secs(10))
        .await;
    assert_eq!(polls[0].i64("offset"), Some(0));
    tokio::time::sleep(Duration::from_millis(300)).await;
    listener.abort();
    assert_eq!(recv(&mut rx).await.content, "one");
    drop(first);

    let second = channel(&fake, dir.path(), &["42"]);
    let (mut rx, _listener) = listen(&second, 10);
    assert_eq!(recv(&mut rx).await.content, "two");
    assert_eq!(recv(&mut rx).await.content, "three");
    let polls = fake.calls_of("getUpdates");
    // The new instance starts after "one" (update 1000), from the saved offset.
    assert_eq!(polls[1].i64("offset"), Some(1001));
}

#[tokio::test]
async fn drafts_are_edited_at_most_once_per_interval_and_end_with_the_whole_reply() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ch = channel(&fake, dir.path(), &["42"]);
    assert!(ch.drafts().is_some() && ch.policy().stream_replies);
    let mut message = SendMessage::new("42", "Thinking");
    let draft = ch.send_draft(&message).await.unwrap();
    let mut text = String::from("Thinking");
    let started = Instant::now();
    for i in 0..40 {
        if i % 10 != 9 {
            text.push_str(&format!(" word{i}"));
        }
        ch.update_draft("42", &draft, &text).await.unwrap();
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let streamed = started.elapsed();
    message.content = format!("{text}\n\n**Done.**");
    ch.finalize_draft("42", &draft, &message).await.unwrap();

    let edits = fake.calls_of("editMessageText");
    assert!(
        edits.iter().all(|c| c.ok()),
        "no refused edit (unchanged text)"
    );
    let max = (streamed.as_millis() / 300) as usize + 2;
    assert!(
        edits.len() >= 3 && edits.len() <= max,
        "{} edits in {streamed:?}",
        edits.len()
    );
    for pair in edits.windows(2) {
        assert!(
            pair[1].at - pair[0].at >= Duration::from_millis(300),
            "edits too close"
        );
        assert_ne!(pair[0].str("text"), pair[1].str("text"));
    }
    let last = edits.last().unwrap();
    assert_eq!(last.str("parse_mode").as_deref(), Some("HTML"));
    let id: i64 = draft.parse().unwrap();
    assert_eq!(
        fake.message_text(42, id).unwrap(),
        format!("{text}\n\nDone."),
        "the final edit holds the whole reply"
    );
    assert_eq!(
        fake.ok_calls_of("sendMessage").len(),
        1,
        "one message, edited in place"
    );

    // A final reply longer than one message: the draft holds the first part,
    // the rest follow as new messages.
    let draft = ch.send_draft(&SendMessage::new("42", "…")).await.unwrap();
    let long = "word ".repeat(1500);
    ch.finalize_draft("42", &draft, &SendMessage::new("42", long.clone()))
        .await
        .unwrap();
    let shown = fake.message_text(42, draft.parse().unwrap()).unwrap();
    let rest = fake
        .ok_calls_of("sendMessage")
        .last()
        .unwrap()
        .str("text")
        .unwrap();
    assert!(utf16_len(&shown) <= 4096);
    assert_eq!(format!("{shown} {rest}"), long.trim());

    // The user deleted the draft meanwhile: the reply comes as a new message.
    let draft = ch.send_draft(&SendMessage::new("42", "…")).await.unwrap();
    fake.user_deletes(42, draft.parse().unwrap());
    ch.finalize_draft("42", &draft, &SendMessage::new("42", "still here"))
        .await
        .unwrap();
    let last = fake.ok_calls_of("sendMessage").last().unwrap().str("text");
    assert_eq!(last.as_deref(), Some("still here"));

    // A cancelled reply takes its draft away.
    let draft = ch.send_draft(&SendMessage::new("42", "…")).await.unwrap();
    ch.cancel_draft("42", &draft).await.unwrap();
    assert_eq!(fake.ok_calls_of("deleteMessage").len(), 1);
    assert_eq!(fake.message_text(42, draft.parse().unwrap()), None);
}

#[tokio::test]
async fn media_markers_go_out_as_files_received_pictures_come_in_as_pictures_and_documents_as_markers()
 {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ch = channel(&fake, dir.path(), &["42"]);
    // Chat 42's folder; chat 43's is another person's.
    let ws = ch.settings().folder("42");
    let theirs = ch.settings().folder("43");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::write(theirs.join("passport.pdf"), b"THEIRS").unwrap();
    std::fs::write(ws.join("cat.png"), b"PNGDATA").unwrap();
    std::fs::write(ws.join("report.pdf"), b"PDFDATA").unwrap();
    std::fs::write(ws.join("hello.ogg"), b"OGGDATA").unwrap();
    std::fs::write(dir.path().join("secret.txt"), b"no").unwrap();
    let outside = dir.path().join("secret.txt");
    let reply = format!(
        "Here you go [IMAGE:cat.png]\n[DOCUMENT:{}/report.pdf] [VOICE:hello.ogg]\nnot this: [DOCUMENT:{}] nor [DOCUMENT:{}/passport.pdf] [DOCUMENT:../43/passport.pdf]",
        ws.display(),
        outside.display(),
        theirs.display()
    );
    ch.send(&SendMessage::new("42", reply)).await.unwrap();
    let uploads = fake.uploads();
    let got: Vec<(&str, &str, &[u8])> = uploads
        .iter()
        .map(|u| (u.method.as_str(), u.file_name.as_str(), u.bytes.as_slice()))
        .collect();
    assert_eq!(
        got,
        [
            ("sendPhoto", "cat.png", &b"PNGDATA"[..]),
            ("sendDocument", "report.pdf", &b"PDFDATA"[..]),
            ("sendVoice", "hello.ogg", &b"OGGDATA"[..]),
        ]
    );
    let text = visible(&fake.ok_calls_of("sendMessage")[0].str("text").unwrap());
    assert!(text.starts_with("Here you go"), "{text}");
    assert!(!text.contains("cat.png"));
    assert!(
        text.contains(&format!("[DOCUMENT:{}]", outside.display())),
        "refused marker stays: {text}"
    );

    let mut photo = Incoming::text(42, "");
    photo.text = None;
    photo.photo = Some(b"JPEGBYTES".to_vec());
    photo.caption = Some("what is this?".into());
    fake.inject(photo);
    let mut doc = Incoming::text(42, "");
    doc.text = None;
    doc.document = Some(("../notes.txt".into(), b"my notes".to_vec()));
    fake.inject(doc);
    let mut picture_doc = Incoming::text(42, "");
    picture_doc.text = None;
    picture_doc.document = Some(("scan.png".into(), b"PNGBYTES".to_vec()));
    fake.inject(picture_doc);
    // The text of a message is only text: a marker in it stays words.
    fake.inject(Incoming::text(42, "[IMAGE:/etc/passwd] look"));
    let (mut rx, _listener) = listen(&ch, 10);

    let m = recv(&mut rx).await;
    assert_eq!(m.content, "what is this?", "the caption is the text");
    assert_eq!(
        m.images,
        [hearth::chat::Image::new(b"JPEGBYTES".to_vec())],
        "the largest size was fetched, as a picture"
    );
    let received = ws.join("received");
    assert!(
        !received.exists() || std::fs::read_dir(&received).unwrap().next().is_none(),
        "a picture never lands in the workspace"
    );
    let m = recv(&mut rx).await;
    let path = m
        .content
        .strip_prefix("[DOCUMENT:")
        .and_then(|p| p.strip_suffix(']'))
        .unwrap();
    assert!(Path::new(path).starts_with(ws.join("received")), "{path}");
    assert!(path.ends_with("notes.txt"));
    assert_eq!(std::fs::read(path).unwrap(), b"my notes");
    assert!(m.images.is_empty(), "a text document is not a picture");
    let m = recv(&mut rx).await;
    assert_eq!(m.images, [hearth::chat::Image::new(b"PNGBYTES".to_vec())]);
    assert_eq!(m.content, "", "nothing written, nothing to read");
    let m = recv(&mut rx).await;
    assert_eq!(m.content, "[IMAGE:/etc/passwd] look");
    assert!(m.images.is_empty());
}

#[tokio::test]
async fn topics_group_mentions_typing_and_reactions() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ch = channel(&fake, dir.path(), &["42"]);
    let group = -100_123;
    let mut chatter = Incoming::text(42, "just chatting");
    chatter.chat_id = Some(group);
    fake.inject(chatter);
    let mut stranger = Incoming::text(13, "not for the bot");
    stranger.chat_id = Some(group);
    fake.inject(stranger);
    let mut asked = Incoming::text(42, &format!("@{BOT_USERNAME} what time is it?"));
    asked.chat_id = Some(group);
    asked.thread_id = Some(77);
    fake.inject(asked);
    let mut other_bot = Incoming::text(42, &format!("@{BOT_USERNAME}2 not us"));
    other_bot.chat_id = Some(group);
    fake.inject(other_bot);
    let mut reply = Incoming::text(42, "and tomorrow?");
    reply.chat_id = Some(group);
    reply.reply_to_bot = Some(1);
    fake.inject(reply);
    fake.inject_raw(serde_json::json!({"poll": {"id": "p", "question": "?", "options": [], "total_voter_count": 0}}));
    let (last, _) = fake.inject(Incoming::text(42, "direct"));
    let (mut rx, _listener) = listen(&ch, 10);

    let m = recv(&mut rx).await;
    assert_eq!(m.content, "what time is it?");
    assert_eq!(m.reply_target, group.to_string());
    assert_eq!(m.thread_ts.as_deref(), Some("77"));
    assert_eq!(recv(&mut rx).await.content, "and tomorrow?");
    assert_eq!(recv(&mut rx).await.content, "direct");
    confirmed(&fake, last).await;
    assert!(
        rx.try_recv().is_err(),
        "unaddressed group messages and other updates are dropped"
    );
    assert!(
        fake.calls_of("sendMessage").is_empty(),
        "no refusal for an unaddressed stranger"
    );

    ch.start_typing(&m.reply_target, m.thread_ts.as_deref())
        .await
        .unwrap();
    ch.send(&SendMessage::reply_to(&m, "Noon.")).await.unwrap();
    ch.add_reaction(&m.reply_target, &m.id, "👀").await.unwrap();
    ch.add_reaction(&m.reply_target, &m.id, "✅").await.unwrap();
    let typing = &fake.ok_calls_of("sendChatAction")[0];
    assert_eq!(typing.str("action").as_deref(), Some("typing"));
    assert_eq!(typing.i64("message_thread_id"), Some(77));
    let sent = &fake.ok_calls_of("sendMessage")[0];
    assert_eq!(
        (sent.i64("chat_id"), sent.i64("message_thread_id")),
        (Some(group), Some(77))
    );
    let reactions = fake.calls_of("setMessageReaction");
    assert!(
        reactions.iter().all(|c| c.ok()),
        "only emoji Telegram accepts"
    );
    assert_eq!(reactions.len(), 2);
    assert_eq!(reactions[1].params["reaction"][0]["emoji"], "👌");

    let mut quiet = settings(&fake, dir.path(), &["42"]);
    quiet.ack_reactions = false;
    let quiet = TelegramChannel::new(quiet).unwrap();
    quiet
        .add_reaction(&m.reply_target, &m.id, "👀")
        .await
        .unwrap();
    assert_eq!(
        fake.calls_of("setMessageReaction").len(),
        2,
        "ack_reactions = false: no call"
    );
}

#[tokio::test]
async fn refused_formatting_falls_back_to_plain_text() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ch = channel(&fake, dir.path(), &["42"]);
    fake.reject_entities(true);
    ch.send(&SendMessage::new("42", "**bold** and 1 < 2"))
        .await
        .unwrap();
    let calls = fake.calls_of("sendMessage");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].status, calls[0].str("parse_mode").as_deref()),
        (400, Some("HTML"))
    );
    assert_eq!((calls[1].status, calls[1].str("parse_mode")), (200, None));
    assert_eq!(calls[1].str("text").as_deref(), Some("**bold** and 1 < 2"));
}

#[tokio::test]
async fn a_long_poll_outlasts_the_http_clients_default_timeout() {
    // teloxide's default client stops any request after 17 s; a 25 s long
    // poll must not fail at that point.
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings(&fake, dir.path(), &["42"]);
    s.poll_timeout = Duration::from_secs(25);
    let ch = Arc::new(TelegramChannel::new(s).unwrap());
    let (mut rx, listener) = listen(&ch, 10);
    tokio::time::sleep(Duration::from_secs(18)).await;
    assert!(
        !listener.is_finished(),
        "listen ended during a quiet long poll"
    );
    // The fake logs a call when it answers: the first poll is still open.
    assert!(fake.calls_of("getUpdates").is_empty());
    fake.inject(Incoming::text(42, "late"));
    assert_eq!(recv(&mut rx).await.content, "late");
    assert_eq!(
        fake.calls_of("getUpdates").len(),
        1,
        "the same poll delivered it"
    );
}

#[tokio::test]
async fn a_burst_of_200_messages_from_20_users_reaches_the_bus_once_each_in_order() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ch = channel(&fake, dir.path(), &["*"]);
    let mut last = 0;
    for i in 0..200 {
        last = fake
            .inject(Incoming::text(100 + i % 20, &format!("message {i}")))
            .0;
    }
    let (mut rx, _listener) = listen(&ch, 100);
    let mut seen = Vec::new();
    for _ in 0..200 {
        seen.push(recv(&mut rx).await);
    }
    confirmed(&fake, last).await;
    assert!(rx.try_recv().is_err(), "nothing twice");
    for (i, m) in seen.iter().enumerate() {
        assert_eq!(m.content, format!("message {i}"));
        assert_eq!(m.sender, (100 + i % 20).to_string());
    }
    // More than one batch (Telegram hands out at most 100 updates per poll).
    assert!(fake.ok_calls_of("getUpdates").len() >= 2);
}
