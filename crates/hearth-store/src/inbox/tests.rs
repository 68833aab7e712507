use super::*;
use crate::channels::ChannelMessage;
use crate::chat::ChatMessage;

fn message(id: &str) -> ChannelMessage {
    ChannelMessage {
        id: id.into(),
        sender: "7".into(),
        reply_target: "7".into(),
        content: format!("question {id}"),
        channel: "telegram".into(),
        timestamp: 1,
        thread_ts: None,
        interruption_scope_id: None,
        initiator: Default::default(),
        asked: None,
        images: Vec::new(),
        audio: None,
        documents: Vec::new(),
    }
}

async fn admitted(inbox: &Inbox, m: &ChannelMessage) -> Option<Entry> {
    let admission = inbox.admit(m).await.unwrap();
    if admission.known.is_none() {
        admission.synced.await.unwrap().unwrap();
    }
    admission.known
}

#[tokio::test]
async fn a_message_is_recorded_once_and_moves_to_answered_with_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    let inbox = Inbox::open(dir.path()).unwrap();
    let m = message("7:1");
    assert!(admitted(&inbox, &m).await.is_none(), "new");
    let again = admitted(&inbox, &m).await.expect("known the second time");
    assert_eq!(again.state, State::Received);

    let key = "telegram_7_7".to_string();
    inbox
        .start(&m, Some((key.clone(), vec![ChatMessage::user("q")])))
        .await
        .unwrap();
    // A second start (after a crash) counts, and does not append again.
    inbox
        .start(&m, Some((key.clone(), vec![ChatMessage::user("q")])))
        .await
        .unwrap();
    inbox
        .replying(
            &m,
            "the answer",
            Some((key.clone(), vec![ChatMessage::assistant("a")])),
        )
        .await
        .unwrap();
    inbox.sent(&m, 0, "41");
    inbox.finish(&m, State::Answered, None);
    inbox.flush().await.unwrap();

    let entry = inbox.find(&m).await.unwrap().unwrap();
    assert_eq!(entry.state, State::Answered);
    assert_eq!(entry.attempts, 2);
    assert_eq!(entry.reply.as_deref(), Some("the answer"));
    assert_eq!(entry.parts.get(&0).map(String::as_str), Some("41"));
    let history =
        crate::history::HistoryStore::open(&crate::history::HistoryStore::path_in(dir.path()))
            .unwrap()
            .load(&key, 50)
            .unwrap();
    let roles: Vec<_> = history.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(roles, ["q", "a"], "the user turn once, then the reply");
    assert!(inbox.open_entries().await.unwrap().is_empty());
}

#[tokio::test]
async fn open_entries_survive_a_reopen_in_order_and_the_reader_sees_them() {
    let dir = tempfile::tempdir().unwrap();
    {
        let inbox = Inbox::open(dir.path()).unwrap();
        for id in ["7:1", "7:2", "7:3"] {
            admitted(&inbox, &message(id)).await;
        }
        inbox.start(&message("7:2"), None).await.unwrap();
        inbox.replying(&message("7:3"), "r", None).await.unwrap();
        inbox.sent(&message("7:3"), 0, "51");
        inbox.finish(&message("7:1"), State::Failed, Some("blocked"));
        inbox.flush().await.unwrap();
    }
    let inbox = Inbox::open(dir.path()).unwrap();
    let open = inbox.open_entries().await.unwrap();
    let ids: Vec<_> = open.iter().map(|e| e.message.id.as_str()).collect();
    assert_eq!(ids, ["7:2", "7:3"]);
    assert_eq!(
        open[1].parts.keys().copied().collect::<Vec<_>>(),
        [0],
        "the delivered part is known"
    );
    let failed = read(dir.path(), &[State::Failed]).unwrap().unwrap();
    assert_eq!(failed[0].error.as_deref(), Some("blocked"));
    let counts = count(dir.path()).unwrap().unwrap();
    assert_eq!(counts.get(&State::Failed), Some(&1));
    assert!(
        summary(&counts).contains("1 failed"),
        "{}",
        summary(&counts)
    );
}

#[test]
fn a_damaged_store_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = crate::history::HistoryStore::path_in(dir.path());
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    let e = Inbox::open(dir.path()).err().expect("refused").to_string();
    assert!(e.contains("history.sqlite3"), "{e}");
}

#[test]
fn no_inbox_yet_reads_as_none() {
    let dir = tempfile::tempdir().unwrap();
    assert!(read(dir.path(), &[State::Failed]).unwrap().is_none());
}

#[tokio::test]
async fn an_arrival_is_acknowledged_only_once_its_sync_succeeded() {
    let dir = tempfile::tempdir().unwrap();
    let inbox = Inbox::open(dir.path()).unwrap();
    let wal = dir.path().join("history.sqlite3-wal");
    assert!(wal.exists(), "SQLite keeps its log beside the database");
    // The log's name is gone (as on a disk that fails): SQLite still
    // commits into the file it holds open, but the sync cannot reach it.
    std::fs::remove_file(&wal).unwrap();
    let admission = inbox.admit(&message("7:1")).await.unwrap();
    let synced = admission.synced.await.unwrap();
    assert!(
        matches!(&synced, Err(InboxError::Commit { why, .. }) if why.contains("history.sqlite3-wal")),
        "{synced:?}"
    );
    // Steps that need no sync still commit.
    inbox.start(&message("7:1"), None).await.unwrap();
}

#[tokio::test]
async fn a_picture_waits_in_the_record_until_its_turn_is_in_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let m = ChannelMessage {
        images: vec![crate::chat::Image::new(b"PHOTO".to_vec())],
        ..message("7:9")
    };
    {
        let inbox = Inbox::open(dir.path()).unwrap();
        assert!(admitted(&inbox, &m).await.is_none());
    }
    // A restart before its turn: the record still holds the picture.
    let inbox = Inbox::open(dir.path()).unwrap();
    let open = inbox.open_entries().await.unwrap();
    assert_eq!(open[0].message.images, m.images);
    let key = "telegram_7_7".to_string();
    let turn = ChatMessage {
        images: m.images.clone(),
        ..ChatMessage::user("q")
    };
    inbox
        .start(&m, Some((key.clone(), vec![turn])))
        .await
        .unwrap();
    inbox
        .replying(
            &m,
            "a",
            Some((key.clone(), vec![ChatMessage::assistant("a")])),
        )
        .await
        .unwrap();
    inbox.flush().await.unwrap();
    let entry = inbox.find(&m).await.unwrap().unwrap();
    assert!(entry.message.images.is_empty(), "the record let it go");
    assert_eq!(entry.message.content, m.content, "and kept the rest");
    let history =
        crate::history::HistoryStore::open(&crate::history::HistoryStore::path_in(dir.path()))
            .unwrap()
            .load(&key, 50)
            .unwrap();
    assert_eq!(history[0].images, m.images, "the history has it");
}

/// What a retention sweep deleted leaves the running inbox's set of known
/// messages too, so a daemon that never restarts holds no more ids than
/// records; a message still recorded stays known.
#[tokio::test]
async fn ids_a_sweep_deleted_are_forgotten_and_the_rest_stay_known() {
    let dir = tempfile::tempdir().unwrap();
    let inbox = Inbox::open(dir.path()).unwrap();
    let (old, recent) = (message("7:1"), message("7:2"));
    for m in [&old, &recent] {
        assert!(admitted(&inbox, m).await.is_none());
        inbox.finish(m, State::Answered, None);
    }
    inbox.flush().await.unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("history.sqlite3")).unwrap();
    conn.execute(
        "UPDATE inbox SET updated = updated - 40 * 86400 WHERE message_id = '7:1'",
        [],
    )
    .unwrap();
    let limits = crate::config::RetentionConfig::default();
    let now = chrono::Utc::now().timestamp();
    // The retention sweep's step for the inbox (`retention::sweep` runs it
    // in a transaction on this file, above this crate).
    let swept_keys = forget_finished(&conn, limits.inbox_days, now).unwrap();
    assert_eq!(swept_keys, [("telegram".to_string(), "7:1".to_string())]);
    inbox.forget_known(&swept_keys);
    assert!(
        lock(&inbox.known).len() == 1,
        "only the recorded one is known"
    );
    // Positive control: the recent one is still recognised as a repeat.
    assert!(admitted(&inbox, &recent).await.is_some());
}
