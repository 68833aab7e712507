//! `hearth config check [PATH]`: validate, then print the resolved config.

use std::path::Path;
use std::process::ExitCode;

use crate::config::{Config, Environment};

pub fn run(path: Option<&Path>, env: &Environment) -> anyhow::Result<ExitCode> {
    let config = Config::load(path, env)?;
    print!("{}", config.render());
    eprintln!("config ok");
    Ok(ExitCode::SUCCESS)
}
