//! The courses' files: a syllabus posted to a fake Moodle course and one to
//! a fake Canvas course (`support::lms_fake`, speaking `core_course_get_contents`
//! with `webservice/pluginfile.php`, and Canvas's files and modules APIs),
//! fetched by the notifier into the documents of the person whose token
//! fetched them, through the daemon's own keeper (`CourseFiles`): fetched
//! once, announced once, fetched again only when the site changes them (read
//! off the fakes' request logs), and found by that person's questions
//! through the fake Bot API, never by another's. What the model was given is
//! read off the recording provider.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::common::documents::pdf;
use crate::documents::bot;
use crate::support;

use std::sync::Arc;

use hearth::config::{LmsConfig, LmsKind, LmsTarget};
use hearth::daemon::CourseFiles;
use hearth::documents::Library;
use hearth::lms::{ItemKind, ManualClock, Notice, NoticeKind, Notifier};
use hearth::sandbox::{Limits, Sandbox, SandboxChoice};
use serde_json::json;
use support::last_user;
use support::lms_fake::*;

const LATE: &str = "Late homework loses ten percent of its marks for each day it is late.";
const EXAMS: &str = "The final exam covers chapters one to seven, eigenvalues included.";
const PLUGIN: &str = "/webservice/pluginfile.php";

/// A PDF whose page `at` of `n` says `sentence`.
fn syllabus(course: &str, n: usize, at: usize, sentence: &str) -> Vec<u8> {
    let pages: Vec<Vec<String>> = (1..=n)
        .map(|p| match p == at {
            true => vec![
                format!("{course} syllabus, page {p}."),
                sentence.to_string(),
            ],
            false => vec![format!(
                "{course} syllabus, page {p}. Office hours are on Mondays."
            )],
        })
        .collect();
    pdf(&pages)
}

/// `core_course_get_contents` of a course with these resources
/// (module id, name, file name, file URL, size, time modified), a link and
/// a page beside them (neither is a file).
fn contents(base: &str, files: &[(u32, &str, &str, String, usize, i64)]) -> String {
    let modules: Vec<_> = files
        .iter()
        .map(|(cm, name, file, url, size, modified)| {
            json!({
                "id": cm, "url": format!("{base}/mod/resource/view.php?id={cm}"), "name": name,
                "instance": cm + 100, "modname": "resource", "modplural": "Files",
                "contents": [{
                    "type": "file", "filename": file, "filepath": "/", "filesize": size,
                    "fileurl": url, "timecreated": modified, "timemodified": modified,
                    "sortorder": 1, "mimetype": "application/pdf", "isexternalfile": false,
                }],
            })
        })
        .chain([
            json!({"id": 90, "name": "Textbook", "modname": "url", "contents": [{"type": "url", "filename": "Textbook", "fileurl": "https://example.org/book"}]}),
            json!({"id": 91, "name": "Welcome", "modname": "page", "contents": [{"type": "file", "filename": "index.html", "fileurl": format!("{base}{PLUGIN}/91/mod_page/content/index.html")}]}),
        ])
        .collect();
    json!([{"id": 1, "name": "General", "section": 0, "visible": 1, "modules": modules}])
        .to_string()
}

fn canvas_file(base: &str, id: u32, name: &str, size: usize, modified: &str) -> serde_json::Value {
    json!({
        "id": id, "uuid": format!("u{id}"), "folder_id": 1, "display_name": name,
        "filename": name.replace(' ', "+"), "content-type": "application/pdf",
        "url": format!("{base}/files/{id}/download?download_frd=1&verifier=v{id}"),
        "size": size, "created_at": modified, "updated_at": modified, "modified_at": modified,
        "locked": false, "hidden": false, "locked_for_user": false, "hidden_for_user": false,
    })
}

/// The notifier of these sources, delivering to Telegram user 42 (the
/// quiet first run on), its course files kept in `library` by the
/// daemon's keeper.
fn files_notifier(
    sources: Vec<hearth::config::LmsSourceConfig>,
    dir: &std::path::Path,
    clock: &Arc<ManualClock>,
    library: &Arc<Library>,
) -> (Notifier, LmsConfig) {
    let mut cfg = config(sources);
    cfg.announce_past = false;
    cfg.deliver = Some(LmsTarget {
        channel: "telegram".into(),
        to: "42".into(),
    });
    let n = notifier(&cfg, dir, clock);
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let sandbox = Sandbox::resolve(SandboxChoice::Auto, &work, false, Limits::default());
    let scope = CourseFiles::scope_of(&cfg);
    assert_eq!(scope, "telegram:42");
    n.keep_files(Arc::new(CourseFiles::new(
        library.clone(),
        Arc::new(sandbox),
        scope,
    )));
    (n, cfg)
}

fn moodle_with_courses(fake: &Fake) {
    fake.set(
        "core_enrol_get_users_courses",
        json!([
            {"id": 7, "shortname": "CS101", "fullname": "Introduction to Computer Science"},
            {"id": 9, "shortname": "STAT200", "fullname": "Statistics 200"},
        ])
        .to_string(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn course_syllabi_are_fetched_once_announced_once_and_found_by_their_owner_only() {
    let (mut bot, echo, library) = bot().await;
    let moodle = moodle_fake();
    let m_url = moodle_server(moodle.clone()).await;
    moodle_with_courses(&moodle);
    let stat =
        format!("{m_url}{PLUGIN}/33/mod_resource/content/1/stat_syllabus.pdf?forcedownload=1");
    let stat_pdf = syllabus("Statistics 200", 4, 2, LATE);
    moodle.blob(
        "33/mod_resource/content/1/stat_syllabus.pdf",
        stat_pdf.clone(),
    );
    moodle.set("core_course_get_contents:7", contents(&m_url, &[]));
    let stat_file = (
        33,
        "Course syllabus",
        "stat_syllabus.pdf",
        stat.clone(),
        stat_pdf.len(),
        1_740_000_000,
    );
    moodle.set(
        "core_course_get_contents:9",
        contents(&m_url, std::slice::from_ref(&stat_file)),
    );
    let canvas = canvas_fake();
    let c_url = canvas_server(canvas.clone()).await;
    let la_pdf = syllabus("Linear Algebra", 3, 3, EXAMS);
    canvas.blob("5", la_pdf.clone());
    let la = canvas_file(
        &c_url,
        5,
        "Linear Algebra syllabus.pdf",
        la_pdf.len(),
        "2025-02-20T09:00:00Z",
    );
    canvas.set("courses/101/files", json!([la]).to_string());

    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at(NOW)));
    let sources = vec![
        source(LmsKind::Moodle, "uni", &m_url, Some(MOODLE_TOKEN)),
        source(LmsKind::Canvas, "canvas", &c_url, Some(CANVAS_TOKEN)),
    ];
    let (n, _) = files_notifier(sources, dir.path(), &clock, &library);
    let sink = Recorder::default();

    // The first poll: both syllabi fetched and kept, for user 42; as files
    // already there they are recorded without a notice each (the quiet
    // first run).
    let report = n.poll_once(&sink).await;
    assert_eq!(report.source("uni").unwrap().files, 1, "{report:?}");
    assert_eq!(report.source("canvas").unwrap().files, 1, "{report:?}");
    assert_eq!(
        moodle.downloads("33/mod_resource/content/1/stat_syllabus.pdf"),
        1
    );
    assert_eq!(canvas.downloads("5"), 1);
    assert!(
        moodle.hits().iter().all(|h| !h.contains("index.html")),
        "a page is no file"
    );
    let files = |notices: Vec<Notice>| -> Vec<Notice> {
        notices
            .into_iter()
            .filter(|n| n.item.kind == ItemKind::File)
            .collect()
    };
    assert!(files(sink.take()).is_empty(), "announced on the first run");
    let kept = library.store.list(&["telegram:42"]).unwrap();
    let names: Vec<&str> = kept.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.contains(&"stat_syllabus.pdf (Statistics 200)"),
        "{names:?}"
    );
    assert!(
        names.contains(&"Linear Algebra syllabus.pdf (Linear Algebra)"),
        "{names:?}"
    );
    assert!(library.store.list(&["telegram:43"]).unwrap().is_empty());

    // A new file posted to the Statistics course: announced once, fetched once.
    let week = format!("{m_url}{PLUGIN}/34/mod_resource/content/1/week2.pdf");
    let week_pdf = syllabus("Week 2", 1, 1, "Bring a calculator to the lab.");
    moodle.blob("34/mod_resource/content/1/week2.pdf", week_pdf.clone());
    let week_file = (
        34,
        "Week 2 slides",
        "week2.pdf",
        week,
        week_pdf.len(),
        1_741_600_000,
    );
    moodle.set(
        "core_course_get_contents:9",
        contents(&m_url, &[stat_file.clone(), week_file]),
    );
    // Files are listed on their own schedule (every 6 hours): the polls
    // between ask the site for none and keep the files they know.
    let listed = || {
        let hits = moodle.hits();
        hits.iter()
            .filter(|h| *h == "core_course_get_contents:9")
            .count()
    };
    assert_eq!(listed(), 1);
    clock.advance(chrono::Duration::minutes(30));
    n.poll_once(&sink).await;
    assert_eq!(listed(), 1, "not listed again within 6 hours");
    assert!(files(sink.take()).is_empty());
    assert_eq!(
        kept_names(&library).len(),
        2,
        "nothing looks gone meanwhile"
    );
    clock.advance(chrono::Duration::hours(6));
    n.poll_once(&sink).await;
    assert_eq!(listed(), 2);
    let new = files(sink.take());
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0].kind, NoticeKind::New);
    assert!(
        new[0].text.contains("New course file · Statistics 200"),
        "{}",
        new[0].text
    );
    assert!(new[0].text.contains("Week 2 slides"), "{}", new[0].text);
    assert!(!new[0].text.contains(MOODLE_TOKEN), "{}", new[0].text);

    // Nothing changed: no notice, and no file is downloaded again.
    clock.advance(chrono::Duration::hours(6));
    n.poll_once(&sink).await;
    assert!(files(sink.take()).is_empty());
    assert_eq!(
        moodle.downloads("33/mod_resource/content/1/stat_syllabus.pdf"),
        1
    );
    assert_eq!(moodle.downloads("34/mod_resource/content/1/week2.pdf"), 1);
    assert_eq!(canvas.downloads("5"), 1);

    // The teacher replaces the Canvas syllabus: fetched again, once, and
    // the new text replaces the old.
    let la2_pdf = syllabus(
        "Linear Algebra",
        3,
        3,
        &format!("{EXAMS} Calculators are allowed."),
    );
    canvas.blob("5", la2_pdf.clone());
    let la2 = canvas_file(
        &c_url,
        5,
        "Linear Algebra syllabus.pdf",
        la2_pdf.len(),
        "2025-03-10T12:10:00Z",
    );
    canvas.set("courses/101/files", json!([la2]).to_string());
    for _ in 0..2 {
        clock.advance(chrono::Duration::hours(6));
        n.poll_once(&sink).await;
    }
    assert_eq!(canvas.downloads("5"), 2);
    let la_docs: Vec<_> = library
        .store
        .list(&["telegram:42"])
        .unwrap()
        .into_iter()
        .filter(|d| d.name.starts_with("Linear Algebra"))
        .collect();
    assert_eq!(la_docs.len(), 1, "{la_docs:?}");

    // The owner's questions find each syllabus by its page; another
    // person's never do (the same questions, so the control is exact).
    let asks = [
        (
            "What's the late policy in the Statistics syllabus?",
            LATE,
            "stat_syllabus.pdf (Statistics 200), page 2",
        ),
        (
            "Which chapters does the Linear Algebra final exam cover?",
            "Calculators are allowed.",
            "Linear Algebra syllabus.pdf (Linear Algebra), page 3",
        ),
    ];
    for (question, sentence, cited) in asks {
        bot.ask(42, question).await;
        let given = last_user(echo.requests().last().unwrap());
        assert!(
            given.contains(sentence) && given.contains(cited),
            "{question}: {given}"
        );
        bot.ask(43, question).await;
        let given = last_user(echo.requests().last().unwrap());
        assert!(
            !given.contains(sentence) && !given.contains("syllabus.pdf"),
            "{question}: {given}"
        );
    }
}

/// A server elsewhere that logs what reached it: the path, and whether a
/// token came along (a bearer header or Moodle's `token` parameter).
async fn elsewhere(fake: Arc<Fake>) -> String {
    use axum::extract::{Query, State};
    use axum::http::HeaderMap;
    async fn any(
        State(f): State<Arc<Fake>>,
        headers: HeaderMap,
        Query(q): Query<std::collections::HashMap<String, String>>,
        uri: axum::http::Uri,
    ) -> Vec<u8> {
        let token = headers.contains_key("authorization") || q.contains_key("token");
        f.hits
            .lock()
            .unwrap()
            .push(format!("{} token={token}", uri.path()));
        syllabus("Elsewhere", 1, 1, "A file served from another host.")
    }
    let router = axum::Router::new().route("/{*path}", axum::routing::get(any));
    serve(fake, router).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_course_files_are_refused_within_their_caps_and_the_token_never_leaves_the_site() {
    let (_bot, _echo, library) = bot().await;
    let evil = Arc::new(Fake::default());
    let evil_url = elsewhere(evil.clone()).await;
    let moodle = moodle_fake();
    let m_url = moodle_server(moodle.clone()).await;
    moodle_with_courses(&moodle);
    let at = |path: &str| format!("{m_url}{PLUGIN}/{path}");
    let elf = [b"\x7fELF\x02\x01\x01".as_slice(), &[0u8; 4096]].concat();
    let good = syllabus("Statistics 200", 2, 2, LATE);
    moodle.blob("40/program.pdf", elf.clone());
    moodle.blob("41/liar.pdf", vec![b'x'; 1_500_000]);
    moodle.blob("43/good.pdf", good.clone());
    let files = [
        // On another host: the token must not go there.
        (
            39,
            "Elsewhere",
            "elsewhere.pdf",
            format!("{evil_url}{PLUGIN}/39/elsewhere.pdf"),
            900,
            1_740_000_000,
        ),
        // A program named as a PDF.
        (
            40,
            "Program",
            "program.pdf",
            at("40/program.pdf"),
            elf.len(),
            1_740_000_000,
        ),
        // Listed as small, served as 1.5 MB: over files_mb (1).
        (41, "Liar", "liar.pdf", at("41/liar.pdf"), 10, 1_740_000_000),
        // Listed as over files_mb: never downloaded.
        (
            42,
            "Huge",
            "huge.pdf",
            at("42/huge.pdf"),
            5_000_000,
            1_740_000_000,
        ),
        // The control: a good file in the same course.
        (
            43,
            "Course syllabus",
            "good.pdf",
            at("43/good.pdf"),
            good.len(),
            1_740_000_000,
        ),
    ];
    moodle.set("core_course_get_contents:7", contents(&m_url, &[]));
    moodle.set("core_course_get_contents:9", contents(&m_url, &files));

    // Canvas refuses the student the course's Files page: its modules
    // still link the syllabus (the fallback), and a file Canvas serves
    // from another host is fetched without the token.
    let canvas = canvas_fake();
    let c_url = canvas_server(canvas.clone()).await;
    let la_pdf = syllabus("Linear Algebra", 3, 3, EXAMS);
    canvas.blob("5", la_pdf.clone());
    canvas.set(
        "courses/101/modules",
        json!([{"id": 1, "name": "Week 1", "items": [
            {"id": 11, "title": "Syllabus", "type": "File", "content_id": 5},
            {"id": 12, "title": "Reading", "type": "File", "content_id": 6},
            {"id": 13, "title": "Intro", "type": "Page"},
        ]}])
        .to_string(),
    );
    let la = canvas_file(
        &c_url,
        5,
        "Linear Algebra syllabus.pdf",
        la_pdf.len(),
        "2025-02-20T09:00:00Z",
    );
    canvas.set("courses/101/files/5", la.to_string());
    let mut away = canvas_file(&c_url, 6, "Reading.pdf", 900, "2025-02-20T09:00:00Z");
    away["url"] = json!(format!("{evil_url}/files/6/download?verifier=v6"));
    canvas.set("courses/101/files/6", away.to_string());

    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(at_time()));
    let mut uni = source(LmsKind::Moodle, "uni", &m_url, Some(MOODLE_TOKEN));
    uni.files_mb = 1;
    let sources = vec![
        uni,
        source(LmsKind::Canvas, "canvas", &c_url, Some(CANVAS_TOKEN)),
    ];
    let (n, _) = files_notifier(sources, dir.path(), &clock, &library);
    let sink = Recorder::default();
    let report = n.poll_once(&sink).await;
    assert_eq!(report.source("uni").unwrap().error, None, "{report:?}");
    assert_eq!(
        report.source("uni").unwrap().files,
        1,
        "only the good file: {report:?}"
    );
    assert_eq!(report.source("canvas").unwrap().files, 2, "{report:?}");
    assert!(
        canvas
            .hits()
            .iter()
            .any(|h| h == "refused courses/101/files")
    );

    let evil_hits = evil.hits();
    assert!(
        !evil_hits.iter().any(|h| h.contains("elsewhere.pdf")),
        "{evil_hits:?}"
    );
    assert_eq!(
        evil_hits,
        ["/files/6/download token=false"],
        "Canvas's own link, without the token"
    );
    assert_eq!(moodle.downloads("42/huge.pdf"), 0);
    let names = kept_names(&library);
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(
        names.iter().any(|n| n == "good.pdf (Statistics 200)"),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n == "Linear Algebra syllabus.pdf (Linear Algebra)"),
        "{names:?}"
    );
    let status = n.store().status(&["uni"]).unwrap();
    let notes = status[0].notes.join("\n");
    for (file, why) in [
        ("elsewhere.pdf", "not on the site's own address"),
        ("program.pdf", "a program (ELF)"),
        ("liar.pdf", "files_mb"),
        ("huge.pdf", "files_mb"),
    ] {
        assert!(
            notes.lines().any(|l| l.contains(file) && l.contains(why)),
            "{file}: {notes}"
        );
    }
    assert!(!notes.contains(MOODLE_TOKEN), "{notes}");

    // The next listing downloads none of them again: the refused versions
    // are remembered (the file elsewhere is never fetched at all).
    clock.advance(chrono::Duration::hours(6));
    n.poll_once(&sink).await;
    for path in ["40/program.pdf", "41/liar.pdf", "43/good.pdf"] {
        assert_eq!(moodle.downloads(path), 1, "{path}");
    }
    assert_eq!(moodle.downloads("42/huge.pdf"), 0);
    assert_eq!(evil.hits().len(), 1);
}

fn at_time() -> chrono::DateTime<chrono::Utc> {
    at(NOW)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feeds_linked_documents_are_fetched_only_when_asked_and_without_credentials() {
    let (_bot, _echo, library) = bot().await;
    let host = Arc::new(Fake::default());
    let host_url = elsewhere(host.clone()).await;
    let rss = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0"><channel><title>Department news</title><link>{host_url}/news</link><description>News</description>
<item><title>Exam timetable posted</title><link>{host_url}/files/timetable.pdf</link><guid isPermaLink="false">n-1</guid><pubDate>Sat, 08 Mar 2025 14:30:00 +0000</pubDate></item>
<item><title>Library hours</title><link>{host_url}/news/library-hours</link><guid isPermaLink="false">n-2</guid><pubDate>Sat, 08 Mar 2025 10:00:00 +0000</pubDate></item>
</channel></rss>"#
    );
    let feed = Arc::new(Fake::default());
    feed.set("feed", rss);
    let feed_url = feed_server(feed.clone(), "application/rss+xml").await;
    let clock = Arc::new(ManualClock::new(at(NOW)));

    // Off by default for a feed: nothing is fetched (the control).
    let dir = tempfile::tempdir().unwrap();
    let off = source(LmsKind::Rss, "news", &feed_url, None);
    let mut on = off.clone();
    on.files = true;
    let (n, _) = files_notifier(vec![off], dir.path(), &clock, &library);
    n.poll_once(&Recorder::default()).await;
    assert!(host.hits().is_empty(), "{:?}", host.hits());

    // With `files = true`, the linked PDF (and not the news page) once.
    let dir = tempfile::tempdir().unwrap();
    let (n, _) = files_notifier(vec![on], dir.path(), &clock, &library);
    for _ in 0..2 {
        n.poll_once(&Recorder::default()).await;
        clock.advance(chrono::Duration::minutes(30));
    }
    assert_eq!(host.hits(), ["/files/timetable.pdf token=false"]);
    let names = kept_names(&library);
    assert_eq!(names, ["timetable.pdf"], "a feed names no course");
}

/// The names of user 42's documents.
fn kept_names(library: &Library) -> Vec<String> {
    let kept = library.store.list(&["telegram:42"]).unwrap();
    kept.into_iter().map(|d| d.name).collect()
}
