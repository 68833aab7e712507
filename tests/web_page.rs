//! The web page (`GET /`) in a real browser, Debian's Chromium driven by
//! Selenium (`tests/clients/web_page.py`), against a daemon whose model is
//! the typist; and the sign-in's HTTP rules spoken to directly.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use serde_json::{Value, json};
use support::daemon_process::until;
use support::ways_in::*;
use support::*;

/// Where the browser test leaves its screenshots.
fn shots() -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/web-shots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn texts(seen: &Value, key: &str) -> Vec<(String, String)> {
    serde_json::from_value(seen[key].clone()).unwrap()
}

#[tokio::test]
async fn the_page_signs_in_chats_answers_questions_and_keeps_other_origins_out() {
    let _browser = browser_lock().await;
    let run = gateway().await;
    let url = format!("http://{}", run.addr);
    let shots = shots();
    let seen = python("web_page.py", &[&url, TOKEN, shots.to_str().unwrap()], "").await;
    // The first load: small, and from this origin alone.
    let first: Vec<Value> = serde_json::from_value(seen["first_load"].clone()).unwrap();
    let bytes: u64 = first.iter().map(|r| r["bytes"].as_u64().unwrap()).sum();
    assert!(
        first.len() >= 3,
        "the page, its script and style: {first:?}"
    );
    assert!(bytes < 200_000, "the first load transferred {bytes} bytes");
    eprintln!("the first load: {} requests, {bytes} bytes", first.len());
    for load in ["first_load", "signed_in_load"] {
        for request in seen[load].as_array().unwrap() {
            let target = request["url"].as_str().unwrap();
            assert!(
                target.starts_with(&url) || target.starts_with(&url.replace("http", "ws")),
                "{load}: a request to another origin: {target}"
            );
        }
    }
    // A wrong token is refused, with the reason shown.
    assert_eq!(seen["wrong_token"]["app_shown"], false, "{seen}");
    assert!(
        seen["wrong_token"]["error"]
            .as_str()
            .unwrap()
            .contains("not the gateway's token")
    );
    // The session cookie: HttpOnly, SameSite=Strict, with an expiry; the
    // token itself is nowhere in the page, its address or its storage.
    let cookie = &seen["cookies"][0];
    assert_eq!(cookie["name"], "hearth_session", "{seen}");
    assert_eq!(cookie["httpOnly"], true);
    assert_eq!(cookie["sameSite"], "Strict");
    assert!(cookie["expiry"].as_u64().is_some());
    assert_eq!(seen["token_left"], false);
    // Streamed: the reply was seen growing before it ended.
    assert!(
        seen["stream_lengths"].as_array().unwrap().len() >= 3,
        "{}",
        seen["stream_lengths"]
    );
    let first_chat = texts(&seen, "first_chat");
    assert!(
        first_chat[1].1.contains("the quick brown fox"),
        "{first_chat:?}"
    );
    // hearth's own markup, repeated by the model, never shows; the
    // control shows the same answer.
    for asked in ["ECHO TAGS", "ECHO PLAIN"] {
        let shown = &seen[asked];
        assert_eq!(shown["last"], support::PLAIN, "{asked}: {shown}");
        for text in shown["streamed"].as_array().unwrap() {
            for tag in support::INTERNAL {
                assert!(
                    !text.as_str().unwrap().contains(tag),
                    "{asked}: {tag} in {shown}"
                );
            }
        }
    }
    // Stopped: the long reply ended early, and said so.
    let stopped = texts(&seen, "stopped_chat");
    assert_eq!(stopped.last().unwrap().1, "Stopped.", "{stopped:?}");
    // The allowed call ran, the denied one did not, and no other origin
    // could send, answer or read.
    assert!(file_under(&run.workspace, "allowed.txt"));
    assert!(!file_under(&run.workspace, "evil.txt"));
    let question = seen["question"].as_str().unwrap();
    assert!(question.contains("file_write") && question.contains("allowed.txt"));
    let hostile = &seen["hostile"];
    for key in ["json_message", "read_box", "read_conversations"] {
        assert!(
            hostile[key].as_str().unwrap().starts_with("blocked"),
            "{key}: {hostile}"
        );
    }
    assert_eq!(hostile["socket"], "refused", "{hostile}");
    let heard = run.typist.parrot.requests.lock().unwrap().clone();
    let all_heard = format!(
        "{:?}",
        heard.iter().map(|r| &r.messages).collect::<Vec<_>>()
    );
    assert!(!all_heard.contains("evil json message"));
    assert!(!all_heard.contains("evil simple message"));
    assert!(!all_heard.contains("evil socket message"));
    // Markup is shown as text, everywhere.
    assert_eq!(seen["title"], "hearth");
    assert_eq!(seen["markup_elements"], 0);
    let after = texts(&seen, "after_calls");
    assert!(
        after
            .iter()
            .any(|(_, t)| t.contains("<script>document.title")),
        "{after:?}"
    );
    assert!(question.contains("<img src=x"), "{question}");
    assert!(
        seen["list"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t.as_str().unwrap().contains("<img src=x")),
        "{}",
        seen["list"]
    );
    // A new conversation starts empty; the old one reopens with its history.
    let second = texts(&seen, "second_chat");
    assert_eq!(second.len(), 2, "{second:?}");
    assert!(texts(&seen, "reopened").len() > 4);
    // The picture went with its message, as a picture: the typist cannot
    // see, and the reply says so (as in tests/websocket.rs); the message
    // before it, text alone, got no such answer.
    assert_eq!(seen["picture_shown"], 1, "{seen}");
    let picture_chat = texts(&seen, "picture_chat");
    let (_, answer) = picture_chat.last().unwrap();
    assert!(answer.contains("cannot see images"), "{picture_chat:?}");
    assert!(
        !picture_chat[1].1.contains("cannot see images"),
        "{picture_chat:?}"
    );
    assert!(
        seen["box"].as_str().unwrap().contains("gateway: running"),
        "{}",
        seen["box"]
    );
    // A phone's width: nothing wider than the screen.
    let phone = &seen["phone"];
    assert_eq!(phone["width"], 390, "{phone}");
    for key in [
        "chat_fits",
        "composer_shown",
        "list_shown",
        "box_fits",
        "signin_fits",
    ] {
        assert_eq!(phone[key], true, "{key}: {phone}");
    }
    for name in [
        "sign-in",
        "chat",
        "approval",
        "box",
        "phone-chat",
        "phone-box",
    ] {
        assert!(shots.join(format!("{name}.png")).exists(), "{name}.png");
    }
    run.daemon.stop().await;
}

#[tokio::test]
async fn a_session_past_its_expiry_is_refused() {
    let run = gateway_with("session_minutes = 1").await;
    let url = format!("http://{}", run.addr);
    let shots = shots();
    let page = |mode: &'static str, stdin: String| {
        let (url, shots) = (url.clone(), shots.clone());
        async move {
            // One browser at a time, and none held while the minute runs out.
            let _browser = browser_lock().await;
            python(
                "web_page.py",
                &[&url, TOKEN, shots.to_str().unwrap(), mode],
                &stdin,
            )
            .await
        }
    };
    let signed_in = page("expiry-sign-in", String::new()).await;
    assert_eq!(signed_in["fresh"], 200, "control: {signed_in}");
    tokio::time::sleep(std::time::Duration::from_secs(62)).await;
    let cookie = signed_in["cookie"]["value"].as_str().unwrap().to_string();
    let seen = page("expiry-later", cookie).await;
    assert_eq!(seen["expired"], 401, "{seen}");
    assert_eq!(seen["signin_shown"], true);
    run.daemon.stop().await;
}

/// One browser at a time: two Chromiums on two cores slow each other past
/// the scripts' waits.
async fn browser_lock() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    LOCK.lock().await
}

/// Signs in over HTTP; the session cookie and the CSRF token.
async fn sign_in(client: &reqwest::Client, url: &str) -> (String, String) {
    let response = client
        .post(format!("{url}/ui/login"))
        .json(&json!({ "token": TOKEN }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_string();
    let body: Value = response.json().await.unwrap();
    let session = cookie.split(';').next().unwrap().to_string();
    (session, body["csrf"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn the_session_cookie_needs_its_csrf_token_to_change_anything() {
    let run = gateway().await;
    let url = format!("http://{}", run.addr);
    let client = reqwest::Client::new();
    let (cookie, csrf) = sign_in(&client, &url).await;
    let post = |headers: Vec<(&'static str, String)>| {
        let mut request = client
            .post(format!("{url}/v1/message"))
            .json(&json!({ "text": "hello from the page" }))
            .header("cookie", &cookie);
        for (k, v) in headers {
            request = request.header(k, v);
        }
        request.send()
    };
    // Hostile: the cookie alone, or with a wrong CSRF token, changes nothing.
    assert_eq!(post(vec![]).await.unwrap().status(), 403);
    let wrong = vec![("x-hearth-csrf", format!("{csrf}x"))];
    assert_eq!(post(wrong).await.unwrap().status(), 403);
    // Hostile: the right pair from another origin.
    let foreign = vec![
        ("x-hearth-csrf", csrf.clone()),
        ("origin", "http://evil.example".to_string()),
    ];
    assert_eq!(post(foreign).await.unwrap().status(), 403);
    // Control: the page's own request.
    let own = vec![("x-hearth-csrf", csrf.clone()), ("origin", url.clone())];
    let response = post(own).await.unwrap();
    assert_eq!(response.status(), 200);
    let reply: Value = response.json().await.unwrap();
    assert!(
        reply["reply"]
            .as_str()
            .unwrap()
            .contains("hello from the page")
    );
    // Reading needs the cookie (or the token), not the CSRF token.
    let read = |cookie: Option<&str>| {
        let mut request = client.get(format!("{url}/ui/api/conversations"));
        if let Some(c) = cookie {
            request = request.header("cookie", c);
        }
        request.send()
    };
    let listed = read(Some(&cookie)).await.unwrap();
    assert_eq!(listed.status(), 200);
    let csp = listed.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"),
        "{csp}"
    );
    let listed: Value = listed.json().await.unwrap();
    assert_eq!(listed[0]["chat"], "default", "{listed}");
    assert_eq!(read(None).await.unwrap().status(), 401);
    assert_eq!(
        read(Some("hearth_session=forged")).await.unwrap().status(),
        401
    );
    // A wrong token signs nothing in; signing out ends the session.
    let wrong = client
        .post(format!("{url}/ui/login"))
        .json(&json!({ "token": "wrong-token-0123456789" }))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get("set-cookie").is_none());
    let out = client
        .post(format!("{url}/ui/logout"))
        .header("cookie", &cookie)
        .header("x-hearth-csrf", &csrf)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 200);
    assert_eq!(read(Some(&cookie)).await.unwrap().status(), 401);
    run.daemon.stop().await;
}

/// A free port on 127.0.0.1 (taken, then let go for the daemon).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `hearth cron add` in `sandbox`; the new job's id.
fn add_job(sandbox: &crate::common::Sandbox, config: &std::path::Path, prompt: &str) -> String {
    let out = sandbox
        .hearth_process()
        .args(["--config", config.to_str().unwrap(), "cron", "add", prompt])
        .args(["--every", "1h", "--channel", "gateway", "--to", "kitchen"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said.split('#')
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string()
}

#[tokio::test]
#[allow(clippy::await_holding_lock)] // one engine at a time, the whole test
async fn the_box_of_a_real_daemon_shows_its_engine_and_runs_its_jobs_and_memory() {
    let _browser = browser_lock().await;
    let fake = support::lms_fake::Fake::with(&[]);
    let lms = support::lms_fake::canvas_server(fake).await;
    let sandbox = crate::common::Sandbox::new();
    let port = free_port();
    let model = crate::common::model("SmolLM2-135M-Instruct.Q4_1.gguf");
    let config = sandbox.config(&format!(
        r#"[model]
path = "{}"
[generation]
max_tokens = 24
[memory]
enabled = true
# The one memory this test deletes is the message's own; the model's
# consolidation, racing beside the page, would add facts of its own (in a
# CI run it stored at least six more with "marmalade" in them).
consolidate = false
[scheduler]
enabled = true
[channels.gateway]
listen = "127.0.0.1:{port}"
token = "{TOKEN}"
[lms]
poll_interval_mins = 30
[[lms.sources]]
kind = "canvas"
name = "school"
url = "{lms}"
token = "revoked"
[log]
level = "info"
"#,
        model.display()
    ));
    let keep = add_job(&sandbox, &config, "water the plants");
    let drop = add_job(&sandbox, &config, "feed the cat");
    let _engine = crate::common::engine_lock();
    let daemon = {
        let daemon = support::daemon_process::Daemon::start(&sandbox, &config);
        // A reply, so the box has a speed, a cache and a memory to show.
        let url = format!("http://127.0.0.1:{port}");
        let reply = message(
            &url,
            "kitchen",
            "My favourite jam is marmalade, please remember that.",
        )
        .await;
        assert!(reply["reply"].is_string(), "{reply}");
        daemon
    };
    let url = format!("http://127.0.0.1:{port}");
    let jobs = format!("{keep},{drop}");
    let reader = sandbox.path("reader.pdf");
    let late = "Late submissions lose five points for each day past the deadline.";
    std::fs::write(&reader, crate::common::documents::reader(30, 17, late)).unwrap();
    let seen = python(
        "web_page.py",
        &[
            &url,
            TOKEN,
            shots().to_str().unwrap(),
            "box",
            &jobs,
            reader.to_str().unwrap(),
        ],
        "",
    )
    .await;
    let text = |key: &str| seen[key].as_str().unwrap().to_string();
    assert!(
        text("engine").contains("SmolLM2-135M-Instruct.Q4_1.gguf"),
        "{seen}"
    );
    assert!(text("engine").contains("CPU"), "the backend: {seen}");
    assert!(text("ram").contains("hearth uses"), "{seen}");
    assert!(text("speed").contains("tokens/s"), "{seen}");
    assert!(
        text("cache").contains("kitchen"),
        "the conversation's cache: {seen}"
    );
    let lms = text("lms");
    assert!(
        lms.contains("school")
            && lms.contains("401")
            && lms.contains("fix: renew the source's token"),
        "the LMS error with its fix: {lms}"
    );
    assert!(
        text("errors").contains("school"),
        "the poll's failure among recent errors: {seen}"
    );
    assert!(text("paused").contains("Paused."));
    assert!(text("resumed").contains("Next:"));
    assert!(!text("jobs").contains("feed the cat") && text("jobs").contains("water the plants"));
    assert!(text("memory_found").contains("marmalade"));
    let documents = text("documents");
    assert!(
        documents.contains("reader.pdf")
            && documents.contains("gateway:")
            && documents.contains("30 pages"),
        "{seen}"
    );
    assert!(
        seen["document_chat"]
            .to_string()
            .contains("(document: reader.pdf)"),
        "{seen}"
    );
    assert_eq!(seen["phone_fits"], true);
    let (code, log) = daemon.term();
    assert_eq!(code, Some(0), "{log}");
    // What the page did is in the stores.
    let listed = sandbox
        .hearth()
        .args(["--config", config.to_str().unwrap(), "cron", "list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.contains("water the plants") && !listed.contains("(paused)"),
        "{listed}"
    );
    assert!(!listed.contains("feed the cat"), "{listed}");
    let memories = sandbox
        .hearth()
        .args(["--config", config.to_str().unwrap(), "memory", "list"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&memories.stdout).contains("marmalade"));
    let documents = sandbox
        .hearth()
        .args(["--config", config.to_str().unwrap(), "docs", "list"])
        .output()
        .unwrap();
    let documents = String::from_utf8_lossy(&documents.stdout).into_owned();
    assert_eq!(documents.trim(), "no documents", "deleted on the page");
}

#[tokio::test]
async fn the_owner_answers_their_telegram_question_on_the_page_and_no_one_elses() {
    let _browser = browser_lock().await;
    let fake = support::telegram_fake::FakeTelegram::start().await;
    let run = gateway_with(&format!(
        "owner = [\"telegram:111\"]\n[channels.telegram]\nbot_token = \"{}\"\napi_url = \"{}\"\nallowed_users = [\"*\"]\n",
        support::telegram_fake::TOKEN,
        fake.url
    ))
    .await;
    let write = |path: &str| call("file_write", json!({"path": path, "content": "hi"}));
    fake.inject(support::telegram_fake::Incoming::text(
        111,
        &write("owner.txt"),
    ));
    fake.inject(support::telegram_fake::Incoming::text(
        222,
        &write("someone-else.txt"),
    ));
    let board = run.daemon.runtime().questions().clone();
    until("both questions open", WAIT, || board.open().len() == 2).await;
    let theirs = board
        .open()
        .into_iter()
        .find(|a| a.request.sender == "222")
        .unwrap();
    // Hostile: signed in, with the CSRF token, the owner cannot answer
    // someone else's question even knowing its id, nor see it listed.
    let url = format!("http://{}", run.addr);
    let client = reqwest::Client::new();
    let (cookie, csrf) = sign_in(&client, &url).await;
    let answer = |id: String| {
        client
            .post(format!("{url}/ui/api/questions/{id}"))
            .header("cookie", &cookie)
            .header("x-hearth-csrf", &csrf)
            .json(&json!({ "answer": "always" }))
            .send()
    };
    assert_eq!(
        answer(theirs.request.id.clone()).await.unwrap().status(),
        404
    );
    assert_eq!(answer("made-up".into()).await.unwrap().status(), 404);
    let listed: Value = client
        .get(format!("{url}/ui/api/questions"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["sender"], "111");
    // In the browser: listed, allowed once, gone; the call ran.
    let seen = python(
        "web_page.py",
        &[&url, TOKEN, shots().to_str().unwrap(), "questions"],
        "",
    )
    .await;
    let listed = seen["listed"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{seen}");
    let shown = listed[0].as_str().unwrap();
    assert!(
        shown.contains("file_write") && shown.contains("owner.txt") && shown.contains("telegram"),
        "{shown}"
    );
    until("the allowed call to run", WAIT, || {
        file_under(&run.workspace, "owner.txt")
    })
    .await;
    assert_eq!(seen["count_after"], "", "{seen}");
    // In Telegram, the owner's question closes as the page decided it, and
    // says so: no buttons left, and it does not claim the call was stopped.
    until("the owner's Telegram question to close", WAIT, || {
        fake.with_buttons(111).is_empty()
    })
    .await;
    let shown = fake.chat(111).join("\n");
    assert!(
        shown.contains("→ allowed once on the web page") && !shown.contains("not run"),
        "{shown}"
    );
    // The other question was never answered here: it times out, denied.
    until("the other question to close", WAIT, || {
        board.open().is_empty()
    })
    .await;
    assert!(!file_under(&run.workspace, "someone-else.txt"));
    until("the other Telegram question to close", WAIT, || {
        fake.with_buttons(222).is_empty()
    })
    .await;
    let shown = fake.chat(222).join("\n");
    assert!(shown.contains("→ no answer within"), "{shown}");
    run.daemon.stop().await;
}
