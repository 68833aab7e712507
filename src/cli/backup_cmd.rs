//! `hearth backup PATH` and `hearth restore PATH` (see [`crate::backup`]).

use std::path::Path;
use std::process::ExitCode;

use crate::backup::{restore::restore, take::take};
use crate::config::{Config, ConfigSource};

fn config_file(config: &Config) -> Option<&Path> {
    match &config.source {
        ConfigSource::File(path) => Some(path),
        ConfigSource::Defaults => None,
    }
}

pub fn backup(config: &Config, dest: &Path, kv: bool) -> anyhow::Result<ExitCode> {
    let taken = take(&config.data_dir, config_file(config), dest, kv)?;
    let bytes: u64 = taken.manifest.files.iter().map(|f| f.bytes).sum();
    println!(
        "Backed up {} files ({:.1} MiB) from {} to {}.",
        taken.manifest.files.len(),
        bytes as f64 / (1 << 20) as f64,
        config.data_dir.display(),
        dest.display()
    );
    if !taken.missing.is_empty() {
        println!(
            "Not there yet, so not copied: {}.",
            taken.missing.join(", ")
        );
    }
    if config_file(config).is_none() {
        println!("No config file is in use (built-in defaults): none was copied.");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_restore(config: &Config, from: &Path) -> anyhow::Result<ExitCode> {
    let restored = restore(from, &config.data_dir, config_file(config))?;
    println!(
        "Restored the backup of {} (hearth {}) into {}.",
        chrono::DateTime::from_timestamp(restored.manifest.taken, 0)
            .map(|t| t
                .with_timezone(&chrono::Local)
                .format("%Y-%m-%d %H:%M")
                .to_string())
            .unwrap_or_default(),
        restored.manifest.hearth,
        config.data_dir.display()
    );
    println!(
        "What the data folder held before is in {}.",
        restored.set_aside.display()
    );
    if let Some(old) = &restored.config_set_aside {
        println!(
            "The config from the backup is in use; the one before is {}.",
            old.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
