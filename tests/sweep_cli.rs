//! A person who only uses the command line keeps bounded stores too:
//! `hearth ask` sweeps the data folder to `[retention]` before it answers.
//! A conversation quiet past `history_days` is forgotten; the control, a
//! recent one, is kept, and so is the turn just asked.

use crate::common::{self, Sandbox, assert_no_panic};
use hearth::chat::ChatMessage;
use hearth::history::HistoryStore;

#[test]
fn hearth_ask_forgets_a_conversation_quiet_past_its_limit() {
    let s = Sandbox::new();
    let data = s.path("data");
    std::fs::create_dir_all(&data).unwrap();
    let path = data.join("history.sqlite3");
    let mut history = HistoryStore::open(&path).unwrap();
    for conversation in ["quiet", "recent"] {
        history
            .append(
                conversation,
                &[ChatMessage::user("hi"), ChatMessage::assistant("hello")],
            )
            .unwrap();
    }
    drop(history);
    let two_years_ago = chrono::Utc::now().timestamp() - 2 * 365 * 86_400;
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE messages SET created = ?1 WHERE conversation = 'quiet'",
            [two_years_ago],
        )
        .unwrap();
    let config = s.config(&format!(
        "[model]\npath = \"{}\"\n[generation]\ntemperature = 0.0\nmax_tokens = 8\n[retention]\nhistory_days = 365\n",
        common::model(common::SMOLLM2).display()
    ));
    let out = s
        .hearth()
        .arg("--config")
        .arg(&config)
        .args(["ask", "--session", "now", "Say hi."])
        .output()
        .unwrap();
    assert_no_panic(&String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let history = HistoryStore::open(&path).unwrap();
    assert!(
        history.load("quiet", 50).unwrap().is_empty(),
        "the quiet conversation was kept"
    );
    assert_eq!(history.load("recent", 50).unwrap().len(), 2);
}
