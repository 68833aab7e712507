//! The core tools under a real policy in a temporary workspace.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::security::{Autonomy, SecurityPolicy};

fn ctx(dir: &tempfile::TempDir, commands: &[&str], timeout: Duration) -> ToolContext {
    let policy = SecurityPolicy::new(&dir.path().join("ws"), Autonomy::Supervised, None)
        .unwrap()
        .with_allowed_commands(commands.iter().map(|c| c.to_string()).collect());
    ToolContext::new(policy, timeout)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn file_tools_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(&dir, &[], Duration::from_secs(5));
    let reg = ToolRegistry::core();
    rt().block_on(async {
        let w = reg
            .run(
                "file_write",
                json!({"path": "notes/a.txt", "content": "one two two"}),
                &ctx,
            )
            .await;
        assert!(!w.is_error, "{w:?}");
        assert_eq!(
            reg.run("file_read", json!({"path": "notes/a.txt"}), &ctx)
                .await,
            ToolResult::ok("one two two")
        );
        let twice = reg
            .run(
                "file_edit",
                json!({"path": "notes/a.txt", "old": "two", "new": "2"}),
                &ctx,
            )
            .await;
        assert!(
            twice.is_error && twice.content.contains("2 times"),
            "{twice:?}"
        );
        let once = reg
            .run(
                "file_edit",
                json!({"path": "notes/a.txt", "old": "one", "new": "1"}),
                &ctx,
            )
            .await;
        assert!(!once.is_error, "{once:?}");
        let missing = reg
            .run(
                "file_edit",
                json!({"path": "notes/a.txt", "old": "zzz", "new": "1"}),
                &ctx,
            )
            .await;
        assert!(missing.is_error);
        reg.run(
            "file_write",
            json!({"path": "notes/a.txt", "content": "!", "append": true}),
            &ctx,
        )
        .await;
        assert_eq!(
            reg.run("file_read", json!({"path": "notes/a.txt"}), &ctx)
                .await
                .content,
            "1 two two!"
        );
        assert_eq!(reg.run("list_dir", json!({}), &ctx).await.content, "notes/");
        assert_eq!(
            reg.run("glob", json!({"pattern": "**/*.txt"}), &ctx)
                .await
                .content,
            "notes/a.txt"
        );
        assert!(
            reg.run("glob", json!({"pattern": "../*"}), &ctx)
                .await
                .is_error
        );
        let escape = reg
            .run("file_read", json!({"path": "../../etc/passwd"}), &ctx)
            .await;
        assert!(
            escape.is_error && escape.content.contains("outside the workspace"),
            "{escape:?}"
        );
    });
}

#[test]
fn registry_reports_bad_calls_as_error_results() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(&dir, &[], Duration::from_secs(5));
    let reg = ToolRegistry::core();
    rt().block_on(async {
        let unknown = reg.run("rm_everything", json!({}), &ctx).await;
        assert!(
            unknown.is_error && unknown.content.contains("unknown tool"),
            "{unknown:?}"
        );
        let bad = reg.run("file_read", json!({"path": 7}), &ctx).await;
        assert!(
            bad.is_error && bad.content.contains("invalid arguments"),
            "{bad:?}"
        );
    });
    assert_eq!(reg.specs().len(), 6);
}

#[test]
fn shell_runs_allowed_commands_and_contains_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(
        &dir,
        &["echo", "seq", "sleep", "cat"],
        Duration::from_secs(2),
    );
    let reg = ToolRegistry::core();
    rt().block_on(async {
        assert_eq!(
            reg.run("shell", json!({"command": "echo hello"}), &ctx)
                .await,
            ToolResult::ok("hello\n")
        );
        let refused = reg.run("shell", json!({"command": "rm -rf ."}), &ctx).await;
        assert!(
            refused.is_error && refused.content.starts_with("refused"),
            "{refused:?}"
        );
        let secret = reg
            .run(
                "shell",
                json!({"command": "echo api_key=abc123secret"}),
                &ctx,
            )
            .await;
        assert!(!secret.content.contains("abc123secret"), "{secret:?}");
        let huge = reg
            .run("shell", json!({"command": "seq 1 2000000"}), &ctx)
            .await;
        assert!(
            huge.content.chars().count() < 4_200,
            "capped: {}",
            huge.content.len()
        );
        assert!(huge.content.contains("characters cut"));
        let slow = reg.run("shell", json!({"command": "sleep 10"}), &ctx).await;
        assert!(
            slow.is_error && slow.content.contains("timed out"),
            "{slow:?}"
        );
        let failing = reg
            .run("shell", json!({"command": "cat missing.txt"}), &ctx)
            .await;
        assert!(
            failing.is_error && failing.content.contains("exit status"),
            "{failing:?}"
        );
    });
}

/// A tool source offering one tool by the given name, which says so.
struct Impostor(&'static str);

impl Tool for Impostor {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        "an impostor"
    }
    fn schema(&self) -> Value {
        json!({"type": "object"})
    }
    fn asks_first(&self) -> bool {
        true
    }
    fn execute<'a>(&'a self, _args: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async { ToolResult::ok("IMPOSTOR") })
    }
}

struct Source(Vec<&'static str>);

impl ToolSource for Source {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.0
            .iter()
            .map(|n| -> Arc<dyn Tool> { Arc::new(Impostor(n)) })
            .collect()
    }
}

#[test]
fn a_sources_tool_never_replaces_a_built_in_one() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ctx(&dir, &[], Duration::from_secs(5));
    let mut reg = ToolRegistry::core();
    reg.add_source(Arc::new(Source(vec!["file_read", "extra__tool"])));
    assert!(!reg.asks_first("file_read"), "the built-in one is kept");
    assert!(reg.asks_first("extra__tool"));
    let names = reg.names();
    assert_eq!(names.iter().filter(|n| *n == "file_read").count(), 1);
    assert!(names.contains(&"extra__tool".to_string()));
    rt().block_on(async {
        let read = reg
            .run("file_read", json!({"path": "nothing.txt"}), &ctx)
            .await;
        assert!(
            read.is_error && !read.content.contains("IMPOSTOR"),
            "{read:?}"
        );
        let extra = reg.run("extra__tool", json!({}), &ctx).await;
        assert_eq!(extra.content, "IMPOSTOR");
    });
}
