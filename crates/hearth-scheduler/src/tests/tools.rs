//! The agent's cron tools: a job added from a chat is delivered to that
//! chat (and thread), and is listed and removed only there.

use serde_json::json;

use super::*;
use crate::security::{Autonomy, SecurityPolicy};
use hearth_tools::{ToolContext, ToolOrigin, ToolRegistry};

fn tool_ctx(dir: &tempfile::TempDir, origin: Option<ToolOrigin>) -> ToolContext {
    ToolContext::new(
        SecurityPolicy::new(&dir.path().join("ws"), Autonomy::Supervised, None).unwrap(),
        Duration::from_secs(5),
    )
    .with_origin(origin)
    .unwrap()
}

fn chat(chat: &str, thread: Option<&str>) -> Option<ToolOrigin> {
    Some(ToolOrigin {
        channel: "telegram".into(),
        reply_target: chat.into(),
        sender: "42".into(),
        thread_ts: thread.map(str::to_string),
        one_credential: false,
    })
}

#[tokio::test(start_paused = true)]
async fn cron_add_from_a_chat_delivers_to_that_chat() {
    let dir = tempfile::tempdir().unwrap();
    // 16:00 in Seoul on the 6th.
    let clock = Arc::new(TestClock::new(utc(6, 7, 0)));
    let s = open(&dir, &clock);
    let mut reg = ToolRegistry::default();
    for t in cron_tools(Arc::clone(&s)) {
        reg.register(t);
    }
    let here = tool_ctx(&dir, chat("555", Some("12")));
    let other = tool_ctx(&dir, chat("777", None));

    // "Remind me tomorrow at 9" in Seoul.
    let r = reg
        .run(
            "cron_add",
            json!({"prompt": "Remind me to take out the bins", "at": "2025-01-07 09:00", "tz": "Asia/Seoul"}),
            &here,
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    let r = reg
        .run(
            "cron_add",
            json!({"prompt": "x", "in": "1h", "channel": "telegram", "to": "777"}),
            &here,
        )
        .await;
    assert!(r.is_error, "a chat cannot aim a job elsewhere: {r:?}");
    let r = reg
        .run(
            "cron_add",
            json!({"prompt": "x", "in": "1h", "every": "1h"}),
            &here,
        )
        .await;
    assert!(r.is_error, "{r:?}");
    let r = reg
        .run(
            "cron_add",
            json!({"prompt": "x", "in": "1h"}),
            &tool_ctx(&dir, None),
        )
        .await;
    assert!(r.is_error && r.content.contains("`channel`"), "{r:?}");

    let listed = reg.run("cron_list", json!({}), &here).await;
    assert!(listed.content.contains("bins"), "{listed:?}");
    let elsewhere = reg.run("cron_list", json!({}), &other).await;
    assert_eq!(elsewhere.content, "no jobs are scheduled");
    let id = s.list().unwrap()[0].id;
    let r = reg.run("cron_remove", json!({"id": id}), &other).await;
    assert!(r.is_error, "another chat cannot remove it: {r:?}");
    // Another member of the same chat neither sees nor removes it.
    let member = tool_ctx(
        &dir,
        Some(ToolOrigin {
            sender: "43".into(),
            ..chat("555", Some("12")).unwrap()
        }),
    );
    let theirs = reg.run("cron_list", json!({}), &member).await;
    assert_eq!(theirs.content, "no jobs are scheduled");
    let r = reg.run("cron_remove", json!({"id": id}), &member).await;
    assert!(r.is_error, "another member cannot remove it: {r:?}");

    let sink = Recorder::new(&clock);
    run_for(&s, &sink, Duration::from_secs(86_400)).await;
    let fired = sink.jobs();
    assert_eq!(fired.len(), 1);
    assert_eq!(sink.times_of(id), [utc(7, 0, 0)], "09:00 in Seoul");
    assert_eq!(
        fired[0].delivery,
        Delivery {
            channel: "telegram".into(),
            to: "555".into(),
            thread: Some("12".into()),
            owner: Some("42".into()),
        }
    );
    assert_eq!(fired[0].payload, prompt("Remind me to take out the bins"));
    assert!(s.list().unwrap().is_empty());

    let r = reg
        .run(
            "cron_add",
            json!({"prompt": "stretch", "every": "2h"}),
            &here,
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    let id = s.list().unwrap()[0].id;
    let r = reg.run("cron_remove", json!({"id": id}), &here).await;
    assert!(!r.is_error, "{r:?}");
    assert!(s.list().unwrap().is_empty());
}

/// Whoever holds the gateway's token names any chat, so its chats share
/// one person's share of jobs: made-up names do not fill `max_jobs` for
/// everyone. The control: on Telegram, where an id is an account, two
/// people each keep their own share.
#[tokio::test(start_paused = true)]
async fn made_up_chat_names_share_one_credentials_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(TestClock::new(utc(6, 7, 0)));
    let s = Arc::new(
        Scheduler::open(
            &JobStore::path_in(dir.path()),
            SchedulerConfig {
                max_jobs: 10,
                max_jobs_per_person: 3,
                ..SchedulerConfig::default()
            },
            Arc::clone(&clock) as Arc<dyn Clock>,
        )
        .unwrap(),
    );
    let mut reg = ToolRegistry::default();
    for t in cron_tools(Arc::clone(&s)) {
        reg.register(t);
    }
    let add = json!({"prompt": "stretch", "in": "2h"});
    let gateway = |name: &str| {
        tool_ctx(
            &dir,
            Some(ToolOrigin {
                channel: "gateway".into(),
                reply_target: name.into(),
                sender: name.into(),
                thread_ts: None,
                one_credential: true,
            }),
        )
    };
    for name in ["a", "b", "c"] {
        let r = reg.run("cron_add", add.clone(), &gateway(name)).await;
        assert!(!r.is_error, "{r:?}");
    }
    let r = reg.run("cron_add", add.clone(), &gateway("d")).await;
    assert!(
        r.is_error,
        "a fourth made-up name is the same holder: {r:?}"
    );
    assert!(r.content.contains("max_jobs_per_person"), "{r:?}");
    for person in ["42", "43"] {
        for _ in 0..3 {
            let here = tool_ctx(
                &dir,
                Some(ToolOrigin {
                    sender: person.into(),
                    ..chat(person, None).unwrap()
                }),
            );
            let r = reg.run("cron_add", add.clone(), &here).await;
            assert!(!r.is_error, "{person}: {r:?}");
        }
    }
    assert_eq!(s.list().unwrap().len(), 9);
}
