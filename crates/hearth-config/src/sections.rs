//! The sections of the config that the engine reads: `[model]`,
//! `[engine]` and `[generation]`, each from its raw form with defaults,
//! environment overrides and checks that name the key.

use super::raw::{RawEngine, RawGeneration, RawGpuLayers, RawModel};
use super::{
    ConfigError, EngineConfig, Environment, FlashAttention, GenerationConfig, GpuLayers,
    ModelConfig, ModelFamily, Reasoning,
};

impl ModelConfig {
    pub(super) fn from_raw(m: Option<RawModel>, env: &Environment) -> Result<Self, ConfigError> {
        let m = m.unwrap_or_default();
        let d = ModelConfig::default();
        let model = ModelConfig {
            path: env
                .var("HEARTH_MODEL")
                .map(str::to_string)
                .or(m.path)
                .unwrap_or(d.path),
            chat_template: m.chat_template.filter(|t| !t.trim().is_empty()),
            context_size: m.context_size.unwrap_or(d.context_size),
            threads: threads(m.threads, env)?.unwrap_or(d.threads),
            batch_size: m.batch_size.unwrap_or(d.batch_size),
            flash_attention: match m.flash_attention.as_deref() {
                None => d.flash_attention,
                Some(v) => FlashAttention::parse(v).ok_or_else(|| {
                    ConfigError::invalid(
                        "model.flash_attention",
                        format!("`{v}` is not one of auto, on, off"),
                    )
                })?,
            },
            gpu_layers: match m.gpu_layers {
                None => d.gpu_layers,
                Some(RawGpuLayers::Count(n)) => GpuLayers::Count(n),
                Some(RawGpuLayers::Word(w)) if w == "auto" => GpuLayers::Auto,
                Some(RawGpuLayers::Word(w)) => {
                    return Err(ConfigError::invalid(
                        "model.gpu_layers",
                        format!("`{w}` is neither \"auto\" nor a number"),
                    ));
                }
            },
            tool_format: match m.tool_format.as_deref() {
                None | Some("auto") => None,
                Some(v) => Some(ModelFamily::parse(v).ok_or_else(|| {
                    ConfigError::invalid(
                        "model.tool_format",
                        format!("`{v}` is not auto or one of {}", ModelFamily::names()),
                    )
                })?),
            },
            mmproj: m.mmproj.or(d.mmproj),
            image_max_mb: m.image_max_mb.unwrap_or(d.image_max_mb),
            image_max_pixels: m.image_max_pixels.unwrap_or(d.image_max_pixels),
            images_per_message: m.images_per_message.unwrap_or(d.images_per_message),
        };
        if model.image_max_mb == 0 || model.image_max_pixels == 0 || model.images_per_message == 0 {
            return Err(ConfigError::invalid(
                "model.image_max_mb",
                "image limits must be above 0 (`image_max_mb`, `image_max_pixels`, `images_per_message`); set `mmproj = \"\"` to refuse images",
            ));
        }
        if model.path.trim().is_empty() {
            return Err(ConfigError::invalid("model.path", "must name a GGUF file"));
        }
        if model.context_size != 0 && model.context_size < 256 {
            return Err(ConfigError::invalid(
                "model.context_size",
                "must be 0 (the model's own) or at least 256",
            ));
        }
        if !(1..=65536).contains(&model.batch_size) {
            return Err(ConfigError::invalid(
                "model.batch_size",
                "must be between 1 and 65536",
            ));
        }
        if model.threads > 1024 {
            return Err(ConfigError::invalid(
                "model.threads",
                "must be 0 (auto) or a thread count up to 1024",
            ));
        }
        Ok(model)
    }
}

impl EngineConfig {
    pub(super) fn from_raw(e: Option<RawEngine>, env: &Environment) -> Result<Self, ConfigError> {
        let e = e.unwrap_or_default();
        let de = EngineConfig::default();
        let engine = EngineConfig {
            slots: e.slots.unwrap_or(de.slots),
            ram_cache_mb: e.ram_cache_mb.unwrap_or(de.ram_cache_mb),
            disk_cache_mb: e.disk_cache_mb.unwrap_or(de.disk_cache_mb),
            prompt_cache: e.prompt_cache.unwrap_or(de.prompt_cache),
            reuse_min_chunk: e.reuse_min_chunk.unwrap_or(de.reuse_min_chunk),
            share_prompts: e.share_prompts.unwrap_or(de.share_prompts),
            backends_dir: e.backends_dir.map(|d| env.expand(&d)),
            rpc_servers: e.rpc_servers.unwrap_or_default(),
            gpu_memory_mb: e.gpu_memory_mb,
            swa_full: e.swa_full.unwrap_or(de.swa_full),
            swa_checkpoints: e.swa_checkpoints.unwrap_or(de.swa_checkpoints),
            speculation: super::Speculation::from_raw(
                e.speculative.as_deref(),
                e.draft_model.map(|m| env.expand(&m).display().to_string()),
                e.draft_tokens,
            )?,
        };
        if engine.swa_checkpoints > 64 {
            return Err(ConfigError::invalid(
                "engine.swa_checkpoints",
                "must be between 0 and 64",
            ));
        }
        if let Some(bad) = engine.rpc_servers.iter().find(|s| !is_host_port(s)) {
            return Err(ConfigError::invalid(
                "engine.rpc_servers",
                format!("`{bad}` is not HOST:PORT (for example \"192.168.1.20:50052\")"),
            ));
        }
        if engine.gpu_memory_mb == Some(0) {
            return Err(ConfigError::invalid(
                "engine.gpu_memory_mb",
                "must be a number of MiB above 0 (set `[model] gpu_layers = 0` to use no GPU)",
            ));
        }
        if !(1..=64).contains(&engine.slots) {
            return Err(ConfigError::invalid(
                "engine.slots",
                "must be between 1 and 64",
            ));
        }
        Ok(engine)
    }
}

impl GenerationConfig {
    pub(super) fn from_raw(g: Option<RawGeneration>) -> Result<Self, ConfigError> {
        let g = g.unwrap_or_default();
        let dg = GenerationConfig::default();
        let generation = GenerationConfig {
            max_tokens: g.max_tokens.unwrap_or(dg.max_tokens),
            temperature: g.temperature.unwrap_or(dg.temperature),
            top_p: g.top_p.unwrap_or(dg.top_p),
            top_k: g.top_k.unwrap_or(dg.top_k),
            min_p: g.min_p.unwrap_or(dg.min_p),
            repeat_penalty: g.repeat_penalty.unwrap_or(dg.repeat_penalty),
            seed: g.seed,
            system_prompt: g.system_prompt.unwrap_or(dg.system_prompt),
            reasoning: match g.reasoning.as_deref() {
                None => dg.reasoning,
                Some(v) => Reasoning::parse(v).ok_or_else(|| {
                    ConfigError::invalid(
                        "generation.reasoning",
                        format!("`{v}` is not one of auto, off, low, medium, high"),
                    )
                })?,
            },
            max_reasoning_tokens: g.max_reasoning_tokens.unwrap_or(dg.max_reasoning_tokens),
        };
        check_range(
            "generation.max_tokens",
            generation.max_tokens as f32,
            1.0,
            32768.0,
        )?;
        check_range("generation.temperature", generation.temperature, 0.0, 5.0)?;
        check_range("generation.top_p", generation.top_p, 0.0, 1.0)?;
        check_range("generation.min_p", generation.min_p, 0.0, 1.0)?;
        check_range(
            "generation.repeat_penalty",
            generation.repeat_penalty,
            0.5,
            3.0,
        )?;
        Ok(generation)
    }
}

/// `[model] threads`, where `HEARTH_THREADS` wins over the file's `file`.
fn threads(file: Option<u32>, env: &Environment) -> Result<Option<u32>, ConfigError> {
    let Some(v) = env.var("HEARTH_THREADS") else {
        return Ok(file);
    };
    v.trim().parse().map(Some).map_err(|_| {
        ConfigError::invalid(
            "HEARTH_THREADS",
            format!("`{v}` is not a thread count (0: one per physical core)"),
        )
    })
}

fn check_range(key: &str, value: f32, min: f32, max: f32) -> Result<(), ConfigError> {
    if value.is_finite() && (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            key,
            format!("{value} is outside {min}..={max}"),
        ))
    }
}

impl From<&GenerationConfig> for hearth_core::chat::SamplingParams {
    fn from(g: &GenerationConfig) -> Self {
        Self {
            max_tokens: g.max_tokens,
            temperature: g.temperature,
            top_p: g.top_p,
            top_k: g.top_k,
            min_p: g.min_p,
            repeat_penalty: g.repeat_penalty,
            seed: g.seed,
            stop: Vec::new(),
            reasoning: g.reasoning,
            max_reasoning_tokens: g.max_reasoning_tokens,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            format: hearth_core::chat::ReplyFormat::Text,
        }
    }
}

/// `host:port`, `[v6]:port`: a port from 1 to 65535 after the last colon.
fn is_host_port(s: &str) -> bool {
    s.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty()
            && !host.contains(char::is_whitespace)
            && port.parse::<u16>().is_ok_and(|p| p > 0)
    })
}
