//! Memory by meaning, end to end: a fact stored through the agent's own
//! `memory_store` tool (two people on one bot, the parrot as the model) is
//! found when asked in other words, through `memory_recall` and through
//! `hearth memory search`; never in the other person's scope. Controls:
//! each person's own fact is found by them, and with the embedding model
//! off the same question finds nothing (the words do not match).
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common::{Sandbox, assert_no_panic};
use crate::support::call;
use crate::two_people::{ADA, BOB, Family, family, family_with};
use serde_json::json;

const ADA_FACT: &str = "I'm allergic to penicillin";
const ADA_ASKS: &str = "What medicine can't I take?";
const BOB_FACT: &str = "I park the car on level 3 of the station garage";
const BOB_ASKS: &str = "Where did I leave the vehicle?";

async fn recall(f: &mut Family, who: i64, query: &str) -> String {
    f.say(who, &call("memory_recall", json!({"query": query})))
        .await
}

async fn store_both(f: &mut Family) {
    f.say(ADA, &call("memory_store", json!({"content": ADA_FACT})))
        .await;
    f.say(BOB, &call("memory_store", json!({"content": BOB_FACT})))
        .await;
}

/// `hearth memory search QUERY [--scope SCOPE]` on the family's data.
fn search(f: &Family, query: &str, scope: Option<&str>, embedding: &str) -> String {
    let mut args = vec!["search", query];
    if let Some(scope) = scope {
        args.extend(["--scope", scope]);
    }
    memory(f, &args, embedding)
}

/// `hearth memory ARGS…` on the family's data.
fn memory(f: &Family, args: &[&str], embedding: &str) -> String {
    let s = Sandbox::new();
    let config = s.config(&format!("[memory]\nembedding_model = {embedding:?}\n"));
    let mut cmd = s.hearth();
    cmd.env("HEARTH_DATA_DIR", &f.data_dir)
        .arg("--config")
        .arg(&config)
        .arg("memory")
        .args(args);
    let out = cmd.output().unwrap();
    assert_no_panic(&String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The scope `hearth memory list` shows for the entry holding `text`.
fn scope_of(listing: &str, text: &str) -> String {
    let line = listing.lines().find(|l| l.contains(text)).unwrap();
    line.split_whitespace().next().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_fact_is_found_in_other_words_and_never_in_another_persons_scope() {
    let mut f = family().await;
    store_both(&mut f).await;

    // Through the tool: each finds their own fact in other words...
    assert!(recall(&mut f, ADA, ADA_ASKS).await.contains("penicillin"));
    assert!(recall(&mut f, BOB, BOB_ASKS).await.contains("level 3"));
    // ...and never the other's, asked the same way.
    let bob = recall(&mut f, BOB, ADA_ASKS).await;
    assert!(
        !bob.contains("penicillin"),
        "Bob was shown Ada's memory: {bob}"
    );
    let ada = recall(&mut f, ADA, BOB_ASKS).await;
    assert!(
        !ada.contains("level 3"),
        "Ada was shown Bob's memory: {ada}"
    );

    // `hearth memory search`, every scope: the fact comes first.
    let all = search(&f, ADA_ASKS, None, "all-minilm-l6-v2");
    assert!(all.lines().next().unwrap().contains("penicillin"), "{all}");
    let listing = memory(&f, &["list"], "off");
    let (ada_scope, bob_scope) = (
        scope_of(&listing, "penicillin"),
        scope_of(&listing, "level 3"),
    );
    assert_ne!(ada_scope, bob_scope);
    // One scope: Bob's never holds Ada's fact; Ada's does.
    let in_bobs = search(&f, ADA_ASKS, Some(&bob_scope), "all-minilm-l6-v2");
    assert!(!in_bobs.contains("penicillin"), "{in_bobs}");
    let in_adas = search(&f, ADA_ASKS, Some(&ada_scope), "all-minilm-l6-v2");
    assert!(in_adas.contains("penicillin"), "{in_adas}");
    // By words alone the question finds nothing of it.
    let by_words = search(&f, ADA_ASKS, Some(&ada_scope), "off");
    assert!(!by_words.contains("penicillin"), "{by_words}");
    f.stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_embedding_model_off_memory_works_by_words_as_before() {
    let mut f = family_with(|c| c.memory.embedding_model = Some("off".into())).await;
    store_both(&mut f).await;
    // Other words find nothing; the fact's own words still do.
    assert!(!recall(&mut f, ADA, ADA_ASKS).await.contains("penicillin"));
    assert!(
        recall(&mut f, ADA, "penicillin allergy")
            .await
            .contains("penicillin")
    );
    f.stop.cancel();
}

#[test]
fn doctor_says_how_memories_are_found_and_names_a_missing_model() {
    let doctor = |memory: &str| {
        let s = Sandbox::new();
        let config = s.config(&format!(
            "[model]\npath = {:?}\n[memory]\n{memory}\n",
            crate::common::model(crate::common::SMOLLM2)
                .display()
                .to_string()
        ));
        let out = s
            .hearth()
            .arg("--config")
            .arg(&config)
            .arg("doctor")
            .output()
            .unwrap();
        assert_no_panic(&String::from_utf8_lossy(&out.stderr));
        let stdout = String::from_utf8(out.stdout).unwrap();
        let line = stdout
            .lines()
            .find(|l| l.contains("memory "))
            .unwrap()
            .to_string();
        (out.status.success(), line)
    };
    let (_, found) = doctor("");
    assert!(
        found.contains("by meaning, with") && found.contains("all-MiniLM-L6-v2"),
        "{found}"
    );
    let (_, off) = doctor("embedding_model = \"off\"");
    assert!(off.contains("by words only"), "{off}");
    let (ok, missing) = doctor("embedding_model = \"no-such-model.gguf\"");
    assert!(
        !ok && missing.starts_with("FAIL") && missing.contains("no-such-model.gguf"),
        "{missing}"
    );
}

/// Vectors of `sentences` from the original weights, by numpy
/// (tests/clients/bert_reference.py).
fn reference(sentences: &[&str]) -> Vec<Vec<f32>> {
    use std::io::Write;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = root.join("target/minilm-source");
    assert!(
        source.join("model.safetensors").is_file(),
        "the embedding model's source is missing: run `make test-embedding`"
    );
    let mut child = std::process::Command::new("python3")
        .arg(root.join("tests/clients/bert_reference.py"))
        .arg(&source)
        .env("PYTHONPATH", root.join("target/pyclients"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(sentences.join("\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "bert_reference.py failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn the_converted_model_gives_the_original_weights_vectors() {
    let sentences = [
        "I'm allergic to penicillin.",
        "What medicine can't I take?",
        "Übermorgen fährt der Zug um 7:05 nach Zürich — 🚆!",
        "plum-otter-42",
    ];
    let expected = reference(&sentences);
    let model = crate::common::embedding_model();
    let (got, tokens) = model
        .embed(
            sentences.iter().map(|s| s.to_string()).collect(),
            tokio_util::sync::CancellationToken::new(),
        )
        .unwrap();
    assert!(tokens > 0);
    for (i, sentence) in sentences.iter().enumerate() {
        let same = cosine(&got[i], &expected[i]);
        assert!(same > 0.999, "{sentence}: cosine {same} with the original");
        // Control: another sentence's vector is far from it.
        let other = cosine(&got[i], &expected[(i + 1) % sentences.len()]);
        assert!(
            other < 0.9,
            "{sentence}: cosine {other} with another sentence"
        );
    }
    // A text longer than the model's 512 positions is read in pieces.
    let long = "The lighthouse keeper climbed the stairs again. ".repeat(120);
    let (vectors, tokens) = model.embed(vec![long], Default::default()).unwrap();
    assert!(tokens > 512, "{tokens}");
    assert!((cosine(&vectors[0], &vectors[0]) - 1.0).abs() < 1e-3);
}
