//! `hearth models list|pull|use|rm`: getting a model worth running.

use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

use super::models_use::{in_use, use_model};
use crate::config::{Config, Environment};
use crate::engine::backends;
use crate::models::{self, Budget, Catalogue, Kind, Model, hub};

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// The catalogue by kind (chat, vision, speech to text, text to
    /// speech): size, memory needed, whether it fits here, what is
    /// downloaded and in use, and the one recommended for this machine.
    List,
    /// Download a model (every file of it: a projector, a speech model's
    /// folder) from the hub ([models] hub_url) into <data dir>/models:
    /// resumes a broken transfer, verifies each file's checksum.
    Pull { name: String },
    /// Use a downloaded model: sets [model] path (and mmproj), [voice]
    /// model or [voice] voice in the config file.
    Use { name: String },
    /// Delete a downloaded model (not the one in use).
    Rm { name: String },
}

pub async fn run(
    config: &Config,
    env: &Environment,
    command: ModelsCommand,
) -> anyhow::Result<ExitCode> {
    let catalogue = Catalogue::builtin();
    match command {
        ModelsCommand::List => list(config, &catalogue),
        ModelsCommand::Pull { name } => pull(config, catalogue.get(&name)?).await,
        ModelsCommand::Use { name } => use_model(config, env, catalogue.get(&name)?),
        ModelsCommand::Rm { name } => remove(config, catalogue.get(&name)?),
    }
}

const GB: f64 = 1e9;

fn list(config: &Config, catalogue: &Catalogue) -> anyhow::Result<ExitCode> {
    let loaded = backends::load(
        config.engine.backends_dir.as_deref(),
        &config.engine.rpc_servers,
    )
    .ok();
    let budget = Budget::of(loaded);
    let mut commands = Vec::new();
    for kind in Kind::ALL {
        let recommended = budget
            .recommend_kind(catalogue, kind)
            .map(|m| m.name.clone());
        println!("{}:", kind.title());
        println!(
            "  {:<24} {:>9} {:>9} {:<5} STATE",
            "NAME", "FILES", "NEEDS", "FITS"
        );
        for m in catalogue.models.iter().filter(|m| m.entry.kind == kind) {
            let line = row(
                config,
                &budget,
                m,
                recommended.as_deref() == Some(m.name.as_str()),
            );
            println!("  {line}");
        }
        // Nothing to suggest for a model that is here and in use; one
        // that is here needs only `use`.
        let here = recommended
            .as_deref()
            .and_then(|name| catalogue.models.iter().find(|m| m.name == name))
            .and_then(|m| models::installed(m, &config.data_dir).map(|p| in_use(config, m, &p)));
        if let Some(name) = recommended.filter(|_| here != Some(true)) {
            let why = match kind {
                Kind::Chat => "to chat",
                Kind::Vision => "or, to see pictures too (it replaces the chat model)",
                Kind::SpeechToText => "to hear voice notes",
                Kind::TextToSpeech => "to speak replies",
                Kind::Embedding => "to find memories by meaning",
            };
            commands.push(match here {
                Some(_) => format!("{why}: hearth models use {name} (it is here)"),
                None => format!("{why}: hearth models pull {name} && hearth models use {name}"),
            });
        }
        println!();
    }
    println!(
        "fits: in {:.1} GB of free {}. ~ sizes are estimated from the weights and the quantisation.",
        budget.bytes as f64 / GB,
        budget.on
    );
    if commands.is_empty() {
        println!("no catalogue model beyond the test models fits here");
    } else {
        println!("recommended here:");
        for c in commands {
            println!("  {c}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One model's line of the list.
fn row(config: &Config, budget: &Budget, m: &Model, recommended: bool) -> String {
    let exact = m.pieces().iter().all(|p| p.size.is_some());
    let size = if exact {
        format!("{:.2} GB", m.file_bytes() as f64 / GB)
    } else {
        format!("~{:.2} GB", m.file_bytes() as f64 / GB)
    };
    let mut state = Vec::new();
    if let Some(path) = models::installed(m, &config.data_dir) {
        state.push("downloaded".to_string());
        if in_use(config, m, &path) {
            state.push("in use".to_string());
        }
    }
    if recommended {
        state.push("recommended".to_string());
    }
    if m.entry.kind == Kind::Chat && m.entry.params_b < 1.0 {
        state.push("test model".to_string());
    }
    format!(
        "{:<24} {:>9} {:>6.1} GB {:<5} {}",
        m.name,
        size,
        m.needs_bytes() as f64 / GB,
        if budget.fits(m) { "yes" } else { "no" },
        state.join(", ")
    )
}

async fn pull(config: &Config, model: &Model) -> anyhow::Result<ExitCode> {
    let dir = models::download_dir(&config.data_dir);
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .expect("a valid progress template")
        .progress_chars("=> "),
    );
    bar.set_message(model.name.clone());
    let result = hub::pull(&config.models.hub_url, model, &dir, |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .await;
    bar.finish_and_clear();
    let pulled = result?;
    let mb = pulled.bytes as f64 / 1e6;
    let files = match pulled.files {
        1 => "checksum verified".to_string(),
        n => format!("{n} files, each checksum verified"),
    };
    if pulled.already_present {
        println!(
            "ok: {} is already here ({mb:.0} MB, {files})",
            pulled.path.display()
        );
    } else if pulled.reused > 0 {
        println!(
            "ok: {} ({mb:.0} MB, resumed after {:.0} MB, {files})",
            pulled.path.display(),
            pulled.reused as f64 / 1e6
        );
    } else {
        println!("ok: {} ({mb:.0} MB, {files})", pulled.path.display());
    }
    println!("to run it: hearth models use {}", model.name);
    Ok(ExitCode::SUCCESS)
}

fn remove(config: &Config, model: &Model) -> anyhow::Result<ExitCode> {
    let dir = models::download_dir(&config.data_dir);
    let pieces = model.pieces();
    let main = dir.join(&pieces[0].local);
    if in_use(config, model, &main) {
        anyhow::bail!(
            "{} is in use (see `hearth models list`); fix: switch first with `hearth models use OTHER`",
            model.name
        );
    }
    let mut removed = false;
    for piece in &pieces {
        let path = dir.join(&piece.local);
        let part = dir.join(format!("{}.part", piece.local));
        for p in [&path, &part] {
            match std::fs::remove_file(p) {
                Ok(()) => removed = true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).with_context(|| format!("cannot delete {}", p.display())),
            }
        }
        let _ = std::fs::remove_file(dir.join(format!("{}.lock", piece.local)));
    }
    if let Some(folder) = &model.entry.folder {
        // Only once empty: a file the user put there stays.
        let _ = std::fs::remove_dir(dir.join(folder));
    }
    if !removed {
        anyhow::bail!(
            "{} is not downloaded in {} (models that models/fetch put in the checkout are left alone)",
            model.name,
            dir.display()
        );
    }
    println!("deleted {}", dir.join(model.config_name()).display());
    Ok(ExitCode::SUCCESS)
}
