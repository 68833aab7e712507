//! Configuration: a TOML file turned into a validated [`Config`].
//!
//! Loading happens in two stages. [`raw`] parses the file into optional fields
//! and refuses unknown keys; [`Config::from_raw`] fills in defaults, applies
//! environment overrides and checks every value, naming the key on failure.
//!
//! Where the file comes from, first match wins: `--config PATH`, then
//! `$HEARTH_CONFIG`, then `~/.config/hearth/config.toml`, else the built-in
//! defaults, which work out of the box with the model that `make chat` fetches.

mod agent;
mod brief;
mod daemon;
mod email;
mod environment;
mod error;
mod gateway;
mod heartbeat;
mod lms;
mod load;
mod matrix;
mod mcp;
mod memory;
mod models;
mod providers;
mod raw;
mod renamed;
mod render;
mod retention;
mod scheduler;
mod secret;
pub mod secrets;
mod sections;
mod speculative;
mod telegram;
mod voice;

use std::path::{Path, PathBuf};

pub use agent::{AgentConfig, DispatcherChoice, default_workspace, old_workspace};
pub use brief::BriefConfig;
pub use daemon::{DaemonConfig, RouteRule, RoutingConfig};
pub use email::{EmailConfig, MailSecurity};
pub use environment::Environment;
pub use error::ConfigError;
pub use gateway::GatewayConfig;
pub use heartbeat::HeartbeatConfig;
pub use hearth_core::model::{GpuLayers, ModelFamily, Reasoning};
pub use lms::{
    LmsConfig, LmsKind, LmsSourceConfig, LmsTarget, format_span, parse_span, token_variable,
};
pub use matrix::{MatrixConfig, MatrixLogin};
pub use mcp::{
    Ask, McpConfig, SEPARATOR as MCP_SEPARATOR, ServerConfig as McpServerConfig,
    Transport as McpTransport,
};
pub use memory::MemoryConfig;
pub use models::ModelsConfig;
pub use providers::{ANTHROPIC_DEFAULT_URL, AnthropicConfig, OPENAI_DEFAULT_URL, OpenAiConfig};
pub use retention::RetentionConfig;
pub use scheduler::SchedulerConfig;
pub use secret::{Secret, mask_url, url_secrets};
pub use speculative::{Speculation, Speculative};
pub use telegram::{DEFAULT_TELEGRAM_API_URL, StreamMode, TelegramConfig};
pub use voice::{VoiceConfig, VoiceReplies};

/// Where the configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigSource {
    File(PathBuf),
    Defaults,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub source: ConfigSource,
    pub model: ModelConfig,
    pub engine: EngineConfig,
    pub agent: AgentConfig,
    pub generation: GenerationConfig,
    /// Where hearth keeps its state (history database, saved sessions).
    pub data_dir: PathBuf,
    /// Default `tracing` filter when `RUST_LOG` is unset.
    pub log_level: String,
    pub telegram: TelegramConfig,
    /// `[channels.email]`, when the file has it.
    pub email: Option<EmailConfig>,
    /// `[channels.matrix]`, when the file has it.
    pub matrix: Option<MatrixConfig>,
    pub gateway: GatewayConfig,
    pub openai: OpenAiConfig,
    pub anthropic: AnthropicConfig,
    /// The LMS notifier.
    pub lms: LmsConfig,
    pub memory: MemoryConfig,
    /// How much of each store is kept.
    pub retention: RetentionConfig,
    pub brief: BriefConfig,
    pub heartbeat: HeartbeatConfig,
    pub models: ModelsConfig,
    pub scheduler: SchedulerConfig,
    pub voice: VoiceConfig,
    /// The MCP tool servers hearth is a client of.
    pub mcp: McpConfig,
    pub daemon: DaemonConfig,
    pub routing: RoutingConfig,
    /// What the file said that this hearth reads differently: a renamed
    /// key read under its new name, a retired one set aside. Logged at
    /// start and printed by `hearth config check`.
    pub notices: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// A file name (searched in the model folders) or a path.
    pub path: String,
    /// `chatml`, `gemma`, `llama3`, or a path to a Jinja file; replaces the
    /// model's own template when set.
    pub chat_template: Option<String>,
    /// Context window in tokens; 0 means the model's training context.
    pub context_size: u32,
    /// CPU threads; 0 means the number of physical cores.
    pub threads: u32,
    /// Tokens decoded per batch while reading a prompt.
    pub batch_size: u32,
    pub flash_attention: FlashAttention,
    pub gpu_layers: GpuLayers,
    /// `tool_format`: the family whose chat format to speak; `None` (auto)
    /// recognises it from the template.
    pub tool_format: Option<ModelFamily>,
    /// `mmproj`: the vision projector (a file name or a path); `None` looks
    /// beside the model for `mmproj-<model name>…gguf`, `Some("")` reads
    /// text only.
    pub mmproj: Option<String>,
    /// `image_max_mb`: most megabytes of one image file.
    pub image_max_mb: u32,
    /// `image_max_pixels`: most pixels an image's header may declare.
    pub image_max_pixels: u64,
    /// `images_per_message`: most images in one message.
    pub images_per_message: u32,
}

/// The engine's KV cache: one sequence per conversation.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Conversations whose KV cache stays in the context at once.
    pub slots: u32,
    /// Evicted conversations kept in RAM, in MiB, before they go to disk.
    pub ram_cache_mb: u64,
    /// Saved conversations kept on disk, in MiB.
    pub disk_cache_mb: u64,
    /// Reuse the cached prefix of a conversation (off only to measure).
    pub prompt_cache: bool,
    /// Shortest run of cached tokens moved to where a template put it
    /// (Mistral writes the system text into the last user turn); 0 keeps
    /// only the common prefix.
    pub reuse_min_chunk: u32,
    /// A new conversation starts from the cached prompt of another that
    /// opens alike (the same system prompt) instead of reading it again.
    /// Greedy replies may then differ from a cold read by rounding.
    pub share_prompts: bool,
    /// A folder of llama.cpp GPU backend modules (`libggml-cuda.so`) besides
    /// the binary's own folder; never inside the agent's workspace.
    pub backends_dir: Option<PathBuf>,
    /// `host:port` of RPC servers (`hearth-rpc-server` on another machine)
    /// whose devices take offloaded layers.
    pub rpc_servers: Vec<String>,
    /// The most GPU memory to plan for, in MiB; unset: what is free.
    pub gpu_memory_mb: Option<u64>,
    /// Sliding-window models (Gemma 2 and 3, gpt-oss): keep every position
    /// of the window layers (more memory, any cut reuses its prefix), or
    /// only the window (checkpoints then bring back an earlier position).
    pub swa_full: bool,
    /// With `swa_full = false`: checkpoints kept per conversation, one
    /// every 256 prompt tokens; 0 reads the prompt again after a cut.
    pub swa_checkpoints: u32,
    /// Speculative decoding: `speculative`, `draft_model`, `draft_tokens`.
    pub speculation: Speculation,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            slots: 4,
            ram_cache_mb: 1024,
            disk_cache_mb: 4096,
            prompt_cache: true,
            reuse_min_chunk: 16,
            share_prompts: true,
            backends_dir: None,
            rpc_servers: Vec::new(),
            gpu_memory_mb: None,
            swa_full: true,
            swa_checkpoints: 8,
            speculation: Speculation::default(),
        }
    }
}

/// llama.cpp's flash attention. On the CPU it slows decoding as the context
/// fills (measured on 2 cores with SmolLM2 at ~640 tokens of context: 50
/// tokens/s with it, 86 without), so `auto` turns it on only when layers are
/// offloaded to a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlashAttention {
    Auto,
    On,
    Off,
}

impl FlashAttention {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "on" => Some(Self::On),
            "off" => Some(Self::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::On => "on",
            Self::Off => "off",
        }
    }

    /// Whether to enable it in this build.
    /// `None` for `auto`: the engine decides once it knows the offload.
    pub fn enabled(self) -> Option<bool> {
        match self {
            Self::On => Some(true),
            Self::Off => Some(false),
            Self::Auto => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct GenerationConfig {
    pub max_tokens: u32,
    pub temperature: f32,
    pub top_p: f32,
    pub top_k: u32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    /// Fixed sampling seed; `None` draws a new one per reply.
    pub seed: Option<u32>,
    pub system_prompt: String,
    pub reasoning: Reasoning,
    /// Tokens a reply may spend reasoning before its reasoning is closed
    /// and it must answer; 0: three quarters of `max_tokens`.
    pub max_reasoning_tokens: u32,
}

/// The default model: the one `models/fetch` obtains.
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful assistant running locally on the user's computer.";

impl Default for ModelConfig {
    fn default() -> Self {
        Self {
            path: DEFAULT_MODEL_FILE.to_string(),
            chat_template: None,
            context_size: 0,
            threads: 0,
            batch_size: 512,
            flash_attention: FlashAttention::Auto,
            gpu_layers: GpuLayers::Auto,
            tool_format: None,
            mmproj: None,
            image_max_mb: 20,
            image_max_pixels: 40_000_000,
            images_per_message: 4,
        }
    }
}

impl Default for GenerationConfig {
    fn default() -> Self {
        Self {
            max_tokens: 512,
            temperature: 0.7,
            top_p: 0.9,
            top_k: 40,
            min_p: 0.05,
            repeat_penalty: 1.1,
            seed: None,
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_string(),
            reasoning: Reasoning::Auto,
            max_reasoning_tokens: 0,
        }
    }
}

impl Config {
    /// Built-in defaults for the given environment, as if no file existed.
    pub fn defaults(env: &Environment) -> Result<Self, ConfigError> {
        Self::from_raw(raw::RawConfig::default(), ConfigSource::Defaults, env)
    }

    /// Stage two: defaults, environment overrides and value checks.
    fn from_raw(
        raw: raw::RawConfig,
        source: ConfigSource,
        env: &Environment,
    ) -> Result<Self, ConfigError> {
        let model = ModelConfig::from_raw(raw.model, env)?;
        let engine = EngineConfig::from_raw(raw.engine, env)?;
        let generation = GenerationConfig::from_raw(raw.generation)?;

        let data_dir = env
            .var("HEARTH_DATA_DIR")
            .map(|d| env.expand(d))
            .or_else(|| raw.data.and_then(|d| d.dir).map(|d| env.expand(&d)))
            .unwrap_or_else(|| env.default_data_dir());

        let agent = AgentConfig::from_raw(raw.agent, env, &data_dir)?;
        keep_tools_out(&agent, &engine, &source, env)?;
        let log_level = log_level(raw.log)?;

        let (raw_telegram, raw_gateway, raw_email, raw_matrix) = raw
            .channels
            .map(|c| (c.telegram, c.gateway, c.email, c.matrix))
            .unwrap_or_default();
        let telegram = TelegramConfig::from_raw(raw_telegram, env)?;
        let email = EmailConfig::from_raw(raw_email, env)?;
        let matrix = MatrixConfig::from_raw(raw_matrix, env)?;
        let gateway = GatewayConfig::from_raw(raw_gateway, env)?;
        let lms = LmsConfig::from_raw(raw.lms, env)?;
        let (raw_openai, raw_anthropic) = raw
            .providers
            .map(|p| (p.openai, p.anthropic))
            .unwrap_or_default();
        let openai = OpenAiConfig::from_raw(raw_openai, env)?;
        let anthropic = AnthropicConfig::from_raw(raw_anthropic, env)?;

        let memory = MemoryConfig::from_raw(raw.memory)?;
        let retention = RetentionConfig::from_raw(raw.retention)?;
        let brief = BriefConfig::from_raw(raw.brief)?;
        let heartbeat = HeartbeatConfig::from_raw(raw.heartbeat)?;
        let models = ModelsConfig::from_raw(raw.models)?;
        let scheduler = SchedulerConfig::from_raw(raw.scheduler)?;
        let voice = VoiceConfig::from_raw(raw.voice)?;
        let mcp = McpConfig::from_raw(raw.mcp, env)?;
        let (daemon, routing) = daemon::validate(raw.daemon, raw.routing)?;
        routing.check_providers(openai.model.is_some(), anthropic.model.is_some())?;

        Ok(Self {
            source,
            model,
            engine,
            agent,
            generation,
            data_dir,
            log_level,
            telegram,
            email,
            matrix,
            gateway,
            openai,
            anthropic,
            lms,
            memory,
            retention,
            brief,
            heartbeat,
            models,
            scheduler,
            voice,
            mcp,
            daemon,
            routing,
            notices: Vec::new(),
        })
    }
}

/// The config holds tokens: no tool may read or rewrite it (the file read,
/// and the default one, which `hearth models use` writes); nor may tools
/// write where hearth loads libraries from.
fn keep_tools_out(
    agent: &AgentConfig,
    engine: &EngineConfig,
    source: &ConfigSource,
    env: &Environment,
) -> Result<(), ConfigError> {
    let config_dirs = [
        match source {
            ConfigSource::File(path) => path.parent().map(Path::to_path_buf),
            ConfigSource::Defaults => None,
        },
        env.default_config_path()
            .and_then(|p| p.parent().map(Path::to_path_buf)),
    ];
    for dir in config_dirs.iter().flatten() {
        agent.refuse_containing(
            dir,
            "it holds hearth's config (tokens, and what tools may do)",
        )?;
    }
    if let Some(dir) = &engine.backends_dir {
        agent.refuse_inside_workspace(
            "engine.backends_dir",
            dir,
            "libraries there would run inside hearth, and tools write in the workspace",
        )?;
    }
    Ok(())
}

/// `[log] level`, checked as a tracing filter.
fn log_level(raw: Option<raw::RawLog>) -> Result<String, ConfigError> {
    let log_level = raw
        .and_then(|l| l.level)
        .unwrap_or_else(|| "warn".to_string());
    if tracing_subscriber::EnvFilter::try_new(&log_level).is_err() {
        return Err(ConfigError::invalid(
            "log.level",
            format!("`{log_level}` is not a level or filter (try warn, info, debug)"),
        ));
    }
    Ok(log_level)
}

impl Config {
    /// Every secret value this configuration holds (tokens, keys, secrets
    /// inside feed URLs), so tool output can be scrubbed of them.
    pub fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = [
            &self.telegram.bot_token,
            &self.openai.api_key,
            &self.anthropic.api_key,
            &self.gateway.token,
        ]
        .into_iter()
        .flatten()
        .map(|s| s.expose().to_string())
        .collect();
        if let Some(email) = &self.email {
            out.push(email.password.expose().to_string());
            out.extend(email.tokens.values().map(|t| t.expose().to_string()));
        }
        if let Some(matrix) = &self.matrix {
            out.push(matrix.secret().expose().to_string());
        }
        for source in &self.lms.sources {
            out.extend(source.token.iter().map(|t| t.expose().to_string()));
            out.extend(secret::url_secrets(&source.url));
        }
        out.extend(self.mcp.secrets());
        out
    }
}
