//! `hearth doctor`: one line per check, `ok` or what to do about it.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use crate::config::{Config, ConfigSource, Environment};
use crate::engine::{Engine, backends, hardware::Hardware, model_file};

struct Report {
    failed: bool,
}

impl Report {
    fn line(&mut self, name: &str, ok: bool, text: impl AsRef<str>) {
        let mark = if ok { "ok  " } else { "FAIL" };
        println!("{mark} {name:<7} {}", text.as_ref());
        self.failed |= !ok;
    }

    /// Something to look at that does not stop hearth.
    fn warn(&self, name: &str, text: impl AsRef<str>) {
        println!("WARN {name:<7} {}", text.as_ref());
    }

    fn info(&self, name: &str, text: impl AsRef<str>) {
        println!("--   {name:<7} {}", text.as_ref());
    }

    fn marked(&mut self, name: &str, (mark, text): (super::doctor_memory::Mark, String)) {
        use super::doctor_memory::Mark;
        match mark {
            Mark::Ok => self.line(name, true, text),
            Mark::Info => self.info(name, text),
            Mark::Fail => self.line(name, false, text),
        }
    }
}

const GIB: f64 = (1u64 << 30) as f64;

/// Each backend by the folder its module came from (a GPU module from
/// `[engine] backends_dir`, the CPU's from the build's folder), in the
/// order they were loaded: `CPU from /a; CUDA from /b`.
fn loaded_from(backends: &[backends::Backend]) -> String {
    let mut groups: Vec<(Option<&Path>, Vec<&str>)> = Vec::new();
    for b in backends {
        let folder = b.file.as_deref().and_then(Path::parent);
        match groups.iter_mut().find(|(f, _)| *f == folder) {
            Some((_, names)) => names.push(&b.name),
            None => groups.push((folder, vec![&b.name])),
        }
    }
    let parts: Vec<String> = groups
        .iter()
        .map(|(folder, names)| match folder {
            Some(f) => format!("{} from {}", names.join(", "), f.display()),
            None => format!("{} linked into the binary", names.join(", ")),
        })
        .collect();
    parts.join("; ")
}

/// The llama.cpp backends loaded (the CPU code chosen for this machine), the
/// GPUs they offer, and an NVIDIA GPU that no backend serves.
fn backend_lines(report: &mut Report, hw: &Hardware, config: &Config) {
    let backends = match backends::load(
        config.engine.backends_dir.as_deref(),
        &config.engine.rpc_servers,
    ) {
        Ok(b) => b,
        Err(e) => {
            report.line("backend", false, e.to_string());
            return;
        }
    };
    report.line("backend", true, loaded_from(&backends.backends));
    if let Some(cpu) = backends.backends.iter().find(|b| b.name == "CPU") {
        let variant = backends.cpu_variant().unwrap_or_default();
        report.line(
            "cpucode",
            true,
            format!("{variant} ({})", cpu.features.join(", ")),
        );
    }
    for gpu in backends.gpus() {
        let cap = config.engine.gpu_memory_mb.map_or(String::new(), |mb| {
            format!("; hearth plans for at most {mb} MiB of GPU memory (`[engine] gpu_memory_mb`)")
        });
        let usable = if gpu.total_bytes == 0 {
            "; its memory cannot be read (no room left for a context?), so it is not used"
        } else {
            ""
        };
        report.line(
            "gpu",
            gpu.total_bytes > 0,
            format!(
                "{} ({}): {} MiB free of {} MiB{cap}{usable}",
                gpu.description,
                gpu.name,
                gpu.free_bytes >> 20,
                gpu.total_bytes >> 20
            ),
        );
    }
    for server in &backends.rpc {
        match &server.error {
            None => report.line(
                "rpc",
                true,
                format!("{}: its devices are offered as GPUs", server.endpoint),
            ),
            Some(e) => report.line("rpc", false, format!("{}: {e}", server.endpoint)),
        }
        if let Some(w) = &server.warning {
            report.warn("rpc", w);
        }
    }
    for line in &backends.idle {
        report.info("gpu", line);
    }
    if backends.gpus().next().is_none() {
        if hw.gpus.is_empty() && backends.idle.is_empty() {
            report.info("gpu", "no GPU present; hearth runs on the CPU");
        }
        for gpu in &hw.gpus {
            report.line(
                "gpu",
                false,
                format!(
                    "{}: {} MiB free of {} MiB, but no GPU backend is loaded; fix: run `make gpu` (needs the CUDA toolkit), or `cargo build --release --no-default-features --features cuda`",
                    gpu.name, gpu.free_mib, gpu.total_mib
                ),
            );
        }
    }
}

/// The catalogue model that fits this machine best.
fn models_line(config: &Config) -> String {
    let catalogue = crate::models::Catalogue::builtin();
    let budget = crate::models::Budget::of(
        backends::load(
            config.engine.backends_dir.as_deref(),
            &config.engine.rpc_servers,
        )
        .ok(),
    );
    let room = format!("{:.1} GB of free {}", budget.bytes as f64 / 1e9, budget.on);
    match budget.recommend(&catalogue) {
        Some(m) => format!(
            "recommended for {room}: {} (hearth models pull {}; `hearth models list` shows all)",
            m.name, m.name
        ),
        None => format!("no catalogue model beyond the test models fits {room}"),
    }
}

/// The model family hearth speaks with this model, and why.
fn format_line(config: &Config, from_model: Option<&str>) -> String {
    use crate::engine::formats::{ModelFamily, detect::detect};
    let reasoning = config.generation.reasoning.as_str();
    if let Some(family) = config.model.tool_format {
        return format!(
            "tool format {} (set by [model] tool_format); reasoning {reasoning}",
            family.name()
        );
    }
    let source = crate::engine::template::choose(config.model.chat_template.as_deref(), from_model);
    match source.map(|(text, _)| detect(&text)) {
        Ok(ModelFamily::Xml) => format!(
            "tool format xml: the template declares no tools in a format hearth knows, so the system prompt teaches <tool_call>; reasoning {reasoning}"
        ),
        Ok(family) => format!(
            "tool format {} (recognised from the template's markers; tools go through the template); reasoning {reasoning}",
            family.name()
        ),
        Err(e) => format!("tool format unknown: {e}"),
    }
}

pub async fn run(config_path: Option<&Path>, env: &Environment) -> anyhow::Result<ExitCode> {
    let mut report = Report { failed: false };
    let hw = machine(&mut report).await?;
    let config = match Config::load(config_path, env) {
        Ok(c) => {
            let from = match &c.source {
                ConfigSource::File(p) => p.display().to_string(),
                ConfigSource::Defaults => "built-in defaults (no config file)".to_string(),
            };
            report.line("config", true, format!("valid ({from})"));
            c
        }
        Err(e) => {
            report.line("config", false, format!("{e}"));
            report.info("model", "not checked: the config is invalid");
            return Ok(ExitCode::FAILURE);
        }
    };
    for (name, line) in [
        ("secrets", super::doctor_lines::secrets_line(env)),
        ("gateway", super::doctor_lines::gateway_line(&config)),
    ] {
        report.marked(name, line);
    }
    if config.email.is_some() {
        report.marked("email", super::doctor_lines::email_line(&config).await);
    }
    if config.matrix.is_some() {
        report.marked("matrix", super::doctor_lines::matrix_line(&config).await);
    }
    backend_lines(&mut report, &hw, &config);
    report.info("models", models_line(&config));
    stores(&mut report, &config);
    report.info("cloud", super::doctor_lines::cloud_line(&config));
    report.info("voice", voice_line(&config));
    report.marked("memory", super::doctor_memory::line(&config));
    sandbox(&mut report, &config).await?;

    if !model(&mut report, &config) {
        return Ok(ExitCode::FAILURE);
    }
    if !load(&mut report, &config).await? {
        return Ok(ExitCode::FAILURE);
    }
    Ok(if report.failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The CPU and the memory.
async fn machine(report: &mut Report) -> anyhow::Result<Hardware> {
    let hw = tokio::task::spawn_blocking(Hardware::detect).await?;
    report.line(
        "cpu",
        true,
        format!(
            "{}: {} physical cores, {} threads; hearth uses {} threads",
            hw.cpu_brand,
            hw.physical_cores,
            hw.logical_cores,
            crate::engine::hardware::thread_count(0)
        ),
    );
    report.line(
        "ram",
        hw.available_ram > 512 << 20,
        format!(
            "{:.1} GiB total, {:.1} GiB available",
            hw.total_ram as f64 / GIB,
            hw.available_ram as f64 / GIB
        ),
    );
    Ok(hw)
}

/// The data folder and what the inbox holds.
fn stores(report: &mut Report, config: &Config) {
    report.line(
        "data",
        true,
        format!("{} (history, sessions)", config.data_dir.display()),
    );
    match crate::inbox::count(&config.data_dir) {
        Ok(None) => report.info("inbox", "empty: no message recorded yet"),
        Ok(Some(counts)) => {
            let line = crate::inbox::summary(&counts);
            if counts
                .get(&crate::inbox::State::Failed)
                .copied()
                .unwrap_or(0)
                > 0
            {
                report.warn(
                    "inbox",
                    format!("{line}: replies that could not be delivered (a blocked bot, an unknown chat, a day of failures)"),
                );
            } else {
                report.line("inbox", true, line);
            }
        }
        Err(e) => report.line("inbox", false, e.to_string()),
    }
}

/// The workspace and the sandbox commands would run in.
async fn sandbox(report: &mut Report, config: &Config) -> anyhow::Result<()> {
    let a = &config.agent;
    // The probe needs an existing folder to bind; doctor creates nothing.
    let probe_dir = if a.workspace.is_dir() {
        a.workspace.clone()
    } else {
        std::env::temp_dir()
    };
    let sandbox = tokio::task::spawn_blocking({
        let (choice, network, limits) = (a.sandbox, a.sandbox_network, a.sandbox_limits());
        move || crate::sandbox::Sandbox::resolve(choice, &probe_dir, network, limits)
    })
    .await?;
    report.line(
        "tools",
        true,
        format!(
            "workspace {} (tools see nothing else)",
            a.workspace.display()
        ),
    );
    report.line("sandbox", sandbox.runs_commands(), sandbox.describe());
    // Documents not read is a warning: everything else still works.
    match super::docs_cmd::doctor_line(sandbox.runs_commands()) {
        (true, line) => report.line("docs", true, line),
        (false, line) => report.warn("docs", line),
    }
    for (ok, line) in super::mcp_cmd::doctor_lines(config, &sandbox).await {
        report.line("mcp", ok, line);
    }
    Ok(())
}

/// The model file: found, readable, with a chat template; false if not.
fn model(report: &mut Report, config: &Config) -> bool {
    let path = match model_file::locate(&config.model.path, &config.data_dir) {
        Ok(p) => p,
        Err(e) => {
            report.line("model", false, e.to_string());
            return false;
        }
    };
    match model_file::inspect(&path) {
        Ok(meta) => {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let tool_use = meta.chat_template_for_tools() != meta.chat_template();
            let template = match (&config.model.chat_template, meta.chat_template_for_tools()) {
                (Some(t), _) => format!("template `{t}` from config"),
                (None, Some(_)) if tool_use => "the model's tool_use template".to_string(),
                (None, Some(_)) => "template from the model".to_string(),
                (None, None) => {
                    "no chat template; fix: set `[model] chat_template` (chatml, gemma, llama3)"
                        .to_string()
                }
            };
            let ok =
                config.model.chat_template.is_some() || meta.chat_template_for_tools().is_some();
            report.line(
                "model",
                ok,
                format!(
                    "{} ({:.0} MB, {}, trained context {}; {template})",
                    path.display(),
                    size as f64 / 1e6,
                    meta.architecture().unwrap_or("unknown architecture"),
                    meta.context_length()
                        .map_or("unknown".to_string(), |c| c.to_string()),
                ),
            );
            if !ok {
                return false;
            }
            report.info(
                "format",
                format_line(config, meta.chat_template_for_tools()),
            );
        }
        Err(e) => {
            report.line("model", false, e.to_string());
            return false;
        }
    }
    true
}

/// The catalogue model of `kind` that fits here, as the commands to get it.
pub(super) fn pull_hint(config: &Config, kind: crate::models::Kind) -> String {
    let catalogue = crate::models::Catalogue::builtin();
    let budget = crate::models::Budget::of(
        backends::load(
            config.engine.backends_dir.as_deref(),
            &config.engine.rpc_servers,
        )
        .ok(),
    );
    match budget.recommend_kind(&catalogue, kind) {
        Some(m) => format!("`hearth models pull {0} && hearth models use {0}`", m.name),
        None => "see `hearth models list`".to_string(),
    }
}

/// Which speech model hears voice notes and which voice speaks replies,
/// or what is missing.
fn voice_line(config: &Config) -> String {
    use crate::models::Kind;
    let hearing = match crate::speech::model_dir(&config.voice, &config.data_dir) {
        Ok(dir) => format!("voice notes heard by {}", dir.display()),
        Err(e) => format!(
            "voice notes are not heard: {e}; to get one: {}",
            pull_hint(config, Kind::SpeechToText)
        ),
    };
    let speaking = match crate::speech::voice_files(&config.voice, &config.data_dir) {
        Ok((voice, runtime)) => format!(
            "replies spoken by {} through {} ({})",
            voice.display(),
            runtime.display(),
            config.voice.reply_with_voice.as_str()
        ),
        Err(e) => format!(
            "replies are not spoken: {e}; a voice: {}",
            pull_hint(config, Kind::TextToSpeech)
        ),
    };
    format!("{hearing}; {speaking}")
}

/// The model loaded as the daemon would load it; false when its settings
/// cannot be had.
async fn load(report: &mut Report, config: &Config) -> anyhow::Result<bool> {
    let settings = match crate::engine_setup::engine_settings(config) {
        Ok(s) => s,
        Err(e) => {
            report.line("load", false, e.to_string());
            return Ok(false);
        }
    };
    let started = Instant::now();
    let projector = settings.mmproj.clone();
    match tokio::task::spawn_blocking(move || Engine::start(settings, None)).await? {
        Ok(engine) => {
            report.info("images", match (&projector, engine.info().vision) {
                (Some(p), true) => format!("seen, through the projector {}", p.display()),
                _ => format!(
                    "text only; to see photos set `[model] mmproj` to the model's vision projector, or {} (docs/GUIDE.md: Photos and voice)",
                    pull_hint(config, crate::models::Kind::Vision)
                ),
            });
            report.info(
                "drafts",
                format!("{} (`[engine] speculative`)", engine.info().drafting),
            );
            report.line(
            "load",
            true,
            format!(
                "loaded in {:.2} s: {:.0}M parameters, {} slots of {} tokens, {} threads, {} of {} layers on the GPU",
                started.elapsed().as_secs_f64(),
                engine.info().n_params as f64 / 1e6,
                engine.info().slots,
                engine.info().n_ctx,
                engine.info().threads,
                engine.info().gpu_layers,
                engine.info().n_layers + 1
            ),
        );
            let (fits, text) = super::doctor_prompt::line(config, &engine);
            report.line("prompt", fits, text);
        }
        Err(e) => report.line("load", false, e.to_string()),
    }
    Ok(true)
}
