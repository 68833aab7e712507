//! The Matrix channel against the real Synapse: a `hearth daemon` process
//! logged in as the bot, and people on the same homeserver whose client is
//! the official Rust SDK (`support::synapse`), in encrypted rooms, so every
//! message and reply is encrypted and decrypted by the real libraries. The
//! model is the slow OpenAI-compatible fake, which answers "Reply to: <what
//! it was asked>" (a picture it was sent named by its bytes' SHA-256);
//! voice messages are heard by Whisper tiny.en.
//!
//! Hostile first, each with its control beside it: a stranger's invite is
//! not taken while the allowed person's is; a stranger's message in the
//! allowed person's room gets nothing while theirs is answered; a
//! stranger's reaction does not answer an approval question while the
//! asker's does.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::path::PathBuf;
use std::time::Duration;

use crate::common::documents::reader;
use crate::common::pictures::png;
use crate::common::speech::{SENTENCE, share_heard, speech_model, voice_note};
use crate::common::{Sandbox, assert_no_panic};
use crate::support::daemon_process::{Daemon, box_shows_listener_failing, until};
use crate::support::slow_model::{SlowModel, WRITE_AGENTS, picture, reply_to};
use crate::support::synapse::{PASSWORD, Person, Synapse, is_encrypted};
use crate::support::{file_under, hearth_with, said};

const WAIT: Duration = Duration::from_secs(90);
const GATEWAY_TOKEN: &str = "gateway-token-for-the-matrix-test";
const LATE: &str = "Late submissions lose five points for each day past the deadline.";

fn config(sandbox: &Sandbox, synapse: &Synapse, model: &SlowModel) -> PathBuf {
    sandbox.config(&format!(
        r#"[model]
path = "/nonexistent/none.gguf"
[memory]
enabled = false
[agent]
workspace = "{workspace}"
approval_timeout_secs = 120
[channels.matrix]
homeserver = "{url}"
user = "{bot}"
password = "{PASSWORD}"
allowed_users = ["{ann}"]
[providers.openai]
base_url = "{model}"
model = "slow"
native_tools = false
[routing]
default_provider = "openai"
[voice]
model = "{voice}"
[log]
level = "info"
"#,
        workspace = sandbox.path("workspace").display(),
        voice = speech_model().display(),
        url = synapse.url(),
        bot = synapse.user_id("bot"),
        ann = synapse.user_id("ann"),
        model = model.base_url,
    ))
}

/// What `hearth doctor` printed (never a panic).
async fn doctor(sandbox: &Sandbox, config: &std::path::Path) -> String {
    said(&hearth_with(sandbox, config, &["doctor"]).await)
}

/// A homeserver with the bot, Ann (allowed) and Eve (not), and the model.
async fn house(pieces: usize, gap: Duration) -> (Synapse, SlowModel) {
    let synapse = tokio::task::spawn_blocking(|| {
        let synapse = Synapse::start();
        synapse.register(&["bot", "ann", "eve"]);
        synapse
    })
    .await
    .unwrap();
    (synapse, SlowModel::start(pieces, gap).await)
}

/// The daemon started and synced once (the people's clients keep syncing
/// on the runtime's other thread meanwhile).
async fn start(sandbox: &Sandbox, config: &std::path::Path) -> Daemon {
    tokio::task::block_in_place(|| {
        let daemon = Daemon::start(sandbox, config);
        daemon.wait_log("matrix: listening as", WAIT);
        daemon
    })
}

/// The bot's replies (not its notices) in `room` that answer `asked`.
fn answers(ann: &Person, room: &matrix_sdk::Room, bot: &str, asked: &str) -> usize {
    ann.from(room, bot)
        .iter()
        .filter(|r| !r.notice && r.body.contains(&reply_to(asked)))
        .count()
}

/// Ann sends `file` (name, type, bytes) with `caption` into `room`; the
/// bot's answer to the caption comes back.
async fn answered_with_file(
    ann: &Person,
    room: &matrix_sdk::Room,
    bot: &str,
    (name, kind, bytes): (&str, &mime::Mime, Vec<u8>),
    caption: &str,
) {
    let words = matrix_sdk::ruma::events::room::message::TextMessageEventContent::plain(caption);
    let config = matrix_sdk::attachment::AttachmentConfig::new().caption(Some(words));
    room.send_attachment(name, kind, bytes, config)
        .await
        .unwrap();
    ann.wait_for(room, bot, WAIT, |r| r.body.contains(caption))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_persons_encrypted_message_is_answered_and_a_strangers_get_nothing() {
    let (synapse, model) = house(3, Duration::from_millis(20)).await;
    let bot = synapse.user_id("bot");
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &synapse, &model);
    // `hearth doctor` tries the login and says what the server said; a
    // wrong password and a wrong port are named with their fix.
    let said = doctor(&sandbox, &config).await;
    assert!(
        said.contains(&format!(
            "{} takes the password of {bot}; not logged in yet",
            synapse.url()
        )),
        "{said}"
    );
    let text = std::fs::read_to_string(&config).unwrap();
    let other = Sandbox::new();
    let wrong = other.config(&text.replace(
        &format!("password = \"{PASSWORD}\""),
        "password = \"guess\"",
    ));
    let said = doctor(&other, &wrong).await;
    assert!(
        said.contains(&format!("login as `{bot}` refused"))
            && said.contains("check [channels.matrix] user and password"),
        "{said}"
    );
    let wrong = other.config(&text.replace(&synapse.url(), "http://127.0.0.1:9"));
    let said = doctor(&other, &wrong).await;
    assert!(
        said.contains("cannot reach the homeserver http://127.0.0.1:9")
            && said.contains("is the homeserver running"),
        "{said}"
    );
    let daemon = start(&sandbox, &config).await;
    let ann = Person::log_in(&synapse, "ann").await;
    let eve = Person::log_in(&synapse, "eve").await;

    // Hostile: Eve invites the bot to a room of her own and writes there.
    let eves = eve.encrypted_room(&[&bot]).await;
    eve.say(&eves, "STRANGER INVITE").await;
    // Control: Ann's invite is taken.
    let room = ann.encrypted_room(&[&bot]).await;
    ann.wait_joined(&room, &bot, WAIT).await;
    assert!(is_encrypted(&room).await, "Ann's room is encrypted");
    // Eve joins Ann's room too (Ann invites her), and writes there.
    room.invite_user_by_id(&eve.user_id()).await.unwrap();
    until("Eve's invite to arrive", WAIT, || {
        eve.client.get_room(room.room_id()).is_some()
    })
    .await;
    eve.client.join_room_by_id(room.room_id()).await.unwrap();
    ann.wait_joined(&room, eve.user_id().as_str(), WAIT).await;

    ann.say(&room, "What is the capital of Italy?").await;
    let reply = ann
        .wait_for(&room, &bot, WAIT, |r| {
            r.body.contains(&reply_to("What is the capital of Italy?"))
        })
        .await;
    assert!(reply.encrypted, "the reply came encrypted: {reply:?}");
    // The bot's device is signed by its own account (cross-signing), as
    // Ann's client sees it.
    let session: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(sandbox.path("data/matrix/session.json")).unwrap(),
    )
    .unwrap();
    let device: matrix_sdk::ruma::OwnedDeviceId = session["device_id"].as_str().unwrap().into();
    let bot_user: matrix_sdk::ruma::OwnedUserId = bot.parse().unwrap();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let _ = ann
            .client
            .encryption()
            .request_user_identity(&bot_user)
            .await;
        let seen = ann
            .client
            .encryption()
            .get_device(&bot_user, &device)
            .await
            .unwrap();
        if seen.as_ref().is_some_and(|d| d.is_cross_signed_by_owner()) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the bot's device {device} is not cross-signed: {}",
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        daemon
            .log()
            .contains("the bot's device is cross-signed by its account")
    );
    let eves_view = eve.client.get_room(room.room_id()).unwrap();
    eve.say(&eves_view, "STRANGER IN THE ROOM").await;
    // Ann's next message is answered, so the bot read past Eve's.
    ann.say(&room, "And of France?").await;
    ann.wait_for(&room, &bot, WAIT, |r| {
        r.body.contains(&reply_to("And of France?"))
    })
    .await;
    assert_eq!(model.asked("STRANGER IN THE ROOM"), 0, "{}", daemon.log());
    assert_eq!(model.asked("STRANGER INVITE"), 0);
    assert!(
        ann.from(&room, &bot)
            .iter()
            .all(|r| !r.body.contains("STRANGER")),
        "{:#?}",
        ann.from(&room, &bot)
    );
    let bot_id: matrix_sdk::ruma::OwnedUserId = bot.parse().unwrap();
    let in_eves = eves.get_member_no_sync(&bot_id).await.unwrap();
    assert_eq!(
        in_eves.map(|m| m.membership().clone()),
        Some(matrix_sdk::ruma::events::room::member::MembershipState::Invite),
        "the bot did not join Eve's room"
    );
    let log = daemon.log();
    assert!(log.contains("ignored an invite to"), "{log}");
    assert!(
        log.contains(&format!("ignored a message from {}", eve.user_id())),
        "{log}"
    );

    // The session and the keys survive a restart: the same device, and the
    // next encrypted message is read and answered.
    let session = sandbox.path("data/matrix/session.json");
    let first = std::fs::read_to_string(&session)
        .unwrap_or_else(|_| panic!("no session kept in {}: {log}", session.display()));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&session).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let (_, log) = tokio::task::block_in_place(|| daemon.term());
    assert_no_panic(&log);
    let said = doctor(&sandbox, &config).await;
    assert!(
        said.contains("takes the saved session: logged in as @bot:hearth.test"),
        "{said}"
    );
    let status = sandbox
        .hearth_process()
        .args(["--config", config.to_str().unwrap(), "status"])
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains(&format!(
            "matrix channel {bot} on {}: logged in as {bot} (device ",
            synapse.url()
        )) && status.contains("last synced"),
        "{status}"
    );
    let daemon = start(&sandbox, &config).await;
    ann.say(&room, "Still there?").await;
    let again = ann
        .wait_for(&room, &bot, WAIT, |r| {
            r.body.contains(&reply_to("Still there?"))
        })
        .await;
    assert!(again.encrypted);
    assert_eq!(
        std::fs::read_to_string(&session).unwrap(),
        first,
        "the same session"
    );

    // A PDF, encrypted in the room, goes the document path: read, its
    // answering page given to the turn, kept for Ann.
    let pdf = reader(30, 17, LATE);
    let question = "What happens to late submissions?";
    answered_with_file(
        &ann,
        &room,
        &bot,
        ("reader.pdf", &mime::APPLICATION_PDF, pdf),
        question,
    )
    .await;
    assert!(model.asked(LATE) >= 1, "{}", daemon.log());
    assert!(model.asked("reader.pdf, page 17:") >= 1, "{}", daemon.log());

    // A picture, encrypted, reaches the model as the picture Ann sent,
    // with its caption.
    let square = png(64, 64, [200, 30, 30]);
    let file = ("square.png", &mime::IMAGE_PNG, square.clone());
    answered_with_file(&ann, &room, &bot, file, "What colour is this square?").await;
    assert_eq!(
        model.asked(&format!(
            "{}\nWhat colour is this square?",
            picture(&square)
        )),
        1,
        "{}",
        daemon.log()
    );
    // A voice message, encrypted, is heard: its words are what the model
    // is asked, and the answer comes back to the room.
    let spoken = tempfile::tempdir().unwrap();
    let note = voice_note(spoken.path(), SENTENCE);
    let info = matrix_sdk::attachment::BaseAudioInfo {
        duration: Some(Duration::from_secs(5)),
        size: None,
        waveform: None,
    };
    room.send_attachment(
        "voice.ogg",
        &"audio/ogg".parse().unwrap(),
        note,
        matrix_sdk::attachment::AttachmentConfig::new()
            .info(matrix_sdk::attachment::AttachmentInfo::Voice(info)),
    )
    .await
    .unwrap();
    let heard = ann
        .wait_for(&room, &bot, WAIT, |r| {
            !r.notice && r.body.contains("Reply to:") && r.body.contains("tomato")
        })
        .await;
    assert!(heard.encrypted);
    assert!(share_heard(SENTENCE, &heard.body) >= 0.8, "{heard:?}");
    assert!(model.asked("tomato") >= 1, "{}", daemon.log());
    let (_, log) = tokio::task::block_in_place(|| daemon.term());
    assert!(!log.contains("on a new device"), "{log}");
    assert_no_panic(&log);
    for asked in [
        "What is the capital of Italy?",
        "And of France?",
        "Still there?",
    ] {
        assert_eq!(
            answers(&ann, &room, &bot, asked),
            1,
            "{asked} answered once"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_reply_the_message_is_answered_once_after_the_restart() {
    // Ten pieces 300 ms apart: the reply takes three seconds.
    let (synapse, model) = house(10, Duration::from_millis(300)).await;
    let bot = synapse.user_id("bot");
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &synapse, &model);
    let daemon = start(&sandbox, &config).await;
    let ann = Person::log_in(&synapse, "ann").await;
    let room = ann.encrypted_room(&[&bot]).await;
    ann.wait_joined(&room, &bot, WAIT).await;

    ann.say(&room, "first question").await;
    until("the reply underway", WAIT, || {
        model.asked("first question") == 1
    })
    .await;
    let log = tokio::task::block_in_place(|| daemon.kill9());
    assert_eq!(
        answers(&ann, &room, &bot, "first question"),
        0,
        "killed mid-reply"
    );

    let daemon = start(&sandbox, &config).await;
    ann.wait_for(&room, &bot, WAIT, |r| {
        r.body.contains(&reply_to("first question"))
    })
    .await;
    // Then a second message, so that the bot has synced well past the first.
    ann.say(&room, "second question").await;
    ann.wait_for(&room, &bot, WAIT, |r| {
        r.body.contains(&reply_to("second question"))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        answers(&ann, &room, &bot, "first question"),
        1,
        "{:#?}",
        ann.from(&room, &bot)
    );
    assert_eq!(answers(&ann, &room, &bot, "second question"), 1);
    assert_eq!(
        model.asked("first question"),
        2,
        "asked again after the kill"
    );
    let log = log + tokio::task::block_in_place(|| daemon.term()).1.as_str();
    assert_no_panic(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_counts_only_from_the_person_who_asked() {
    let (synapse, model) = house(3, Duration::from_millis(20)).await;
    let bot = synapse.user_id("bot");
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &synapse, &model);
    let daemon = start(&sandbox, &config).await;
    let ann = Person::log_in(&synapse, "ann").await;
    let eve = Person::log_in(&synapse, "eve").await;
    let room = ann.encrypted_room(&[&bot, eve.user_id().as_str()]).await;
    ann.wait_joined(&room, &bot, WAIT).await;
    until("Eve's invite to arrive", WAIT, || {
        eve.client.get_room(room.room_id()).is_some()
    })
    .await;
    eve.client.join_room_by_id(room.room_id()).await.unwrap();
    ann.wait_joined(&room, eve.user_id().as_str(), WAIT).await;

    ann.say(&room, &format!("Please {WRITE_AGENTS} now")).await;
    let question = ann
        .wait_for(&room, &bot, WAIT, |r| r.body.contains("Allow `file_write`"))
        .await;
    assert!(
        question.body.contains("AGENTS.md"),
        "the path is shown: {}",
        question.body
    );
    // Hostile: Eve, also in the room, allows it.
    let eves_view = eve.client.get_room(room.room_id()).unwrap();
    eve.react(&eves_view, &question.event_id, "👍").await;
    ann.wait_for(&room, &bot, WAIT, |r| {
        r.notice && r.body.contains("only the person who asked can answer this")
    })
    .await;
    let workspace = sandbox.path("workspace");
    assert!(
        !file_under(&workspace, "AGENTS.md"),
        "Eve's answer ran nothing"
    );
    // Control: Ann allows it.
    ann.react(&room, &question.event_id, "👍").await;
    ann.wait_for(&room, &bot, WAIT, |r| {
        r.notice && r.body.contains("`file_write`: allowed once")
    })
    .await;
    until("AGENTS.md written", WAIT, || {
        file_under(&workspace, "AGENTS.md")
    })
    .await;
    let log = tokio::task::block_in_place(|| daemon.term()).1;
    assert!(
        log.contains("answered a question that is not theirs"),
        "{log}"
    );
    assert_no_panic(&log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_homeserver_away_for_a_minute_loses_and_doubles_nothing() {
    // Ten pieces 300 ms apart: the homeserver goes while the reply is made.
    let (mut synapse, model) = house(10, Duration::from_millis(300)).await;
    let bot = synapse.user_id("bot");
    let sandbox = Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = std::fs::read_to_string(config(&sandbox, &synapse, &model)).unwrap();
    let config = sandbox.config(&format!(
        "{text}[channels.gateway]\nlisten = \"127.0.0.1:{port}\"\ntoken = \"{GATEWAY_TOKEN}\"\n"
    ));
    let daemon = start(&sandbox, &config).await;
    let ann = Person::log_in(&synapse, "ann").await;
    let room = ann.encrypted_room(&[&bot]).await;
    ann.wait_joined(&room, &bot, WAIT).await;

    ann.say(&room, "before the outage").await;
    until("the reply underway", WAIT, || {
        model.asked("before the outage") == 1
    })
    .await;
    tokio::task::block_in_place(|| synapse.stop());
    let away = std::time::Instant::now();
    until("the listener to notice", WAIT, || {
        daemon.log().contains("listener failed; restarting")
    })
    .await;
    // The page's box and /metrics say so, with the cause.
    box_shows_listener_failing(port, GATEWAY_TOKEN, "matrix", "cannot reach the homeserver").await;
    tokio::time::sleep(Duration::from_secs(60).saturating_sub(away.elapsed())).await;
    tokio::task::block_in_place(|| synapse.start_again());

    ann.say(&room, "after the outage").await;
    let within = Duration::from_secs(240);
    ann.wait_for(&room, &bot, within, |r| {
        r.body.contains(&reply_to("before the outage"))
    })
    .await;
    ann.wait_for(&room, &bot, within, |r| {
        r.body.contains(&reply_to("after the outage"))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        answers(&ann, &room, &bot, "before the outage"),
        1,
        "{:#?}",
        ann.from(&room, &bot)
    );
    assert_eq!(answers(&ann, &room, &bot, "after the outage"), 1);
    assert_eq!(model.asked("after the outage"), 1);
    let log = tokio::task::block_in_place(|| daemon.term()).1;
    assert_no_panic(&log);
}
