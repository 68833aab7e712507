//! The scenario suite's harness (`hearth::scenarios`, `hearth bench
//! --scenarios`). With a scripted model that makes the right calls every
//! scenario passes through the real pipeline; the same script with the
//! needed tools taken away fails (the control), and so does a script that
//! does the wrong thing (a reminder an hour late, the wrong day, a reply
//! without the file's words, a call where none was needed, a moved reminder
//! whose old one stays). Then the real command on SmolLM2: every scenario
//! and its control run, and a rate is printed per scenario.

use std::sync::Arc;
use std::time::Duration;

use chrono::{Datelike, Utc, Weekday};
use hearth::config::{Config, Environment};
use hearth::providers::{Provider, ScriptedProvider};
use hearth::scenarios::{self, SCENARIOS, Scenario, Setup, Verdict, World};
use hearth::security::{Autonomy, SecurityPolicy};
use hearth::tools::ToolContext;
use serde_json::json;

use crate::common::{SMOLLM2, Sandbox, engine_lock, model};

fn config(home: &std::path::Path) -> Config {
    let text = format!("[data]\ndir = \"{}\"\n", home.join("data").display());
    Config::parse(
        &text,
        &home.join("config.toml"),
        &Environment::with_home(home),
    )
    .unwrap()
}

fn tool_context(c: &Config) -> Result<ToolContext, Box<dyn std::error::Error + Send + Sync>> {
    let policy = SecurityPolicy::new(&c.agent.workspace, Autonomy::Supervised, None)?;
    Ok(ToolContext::new(policy, Duration::from_secs(10)))
}

fn call(name: &str, args: serde_json::Value) -> String {
    format!(
        "<tool_call>{}</tool_call>",
        serde_json::json!({"name": name, "arguments": args})
    )
}

/// `days` from today in UTC (the scheduler's default zone), as `at` takes it.
fn day(days: i64) -> String {
    (Utc::now().date_naive() + chrono::Duration::days(days))
        .format("%Y-%m-%d")
        .to_string()
}

fn next_tuesday() -> i64 {
    let today = Utc::now().weekday().num_days_from_monday() as i64;
    match (Weekday::Tue.num_days_from_monday() as i64 - today).rem_euclid(7) {
        0 => 7,
        n => n,
    }
}

/// A model's replies, one per request, for a scenario done right
/// (`right`) or wrong.
fn script(name: &str, right: bool) -> Vec<String> {
    let hour = if right { "09:00" } else { "10:00" };
    match name {
        "reminder" => vec![
            call(
                "cron_add",
                json!({"prompt": "Call the dentist", "at": format!("{} {hour}", day(next_tuesday()))}),
            ),
            "I will remind you.".into(),
        ],
        "remember" => vec![
            call(
                "memory_store",
                json!({"content": if right { "My sister's birthday is on May 3." } else { "My sister's birthday is on May 4." }}),
            ),
            "Noted.".into(),
        ],
        "due_this_week" => vec![
            call("lms_upcoming", json!({"days": 7})),
            if right {
                "Lab report 4: titration curves, due in two days."
            } else {
                "You have a lab report due."
            }
            .into(),
        ],
        "read_file" => vec![
            call("file_read", json!({"path": "notes.txt"})),
            if right {
                "It says the wifi password is plum-otter-42."
            } else {
                "It holds a password."
            }
            .into(),
        ],
        "no_tool" if right => vec!["Paris.".into()],
        "no_tool" => vec![
            call("memory_recall", json!({"query": "France"})),
            "Paris.".into(),
        ],
        "follow_up" => {
            let mut turns = vec![
                call(
                    "cron_add",
                    json!({"prompt": "Call mom", "at": format!("{} 18:00", day(1))}),
                ),
                "Set for 6pm.".into(),
            ];
            if right {
                turns.push(call("cron_remove", json!({"id": 1})));
            }
            turns.push(call(
                "cron_add",
                json!({"prompt": "Call mom", "at": format!("{} 19:00", day(1))}),
            ));
            turns.push("Moved to 7pm.".into());
            turns
        }
        other => panic!("no script for {other}"),
    }
}

async fn played(scenario: &Scenario, setup: &Setup<'_>, right: bool, without: &[&str]) -> Verdict {
    let world = World::new(setup).await.unwrap();
    let provider: Arc<dyn Provider> = Arc::new(ScriptedProvider::new(script(scenario.name, right)));
    scenarios::play(scenario, &world, provider, without)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_check_passes_the_right_state_and_fails_without_its_tool_or_done_wrong() {
    let home = tempfile::tempdir().unwrap();
    let config = config(home.path());
    let setup = Setup {
        config: &config,
        tool_context: &tool_context,
    };
    for scenario in &SCENARIOS {
        let right = played(scenario, &setup, true, &[]).await;
        assert_eq!(right, Verdict::Pass, "{} done right", scenario.name);
        let wrong = played(scenario, &setup, false, &[]).await;
        assert!(
            matches!(wrong, Verdict::Fail(_)),
            "{} done wrong: {wrong:?}",
            scenario.name
        );
        if !scenario.needs.is_empty() {
            let control = played(scenario, &setup, true, scenario.needs).await;
            assert!(
                matches!(control, Verdict::Fail(_)),
                "{} without {:?}: {control:?}",
                scenario.name,
                scenario.needs
            );
        }
    }
    // Nothing of the worlds is left behind.
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("hearth-scenario-{}-", std::process::id()))
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn bench_scenarios_runs_each_scenario_beside_its_control_on_smollm2() {
    let _engine = engine_lock();
    let sandbox = Sandbox::new();
    let config = sandbox.config(&format!(
        "[model]\npath = \"{}\"\ncontext_size = 4096\n[generation]\nmax_tokens = 160\n",
        model(SMOLLM2).display()
    ));
    let json = sandbox.path("scenarios.json");
    let out = sandbox
        .hearth_process()
        .args(["--config"])
        .arg(&config)
        .args(["bench", "--scenarios", "--rounds", "1", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    crate::common::assert_no_panic(&stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for scenario in &SCENARIOS {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{} ", scenario.name)))
            .unwrap_or_else(|| panic!("no line for {}: {stdout}", scenario.name));
        assert!(line.contains("/1"), "{line}");
    }
    assert!(stdout.contains("overall"), "{stdout}");
    let figures: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = figures["scenarios"].as_array().unwrap();
    assert_eq!(rows.len(), SCENARIOS.len());
    for row in rows {
        assert_eq!(row["rounds"], 1, "{row}");
        assert_eq!(row["control_passed"], 0, "{row}");
    }
}
