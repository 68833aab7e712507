//! The engine on the page: the model and how it was placed, the backends
//! and devices, RAM and VRAM, recent speed, each conversation's KV cache
//! and the queue.

use serde_json::{Value, json};

use crate::config::Config;
use crate::daemon::LocalModels;
use crate::engine::{backends, hardware::Hardware};
use crate::metrics::Metrics;

const MIB: u64 = 1 << 20;

/// The loaded model (`null` until one is loaded).
pub fn model(models: &LocalModels) -> Value {
    let Some(view) = models.view() else {
        return Value::Null;
    };
    let info = &view.info;
    json!({
        "file": info.path.file_name().map(|n| n.to_string_lossy().into_owned()),
        "architecture": info.architecture,
        "params": info.n_params,
        "context": info.n_ctx,
        "slots": info.slots,
        "threads": info.threads,
        "gpu_layers": info.gpu_layers,
        "layers": info.n_layers,
        "vision": info.vision,
        "drafting": info.drafting,
    })
}

/// Each conversation's KV cache: tier, tokens, bytes.
pub fn cache(models: &LocalModels) -> Value {
    models
        .view()
        .map(|v| json!(v.cache.entries()))
        .unwrap_or_else(|| json!([]))
}

/// The queue for the model, by priority.
pub fn queue(models: &LocalModels) -> Value {
    let mut queue = serde_json::Map::new();
    for (priority, n) in models.queue_depth() {
        queue.insert(format!("{priority:?}").to_lowercase(), json!(n));
    }
    Value::Object(queue)
}

/// The backends llama.cpp loaded and their devices.
pub fn backend(config: &Config) -> Value {
    match backends::load(
        config.engine.backends_dir.as_deref(),
        &config.engine.rpc_servers,
    ) {
        Ok(b) => json!({
            "names": b.backends.iter().map(|b| b.name.clone()).collect::<Vec<_>>(),
            "cpu": b.cpu_variant(),
            "devices": b.devices.iter().map(|d| json!({
                "name": d.name,
                "description": d.description,
                "total_mib": d.total_bytes / MIB,
            })).collect::<Vec<_>>(),
        }),
        Err(e) => json!({ "error": e.to_string() }),
    }
}

/// The process's RAM, the machine's, and each NVIDIA GPU's memory (read
/// with `nvidia-smi` only where a GPU backend is loaded).
pub fn memory(config: &Config) -> Value {
    let (available, total) = Hardware::ram();
    let gpus_loaded = backends::load(
        config.engine.backends_dir.as_deref(),
        &config.engine.rpc_servers,
    )
    .is_ok_and(|b| b.gpus().next().is_some());
    let gpus: Vec<Value> = if gpus_loaded {
        Hardware::detect()
            .gpus
            .iter()
            .map(|g| json!({ "name": g.name, "free_mib": g.free_mib, "total_mib": g.total_mib }))
            .collect()
    } else {
        Vec::new()
    };
    json!({
        "process_mib": crate::metrics::resident_bytes().map(|b| b as u64 / MIB),
        "available_mib": available / MIB,
        "total_mib": total / MIB,
        "gpus": gpus,
    })
}

/// Recent replies' first-token times and decode speeds.
pub fn speed(metrics: &Metrics) -> Value {
    json!(metrics.recent())
}
