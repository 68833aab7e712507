//! `hearth models list|pull|use|rm`: getting a model worth running.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

use crate::config::{Config, ConfigSource, Environment};
use crate::engine::backends;
use crate::models::{self, Budget, Catalogue, Model, hub};

#[derive(Debug, Subcommand)]
pub enum ModelsCommand {
    /// The catalogue: size, memory needed, whether it fits here, what is
    /// downloaded and in use, and the one recommended for this machine.
    List,
    /// Download a model from the hub ([models] hub_url) into
    /// <data dir>/models: resumes a broken transfer, verifies its sha256.
    Pull { name: String },
    /// Run a downloaded model: sets [model] path in the config file.
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
    let loaded = backends::load(config.engine.backends_dir.as_deref()).ok();
    let budget = Budget::of(loaded);
    let recommended = budget.recommend(catalogue).map(|m| m.name.clone());
    println!(
        "{:<22} {:>8} {:>9} {:<5} STATE",
        "NAME", "FILE", "NEEDS", "FITS"
    );
    for m in &catalogue.models {
        let size = if m.entry.size.is_some() {
            format!("{:.2} GB", m.file_bytes() as f64 / GB)
        } else {
            format!("~{:.1} GB", m.file_bytes() as f64 / GB)
        };
        let mut state = Vec::new();
        if let Some(path) = models::installed(m, &config.data_dir) {
            state.push("downloaded".to_string());
            if in_use(config, &path) {
                state.push("in use".to_string());
            }
        }
        if recommended.as_deref() == Some(m.name.as_str()) {
            state.push("recommended".to_string());
        }
        if m.entry.params_b < 1.0 {
            state.push("test model".to_string());
        }
        println!(
            "{:<22} {:>8} {:>6.1} GB {:<5} {}",
            m.name,
            size,
            m.needs_bytes() as f64 / GB,
            if budget.fits(m) { "yes" } else { "no" },
            state.join(", ")
        );
    }
    println!(
        "\nfits: in {:.1} GB of free {}. ~ sizes are estimated from the weights and the quantisation.",
        budget.bytes as f64 / GB,
        budget.on
    );
    match &recommended {
        Some(name) => println!(
            "recommended here: {name}: hearth models pull {name} && hearth models use {name}"
        ),
        None => println!("no catalogue model beyond the test models fits here"),
    }
    Ok(ExitCode::SUCCESS)
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
    if pulled.already_present {
        println!(
            "ok: {} is already here ({mb:.0} MB, sha256 verified)",
            pulled.path.display()
        );
    } else if pulled.reused > 0 {
        println!(
            "ok: {} ({mb:.0} MB, resumed after {:.0} MB, sha256 verified)",
            pulled.path.display(),
            pulled.reused as f64 / 1e6
        );
    } else {
        println!(
            "ok: {} ({mb:.0} MB, sha256 verified)",
            pulled.path.display()
        );
    }
    println!("to run it: hearth models use {}", model.name);
    Ok(ExitCode::SUCCESS)
}

/// Whether `[model] path` names this file.
fn in_use(config: &Config, path: &Path) -> bool {
    crate::engine::model_file::locate(&config.model.path, &config.data_dir)
        .is_ok_and(|p| same_file(&p, path))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The config file `models use` edits: the one loaded, else the default.
fn config_file(config: &Config, env: &Environment) -> anyhow::Result<PathBuf> {
    match &config.source {
        ConfigSource::File(path) => Ok(path.clone()),
        ConfigSource::Defaults => env
            .default_config_path()
            .context("no home directory to keep a config file in; pass --config FILE"),
    }
}

fn use_model(config: &Config, env: &Environment, model: &Model) -> anyhow::Result<ExitCode> {
    let Some(path) = models::installed(model, &config.data_dir) else {
        anyhow::bail!(
            "{} is not downloaded; fix: hearth models pull {}",
            model.name,
            model.name
        );
    };
    let file = config_file(config, env)?;
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("{} is not valid TOML", file.display()))?;
    let section = doc
        .entry("model")
        .or_insert_with(toml_edit::table)
        .as_table_like_mut()
        .with_context(|| format!("[model] in {} is not a table", file.display()))?;
    set(section, "path", &model.entry.file);
    let old_template = section
        .get("chat_template")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    match &model.entry.chat_template {
        Some(t) => set(section, "chat_template", t),
        None => {
            section.remove("chat_template");
        }
    }
    let new_text = doc.to_string();
    // Never write a config hearth would refuse to start with.
    Config::parse(&new_text, &file, env)
        .with_context(|| format!("the edited {} would not load", file.display()))?;
    write_atomically(&file, &new_text)?;
    println!(
        "hearth now runs {} ({}); [model] path set in {}",
        model.name,
        path.display(),
        file.display()
    );
    if let Some(old) = old_template.filter(|_| model.entry.chat_template.is_none()) {
        println!("removed [model] chat_template = \"{old}\": it was set for the previous model");
    }
    println!("restart a running daemon to load it (systemctl --user restart hearth)");
    Ok(ExitCode::SUCCESS)
}

/// Sets `key`, keeping the comments around an existing one.
fn set(table: &mut dyn toml_edit::TableLike, key: &str, text: &str) {
    match table.get_mut(key) {
        Some(item) => *item = toml_edit::value(text),
        None => {
            table.insert(key, toml_edit::value(text));
        }
    }
}

fn write_atomically(file: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // The file may hold tokens: it keeps its own mode (a new one is private).
    let mode = std::fs::metadata(file)
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777)
        .unwrap_or(0o600);
    crate::file_modes::replace_file(file, text.as_bytes(), mode)
        .with_context(|| format!("cannot replace {}", file.display()))
}

fn remove(config: &Config, model: &Model) -> anyhow::Result<ExitCode> {
    let dir = models::download_dir(&config.data_dir);
    let path = dir.join(&model.entry.file);
    let part = dir.join(format!("{}.part", model.entry.file));
    if in_use(config, &path) {
        anyhow::bail!(
            "{} is the model in use ([model] path); fix: switch first with `hearth models use OTHER`",
            model.name
        );
    }
    let mut removed = false;
    for p in [&path, &part] {
        match std::fs::remove_file(p) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot delete {}", p.display())),
        }
    }
    if !removed {
        anyhow::bail!(
            "{} is not downloaded in {} (models that models/fetch put in the checkout are left alone)",
            model.name,
            dir.display()
        );
    }
    println!("deleted {}", path.display());
    Ok(ExitCode::SUCCESS)
}
