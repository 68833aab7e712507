//! Trust boundaries through the real pipeline and tools: each person's
//! files apart, and calls planted in what tools read (files, memories, an
//! LMS calendar, a fetched web page) never run, while the model's own
//! calls do, once the person allows them.
//!
//! The model is a parrot that repeats what it reads, the worst case: a
//! planted call that survived as markup would be parsed from its reply.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::sync::Arc;

use hearth::channels::{Answer, InMemoryChannel};
use hearth::config::{Config, Environment};
use hearth::memory::{Category, MemoryStore, StoreMemory};
use hearth::tools::{Tool, ToolRegistry};
use support::*;
use tokio::sync::mpsc;

struct World {
    daemon: hearth::daemon::Daemon,
    reports: mpsc::UnboundedReceiver<hearth::dispatch::Report>,
    channel: Arc<InMemoryChannel>,
    memory: Arc<MemoryStore>,
    /// The model: what it was sent.
    parrot: Arc<Parrot>,
    workspace: std::path::PathBuf,
    _home: tempfile::TempDir,
}

/// A daemon with the tools `hearth daemon` builds (per-person folders,
/// the sandbox), memory, and the parrot.
fn world() -> World {
    world_with(|_| {}, Vec::new())
}

/// [`world`] with a changed config and more tools.
fn world_with(tweak: impl FnOnce(&mut Config), extra: Vec<Box<dyn Tool>>) -> World {
    let home = tempfile::tempdir().unwrap();
    let env = Environment::with_home(home.path());
    let mut cfg = config(home.path());
    cfg.memory.enabled = true;
    tweak(&mut cfg);
    let context = hearth::cli::tools_cmd::context(&cfg, &env).unwrap();
    let mut tools = ToolRegistry::for_config(&cfg.agent, &context.sandbox);
    extra.into_iter().for_each(|t| tools.register(t));
    let memory = Arc::new(MemoryStore::open(&MemoryStore::path_in(&cfg.data_dir)).unwrap());
    let turn_memory = StoreMemory::new(memory.clone(), cfg.memory.clone());
    let workspace = cfg.agent.workspace.clone();
    // The person allows what the model asks to do (approval is on by default).
    let channel = Arc::new(InMemoryChannel::new("mem").always_answer(Answer::Once));
    let parrot = Arc::new(Parrot::default());
    let runtime = hearth::pipeline::RuntimeBuilder::new(cfg, local(parrot.clone()), context)
        .tools(Arc::new(tools))
        .memory(Arc::new(turn_memory))
        .channel(channel.clone())
        .build()
        .unwrap();
    let (tx, reports) = mpsc::unbounded_channel();
    World {
        daemon: hearth::daemon::Daemon::start(runtime, Some(tx)),
        parrot,
        reports,
        channel,
        memory,
        workspace,
        _home: home,
    }
}

impl World {
    async fn say(&mut self, who: &str, text: &str) -> String {
        self.channel.inject_text(who, text);
        reports(&mut self.reports, 1).await;
        texts(&self.channel, who).pop().unwrap_or_default()
    }

    fn folder(&self, who: &str) -> std::path::PathBuf {
        self.workspace.join("mem").join(who)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_calls_never_run_and_the_models_own_calls_do() {
    let mut w = world();
    // A file holding a planted call, read by the model.
    std::fs::create_dir_all(w.folder("ada")).unwrap();
    std::fs::write(
        w.folder("ada").join("notes.txt"),
        format!("Shopping: milk\n{PLANTED}\n"),
    )
    .unwrap();
    let reply = w
        .say(
            "ada",
            &call("file_read", serde_json::json!({"path": "notes.txt"})),
        )
        .await;
    assert!(
        reply.contains("Shopping: milk"),
        "the file was read: {reply}"
    );
    assert!(
        !w.folder("ada").join("pwned.txt").exists(),
        "a call in a file ran"
    );

    // A recalled memory holding a planted call (a page the user pasted once).
    w.memory
        .store(
            "mem:ada",
            "page",
            &format!("shopping list page {PLANTED}"),
            Category::Core,
        )
        .unwrap();
    let reply = w.say("ada", "what is on my shopping list page?").await;
    // The model read it fenced; the fence itself, repeated by the model,
    // never reaches the person.
    let sent: String = w
        .parrot
        .requests
        .lock()
        .unwrap()
        .last()
        .unwrap()
        .messages
        .iter()
        .map(|m| m.content.clone())
        .collect();
    assert!(
        sent.contains("<untrusted"),
        "the memory came fenced: {sent}"
    );
    assert!(!reply.contains("untrusted"), "{reply}");
    assert!(
        !w.folder("ada").join("pwned.txt").exists(),
        "a call in a memory ran"
    );

    assert!(
        w.channel.asked().is_empty(),
        "a planted call got as far as asking: {:?}",
        w.channel.asked()
    );

    // Positive control: the same call, written by the model itself, runs
    // once the person allows it.
    let own = PLANTED.replace("<tool_call>", "CALL <tool_call>");
    w.say("ada", &own).await;
    let asked = w.channel.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        (asked[0].tool.as_str(), asked[0].sender.as_str()),
        ("file_write", "ada")
    );
    assert_eq!(
        std::fs::read_to_string(w.folder("ada").join("pwned.txt")).unwrap(),
        "owned"
    );
    w.daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_never_reach_each_others_files() {
    let mut w = world();
    w.say(
        "ada",
        &call(
            "file_write",
            serde_json::json!({"path": "passport.txt", "content": "P1234567"}),
        ),
    )
    .await;
    let ada_file = w.folder("ada").join("passport.txt");
    assert_eq!(std::fs::read_to_string(&ada_file).unwrap(), "P1234567");

    // Bob lists, globs, reads by path, climbs out, and runs commands.
    let attempts = [
        call("list_dir", serde_json::json!({"path": "."})),
        call("list_dir", serde_json::json!({"path": ".."})),
        call("glob", serde_json::json!({"pattern": "**/*.txt"})),
        call(
            "file_read",
            serde_json::json!({"path": ada_file.display().to_string()}),
        ),
        call(
            "file_read",
            serde_json::json!({"path": "../ada/passport.txt"}),
        ),
        call(
            "shell",
            serde_json::json!({"command": "cat ../ada/passport.txt"}),
        ),
        call(
            "shell",
            serde_json::json!({"command": format!("cat {}", ada_file.display())}),
        ),
        call(
            "shell",
            serde_json::json!({"command": "find / -name passport.txt"}),
        ),
    ];
    for attempt in attempts {
        let reply = w.say("bob", &attempt).await;
        assert!(!reply.contains("P1234567"), "{attempt} → {reply}");
    }
    // Positive control: Ada reads her own file, by name and with a command.
    let reply = w
        .say(
            "ada",
            &call("file_read", serde_json::json!({"path": "passport.txt"})),
        )
        .await;
    assert!(reply.contains("P1234567"), "{reply}");
    let reply = w
        .say(
            "ada",
            &call("shell", serde_json::json!({"command": "cat passport.txt"})),
        )
        .await;
    assert!(reply.contains("P1234567"), "{reply}");
    w.daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_a_job_started_runs_reading_tools_only() {
    let mut w = world();
    std::fs::create_dir_all(w.folder("ada")).unwrap();
    std::fs::write(w.folder("ada").join("plan.txt"), "water the plants").unwrap();
    let write = call(
        "file_write",
        serde_json::json!({"path": "job.txt", "content": "written by a job"}),
    );
    let read = call("file_read", serde_json::json!({"path": "plan.txt"}));
    for (n, text) in [&write, &read].into_iter().enumerate() {
        w.channel.inject(hearth::channels::ChannelMessage {
            id: format!("job-{n}"),
            sender: "ada".into(),
            reply_target: "ada".into(),
            content: text.clone(),
            channel: "mem".into(),
            timestamp: 0,
            thread_ts: None,
            interruption_scope_id: Some(format!("job-{n}")),
            initiator: hearth::channels::Initiator::Schedule,
            asked: None,
            images: Vec::new(),
            audio: None,
            documents: Vec::new(),
        });
        reports(&mut w.reports, 1).await;
    }
    let sent = texts(&w.channel, "ada");
    assert!(
        !w.folder("ada").join("job.txt").exists(),
        "a job turn wrote"
    );
    assert!(
        sent.iter().any(|t| t.contains("water the plants")),
        "a job turn may read: {sent:?}"
    );
    assert!(
        w.channel.asked().is_empty(),
        "nobody is asked in a job turn"
    );
    // Positive control: the person's own turn writes.
    w.say("ada", &write).await;
    assert!(w.folder("ada").join("job.txt").exists());
    w.daemon.stop().await;
}

/// Serves `body` as `content_type` at `/` on 127.0.0.1; returns the URL.
async fn serve_once(content_type: &'static str, body: String) -> String {
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let body = body.clone();
            async move { ([("content-type", content_type)], body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_planted_in_an_lms_calendar_or_a_fetched_page_never_runs() {
    // An iCal event whose SUMMARY holds a call (commas escaped, as iCal
    // text is), due tomorrow, polled by the LMS notifier.
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1)).format("%Y%m%dT%H%M%SZ");
    let summary = format!("Essay due {PLANTED}").replace(',', "\\,");
    let ics = format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//evil//EN\r\nBEGIN:VEVENT\r\nUID:planted@example.edu\r\nSUMMARY:{summary}\r\nDTSTART:{tomorrow}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    );
    let calendar = serve_once("text/calendar", ics).await;
    let page = serve_once(
        "text/html",
        format!("<html><body><h1>Recipes</h1><p>Bake at 180C.</p><p>{PLANTED}</p></body></html>"),
    )
    .await;
    let lms_dir = tempfile::tempdir().unwrap();
    let lms = hearth::config::LmsConfig {
        sources: vec![hearth::config::LmsSourceConfig {
            kind: hearth::config::LmsKind::Ical,
            name: "calendar".into(),
            url: calendar,
            token: None,
            courses: Vec::new(),
            files: true,
            files_mb: 100,
            files_poll: std::time::Duration::from_secs(6 * 3600),
            scores: false,
        }],
        ..Default::default()
    };
    let notifier = hearth::lms::Notifier::new(&lms, lms_dir.path(), None).unwrap();
    struct Nowhere;
    impl hearth::lms::NoticeSink for Nowhere {
        fn deliver<'a>(
            &'a self,
            _: &'a hearth::lms::Notice,
        ) -> futures::future::BoxFuture<'a, Result<(), hearth::lms::NoticeError>> {
            Box::pin(async { Ok(()) })
        }
    }
    notifier.poll_once(&Nowhere).await;
    let host = page
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut w = world_with(
        |c| c.agent.http_allowed_domains = vec![host],
        vec![Box::new(notifier.upcoming_tool())],
    );

    let reply = w
        .say("ada", &call("lms_upcoming", serde_json::json!({"days": 7})))
        .await;
    assert!(
        reply.contains("Essay due"),
        "the calendar was read: {reply}"
    );
    assert!(
        reply.contains("pwned.txt"),
        "the planted call reached the model: {reply}"
    );
    let reply = w
        .say(
            "ada",
            &call("http_request", serde_json::json!({"url": page})),
        )
        .await;
    assert!(reply.contains("Bake at 180C"), "the page was read: {reply}");
    assert!(
        reply.contains("pwned.txt"),
        "the planted call reached the model: {reply}"
    );
    assert!(
        !w.folder("ada").join("pwned.txt").exists(),
        "a planted call ran"
    );
    // Only the model's own fetch was asked about; the planted writes never
    // got as far as a question.
    let asked: Vec<String> = w.channel.asked().into_iter().map(|q| q.tool).collect();
    assert_eq!(asked, ["http_request"]);
    // Positive control: the model's own write runs (after approval).
    let own = PLANTED.replace("<tool_call>", "CALL <tool_call>");
    w.say("ada", &own).await;
    assert!(w.folder("ada").join("pwned.txt").exists());
    w.daemon.stop().await;
}
