//! Starting the engine for a command, with a progress bar on a terminal.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

use crate::config::Config;
use crate::engine::{Engine, EngineError, ProgressFn};
use crate::providers::LocalProvider;

/// Locates and loads the model on the engine thread. While it loads, a
/// progress bar shows on stderr when stderr is a terminal.
pub async fn local_provider(config: &Config) -> Result<LocalProvider, EngineError> {
    let settings = crate::engine_setup::engine_settings(config)?;
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(100);
        bar.set_style(
            ProgressStyle::with_template("loading {msg} {bar:30} {percent:>3}%")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let name = settings
            .model_path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        bar.set_message(name);
        bar
    });
    let progress: Option<ProgressFn> = bar
        .clone()
        .map(|bar| Box::new(move |p: f32| bar.set_position((p * 100.0) as u64)) as ProgressFn);
    let started = std::time::Instant::now();
    let engine = tokio::task::spawn_blocking(move || Engine::start(settings, progress))
        .await
        .map_err(|e| EngineError::Backend(format!("engine start was interrupted: {e}")))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let engine = engine?;
    tracing::info!(ms = started.elapsed().as_millis() as u64, "engine ready");
    Ok(LocalProvider::new(engine))
}
