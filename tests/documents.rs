//! Documents sent on Telegram, through the fake Bot API to the pipeline:
//! read in the document sandbox (poppler's `pdftotext`, hearth's own reader
//! for DOCX), kept by person, and given to the model by the page that
//! answers. What the model was given is read off a recording provider (the
//! small test models cannot be trusted to phrase a page number). Hostile
//! files each get a clear reply, and a good file after each is still read.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common::documents::{bomb, docx, docx_bomb, empty_pages, reader, scripted, text_bomb};
use crate::support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use hearth::config::{Config, StreamMode};
use hearth::documents::{Cage, CageLimits, DocumentStore, Library, TurnLimits};
use hearth::pipeline::Outcome;
use support::telegram_bot::{Bot, start, telegram_config};
use support::telegram_fake::{FakeTelegram, Incoming};
use support::{SlowEcho, config, last_user, local};

const LATE: &str = "Late submissions lose five points for each day past the deadline.";

pub(crate) fn library(cfg: &Config) -> Arc<Library> {
    Arc::new(Library {
        store: Arc::new(DocumentStore::open(&DocumentStore::path_in(&cfg.data_dir)).unwrap()),
        cage: Cage::new(
            cfg.data_dir.join("documents-work"),
            PathBuf::from(env!("CARGO_BIN_EXE_hearth")),
            CageLimits::default(),
        ),
        limits: TurnLimits::default(),
    })
}

pub(crate) async fn bot() -> (Bot, Arc<SlowEcho>, Arc<Library>) {
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["42", "43"], StreamMode::Off);
    let echo = SlowEcho::new("local", Duration::ZERO);
    let library = library(&cfg);
    let shelf = library.clone();
    let bot = start(fake, home, cfg, local(echo.clone()), |b| b.documents(shelf));
    (bot, echo, library)
}

pub(crate) fn document(user: i64, name: &str, bytes: Vec<u8>, caption: &str) -> Incoming {
    let mut m = Incoming::text(user, "");
    m.text = None;
    m.document = Some((name.to_string(), bytes));
    m.caption = Some(caption.to_string());
    m
}

/// What `given` shows of `file`'s page `page`: the text after its
/// citation line, up to the next piece.
pub(crate) fn on_page<'a>(given: &'a str, file: &str, page: usize) -> &'a str {
    let head = format!("{file}, page {page}:\n");
    let Some(start) = given.find(&head) else {
        return "";
    };
    let rest = &given[start + head.len()..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

/// Sends `message`; its outcome, and what the model was given if it was asked.
pub(crate) async fn send(
    bot: &mut Bot,
    echo: &SlowEcho,
    message: Incoming,
) -> (Outcome, Option<String>) {
    let before = echo.requests().len();
    bot.fake.inject(message);
    let outcome = bot.reports(1).await.remove(0).outcome;
    let requests = echo.requests();
    (outcome, requests.get(before).map(last_user))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thirty_page_pdf_gives_the_model_its_page_17_and_only_its_owner_finds_it() {
    let (mut bot, echo, library) = bot().await;
    let pdf = reader(30, 17, LATE);
    let (outcome, given) = send(
        &mut bot,
        &echo,
        document(42, "reader.pdf", pdf, "What happens to late submissions?"),
    )
    .await;
    assert_eq!(outcome, Outcome::Replied);
    let given = given.expect("the model was asked");
    assert!(on_page(&given, "reader.pdf", 17).contains(LATE), "{given}");
    assert!(given.contains("(file, page N)"), "{given}");
    // The long reader is not given whole: the pieces that answer.
    assert!(!given.contains("Course reader, page 3."), "{given}");
    let kept = library.store.list(&["telegram:42"]).unwrap();
    assert_eq!((kept.len(), kept[0].pages), (1, 30), "{kept:?}");

    // Later, without the file: the owner's question finds it again (the
    // control), another person's never does.
    bot.ask(42, "Tell me about late submissions again").await;
    let given = last_user(echo.requests().last().unwrap());
    assert!(given.contains("reader.pdf, page 17"), "{given}");
    bot.ask(43, "What happens to late submissions?").await;
    let given = last_user(echo.requests().last().unwrap());
    assert!(
        !given.contains(LATE) && !given.contains("reader.pdf"),
        "{given}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_word_document_is_read_and_a_short_one_goes_in_whole() {
    let (mut bot, echo, _library) = bot().await;
    let file = docx(&[
        "Statistics 101 syllabus",
        LATE,
        "Office hours: Thursdays 2-4 pm.",
    ]);
    let (outcome, given) = send(
        &mut bot,
        &echo,
        document(42, "syllabus.docx", file, "Summarise it"),
    )
    .await;
    assert_eq!(outcome, Outcome::Replied);
    let given = given.unwrap();
    assert!(given.contains("syllabus.docx, page 1:"), "{given}");
    assert!(
        given.contains(LATE) && given.contains("Office hours"),
        "{given}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_documents_get_a_clear_reply_and_a_good_one_after_each_is_read() {
    let (mut bot, echo, _library) = bot().await;
    let mut truncated = reader(5, 2, LATE);
    truncated.truncate(truncated.len() / 3);
    let hostile: Vec<(&str, Vec<u8>, &str)> = vec![
        ("bomb.pdf", bomb(512), "could not read bomb.pdf"),
        (
            "pages.pdf",
            empty_pages(100_000),
            "could not read pages.pdf",
        ),
        (
            "syllabus.pdf",
            b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0".to_vec(),
            "it looks like a program (ELF)",
        ),
        ("zipbomb.docx", docx_bomb(80), "unpacked"),
        ("half.pdf", truncated, ""),
    ];
    for (name, bytes, said) in hostile {
        let (outcome, given) = send(
            &mut bot,
            &echo,
            document(42, name, bytes, "What does it say?"),
        )
        .await;
        let replies = bot.sent_to(42);
        let last = replies.last().cloned().unwrap_or_default();
        if said.is_empty() {
            // Damaged: read as far as poppler can, or refused with a reason.
            assert!(
                outcome == Outcome::Replied || last.contains(&format!("could not read {name}")),
                "{name}: {outcome:?} {last}"
            );
        } else {
            assert_eq!(outcome, Outcome::Failed, "{name}: {given:?}");
            assert!(last.contains(said), "{name}: {last}");
        }
        // The control: a good file in the same chat right after.
        let (outcome, given) = send(
            &mut bot,
            &echo,
            document(
                42,
                "reader.pdf",
                reader(3, 2, LATE),
                "What happens to late submissions?",
            ),
        )
        .await;
        assert_eq!(outcome, Outcome::Replied, "after {name}");
        assert!(given.unwrap().contains(LATE), "after {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pdf_with_javascript_and_an_embedded_file_is_read_as_text_only() {
    let (mut bot, echo, _library) = bot().await;
    let (outcome, given) = send(
        &mut bot,
        &echo,
        document(
            42,
            "form.pdf",
            scripted("The lab opens at nine."),
            "When does the lab open?",
        ),
    )
    .await;
    assert_eq!(outcome, Outcome::Replied);
    let given = given.unwrap();
    assert!(given.contains("The lab opens at nine."), "{given}");
    assert!(
        !given.contains("app.alert") && !given.contains("not really a program"),
        "{given}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_over_what_telegram_hands_a_bot_is_refused_before_it_is_written() {
    let (mut bot, echo, library) = bot().await;
    let big = vec![b'a'; 200 << 20];
    bot.fake.inject(document(42, "huge.txt", big, "Read this"));
    let said = bot
        .fake
        .wait_for("sendMessage", 1, support::telegram_bot::WAIT)
        .await;
    let text = support::telegram_bot::shown(&said[0]);
    assert!(text.contains("larger than the 20 MB"), "{text}");
    // The caption still reaches the model; nothing was kept.
    bot.reports(1).await;
    assert!(library.store.list(&["telegram:42"]).unwrap().is_empty());
    assert!(
        echo.requests()
            .iter()
            .all(|r| !last_user(r).contains("huge.txt,"))
    );
}

/// The reader as an attacker who took it over: a script in its place
/// prints what it can read of a file outside its folder, of its own
/// input, and whether it reaches a port on this machine. Contained, it
/// reads only its input; uncontained (`sandbox = "off"`, the control that
/// shows the probe works) it reads and reaches both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_taken_over_reaches_nothing_outside_its_folder_under_each_sandbox() {
    use hearth::sandbox::{Containment, Limits, Sandbox, SandboxChoice};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (bin, outside, work) = (root.join("bin"), root.join("outside"), root.join("work"));
    for d in [&bin, &outside, &work] {
        std::fs::create_dir_all(d).unwrap();
    }
    let secret = outside.join("secret.txt");
    std::fs::write(&secret, "CANARY-doc-7f3").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let evil = bin.join("hearth");
    std::fs::write(
        &evil,
        format!(
            "#!/bin/sh\necho \"secret:$(cat {} 2>/dev/null)\"\necho \"own:$(head -c 2 \"$3\" 2>/dev/null)\"\n\
             python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2); print(\"net:reached\")' 2>/dev/null || echo net:refused\n",
            secret.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&evil, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cage = Cage::new(work.clone(), evil, CageLimits::default());
    let file = docx(&["x"]);
    for choice in [
        SandboxChoice::Bubblewrap,
        SandboxChoice::Landlock,
        SandboxChoice::Off,
    ] {
        let sandbox = Sandbox::resolve(choice, &work, false, Limits::default());
        if let Containment::Unavailable(why) = sandbox.containment() {
            panic!("{choice:?} cannot run here: {why}");
        }
        let read = cage.read(&sandbox, &file, "x.docx").await.unwrap();
        let said = read.pages.join("\u{c}");
        assert!(
            said.contains("own:PK"),
            "{choice:?}: its own input, read: {said}"
        );
        if choice == SandboxChoice::Off {
            assert!(
                said.contains("secret:CANARY-doc-7f3") && said.contains("net:reached"),
                "{said}"
            );
        } else {
            assert!(!said.contains("CANARY"), "{choice:?}: {said}");
            assert!(said.contains("net:refused"), "{choice:?}: {said}");
        }
    }
    drop(listener);
}

/// A reader that stalls, and one that eats memory, are stopped at their
/// limits with a reason, and nothing they started is left running; a good
/// document read right after is read (the control).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_past_its_time_or_memory_is_killed_with_a_reason() {
    use hearth::sandbox::{Limits, Sandbox, SandboxChoice};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let (bin, work) = (root.join("bin"), root.join("work"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let script = |name: &str, body: &str| {
        let path = bin.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        path
    };
    // A child of its own, found again by its unusual argument.
    let marker = "sleep 611.25";
    let stalls = script("stalls", &format!("{marker}\necho done"));
    let eats = script("eats", "python3 -c 'x = bytearray(3 << 30); print(len(x))'");
    let limits = CageLimits {
        wall: Duration::from_secs(2),
        memory_bytes: 256 << 20,
        ..CageLimits::default()
    };
    let sandbox = Sandbox::resolve(SandboxChoice::Auto, &work, false, Limits::default());
    let file = docx(&["x"]);

    let stalled = Cage::new(work.join("a"), stalls, limits);
    let started = std::time::Instant::now();
    let e = stalled.read(&sandbox, &file, "x.docx").await.unwrap_err();
    assert!(e.to_string().contains("took longer than 2 s"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(10));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let left = std::process::Command::new("pgrep")
        .args(["-f", marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&left.stdout)
    );

    let greedy = Cage::new(work.join("b"), eats, limits);
    let e = greedy.read(&sandbox, &file, "x.docx").await.unwrap_err();
    assert!(!e.to_string().contains(&(3u64 << 30).to_string()), "{e}");
    assert!(
        e.to_string().contains("MemoryError") || e.to_string().contains("memory"),
        "{e}"
    );

    // The control: the real reader, under the same limits.
    let real = Cage::new(
        work.join("c"),
        PathBuf::from(env!("CARGO_BIN_EXE_hearth")),
        limits,
    );
    let read = real.read(&sandbox, &docx(&[LATE]), "x.docx").await.unwrap();
    assert!(read.pages[0].contains(LATE));
}

/// While one chat's document takes its time in the reader, another chat
/// is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_chat_is_answered_while_a_document_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let slow = dir.path().join("slow-reader");
    std::fs::write(&slow, "#!/bin/sh\nsleep 4\necho 'The slow page.'\n").unwrap();
    std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let fake = FakeTelegram::start().await;
    let home = tempfile::tempdir().unwrap();
    let mut cfg = config(home.path());
    telegram_config(&mut cfg, &fake, &["42", "43"], StreamMode::Off);
    let echo = SlowEcho::new("local", Duration::ZERO);
    let library = Arc::new(Library {
        store: Arc::new(DocumentStore::open(&DocumentStore::path_in(&cfg.data_dir)).unwrap()),
        cage: Cage::new(
            cfg.data_dir.join("documents-work"),
            slow,
            CageLimits::default(),
        ),
        limits: TurnLimits::default(),
    });
    let mut bot = start(fake, home, cfg, local(echo.clone()), |b| {
        b.documents(library)
    });
    let (_, slow_message) = bot
        .fake
        .inject(document(42, "notes.docx", docx(&["x"]), "Read it"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, quick) = bot.fake.inject(Incoming::text(43, "Hello"));
    let order: Vec<String> = bot
        .reports(2)
        .await
        .into_iter()
        .map(|r| r.message_id)
        .collect();
    assert_eq!(order, [format!("43:{quick}"), format!("42:{slow_message}")]);
    assert!(last_user(echo.requests().last().unwrap()).contains("The slow page."));
}

/// A PDF whose text inflates far past the cap is read up to it, and the
/// turn is told only its first part was read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_bomb_is_read_up_to_the_cap_and_the_turn_says_so() {
    let (mut bot, echo, library) = bot().await;
    // 1,500 pages of 4,000 letters: 6 million characters, past the cap of 4.
    let pdf = text_bomb(1_500);
    assert!(pdf.len() < 2 << 20, "{} bytes", pdf.len());
    let (outcome, given) = send(
        &mut bot,
        &echo,
        document(42, "long.pdf", pdf, "What is it?"),
    )
    .await;
    assert_eq!(outcome, Outcome::Replied);
    let given = given.unwrap();
    assert!(
        given.contains("Only the first part of long.pdf was read"),
        "{}",
        &given[..given.len().min(600)]
    );
    let kept = library.store.list(&["telegram:42"]).unwrap();
    assert!(
        kept[0].cut && kept[0].chars <= CageLimits::default().chars,
        "{kept:?}"
    );
}

/// `hearth docs` as a user runs it, on the real binary with its own data
/// dir: add (a PDF, the same again, a program named as a PDF), list,
/// search with a page, forget in the wrong scope (refused) and the right one.
#[test]
fn hearth_docs_adds_lists_searches_and_forgets() {
    use crate::common::{Sandbox, assert_no_panic};
    let s = Sandbox::new();
    let run = |args: &[&str]| {
        let out = s.hearth().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_no_panic(&stderr);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        )
    };
    let pdf = s.path("reader.pdf");
    std::fs::write(&pdf, reader(5, 4, LATE)).unwrap();
    let fake = s.path("syllabus.pdf");
    std::fs::write(&fake, b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0").unwrap();
    let pdf = pdf.to_string_lossy().into_owned();
    let (ok, out, err) = run(&["docs", "add", &pdf]);
    assert!(ok && out.contains("a PDF of 5 pages"), "{out}{err}");
    let (ok, out, _) = run(&["docs", "add", &pdf]);
    assert!(ok && out.contains("already kept"), "{out}");
    let (ok, _, err) = run(&["docs", "add", &fake.to_string_lossy()]);
    assert!(
        !ok && err.contains("it looks like a program (ELF)"),
        "{err}"
    );
    let (ok, out, _) = run(&["docs", "list"]);
    assert!(
        ok && out.contains("local reader.pdf (pdf, 5 pages)"),
        "{out}"
    );
    assert!(!out.contains("syllabus.pdf"), "{out}");
    let (ok, out, _) = run(&["docs", "search", "late submissions"]);
    assert!(
        ok && out.starts_with("reader.pdf, page 4: ") && out.contains(LATE),
        "{out}"
    );
    let id = run(&["docs", "list"])
        .1
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let (ok, _, err) = run(&["docs", "forget", &id, "--scope", "telegram:42"]);
    assert!(!ok && err.contains("no document"), "{err}");
    let (ok, _, _) = run(&["docs", "forget", &id, "--scope", "local"]);
    assert!(ok);
    let (_, out, _) = run(&["docs", "search", "late submissions"]);
    assert_eq!(out.trim(), "nothing matches");
}

/// The real daemon, as a process: the hostile files sent to it one after
/// another leave its peak resident memory (`VmHWM`) within a bound far
/// below what parsing any of them in the daemon would take (the PDF bomb
/// inflates to 512 MiB, the DOCX bomb to 80 MiB), and a good file after
/// them is still read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemons_own_memory_stays_bounded_through_the_hostile_files() {
    use crate::common::{Sandbox, assert_no_panic};
    use support::daemon_process::{Daemon, config, until};
    use support::slow_model::SlowModel;

    let fake = FakeTelegram::start().await;
    let model = SlowModel::start(2, Duration::from_millis(10)).await;
    let sandbox = Sandbox::new();
    let config = config(&sandbox, &fake, &model, "", "");
    let daemon = Daemon::start(&sandbox, &config);
    let peak = |pid: u32| -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace()
            .nth(1)
            .unwrap()
            .parse::<u64>()
            .unwrap()
            << 10
    };
    let pid = daemon.child.id();
    let started = peak(pid);
    let mut truncated = reader(5, 2, LATE);
    truncated.truncate(truncated.len() / 3);
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("bomb.pdf", bomb(512)),
        ("pages.pdf", empty_pages(100_000)),
        ("zipbomb.docx", docx_bomb(80)),
        ("long.pdf", text_bomb(1_500)),
        ("half.pdf", truncated),
        ("reader.pdf", reader(30, 17, LATE)),
    ];
    for (i, (name, bytes)) in files.into_iter().enumerate() {
        fake.inject(document(601, name, bytes, "What does it say?"));
        until(
            &format!("an answer to {name}"),
            Duration::from_secs(60),
            || fake.chat(601).len() > i,
        )
        .await;
    }
    let chat = fake.chat(601);
    let after = peak(pid);
    let log = daemon.term().1;
    assert_no_panic(&log);
    for (name, said) in [
        ("bomb.pdf", "no text in it"),
        ("pages.pdf", "no text in it"),
        ("zipbomb.docx", "over 64 MB unpacked"),
    ] {
        assert!(
            chat.iter()
                .any(|m| m.contains(&format!("could not read {name}: ")) && m.contains(said)),
            "{name}: {chat:?}"
        );
    }
    // The last, good file was answered by the model (the slow model's
    // reply, not a refusal).
    assert!(!chat.last().unwrap().contains("could not read"), "{chat:?}");
    eprintln!(
        "daemon peak RSS: {} MiB after starting, {} MiB after the files",
        started >> 20,
        after >> 20
    );
    assert!(
        after < started + (96 << 20),
        "peak RSS grew from {} MiB to {} MiB",
        started >> 20,
        after >> 20
    );
}

/// `hearth ask --file` on the real binary and model: the question's prompt
/// carries the document's pieces (many more prompt tokens than the same
/// question alone, the control), the file is kept for `hearth docs`, and a
/// file that cannot be read is refused with its reason before the model
/// loads.
#[test]
fn hearth_ask_file_gives_the_model_the_documents_pieces() {
    use crate::common::{Sandbox, assert_no_panic, engine_lock, logged};
    let _engine = engine_lock();
    let s = Sandbox::new();
    let config = s.config("[generation]\ntemperature = 0.0\nmax_tokens = 8\n");
    let config = config.to_string_lossy().into_owned();
    let pdf = s.path("reader.pdf");
    std::fs::write(&pdf, reader(30, 17, LATE)).unwrap();
    let pdf = pdf.to_string_lossy().into_owned();
    let ask = |extra: &[&str]| {
        let mut args = vec!["--config", &config, "ask"];
        args.extend_from_slice(extra);
        args.push("What happens to late submissions?");
        let out = s
            .hearth()
            .env("RUST_LOG", "hearth::cli::ask=info")
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_no_panic(&stderr);
        (out.status.success(), stderr)
    };
    let (ok, alone) = ask(&[]);
    assert!(ok, "{alone}");
    let (ok, with) = ask(&["--file", &pdf]);
    assert!(ok, "{with}");
    let (alone, with) = (
        logged(&alone, "prompt_tokens"),
        logged(&with, "prompt_tokens"),
    );
    assert!(
        with > alone + 100,
        "prompt tokens: {with} with the file, {alone} without"
    );
    let listed = s
        .hearth()
        .args(["--config", &config, "docs", "list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("local reader.pdf (pdf, 30 pages)"));

    let fake = s.path("notes.pdf");
    std::fs::write(&fake, b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0").unwrap();
    let (ok, err) = ask(&["--file", &fake.to_string_lossy()]);
    assert!(
        !ok && err.contains("I could not read notes.pdf: it is not a document"),
        "{err}"
    );
    assert!(!err.contains("prompt_tokens"), "the model was asked: {err}");
}
