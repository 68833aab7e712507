//! What the sandbox costs per command: `true` through `sh -c`, the way the
//! shell tool runs everything: a plain spawn (the shell tool before the
//! sandbox), uncontained (`sandbox = "off"`: its own session, rlimits, the
//! pids cgroup and the group kill, no confinement), under bubblewrap and
//! under Landlock. All run interleaved, round by round, so a machine whose
//! speed drifts affects them alike; medians are reported, with each one's
//! cost over the plain spawn.
//!
//! Run: `cargo bench --bench sandbox` (figures go to the README).
#![allow(clippy::unwrap_used)] // a test: an unwrap is the clearest failure

use std::path::Path;
use std::time::{Duration, Instant};

use hearth::sandbox::{Containment, Limits, Sandbox, SandboxChoice};

const ROUNDS: usize = 60;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn plain(ws: &Path) -> Duration {
    let started = Instant::now();
    let out = tokio::process::Command::new("sh")
        .args(["-c", "true"])
        .current_dir(ws)
        .env_clear()
        .output()
        .await
        .expect("sh runs");
    assert!(out.status.success());
    started.elapsed()
}

async fn once(sandbox: &Sandbox) -> Duration {
    let started = Instant::now();
    let finished = sandbox.run("true", 4_000).await.expect("the command runs");
    assert!(finished.status.success());
    started.elapsed()
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ws: &Path = dir.path();
    let kinds = [
        ("uncontained", SandboxChoice::Off),
        ("bubblewrap", SandboxChoice::Bubblewrap),
        ("landlock", SandboxChoice::Landlock),
    ];
    let sandboxes: Vec<(&str, Sandbox)> = kinds
        .iter()
        .map(|(name, choice)| {
            (
                *name,
                Sandbox::resolve(*choice, ws, false, Limits::default()),
            )
        })
        .filter(|(name, s)| match s.containment() {
            Containment::Unavailable(why) => {
                println!("{name}: not available here ({why})");
                false
            }
            _ => true,
        })
        .collect();
    // One warm-up each: page cache, the cgroup hierarchy.
    for (_, s) in &sandboxes {
        once(s).await;
    }
    plain(ws).await;
    let mut base = Vec::new();
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); sandboxes.len()];
    for _ in 0..ROUNDS {
        base.push(plain(ws).await);
        for (i, (_, s)) in sandboxes.iter().enumerate() {
            samples[i].push(once(s).await);
        }
    }
    let base = median(base);
    let medians: Vec<Duration> = samples.into_iter().map(median).collect();
    println!("`sh -c true`, {ROUNDS} interleaved rounds, medians:");
    println!("  {:<12} {:>7.2} ms", "plain spawn", ms(base));
    for ((name, _), m) in sandboxes.iter().zip(&medians) {
        println!(
            "  {name:<12} {:>7.2} ms  (+{:.2} ms over the plain spawn)",
            ms(*m),
            ms(m.saturating_sub(base))
        );
    }
}
