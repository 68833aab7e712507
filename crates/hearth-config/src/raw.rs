//! The config file as written: serde structs that reject unknown keys.
//!
//! This is stage one of two. Every field is optional so that a file only needs
//! the keys it changes; `super::Config::from_raw` fills in defaults and checks
//! the values. Unknown keys are refused here (`deny_unknown_fields`), so a typo
//! such as `temprature` is an error naming the key, never silently ignored.

use serde::Deserialize;

pub use super::telegram::RawTelegram;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub model: Option<RawModel>,
    pub engine: Option<RawEngine>,
    pub agent: Option<RawAgent>,
    pub generation: Option<RawGeneration>,
    pub data: Option<RawData>,
    pub log: Option<RawLog>,
    pub channels: Option<RawChannels>,
    pub providers: Option<RawProviders>,
    pub lms: Option<super::lms::RawLms>,
    pub memory: Option<super::memory::RawMemory>,
    pub retention: Option<super::retention::RawRetention>,
    pub brief: Option<super::brief::RawBrief>,
    pub heartbeat: Option<super::heartbeat::RawHeartbeat>,
    pub models: Option<super::models::RawModels>,
    pub scheduler: Option<super::scheduler::RawScheduler>,
    pub voice: Option<super::voice::RawVoice>,
    pub mcp: Option<super::mcp::RawMcp>,
    pub daemon: Option<super::daemon::RawDaemon>,
    pub routing: Option<super::daemon::RawRouting>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    pub path: Option<String>,
    pub chat_template: Option<String>,
    pub context_size: Option<u32>,
    pub threads: Option<u32>,
    pub batch_size: Option<u32>,
    pub flash_attention: Option<String>,
    pub gpu_layers: Option<RawGpuLayers>,
    pub tool_format: Option<String>,
    pub mmproj: Option<String>,
    pub image_max_mb: Option<u32>,
    pub image_max_pixels: Option<u64>,
    pub images_per_message: Option<u32>,
}

/// `gpu_layers = "auto"` or a number.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawGpuLayers {
    Count(u32),
    Word(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEngine {
    pub slots: Option<u32>,
    pub ram_cache_mb: Option<u64>,
    pub disk_cache_mb: Option<u64>,
    pub prompt_cache: Option<bool>,
    pub reuse_min_chunk: Option<u32>,
    pub share_prompts: Option<bool>,
    pub backends_dir: Option<String>,
    pub rpc_servers: Option<Vec<String>>,
    pub gpu_memory_mb: Option<u64>,
    pub swa_full: Option<bool>,
    pub swa_checkpoints: Option<u32>,
    pub speculative: Option<String>,
    pub draft_model: Option<String>,
    pub draft_tokens: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGeneration {
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub top_k: Option<u32>,
    pub min_p: Option<f32>,
    pub repeat_penalty: Option<f32>,
    pub seed: Option<u32>,
    pub system_prompt: Option<String>,
    pub reasoning: Option<String>,
    pub max_reasoning_tokens: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawData {
    pub dir: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    pub level: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawChannels {
    pub telegram: Option<RawTelegram>,
    pub gateway: Option<super::gateway::RawGateway>,
    pub email: Option<super::email::RawEmail>,
    pub matrix: Option<super::matrix::RawMatrix>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProviders {
    pub openai: Option<super::providers::RawOpenAi>,
    pub anthropic: Option<super::providers::RawAnthropic>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAgent {
    pub workspace: Option<String>,
    pub shared_workspace: Option<bool>,
    pub autonomy: Option<String>,
    pub allowed_commands: Option<Vec<String>>,
    pub tool_timeout_secs: Option<u64>,
    pub tool_output_chars: Option<usize>,
    pub max_actions_per_hour: Option<u32>,
    pub max_tool_iterations: Option<u32>,
    pub tool_dispatcher: Option<String>,
    pub parallel_tools: Option<bool>,
    pub tools_per_turn: Option<u32>,
    pub http_allowed_domains: Option<Vec<String>>,
    pub http_max_bytes: Option<usize>,
    pub sandbox: Option<String>,
    pub sandbox_network: Option<bool>,
    pub sandbox_memory_mb: Option<u64>,
    pub sandbox_max_processes: Option<u32>,
    pub approve: Option<Vec<String>>,
    pub approval_timeout_secs: Option<u64>,
}
