//! Documents made by real software, not by the project's own PDF writer:
//! groff typesets a 30-page syllabus (`groff -ms -Tpdf`, gropdf), qpdf
//! rewrites it the ways other producers write PDFs (object and
//! cross-reference streams, linearized, encrypted with an empty user
//! password) and locks one with a password. Each is sent through the fake
//! Bot API; what the model was given is read off the recording provider.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::path::Path;
use std::process::Command;

use crate::documents::{bot, document, on_page, send};
use hearth::pipeline::Outcome;

const LATE: &str = "Late submissions lose five points for each day past the deadline.";

/// A 30-page syllabus typeset by groff, `LATE` on page 17.
fn typeset(dir: &Path) -> std::path::PathBuf {
    let mut ms = vec![".LP".to_string()];
    for page in 1..=30 {
        ms.push(format!("Statistics 200 syllabus, page {page}."));
        ms.push("Seminar notes and weekly readings are posted on the course page. ".repeat(4));
        if page == 17 {
            ms.push(".PP".into());
            ms.push(LATE.into());
        }
        if page < 30 {
            ms.push(".bp".into());
        }
    }
    let source = dir.join("syllabus.ms");
    std::fs::write(&source, ms.join("\n") + "\n").unwrap();
    let pdf = dir.join("syllabus.pdf");
    let out = Command::new("groff")
        .args(["-ms", "-Tpdf"])
        .arg(&source)
        .output()
        .expect("groff runs (make test-documents installs it)");
    assert!(
        out.status.success() && out.stdout.starts_with(b"%PDF"),
        "{out:?}"
    );
    std::fs::write(&pdf, out.stdout).unwrap();
    pdf
}

/// `qpdf ARGS… IN OUT`.
fn qpdf(args: &[&str], input: &Path, output: &Path) -> Vec<u8> {
    let mut cmd = Command::new("qpdf");
    if args.first() == Some(&"--encrypt") {
        cmd.args(args).arg("--").arg(input).arg(output);
    } else {
        cmd.args(args).arg(input).arg(output);
    }
    let out = cmd
        .output()
        .expect("qpdf runs (make test-documents installs it)");
    assert!(out.status.success(), "{args:?}: {out:?}");
    std::fs::read(output).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdfs_typeset_by_groff_and_rewritten_by_qpdf_give_the_model_page_17() {
    let dir = tempfile::tempdir().unwrap();
    let typeset = typeset(dir.path());
    let out = |name: &str| dir.path().join(name);
    let made = [
        ("groff.pdf", std::fs::read(&typeset).unwrap()),
        (
            "streams.pdf",
            qpdf(
                &["--object-streams=generate"],
                &typeset,
                &out("streams.pdf"),
            ),
        ),
        (
            "linear.pdf",
            qpdf(&["--linearize"], &typeset, &out("linear.pdf")),
        ),
        (
            "sealed.pdf",
            qpdf(
                &["--encrypt", "", "owner-pass", "256"],
                &typeset,
                &out("sealed.pdf"),
            ),
        ),
    ];
    let locked = qpdf(
        &["--encrypt", "secret", "owner-pass", "256"],
        &typeset,
        &out("locked.pdf"),
    );
    let (mut bot, echo, library) = bot().await;
    for (name, bytes) in made {
        let sent = document(42, name, bytes, "What happens to late submissions?");
        let (outcome, given) = send(&mut bot, &echo, sent).await;
        assert_eq!(outcome, Outcome::Replied, "{name}");
        let given = given.unwrap_or_else(|| panic!("{name}: the model was asked"));
        assert!(on_page(&given, name, 17).contains(LATE), "{name}: {given}");
        assert!(
            !given.contains("syllabus, page 3."),
            "{name}: the pieces, not the whole: {given}"
        );
        let kept = library.store.list(&["telegram:42"]).unwrap();
        assert_eq!((kept.len(), kept[0].pages), (1, 30), "{name}: {kept:?}");
        // The same text again would be the same document: forget it, so the
        // next one is read as itself.
        assert!(library.store.forget(&["telegram:42"], kept[0].id).unwrap());
    }
    // Locked with a password: a reply that says so, and the model is not asked.
    let asked = echo.requests().len();
    let sent = document(
        43,
        "locked.pdf",
        locked,
        "What happens to late submissions?",
    );
    let (_, given) = send(&mut bot, &echo, sent).await;
    assert!(given.is_none() && echo.requests().len() == asked);
    let said = bot.sent_to(43).join("\n");
    assert!(said.contains("locked with a password"), "{said}");
}
