//! `hearth bench --scenarios`: the requests hearth's users make (a
//! reminder, "remember that…", what is due, reading a file, a question that
//! needs no tool, a follow-up), each through the real pipeline on the
//! configured model, in a data folder of its own, scored by the state it
//! leaves ([`crate::scenarios`]). Prints the pass rate per scenario beside
//! its control (the tool taken away), and writes the figures as JSON. A
//! control that passes is a fault in the harness: the command then fails.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::config::{Config, Environment};
use crate::scenarios::{self, Setup, Tally};

pub async fn run(
    config: &Config,
    env: &Environment,
    rounds: usize,
    json: &Path,
) -> anyhow::Result<ExitCode> {
    // The engine's saved conversations go to a scratch folder, never among
    // the configured data.
    let scratch = std::env::temp_dir().join(format!("hearth-scenarios-{}", std::process::id()));
    crate::file_modes::make_private_dir(&scratch)?;
    let mut own = config.clone();
    own.data_dir = scratch.clone();
    let provider = Arc::new(super::startup::local_provider(&own).await?);
    let model = provider
        .engine()
        .info()
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let env = env.clone();
    let tool_context = move |c: &Config| super::tools_cmd::context(c, &env).map_err(Into::into);
    let setup = Setup {
        config: &own,
        tool_context: &tool_context,
    };
    eprintln!(
        "{} scenarios, {rounds} round(s) each, on {model}",
        scenarios::SCENARIOS.len()
    );
    let tallies = scenarios::run(provider.clone(), &setup, rounds, |line| {
        eprintln!("  {line}")
    })
    .await;
    drop(provider);
    let _ = std::fs::remove_dir_all(&scratch);
    let tallies = tallies?;
    print(&model, &tallies);
    if let Some(folder) = json.parent() {
        std::fs::create_dir_all(folder)?;
    }
    let figures = serde_json::json!({"model": model, "rounds": rounds, "scenarios": tallies});
    std::fs::write(json, serde_json::to_string_pretty(&figures)?)?;
    println!("figures: {}", json.display());
    let blind: Vec<&str> = tallies
        .iter()
        .filter(|t| t.control_passed > 0)
        .map(|t| t.name.as_str())
        .collect();
    if blind.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    eprintln!(
        "hearth bench: the check of {} passed with its tool taken away; its figures mean nothing",
        blind.join(", ")
    );
    Ok(ExitCode::FAILURE)
}

fn print(model: &str, tallies: &[Tally]) {
    println!("\n{model}: pass rate per scenario (controls: the tool taken away; each must fail)\n");
    println!(
        "{:<14} {:>8} {:>6} {:>16}  first failure",
        "scenario", "passed", "rate", "controls passed"
    );
    for t in tallies {
        let rate = 100.0 * t.passed as f64 / t.rounds.max(1) as f64;
        let controls = match t.control_rounds {
            0 => "(needs no tool)".to_string(),
            n => format!("{}/{n}", t.control_passed),
        };
        println!(
            "{:<14} {:>8} {:>5.0}% {:>16}  {}",
            t.name,
            format!("{}/{}", t.passed, t.rounds),
            rate,
            controls,
            t.failures.first().map(String::as_str).unwrap_or("")
        );
    }
    let (passed, rounds) = tallies
        .iter()
        .fold((0, 0), |(p, r), t| (p + t.passed, r + t.rounds));
    println!(
        "{:<14} {:>8} {:>5.0}%",
        "overall",
        format!("{passed}/{rounds}"),
        100.0 * passed as f64 / rounds.max(1) as f64
    );
}
