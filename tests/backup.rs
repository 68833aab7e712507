//! `hearth backup` while the daemon answers a stream of messages, and
//! `hearth restore` into the stopped daemon's folder: every conversation
//! comes back whole and its next turn is answered with its history.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::assert_no_panic;
use crate::support::api_daemon;

const CHATS: [&str; 3] = ["kitchen", "garden", "garage"];

/// One turn of the assistant in chat `chat`: the reply's text and usage.
async fn say(base: &str, chat: &str, text: &str) -> (String, Value) {
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(crate::support::ways_in::TOKEN)
        .header("X-Hearth-Chat", chat)
        .timeout(Duration::from_secs(120))
        .json(&json!({"model": "hearth", "max_tokens": 12,
            "messages": [{"role": "user", "content": text}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let reply: Value = response.json().await.unwrap();
    let text = reply["choices"][0]["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (text, reply["usage"].clone())
}

/// Every conversation's turns, in order: (role, content).
fn conversations(db: &Path) -> BTreeMap<String, Vec<(String, String)>> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut all: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut stmt = conn
        .prepare("SELECT conversation, role, content FROM messages ORDER BY id")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    for row in rows {
        let (conversation, role, content): (String, String, String) = row.unwrap();
        all.entry(conversation).or_default().push((role, content));
    }
    all
}

fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_during_a_stream_of_messages_restores_every_conversation() {
    let running = api_daemon::daemon_with("", "").await;
    for chat in CHATS {
        say(
            &running.base,
            chat,
            &format!("Hello from the {chat}. Say hi."),
        )
        .await;
    }
    // More turns stream in while the backup is taken.
    let base = running.base.clone();
    let stream = tokio::spawn(async move {
        for round in 0..5 {
            for chat in CHATS {
                say(&base, chat, &format!("Name a colour, number {round}.")).await;
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let dest = running.data_dir().with_file_name("backup");
    let dest_arg = dest.to_str().unwrap().to_string();
    let out = tokio::task::block_in_place(|| running.cli(&["backup", &dest_arg, "--kv"]));
    let text = said(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Backed up"), "{text}");
    stream.await.unwrap();

    // Consistent: every conversation is there as it was at one moment (a
    // turn's message is stored when it arrives, its reply when it is
    // made), while the stream went on past it.
    let backed = conversations(&dest.join("history.sqlite3"));
    let live = conversations(&running.data_dir().join("history.sqlite3"));
    assert_eq!(backed.len(), CHATS.len(), "{backed:?}");
    for (key, turns) in &backed {
        assert!(turns.len() >= 2, "{key}: {turns:?}");
        let roles: Vec<&str> = turns.iter().map(|t| t.0.as_str()).collect();
        assert!(
            roles
                .iter()
                .enumerate()
                .all(|(i, r)| *r == ["user", "assistant"][i % 2]),
            "{key}: {roles:?}"
        );
        assert_eq!(
            &live[key][..turns.len()],
            &turns[..],
            "{key}: a prefix of the live one"
        );
    }
    let count =
        |c: &BTreeMap<String, Vec<(String, String)>>| c.values().map(Vec::len).sum::<usize>();
    assert!(
        count(&backed) < count(&live),
        "the backup was taken while messages came in: {} of {} rows",
        count(&backed),
        count(&live)
    );
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dest.join("backup.json")).unwrap()).unwrap();
    let files: Vec<&str> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(
        files.contains(&"history.sqlite3") && files.contains(&"config.toml"),
        "{files:?}"
    );

    // Hostile: with the daemon running, restore is refused and nothing
    // moves.
    let out = tokio::task::block_in_place(|| running.cli(&["restore", &dest_arg]));
    let text = said(&out);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("another hearth daemon is using"), "{text}");
    assert_no_panic(&text);
    assert_eq!(
        conversations(&running.data_dir().join("history.sqlite3")),
        live
    );

    // Positive control: stopped, it restores; the daemon starts on it.
    let running = running
        .restart_after(|r| {
            let out = r.cli(&["restore", &dest_arg]);
            assert!(out.status.success(), "{}", said(&out));
        })
        .await;
    // Every conversation is back as it was backed up. A message that was
    // waiting for its reply then is still in the inbox and the restored
    // daemon may answer it at once: its reply may follow, nothing else.
    let restored = conversations(&running.data_dir().join("history.sqlite3"));
    assert_eq!(
        restored.keys().collect::<Vec<_>>(),
        backed.keys().collect::<Vec<_>>()
    );
    for (key, turns) in &backed {
        let now = &restored[key];
        assert_eq!(&now[..turns.len()], &turns[..], "{key}: {now:?}");
        let waiting = turns.last().is_some_and(|t| t.0 == "user");
        assert!(
            now.len() == turns.len()
                || (waiting && now.len() == turns.len() + 1 && now[turns.len()].0 == "assistant"),
            "{key}: restored {now:?} from {turns:?}"
        );
    }

    // The next turn of every conversation is answered with its history:
    // its prompt holds the earlier turns.
    let (_, fresh) = say(&running.base, "new", "What is my favourite colour?").await;
    for chat in CHATS {
        let (text, usage) = say(&running.base, chat, "What is my favourite colour?").await;
        assert!(!text.trim().is_empty(), "{chat}");
        assert!(
            usage["prompt_tokens"].as_u64() > fresh["prompt_tokens"].as_u64(),
            "{chat}: {usage} against a new chat's {fresh}"
        );
    }
    let after = conversations(&running.data_dir().join("history.sqlite3"));
    for (key, turns) in &backed {
        let now = &after[key];
        assert_eq!(&now[..turns.len()], &turns[..]);
        // The new turn is the last (a message left unanswered when the
        // backup was taken keeps its place before it).
        let last = &now[now.len() - 2..];
        assert_eq!(last[0].1, "What is my favourite colour?", "{key}: {now:?}");
        assert_eq!(last[1].0, "assistant", "{key}: {now:?}");
    }
}
