//! The web page (`GET /`) in a real browser, Debian's Chromium driven by
//! Selenium (`tests/clients/web_page.py`), against a daemon whose model is
//! the typist; and the sign-in's HTTP rules spoken to directly.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use serde_json::{Value, json};
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
    let _browser = browser_lock().await;
    let run = gateway_with("session_minutes = 1").await;
    let url = format!("http://{}", run.addr);
    let seen = python(
        "web_page.py",
        &[&url, TOKEN, shots().to_str().unwrap(), "expiry"],
        "",
    )
    .await;
    assert_eq!(seen["fresh"], 200, "control: {seen}");
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
