//! `http_request` against a local HTTP server: the allowlist (redirects
//! included), the body cap, errors, POST under readonly, and the timeout;
//! and what a page steering the model would try: names that resolve to
//! loopback, other ports, a `Host` header, redirects to either.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::time::Duration;

use axum::Router;
use axum::response::Redirect;
use axum::routing::{get, post};
use serde_json::json;

use hearth::security::{Autonomy, SecurityPolicy};
use hearth::tools::{HttpRequest, ToolContext, ToolRegistry, ToolResult};

async fn server() -> String {
    let app = Router::new()
        .route("/hello", get(|| async { "hello from the fake" }))
        .route("/big", get(|| async { "x".repeat(100_000) }))
        .route(
            "/missing",
            get(|| async { (axum::http::StatusCode::NOT_FOUND, "no such page") }),
        )
        .route(
            "/echo",
            post(|body: String| async move { format!("got {body}") }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(10)).await;
                "late"
            }),
        )
        .route(
            "/away",
            get(|| async { Redirect::temporary("http://localhost:9/elsewhere") }),
        )
        .route("/around", get(|| async { Redirect::temporary("/hello") }))
        .route(
            "/rebind",
            get(|| async { Redirect::temporary("http://localhost/hello") }),
        )
        .route(
            "/port",
            get(|| async { Redirect::temporary("http://127.0.0.1:22/") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// `127.0.0.1:PORT`: the fake, listed literally with its port.
fn entry(base: &str) -> String {
    base.trim_start_matches("http://").to_string()
}

fn setup(dir: &tempfile::TempDir, autonomy: Autonomy, base: &str) -> (ToolRegistry, ToolContext) {
    setup_allowing(dir, autonomy, vec![entry(base)])
}

fn setup_allowing(
    dir: &tempfile::TempDir,
    autonomy: Autonomy,
    allowed: Vec<String>,
) -> (ToolRegistry, ToolContext) {
    let policy = SecurityPolicy::new(&dir.path().join("ws"), autonomy, Some(dir.path())).unwrap();
    let mut registry = ToolRegistry::default();
    registry.register(Box::new(HttpRequest::new(
        allowed,
        10_000,
        Duration::from_secs(5),
    )));
    let ctx = ToolContext::new(policy, Duration::from_secs(1));
    (registry, ctx)
}

#[tokio::test]
async fn gets_an_allowed_page_and_refuses_other_hosts() {
    let base = server().await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, ctx) = setup(&dir, Autonomy::Supervised, &base);

    let ok = tools
        .run(
            "http_request",
            json!({"url": format!("{base}/hello")}),
            &ctx,
        )
        .await;
    assert!(!ok.is_error, "{}", ok.content);
    assert!(ok.content.starts_with("HTTP 200 OK"));
    assert!(ok.content.ends_with("hello from the fake"));

    let via = tools
        .run(
            "http_request",
            json!({"url": format!("{base}/around")}),
            &ctx,
        )
        .await;
    assert!(
        via.content.ends_with("hello from the fake"),
        "same-host redirect followed"
    );

    let other = tools
        .run("http_request", json!({"url": "http://localhost:9/"}), &ctx)
        .await;
    assert!(
        other.is_error && other.content.contains("not allowed"),
        "{}",
        other.content
    );

    let away = tools
        .run("http_request", json!({"url": format!("{base}/away")}), &ctx)
        .await;
    assert!(
        away.is_error && away.content.contains("request failed"),
        "{}",
        away.content
    );

    let scheme = tools
        .run("http_request", json!({"url": "file:///etc/passwd"}), &ctx)
        .await;
    assert!(scheme.is_error && scheme.content.contains("only http"));

    let junk = tools
        .run("http_request", json!({"url": "not a url"}), &ctx)
        .await;
    assert!(junk.is_error && junk.content.contains("is not a URL"));
}

#[tokio::test]
async fn big_bodies_are_cut_and_errors_are_error_results() {
    let base = server().await;
    let dir = tempfile::tempdir().unwrap();
    let (tools, ctx) = setup(&dir, Autonomy::Supervised, &base);

    let big = tools
        .run("http_request", json!({"url": format!("{base}/big")}), &ctx)
        .await;
    assert!(!big.is_error);
    // Read up to 10,000 bytes, then capped to 4,000 characters for the model.
    assert!(
        big.content.contains("characters cut"),
        "{}",
        &big.content[..200]
    );
    assert!(big.content.ends_with("[… body cut at 10000 bytes …]"));

    let missing = tools
        .run(
            "http_request",
            json!({"url": format!("{base}/missing")}),
            &ctx,
        )
        .await;
    assert!(missing.is_error && missing.content.starts_with("HTTP 404"));

    let slow = tools
        .run("http_request", json!({"url": format!("{base}/slow")}), &ctx)
        .await;
    assert!(
        slow.is_error && slow.content.contains("timed out"),
        "{}",
        slow.content
    );
}

#[tokio::test]
async fn post_works_when_supervised_and_is_refused_when_readonly() {
    let base = server().await;
    let dir = tempfile::tempdir().unwrap();
    let args = json!({"url": format!("{base}/echo"), "method": "POST", "body": "ping"});

    let (tools, ctx) = setup(&dir, Autonomy::Supervised, &base);
    let sent = tools.run("http_request", args.clone(), &ctx).await;
    assert!(sent.content.ends_with("got ping"), "{}", sent.content);

    let (tools, ctx) = setup(&dir, Autonomy::ReadOnly, &base);
    let refused = tools.run("http_request", args, &ctx).await;
    assert!(refused.is_error && refused.content.contains("readonly"));

    let bad = tools
        .run(
            "http_request",
            json!({"url": format!("{base}/echo"), "method": "DELETE"}),
            &ctx,
        )
        .await;
    assert!(
        bad.is_error,
        "schema refuses other methods: {}",
        bad.content
    );
}

async fn run(tools: &ToolRegistry, ctx: &ToolContext, args: serde_json::Value) -> ToolResult {
    tools.run("http_request", args, ctx).await
}

#[tokio::test]
async fn internal_addresses_other_ports_and_host_headers_are_refused() {
    let base = server().await;
    let port = entry(&base).rsplit(':').next().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();

    // A name the allowlist names, which resolves to loopback (as a
    // rebinding DNS answer would): refused, whatever the port.
    let (tools, ctx) = setup_allowing(
        &dir,
        Autonomy::Supervised,
        vec![format!("localhost:{port}")],
    );
    let r = run(
        &tools,
        &ctx,
        json!({"url": format!("http://localhost:{port}/hello")}),
    )
    .await;
    assert!(
        r.is_error && r.content.contains("loopback, private or link-local"),
        "{}",
        r.content
    );
    // A redirect from the allowed fake to a name that is not listed, or to
    // another port of the same address.
    let (tools, ctx) = setup(&dir, Autonomy::Supervised, &base);
    for path in ["/rebind", "/port"] {
        let r = run(&tools, &ctx, json!({"url": format!("{base}{path}")})).await;
        assert!(
            r.is_error && r.content.contains("request failed"),
            "{path}: {}",
            r.content
        );
        assert!(
            !r.content.contains("hello from the fake"),
            "{path}: {}",
            r.content
        );
    }
    // The Host header cannot be set.
    let r = run(
        &tools,
        &ctx,
        json!({"url": format!("{base}/hello"), "headers": {"Host": "metadata.google.internal"}}),
    )
    .await;
    assert!(r.is_error && r.content.contains("Host"), "{}", r.content);

    // Listed without a port: only 80 and 443.
    let (tools, ctx) = setup_allowing(&dir, Autonomy::Supervised, vec!["127.0.0.1".into()]);
    let r = run(&tools, &ctx, json!({"url": format!("{base}/hello")})).await;
    assert!(r.is_error && r.content.contains("port"), "{}", r.content);
    // The cloud metadata address, by a name that is allowed.
    let (tools, ctx) = setup_allowing(&dir, Autonomy::Supervised, vec!["localhost".into()]);
    let r = run(
        &tools,
        &ctx,
        json!({"url": "http://localhost/latest/meta-data/"}),
    )
    .await;
    assert!(r.is_error, "{}", r.content);

    // The positive control: the same fake, listed literally with its port.
    let (tools, ctx) = setup(&dir, Autonomy::Supervised, &base);
    let r = run(&tools, &ctx, json!({"url": format!("{base}/hello")})).await;
    assert!(
        !r.is_error && r.content.ends_with("hello from the fake"),
        "{}",
        r.content
    );
}
