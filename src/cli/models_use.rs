//! `hearth models use NAME`: points the config file at a downloaded model,
//! by its kind: `[model] path` (and `mmproj` for a vision model),
//! `[voice] model` for a Whisper model, `[voice] voice` for a Piper voice,
//! `[memory] embedding_model` for an embedding model.
//! The rest of the file, comments included, is kept; a file hearth would
//! refuse to start with is never written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use crate::config::{Config, ConfigSource, Environment};
use crate::models::{self, Kind, Model};

/// Whether the config runs `model`, whose main file is at `path`.
pub fn in_use(config: &Config, model: &Model, path: &Path) -> bool {
    match model.entry.kind {
        Kind::Chat | Kind::Vision => {
            crate::engine::model_file::locate(&config.model.path, &config.data_dir)
                .is_ok_and(|p| same_file(&p, path))
        }
        Kind::SpeechToText => crate::speech::model_dir(&config.voice, &config.data_dir)
            .is_ok_and(|dir| path.parent().is_some_and(|p| same_file(&dir, p))),
        Kind::TextToSpeech => crate::speech::voice_file(&config.voice, &config.data_dir)
            .is_ok_and(|voice| same_file(&voice, path)),
        Kind::Embedding => matches!(
            crate::memory::meaning::locate(config),
            Ok(crate::memory::meaning::Located::Found(p)) if same_file(&p, path)
        ),
    }
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

pub fn use_model(config: &Config, env: &Environment, model: &Model) -> anyhow::Result<ExitCode> {
    let Some(path) = models::installed(model, &config.data_dir) else {
        anyhow::bail!(
            "{} is not downloaded (or not every file of it); fix: hearth models pull {}",
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
    let table = match model.entry.kind {
        Kind::Chat | Kind::Vision => "model",
        Kind::SpeechToText | Kind::TextToSpeech => "voice",
        Kind::Embedding => "memory",
    };
    let section = doc
        .entry(table)
        .or_insert_with(toml_edit::table)
        .as_table_like_mut()
        .with_context(|| format!("[{table}] in {} is not a table", file.display()))?;
    let notes = match model.entry.kind {
        Kind::Chat | Kind::Vision => chat_model(section, model),
        Kind::SpeechToText => {
            set(section, "model", &model.config_name());
            Vec::new()
        }
        Kind::TextToSpeech => {
            set(section, "voice", &model.config_name());
            Vec::new()
        }
        Kind::Embedding => {
            set(section, "embedding_model", &model.config_name());
            Vec::new()
        }
    };
    let new_text = doc.to_string();
    // Never write a config hearth would refuse to start with.
    Config::parse(&new_text, &file, env)
        .with_context(|| format!("the edited {} would not load", file.display()))?;
    write_atomically(&file, &new_text)?;
    let what = match model.entry.kind {
        Kind::Chat => "hearth now runs",
        Kind::Vision => "hearth now runs, and sees pictures with,",
        Kind::SpeechToText => "voice notes are now heard by",
        Kind::TextToSpeech => "replies are now spoken by",
        Kind::Embedding => "memories are now found by meaning with",
    };
    println!(
        "{what} {} ({}); [{table}] set in {}",
        model.name,
        path.display(),
        file.display()
    );
    for note in notes {
        println!("{note}");
    }
    println!("restart a running daemon to load it (systemctl --user restart hearth)");
    Ok(ExitCode::SUCCESS)
}

/// Sets `[model] path`, the projector and the template a chat model needs,
/// and removes what was set for the previous one; says what it removed.
fn chat_model(section: &mut dyn toml_edit::TableLike, model: &Model) -> Vec<String> {
    let mut notes = Vec::new();
    set(section, "path", &model.config_name());
    let old = |section: &dyn toml_edit::TableLike, key: &str| {
        section
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let old_template = old(section, "chat_template");
    match &model.entry.chat_template {
        Some(t) => set(section, "chat_template", t),
        None => {
            section.remove("chat_template");
            if let Some(old) = old_template {
                notes.push(format!(
                    "removed [model] chat_template = \"{old}\": it was set for the previous model"
                ));
            }
        }
    }
    let old_projector = old(section, "mmproj");
    match model.projector() {
        Some(p) => set(section, "mmproj", &p),
        None => {
            section.remove("mmproj");
            if let Some(old) = old_projector.filter(|o| !o.is_empty()) {
                notes.push(format!(
                    "removed [model] mmproj = \"{old}\": it was the previous model's projector"
                ));
            }
        }
    }
    notes
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

pub(super) fn write_atomically(file: &Path, text: &str) -> anyhow::Result<()> {
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
