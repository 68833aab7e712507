//! The `hearth` command line: argument parsing and one module per command.

mod acp;
mod ask;
mod backup_cmd;
pub mod bench;
mod bench_memory;
mod bench_memory_decode;
mod bench_parallel;
mod bench_prompt;
mod bench_scenarios;
mod bench_speculative;
mod bench_stdio;
mod bench_template;
mod brief_cmd;
mod cal_cmd;
mod chat;
mod config_check;
mod conversation;
mod cron_cmd;
mod daemon;
mod docs_cmd;
mod doctor;
mod doctor_lines;
mod doctor_memory;
mod doctor_prompt;
mod inbox_cmd;
mod init;
mod lms_cmd;
mod log_targets;
mod logging;
pub mod mcp_cmd;
mod memory_cmd;
mod models_cmd;
mod models_use;
mod one_channel;
mod service;
mod signals;
mod startup;
mod status_cmd;
pub mod tools_cmd;
mod transcribe;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{Config, Environment};

#[derive(Debug, Parser)]
#[command(
    name = "hearth",
    version,
    about = "A local-first AI assistant: llama.cpp in-process, one binary."
)]
pub struct Cli {
    /// Config file (default: $HEARTH_CONFIG, then ~/.config/hearth/config.toml, then built-in defaults).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Log debug detail to stderr, llama.cpp's own lines included.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Talk to the assistant (history, commands and tools); replies stream as they are written.
    Chat {
        /// The conversation to continue (default: `default`).
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
    },
    /// Be an editor's agent: the Agent Client Protocol (JSON-RPC) on stdin and stdout.
    Acp,
    /// Ask one question; only the reply goes to stdout.
    Ask {
        /// The question, or `-` to read it from stdin.
        question: String,
        /// Continue (and save) a named conversation across invocations.
        #[arg(long, value_name = "NAME")]
        session: Option<String>,
        /// An image the question is about (PNG, JPEG, GIF, BMP, WebP);
        /// repeat for several. Needs a vision model (`[model] mmproj`).
        #[arg(long, value_name = "FILE")]
        image: Vec<PathBuf>,
        /// A document the question is about (PDF, DOCX, HTML, Markdown,
        /// text), read in the document sandbox and kept (`hearth docs`);
        /// repeat for several.
        #[arg(long, value_name = "FILE")]
        file: Vec<PathBuf>,
    },
    /// Print what is said in an audio file (OGG/Opus, WAV, MP3), with the
    /// local Whisper model (`[voice] model`).
    Transcribe {
        /// The audio file.
        file: PathBuf,
        /// The language spoken (an ISO code such as `en`); default: `[voice] language`.
        #[arg(long, value_name = "CODE")]
        language: Option<String>,
    },
    /// Speak a text with the local Piper voice (`[voice] voice`) into an
    /// OGG/Opus voice note.
    Say {
        /// The text, or `-` to read it from stdin.
        text: String,
        /// Where to write the voice note.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Run the assistant: every configured channel, until SIGINT/SIGTERM.
    Daemon,
    /// Check this machine, the config and the model, one line each.
    Doctor,
    /// Write a working config: Telegram (your user id found for you), the
    /// gateway and web page (a token made), the model, the service unit.
    /// Asks at a terminal; flags for scripts. Again changes only what is asked.
    Init(init::InitArgs),
    /// Measure speed and what the KV cache saves; prints a table, writes JSON.
    Bench {
        /// Where to write the figures as JSON (target/bench/hearth-bench.json,
        /// with --parallel hearth-bench-parallel.json, so neither run
        /// overwrites the other's figures).
        #[arg(long, value_name = "PATH")]
        json: Option<PathBuf>,
        /// Only prompt and decode speed (for interleaving with llama-bench).
        #[arg(long)]
        speed_only: bool,
        /// Instead: how much of each turn's prompt the KV cache reuses under
        /// a chat template (a .jinja file, or a folder of them).
        #[arg(long, value_name = "FILE")]
        template: Option<PathBuf>,
        /// Instead: N conversations at once, batched, against the same N one
        /// after the other (aggregate decode tokens/s, time to first token).
        #[arg(long, value_name = "N", conflicts_with = "template")]
        parallel: Option<usize>,
        /// Rounds of --parallel or --speculative, each running both ways in
        /// alternating order.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Tokens per reply with --parallel or --speculative (1 to 4096).
        #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..=4096))]
        reply_tokens: u32,
        /// Instead: decoding with drafts (as configured; prompt lookup when
        /// off) against without, on chat and on replies quoting the prompt.
        #[arg(long, conflicts_with_all = ["template", "parallel"])]
        speculative: bool,
        /// Instead: requests from stdin, one JSON line each, figures to
        /// stdout (for driving hearth beside another server, turn by turn).
        #[arg(long, conflicts_with_all = ["template", "parallel"])]
        stdio: bool,
        /// With --stdio: KV sequences (conversations decoded together).
        #[arg(long, value_name = "N", requires = "stdio")]
        slots: Option<u32>,
        /// Instead: the prompt a fresh conversation starts with, every
        /// configured tool (MCP servers started) against those picked by
        /// relevance, and its first token both ways over --rounds.
        #[arg(long, conflicts_with_all = ["template", "parallel", "stdio", "speculative"])]
        prompt: bool,
        /// Instead: the requests users make (a reminder, "remember that…",
        /// what is due, a file, no tool, a follow-up) through the pipeline,
        /// scored by the state each leaves, beside a control without its
        /// tool, over --rounds.
        #[arg(long, conflicts_with_all = ["template", "parallel", "stdio", "speculative", "prompt"])]
        scenarios: bool,
        /// Instead: memory by meaning (retrieval on a paraphrase set by
        /// words and by words and meaning, its cost, recall among 10,000
        /// memories, and decode with memory off and on over --rounds).
        #[arg(long, conflicts_with_all = ["template", "parallel", "stdio", "speculative", "prompt", "scenarios"])]
        memory: bool,
    },
    /// The agent's tools, by hand, under the configured policy.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// MCP: the tool servers hearth uses, and hearth as a server.
    Mcp {
        #[command(subcommand)]
        command: mcp_cmd::McpCommand,
    },
    /// Messages not answered yet, replies waiting to be sent, and failures.
    Inbox {
        /// Also list answered, superseded and cancelled messages (kept `[retention] inbox_days`).
        #[arg(long)]
        all: bool,
    },
    /// The LMS notifier's sources: last poll, items tracked, errors and their fixes.
    Lms {
        #[command(subcommand)]
        command: lms_cmd::LmsCommand,
    },
    /// Today's morning brief, as the daemon sends it: due dates, reminders, calendar, changes.
    Brief,
    /// The deadlines as a calendar feed for a phone: its address, the feed, revoking it.
    Cal {
        #[command(subcommand)]
        command: cal_cmd::CalCommand,
    },
    /// Documents hearth keeps (sent on a channel, or added here): add, list, search, forget.
    Docs {
        #[command(subcommand)]
        command: docs_cmd::DocsCommand,
    },
    /// Read one document into text, as hearth's document sandbox runs it
    /// (pages separated by form feeds). Not for people: the daemon starts it.
    #[command(hide = true)]
    ExtractDocument {
        kind: String,
        file: PathBuf,
        max_chars: usize,
    },
    /// What hearth remembers: list, search, forget.
    Memory {
        #[command(subcommand)]
        command: memory_cmd::MemoryCommand,
    },
    /// Models to run: the catalogue, downloads, the one in use.
    Models {
        #[command(subcommand)]
        command: models_cmd::ModelsCommand,
    },
    /// Scheduled jobs and reminders: list, add, remove.
    Cron {
        #[command(subcommand)]
        command: cron_cmd::CronCommand,
    },
    /// Each store of the data folder: its size, what it holds, and the limit that bounds it.
    Status,
    /// Copy the data folder (databases, config, optionally KV caches) while the daemon runs.
    Backup {
        /// A new or empty folder for the copy.
        path: PathBuf,
        /// Also copy the saved KV caches (large; they are rebuilt when missing).
        #[arg(long)]
        kv: bool,
    },
    /// Put a backup back, with the daemon stopped; what was there is kept aside.
    Restore {
        /// The folder `hearth backup` wrote.
        path: PathBuf,
    },
    /// Configuration tools.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Run hearth in the background as a systemd user service.
    Service {
        #[command(subcommand)]
        command: ServiceCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Write ~/.config/systemd/user/hearth.service (runs `hearth daemon`) and enable it.
    Install {
        /// Print the unit instead of writing it.
        #[arg(long)]
        print: bool,
        /// Write the unit but do not call systemctl.
        #[arg(long)]
        no_enable: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List the tools and their arguments.
    List,
    /// Run one tool; exits non-zero when it is refused or fails.
    Run {
        /// The tool's name.
        name: String,
        /// Its arguments as a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
    },
    /// Which tools a turn on MESSAGE is offered by relevance (a small
    /// model sees only these), one name a line.
    Pick {
        message: String,
        /// The tools to pick from, a JSON array (OpenAI's `tools`, or
        /// name/description/parameters); default: the configured tools.
        #[arg(long, value_name = "FILE")]
        from: Option<PathBuf>,
        /// At most this many (default: as a chat on the configured model).
        #[arg(long, value_name = "N")]
        most: Option<usize>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate a config and print it resolved, secrets masked.
    Check {
        /// The file to check (default: the one hearth would load).
        path: Option<PathBuf>,
    },
}

/// Runs the parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Inside the document sandbox: no config, no secrets, no log files.
    if let Command::ExtractDocument {
        kind,
        file,
        max_chars,
    } = &cli.command
    {
        return Ok(docs_cmd::extract(kind, file, *max_chars));
    }
    let env = Environment::from_process().with_secrets_file()?;
    let path = cli.config.as_deref();
    match cli.command {
        // These read the config themselves: doctor and check report a bad one.
        Command::Doctor => {
            logging::init(cli.verbose, "warn");
            doctor::run(path, &env).await
        }
        Command::Config {
            command: ConfigCommand::Check { path: checked },
        } => {
            logging::init(cli.verbose, "warn");
            config_check::run(checked.as_deref().or(path), &env)
        }
        Command::Init(args) => {
            logging::init(cli.verbose, "warn");
            init::run(path, &env, args).await
        }
        Command::Service {
            command: ServiceCommand::Install { print, no_enable },
        } => {
            logging::init(cli.verbose, "warn");
            service::install(&env, path, print, !no_enable)
        }
        command => {
            let config = Config::load(path, &env)?;
            let recent = logging::init(cli.verbose, &config.log_level);
            for notice in &config.notices {
                tracing::warn!("config: {notice}");
            }
            with_config(command, config, &env, recent).await
        }
    }
}

/// The commands that run with the config loaded.
async fn with_config(
    command: Command,
    config: Config,
    env: &Environment,
    recent: std::sync::Arc<crate::metrics::errors::RecentErrors>,
) -> anyhow::Result<ExitCode> {
    match command {
        Command::Tools { command } => tools_cmd::command(&config, env, command).await,
        Command::Mcp { command } => mcp_cmd::run(&config, env, command).await,
        Command::Inbox { all } => inbox_cmd::run(&config, all),
        Command::Lms { command } => lms_cmd::run(&config, command),
        Command::Cal { command } => cal_cmd::run(&config, command),
        Command::Brief => brief_cmd::run(&config).await,
        Command::Memory { command } => memory_cmd::run(&config, command),
        Command::Docs { command } => docs_cmd::run(&config, command).await,
        Command::Models { command } => models_cmd::run(&config, env, command).await,
        Command::Cron { command } => cron_cmd::run(&config, command),
        Command::Status => status_cmd::run(&config),
        Command::Backup { path, kv } => backup_cmd::backup(&config, &path, kv),
        Command::Restore { path } => backup_cmd::run_restore(&config, &path),
        Command::Chat { session } => chat::run(&config, env, session).await,
        command @ Command::Bench { .. } => bench_command(&config, env, command).await,
        Command::Acp => acp::run(&config, env).await,
        Command::Daemon => daemon::run(config, env, recent).await,
        Command::Ask {
            question,
            session,
            image,
            file,
        } => ask::run(&config, &question, session, (&image, &file)).await,
        Command::Transcribe { file, language } => {
            transcribe::run(&config, &file, language.as_deref()).await
        }
        Command::Say { text, output } => transcribe::say(&config, &text, &output).await,
        Command::Doctor
        | Command::Init(_)
        | Command::Config { .. }
        | Command::Service { .. }
        | Command::ExtractDocument { .. } => {
            anyhow::bail!("this command reads its config itself")
        }
    }
}

/// `hearth bench` and its kinds.
async fn bench_command(
    config: &Config,
    env: &Environment,
    command: Command,
) -> anyhow::Result<ExitCode> {
    let Command::Bench {
        json,
        speed_only,
        template,
        parallel,
        rounds,
        reply_tokens,
        speculative,
        stdio,
        slots,
        prompt,
        scenarios,
        memory,
    } = command
    else {
        anyhow::bail!("not a bench command");
    };
    let json = |name: &str| {
        json.clone()
            .unwrap_or_else(|| Path::new("target/bench").join(name))
    };
    match (template, parallel) {
        _ if stdio => bench_stdio::run(config, slots).await,
        _ if prompt => bench_prompt::run(config, env, rounds).await,
        _ if memory => {
            let json = json("hearth-bench-memory.json");
            bench_memory::run(config, rounds, &json).await
        }
        _ if scenarios => {
            let json = json("hearth-bench-scenarios.json");
            bench_scenarios::run(config, env, rounds, &json).await
        }
        _ if speculative => {
            let json = json("hearth-bench-speculative.json");
            bench_speculative::run(config, &json, rounds, reply_tokens).await
        }
        (Some(path), _) => bench_template::run(config, &path).await,
        (None, Some(n)) => {
            let shape = bench_parallel::Shape {
                conversations: n,
                rounds,
                reply_tokens,
            };
            bench_parallel::run(config, &json("hearth-bench-parallel.json"), shape).await
        }
        (None, None) => bench::run(config, &json("hearth-bench.json"), speed_only).await,
    }
}
