//! Heartbeat checks (`HEARTBEAT.md`): a deadline 20 hours away and not
//! handed in gets one reminder; the same run an hour later sends none, in
//! the same words or in others about the same item, while a message about
//! another item goes out; a run that tries a write tool runs nothing (the
//! registry refuses it in the read-only turn) while its read tool runs; a
//! run that ends in hearth's own words (out of rounds, nothing said) sends
//! nothing; no file, no turn.
//!
//! The model is scripted (`ScriptedProvider`): what is tested is hearth's
//! part (the instructions reaching the model with the time, the read-only
//! tools, silence, the repeat check, the record across a restart), not the
//! judgement of a particular model.
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use crate::support;

use std::sync::Arc;

use hearth::config::LmsTarget;
use hearth::daemon::heartbeat::{Beat, FILE, Heartbeat};
use hearth::lms::{LmsUpcoming, ManualClock};
use hearth::providers::ScriptedProvider;
use hearth::sandbox::{Containment, Limits, Sandbox, SandboxChoice};
use hearth::security::{Autonomy, SecurityPolicy};
use hearth::tools::{ToolContext, ToolRegistry};
use support::lms_fake::*;

const STANDING: &str = "If a deadline is within 24 h and I haven't submitted, remind me at once.\n";

const UPCOMING: &str =
    "<tool_call>{\"name\": \"lms_upcoming\", \"arguments\": {\"days\": 1}}</tool_call>";
const REMINDER: &str = "Essay 1 is due in 20 hours and not handed in yet.";

struct World {
    home: tempfile::TempDir,
    config: hearth::config::Config,
    tools: Arc<ToolRegistry>,
    items: Arc<hearth::lms::SeenStore>,
    context: hearth::tools::ToolContext,
}

/// Fake Moodle polled 20 hours before the essay is due (Sat 15 Mar 23:59
/// CET), its tools in a registry beside the file tools.
async fn world() -> World {
    world_in(SandboxChoice::Auto, Autonomy::Supervised).await
}

/// [`world`] with commands contained by `choice` under `autonomy`.
async fn world_in(choice: SandboxChoice, autonomy: Autonomy) -> World {
    let fake = moodle_fake();
    let url = moodle_server(fake).await;
    let home = tempfile::tempdir().unwrap();
    let mut config = support::config(home.path());
    config.lms = moodle_config(&url);
    config.lms.deliver = Some(LmsTarget {
        channel: "telegram".into(),
        to: "601".into(),
    });
    let clock = Arc::new(ManualClock::new(at("2025-03-15T02:59:00Z")));
    let n = notifier(&config.lms, &config.data_dir, &clock);
    n.poll().await;
    std::fs::create_dir_all(&config.agent.workspace).unwrap();
    let workspace = &config.agent.workspace;
    let context = ToolContext::with_sandbox(
        SecurityPolicy::new(workspace, autonomy, None).unwrap(),
        Sandbox::resolve(choice, workspace, false, Limits::default()),
        std::time::Duration::from_secs(10),
    );
    if let Containment::Unavailable(why) = context.sandbox.containment() {
        panic!("{choice:?} cannot run here: {why}");
    }
    let mut tools = ToolRegistry::for_config(&config.agent, &context.sandbox);
    let items = Arc::new(hearth::lms::SeenStore::open_in(&config.data_dir).unwrap());
    tools.register(Box::new(LmsUpcoming::new(
        items.clone(),
        config.lms.time_zone,
        clock,
    )));
    std::fs::write(config.agent.workspace.join(FILE), STANDING).unwrap();
    World {
        home,
        config,
        tools: Arc::new(tools),
        items,
        context,
    }
}

fn heartbeat(w: &World, model: &Arc<ScriptedProvider>) -> Heartbeat {
    Heartbeat::new(
        &w.config,
        w.config.lms.deliver.clone().unwrap(),
        model.clone(),
        w.tools.clone(),
        w.context.clone(),
    )
    .unwrap()
    .about(w.items.clone())
}

#[tokio::test]
async fn a_deadline_in_20_hours_gets_one_reminder_and_the_next_run_none() {
    let w = world().await;
    let now = at("2025-03-15T02:59:00Z");
    let model = Arc::new(
        ScriptedProvider::new([UPCOMING, REMINDER])
            .then_reply(UPCOMING)
            .then_reply(REMINDER),
    );
    let beat = heartbeat(&w, &model);
    let Beat::Send(text) = beat.run_once(now).await.unwrap() else {
        panic!("the first run tells the person");
    };
    assert_eq!(text, REMINDER);
    let asked = model.requests();
    let first = format!("{:?}", asked[0].messages);
    assert!(
        first.contains(STANDING.trim()),
        "the instructions reach the model: {first}"
    );
    assert!(
        first.contains("Saturday 15 March 2025 03:59 CET"),
        "with the local time: {first}"
    );
    let looked = format!("{:?}", asked[1].messages);
    assert!(
        looked.contains("Essay 1: Algorithms in everyday life"),
        "the read tool ran and its answer reached the model: {looked}"
    );
    beat.sent(&text, now).unwrap();

    // An hour later, a new heartbeat (a restart between): the same words.
    let again = heartbeat(&w, &model);
    assert_eq!(
        again
            .run_once(now + chrono::Duration::hours(1))
            .await
            .unwrap(),
        Beat::Repeat
    );
    drop(w.home);
}

#[tokio::test]
async fn the_same_reminder_in_other_words_is_a_repeat_and_another_item_is_not() {
    let w = world().await;
    let now = at("2025-03-15T02:59:00Z");
    let later = "Reminder: essay 1 is due in 19 hours and you have not handed it in!";
    let other = "Problem set 3 is due on Thursday at noon.";
    let model = Arc::new(
        ScriptedProvider::new([UPCOMING, REMINDER])
            .then_reply(UPCOMING)
            .then_reply(later)
            .then_reply(UPCOMING)
            .then_reply(other)
            .then_reply(UPCOMING)
            .then_reply(later),
    );
    let beat = heartbeat(&w, &model);
    let Beat::Send(text) = beat.run_once(now).await.unwrap() else {
        panic!("the first run tells the person");
    };
    beat.sent(&text, now).unwrap();
    // Hostile: an hour later, other words about the same essay.
    let hour = now + chrono::Duration::hours(1);
    assert_eq!(
        heartbeat(&w, &model).run_once(hour).await.unwrap(),
        Beat::Repeat
    );
    // Control: a message about another item goes out.
    assert_eq!(
        heartbeat(&w, &model).run_once(hour).await.unwrap(),
        Beat::Send(other.into())
    );
    // And a day later the essay may be named again.
    let day = now + chrono::Duration::hours(25);
    assert_eq!(
        heartbeat(&w, &model).run_once(day).await.unwrap(),
        Beat::Send(later.into())
    );
}

#[tokio::test]
async fn a_run_that_ends_in_hearth_s_own_words_sends_nothing() {
    let w = world().await;
    let now = at("2025-03-15T02:59:00Z");
    // The model calls the tool with new arguments every round: the rounds
    // run out, and hearth's "I stopped after 4 rounds" is not a message.
    let calls = (1..=10).map(|days| {
        format!("<tool_call>{{\"name\": \"lms_upcoming\", \"arguments\": {{\"days\": {days}}}}}</tool_call>")
    });
    let looping = Arc::new(ScriptedProvider::new(calls));
    assert_eq!(
        heartbeat(&w, &looping).run_once(now).await.unwrap(),
        Beat::Quiet
    );
    assert_eq!(
        looping.requests().len(),
        w.config.heartbeat.max_rounds as usize,
        "bounded in rounds"
    );
    // The model's last round says nothing: hearth's fallback ("here is what
    // lms_upcoming returned") is not a message either.
    let mute = Arc::new(ScriptedProvider::new([UPCOMING, ""]));
    assert_eq!(
        heartbeat(&w, &mute).run_once(now).await.unwrap(),
        Beat::Quiet
    );
    // Control: the model's own words after the same call go out.
    let says = Arc::new(ScriptedProvider::new([UPCOMING, REMINDER]));
    assert_eq!(
        heartbeat(&w, &says).run_once(now).await.unwrap(),
        Beat::Send(REMINDER.into())
    );
}

#[tokio::test]
async fn nothing_to_say_sends_nothing_and_no_file_costs_no_turn() {
    let w = world().await;
    let now = at("2025-03-15T02:59:00Z");
    let model = Arc::new(ScriptedProvider::new(["NOTHING."]));
    assert_eq!(
        heartbeat(&w, &model).run_once(now).await.unwrap(),
        Beat::Quiet
    );
    std::fs::remove_file(w.config.agent.workspace.join(FILE)).unwrap();
    let idle = Arc::new(ScriptedProvider::new(["should never be asked"]));
    assert_eq!(
        heartbeat(&w, &idle).run_once(now).await.unwrap(),
        Beat::NoInstructions
    );
    assert!(idle.requests().is_empty(), "no file, no model call");
}

#[tokio::test]
async fn a_heartbeat_that_tries_a_write_tool_runs_nothing_and_its_read_tool_runs() {
    let write = "<tool_call>{\"name\": \"file_write\", \"arguments\": {\"path\": \"planted.txt\", \"content\": \"pwned\"}}</tool_call>";
    let shell = "<tool_call>{\"name\": \"shell\", \"arguments\": {\"command\": \"touch shelled.txt\"}}</tool_call>";
    for (choice, autonomy) in [
        (SandboxChoice::Bubblewrap, Autonomy::Supervised),
        (SandboxChoice::Landlock, Autonomy::Supervised),
        (SandboxChoice::Bubblewrap, Autonomy::Full),
        (SandboxChoice::Off, Autonomy::Full),
    ] {
        let w = world_in(choice, autonomy).await;
        let mode = format!("{choice:?}, {autonomy:?}");
        let workspace = w.context.policy.workspace().to_path_buf();
        let now = at("2025-03-15T02:59:00Z");
        // Hostile: a write and a command; control: a read in the same run.
        let model = Arc::new(ScriptedProvider::new([write, shell, UPCOMING, "NOTHING"]));
        let outcome = heartbeat(&w, &model).run_once(now).await.unwrap();
        assert_eq!(outcome, Beat::Quiet, "{mode}");
        for planted in ["planted.txt", "shelled.txt"] {
            assert!(!workspace.join(planted).exists(), "{mode}: {planted}");
        }
        let asked = model.requests();
        for (round, tool) in [(1, "file_write"), (2, "shell")] {
            let after = format!("{:?}", asked[round].messages);
            assert!(
                after.contains("changes things") && after.contains("only reading tools may run"),
                "{mode}: the model is told {tool} was refused: {after}"
            );
        }
        let after_read = format!("{:?}", asked[3].messages);
        assert!(
            after_read.contains("Essay 1"),
            "{mode}: the read ran: {after_read}"
        );
        // Control: the same write and command through the same context,
        // not read-only, run.
        let result = w
            .tools
            .run(
                "file_write",
                serde_json::json!({"path": "control.txt", "content": "ok"}),
                &w.context,
            )
            .await;
        assert!(!result.is_error, "{mode}: {}", result.content);
        assert!(workspace.join("control.txt").exists(), "{mode}");
        let result = w
            .tools
            .run(
                "shell",
                serde_json::json!({"command": "touch shelled-control.txt"}),
                &w.context,
            )
            .await;
        assert!(!result.is_error, "{mode}: {}", result.content);
        assert!(workspace.join("shelled-control.txt").exists(), "{mode}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_s_heartbeat_loop_sends_the_reminder_once_through_the_channel() {
    use hearth::channels::InMemoryChannel;
    let mut w = world().await;
    // Three runs, a moment apart: the reminder, the same again, nothing.
    w.config.heartbeat.every = std::time::Duration::from_millis(200);
    w.config.lms.deliver = Some(LmsTarget {
        channel: "mem".into(),
        to: "601".into(),
    });
    let model = Arc::new(
        ScriptedProvider::new([UPCOMING, REMINDER, UPCOMING, REMINDER]).then_reply("NOTHING"),
    );
    let channel = Arc::new(InMemoryChannel::new("mem"));
    let runtime = support::builder(w.config.clone(), support::local(model.clone()));
    let (daemon, _reports) = support::start(runtime, channel.clone());
    let beat = heartbeat(&w, &model);
    let stop = tokio_util::sync::CancellationToken::new();
    let running = tokio::spawn(hearth::daemon::heartbeat::run(
        beat,
        daemon.delivery(),
        stop.clone(),
    ));
    for _ in 0..200 {
        if model.requests().len() >= 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    stop.cancel();
    running.await.unwrap();
    assert!(model.requests().len() >= 5, "three runs took place");
    assert_eq!(
        support::texts(&channel, "601"),
        [REMINDER],
        "one reminder, through the channel"
    );
}
