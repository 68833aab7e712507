//! The config's `[model]` and `[engine]` turned into the engine's settings.
//!
//! It lives here, above both: the engine crate does not know the config,
//! and the config does not know the engine.

use std::path::{Path, PathBuf};

use crate::config::{Config, Speculation, Speculative};
use crate::engine::{self, EngineError, EngineSettings, ImageLimits, model_file};

/// Settings from the config, with the model file and its projector located.
pub fn engine_settings(config: &Config) -> Result<EngineSettings, EngineError> {
    let e = &config.engine;
    let m = &config.model;
    let model_path = model_file::locate(&m.path, &config.data_dir)?;
    Ok(EngineSettings {
        mmproj: projector(m.mmproj.as_deref(), &model_path)?,
        image_limits: ImageLimits {
            max_bytes: (m.image_max_mb as usize) << 20,
            max_pixels: m.image_max_pixels,
            per_message: m.images_per_message as usize,
        },
        model_path,
        chat_template: config.model.chat_template.clone(),
        tool_format: config.model.tool_format,
        context_size: config.model.context_size,
        threads: config.model.threads,
        batch_size: config.model.batch_size,
        flash_attention: config.model.flash_attention.enabled(),
        gpu_layers: config.model.gpu_layers,
        slots: e.slots,
        ram_cache_bytes: (e.ram_cache_mb as usize) << 20,
        disk_cache_bytes: e.disk_cache_mb << 20,
        kv_dir: Some(config.data_dir.join("kv")),
        prompt_cache: e.prompt_cache,
        reuse_min_chunk: e.reuse_min_chunk,
        share_prompts: e.share_prompts,
        backends_dir: e.backends_dir.clone(),
        rpc_servers: e.rpc_servers.clone(),
        gpu_memory_mb: e.gpu_memory_mb,
        swa_full: e.swa_full,
        swa_checkpoints: e.swa_checkpoints,
        speculation: speculation(&e.speculation, &config.data_dir)?,
        draft_tokens: e.speculation.draft_tokens,
    })
}

/// `[engine] speculative` for the engine, the draft model located like
/// `[model] path`.
fn speculation(s: &Speculation, data_dir: &Path) -> Result<engine::Speculation, EngineError> {
    Ok(match (s.mode, &s.draft_model) {
        (Speculative::Off, _) => engine::Speculation::Off,
        (Speculative::Draft, Some(name)) => {
            engine::Speculation::Model(model_file::locate(name, data_dir)?)
        }
        (Speculative::Lookup | Speculative::Draft, _) => engine::Speculation::Lookup,
    })
}

/// The vision projector: `[model] mmproj` as a path, or a file name beside
/// the model; unset, a file beside the model named as llama.cpp's
/// projectors are, `mmproj-<model name>.gguf` or `mmproj-<model
/// name>-<anything>.gguf`; `""` for none.
pub fn projector(configured: Option<&str>, model: &Path) -> Result<Option<PathBuf>, EngineError> {
    let folder = model.parent().unwrap_or(Path::new("."));
    match configured {
        Some("") => Ok(None),
        Some(name) => {
            let given = PathBuf::from(name);
            let path = if given.is_file() {
                given.clone()
            } else {
                folder.join(name)
            };
            if path.is_file() {
                Ok(Some(path))
            } else {
                Err(EngineError::Projector {
                    path: given,
                    reason: format!("no such file (nor in {})", folder.display()),
                })
            }
        }
        None => {
            let stem = model
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let exact = format!("mmproj-{stem}.gguf");
            let prefix = format!("mmproj-{stem}-");
            let mut found: Vec<PathBuf> = std::fs::read_dir(folder)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                    name.is_some_and(|n| {
                        n == exact || (n.starts_with(&prefix) && n.ends_with(".gguf"))
                    })
                })
                .collect();
            found.sort();
            Ok(found.into_iter().next())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::projector;

    #[test]
    fn a_projector_is_found_beside_its_model_by_name_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("gemma-3-4b-it-Q4_K_M.gguf");
        std::fs::write(&model, b"").unwrap();
        // Another model's projector is not this one's.
        std::fs::write(dir.path().join("mmproj-qwen2-vl-2b-f16.gguf"), b"").unwrap();
        assert_eq!(projector(None, &model).unwrap(), None);
        let own = dir.path().join("mmproj-gemma-3-4b-it-Q4_K_M-f16.gguf");
        std::fs::write(&own, b"").unwrap();
        assert_eq!(projector(None, &model).unwrap(), Some(own.clone()));
        // Named: a file beside the model, or a path; "" for none.
        let named = projector(Some("mmproj-qwen2-vl-2b-f16.gguf"), &model).unwrap();
        assert_eq!(named, Some(dir.path().join("mmproj-qwen2-vl-2b-f16.gguf")));
        assert_eq!(projector(Some(""), &model).unwrap(), None);
        let missing = projector(Some("nowhere.gguf"), &model).unwrap_err();
        assert!(missing.to_string().contains("no such file"), "{missing}");
        assert!(missing.to_string().contains("[model] mmproj"), "{missing}");
    }
}
