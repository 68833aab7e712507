//! Documents through the other ways in: `file` parts from the real
//! `openai` client to the real daemon (SmolLM2; what the model was given
//! shows in its prompt tokens, since the test model cannot be trusted to
//! phrase a page), and documents over the web socket to the pipeline (a
//! recording provider shows what was given, page by page).
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use base64::Engine as _;
use serde_json::{Value, json};

use crate::common::documents::{pdf, reader};
use crate::support::api_daemon::{SERVED, daemon_with};
use crate::support::ways_in::{TOKEN, python};

const LATE: &str = "Late submissions lose five points for each day past the deadline.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_client_sends_files_the_assistant_reads_keeps_and_cites() {
    let run = daemon_with("", "").await;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    let notes = pdf(&[vec![
        "Lab notes: bring safety glasses to every session.".into(),
    ]]);
    let program = [b"\x7fELF\x02\x01\x01".as_slice(), &[0u8; 2048]].concat();
    let files = json!({
        "reader": b64(&reader(30, 17, LATE)),
        "notes": b64(&notes),
        "program": b64(&program),
    });
    let seen = python(
        "openai_files.py",
        &[&run.base, TOKEN, SERVED],
        &files.to_string(),
    )
    .await;
    let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("{seen}"));
    // The pieces of the reader that answer go into the turn: hundreds of
    // tokens more than the same question without it.
    assert!(
        n(&seen["with"]["prompt"]) > n(&seen["without"]["prompt"]) + 300,
        "{seen}"
    );
    // Kept for the chat's later questions, and only for that chat.
    assert!(
        n(&seen["later"]["prompt"]) > n(&seen["other"]["prompt"]) + 150,
        "{seen}"
    );
    assert!(n(&seen["responses"]["prompt"]) > 0, "{seen}");
    let served = &seen["served"];
    assert_eq!(served["status"], 400, "{seen}");
    assert!(
        served["message"]
            .as_str()
            .unwrap()
            .contains("reads no files"),
        "{seen}"
    );
    assert_eq!(seen["file_id"]["code"], "file_id_not_kept", "{seen}");
    let program = seen["program"]["text"].as_str().unwrap();
    assert!(
        program.contains("could not read syllabus.pdf") && program.contains("a program (ELF)"),
        "{seen}"
    );
    assert!(
        n(&seen["program_control"]["prompt"]) > n(&seen["without"]["prompt"]) + 300,
        "the same chat reads a good file next: {seen}"
    );
    // `hearth docs` shows whose they are and finds page 17.
    let listed = run.cli(&["docs", "list"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("gateway:student reader.pdf (pdf, 30 pages)"),
        "{listed}"
    );
    assert!(listed.contains("gateway:responses notes.pdf"), "{listed}");
    assert!(!listed.contains("syllabus.pdf"), "{listed}");
    let found = run.cli(&[
        "docs",
        "search",
        "late submissions",
        "--scope",
        "gateway:student",
    ]);
    let found = String::from_utf8_lossy(&found.stdout);
    assert!(found.contains("reader.pdf, page 17:"), "{found}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_over_the_web_socket_reach_the_turn_by_page_and_stay_with_their_chat() {
    use crate::support::last_user;
    use crate::support::ways_in::{frame, gateway, open, send, turn};

    let run = gateway().await;
    let given = || last_user(run.typist.parrot.requests.lock().unwrap().last().unwrap());
    let mut socket = open(run.addr, "student").await;
    file(&mut socket, "reader.pdf", reader(30, 17, LATE)).await;
    send(
        &mut socket,
        json!({"type": "message", "text": "What happens to late submissions?"}),
    )
    .await;
    turn(&mut socket).await;
    let seen = given();
    assert!(
        seen.contains("reader.pdf, page 17:") && seen.contains(LATE),
        "{seen}"
    );
    assert!(
        !seen.contains("Course reader, page 3."),
        "the pieces, not the whole: {seen}"
    );

    // A document alone is a turn too; a program named as a PDF gets a clear
    // reply, and the good file after it in the same chat is read (the control).
    let program = [b"\x7fELF\x02\x01\x01".as_slice(), &[0u8; 2048]].concat();
    file(&mut socket, "syllabus.pdf", program).await;
    send(&mut socket, json!({"type": "message", "text": ""})).await;
    let done = turn(&mut socket).await.pop().unwrap();
    let said = done["text"].as_str().unwrap();
    assert!(
        said.contains("could not read syllabus.pdf") && said.contains("ELF"),
        "{done}"
    );
    let notes = pdf(&[vec![
        "Lab notes: bring safety glasses to every session.".into(),
    ]]);
    file(&mut socket, "notes.pdf", notes).await;
    send(&mut socket, json!({"type": "message", "text": ""})).await;
    turn(&mut socket).await;
    assert!(given().contains("bring safety glasses"), "{}", given());

    // Five documents for one message: the fifth is refused before it is sent.
    for i in 0..4 {
        file(&mut socket, &format!("n{i}.txt"), b"x".to_vec()).await;
    }
    send(&mut socket, json!({"type": "file", "name": "n4.txt"})).await;
    let refused = frame(&mut socket).await;
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("at most 4 documents"),
        "{refused}"
    );

    // Another chat never sees the student's reader.
    let mut other = open(run.addr, "someone-else").await;
    send(
        &mut other,
        json!({"type": "message", "text": "Tell me about late submissions again"}),
    )
    .await;
    turn(&mut other).await;
    let seen = given();
    assert!(
        !seen.contains(LATE) && !seen.contains("reader.pdf"),
        "{seen}"
    );
    let kept = run.library.store.list(&["gateway:student"]).unwrap();
    let names: Vec<&str> = kept.iter().map(|d| d.name.as_str()).collect();
    assert!(
        names.contains(&"reader.pdf") && names.contains(&"notes.pdf"),
        "{names:?}"
    );
    assert!(!names.contains(&"syllabus.pdf"), "{names:?}");
}

/// A document over the socket: its `file` frame, then its bytes.
async fn file(socket: &mut crate::support::ways_in::Socket, name: &str, bytes: Vec<u8>) {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    crate::support::ways_in::send(socket, json!({"type": "file", "name": name})).await;
    socket.send(Message::Binary(bytes.into())).await.unwrap();
}
