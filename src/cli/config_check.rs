//! `hearth config check [PATH]`: validate, then print the resolved config.

use std::path::Path;
use std::process::ExitCode;

use crate::config::{Config, Environment};

pub fn run(path: Option<&Path>, env: &Environment) -> anyhow::Result<ExitCode> {
    let config = Config::load(path, env)?;
    // A config the daemon would refuse is not ok, though `hearth ask` runs.
    config.gateway.check_serving()?;
    print!("{}", config.render());
    if let Some(secrets) = env.secrets_read() {
        eprintln!("secrets read from {}", secrets.display());
    }
    for notice in &config.notices {
        eprintln!("hearth: warning: config: {notice}");
    }
    // The model is part of a working config: a path to nothing fails here,
    // not at the first message.
    if let Err(e) = crate::engine::model_file::locate(&config.model.path, &config.data_dir) {
        let file = match &config.source {
            crate::config::ConfigSource::File(p) => p.display().to_string(),
            crate::config::ConfigSource::Defaults => "(defaults)".to_string(),
        };
        eprintln!("hearth: error: config {file}: key `model.path`: {e}");
        return Ok(ExitCode::FAILURE);
    }
    eprintln!("config ok");
    Ok(ExitCode::SUCCESS)
}
