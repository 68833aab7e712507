//! What the machine offers: CPU cores, memory, NVIDIA GPUs.
//!
//! Thread counts come from the physical core count: llama.cpp's default
//! oversubscribes small machines (measured: ~42 tok/s with defaults against
//! 113–147 tok/s with one thread per physical core on 2 cores).

use std::process::Command;

use sysinfo::{MemoryRefreshKind, RefreshKind, System};

#[derive(Debug, Clone)]
pub struct Gpu {
    pub name: String,
    pub total_mib: u64,
    pub free_mib: u64,
}

#[derive(Debug, Clone)]
pub struct Hardware {
    pub cpu_brand: String,
    pub physical_cores: usize,
    pub logical_cores: usize,
    pub total_ram: u64,
    pub available_ram: u64,
    /// NVIDIA GPUs as `nvidia-smi` reports them; empty where there is none.
    pub gpus: Vec<Gpu>,
}

impl Hardware {
    pub fn detect() -> Self {
        let mut sys = System::new_with_specifics(
            RefreshKind::nothing().with_memory(MemoryRefreshKind::everything()),
        );
        sys.refresh_cpu_all();
        let logical_cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            cpu_brand: sys
                .cpus()
                .first()
                .map(|c| c.brand().trim().to_string())
                .filter(|b| !b.is_empty())
                .unwrap_or_else(|| "unknown CPU".to_string()),
            physical_cores: System::physical_core_count()
                .unwrap_or(logical_cores)
                .min(logical_cores)
                .max(1),
            logical_cores,
            total_ram: sys.total_memory(),
            available_ram: sys.available_memory(),
            gpus: nvidia_gpus(),
        }
    }
}

impl Hardware {
    /// Available and total RAM in bytes, without probing anything else.
    pub fn ram() -> (u64, u64) {
        let sys = System::new_with_specifics(
            RefreshKind::nothing().with_memory(MemoryRefreshKind::everything()),
        );
        (sys.available_memory(), sys.total_memory())
    }

    /// Available RAM in bytes, without probing anything else.
    pub fn available_ram() -> u64 {
        let sys = System::new_with_specifics(
            RefreshKind::nothing().with_memory(MemoryRefreshKind::everything()),
        );
        sys.available_memory()
    }
}

/// Threads for llama.cpp: the configured count, else one per physical core.
pub fn thread_count(configured: u32) -> i32 {
    if configured > 0 {
        return configured as i32;
    }
    let logical = std::thread::available_parallelism().map_or(1, |n| n.get());
    System::physical_core_count()
        .unwrap_or(logical)
        .min(logical)
        .max(1) as i32
}

/// What the model and its KV cache need, and what the machine offers.
#[derive(Debug, Clone)]
pub struct FitInput {
    pub model_bytes: u64,
    pub n_layers: u32,
    pub kv_bytes_per_token: u64,
    pub n_ctx_train: u32,
    /// `[model] context_size`; 0 means as large as trained and fits.
    pub requested_ctx: u32,
    pub slots: u32,
    /// Free VRAM of the GPU to use, when this build can offload to one.
    pub gpu_free: Option<u64>,
    pub available_ram: u64,
    pub gpu_layers: hearth_core::model::GpuLayers,
}

/// The chosen context per conversation and layers on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    pub n_ctx_seq: u32,
    pub gpu_layers: u32,
}

/// VRAM left free for llama.cpp's compute buffers.
const GPU_MARGIN: u64 = 768 << 20;

/// Sizes the context and the GPU offload. An automatic context is the
/// training context, capped so the KV cache of all slots fits: in VRAM after
/// the weights when offloading everything, else in a quarter of free RAM.
/// Automatic offload puts as many layers on the GPU as fit beside that cache.
pub fn fit(input: &FitInput) -> Fit {
    let train = if input.n_ctx_train == 0 {
        4096
    } else {
        input.n_ctx_train
    };
    let per_token_all_slots = input
        .kv_bytes_per_token
        .max(1)
        .saturating_mul(u64::from(input.slots.max(1)));
    let n_ctx_seq = if input.requested_ctx > 0 {
        input.requested_ctx.min(train)
    } else {
        let budget = match input.gpu_free {
            Some(free) if free > input.model_bytes + GPU_MARGIN => {
                free - input.model_bytes - GPU_MARGIN
            }
            _ => input.available_ram / 4,
        };
        let fits = (budget / per_token_all_slots).min(u64::from(u32::MAX)) as u32;
        train.min(fits / 256 * 256).max(512.min(train))
    };
    let gpu_layers = match (input.gpu_layers, input.gpu_free) {
        // No device to offload to: every layer stays on the CPU whatever
        // was asked, and is reported so.
        (_, None) => 0,
        (hearth_core::model::GpuLayers::Count(n), Some(_)) => n.min(input.n_layers + 1),
        (hearth_core::model::GpuLayers::Auto, Some(free)) => {
            let kv = per_token_all_slots * u64::from(n_ctx_seq);
            let layers = u64::from(input.n_layers.max(1));
            let per_layer = (input.model_bytes / layers).max(1);
            let room = free.saturating_sub(kv + GPU_MARGIN);
            // The output layer counts as one more.
            (room / per_layer).min(layers + 1) as u32
        }
    };
    Fit {
        n_ctx_seq,
        gpu_layers,
    }
}

fn nvidia_gpus() -> Vec<Gpu> {
    let Ok(out) = Command::new("nvidia-smi")
        .args([
            "--query-gpu=name,memory.total,memory.free",
            "--format=csv,noheader,nounits",
        ])
        .output()
    else {
        return Vec::new();
    };
    if !out.status.success() {
        return Vec::new();
    }
    parse_nvidia_smi(&String::from_utf8_lossy(&out.stdout))
}

fn parse_nvidia_smi(text: &str) -> Vec<Gpu> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.split(',').map(str::trim);
            let name = parts.next()?.to_string();
            let total_mib = parts.next()?.parse().ok()?;
            let free_mib = parts.next()?.parse().ok()?;
            Some(Gpu {
                name,
                total_mib,
                free_mib,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nvidia_smi_csv() {
        let gpus = parse_nvidia_smi("NVIDIA H100 80GB HBM3, 81559, 80902\ngarbage line\n");
        assert_eq!(gpus.len(), 1);
        assert_eq!(gpus[0].name, "NVIDIA H100 80GB HBM3");
        assert_eq!(gpus[0].free_mib, 80902);
    }

    fn input() -> FitInput {
        FitInput {
            model_bytes: 4 << 30,
            n_layers: 32,
            kv_bytes_per_token: 128 << 10,
            n_ctx_train: 32768,
            requested_ctx: 0,
            slots: 4,
            gpu_free: None,
            available_ram: 16 << 30,
            gpu_layers: hearth_core::model::GpuLayers::Auto,
        }
    }

    #[test]
    fn cpu_context_fits_a_quarter_of_ram() {
        let f = fit(&input());
        // 4 GiB / (128 KiB × 4 slots) = 8192 tokens per conversation.
        assert_eq!(
            f,
            Fit {
                n_ctx_seq: 8192,
                gpu_layers: 0
            }
        );
        let small = fit(&FitInput {
            kv_bytes_per_token: 1 << 10,
            ..input()
        });
        assert_eq!(small.n_ctx_seq, 32768, "capped by the training context");
        let asked = fit(&FitInput {
            requested_ctx: 2048,
            ..input()
        });
        assert_eq!(asked.n_ctx_seq, 2048);
    }

    #[test]
    fn gpu_offload_counts_layers_that_fit_beside_the_cache() {
        let big = fit(&FitInput {
            gpu_free: Some(80 << 30),
            ..input()
        });
        assert_eq!(big.gpu_layers, 33, "everything, output layer included");
        let small = fit(&FitInput {
            gpu_free: Some(3 << 30),
            requested_ctx: 4096,
            ..input()
        });
        // 3 GiB - 2 GiB of KV - 768 MiB margin leaves 256 MiB: two 128 MiB layers.
        assert_eq!(small.gpu_layers, 2);
        let fixed = |n, gpu_free| {
            fit(&FitInput {
                gpu_layers: hearth_core::model::GpuLayers::Count(n),
                gpu_free,
                ..input()
            })
            .gpu_layers
        };
        assert_eq!(fixed(7, Some(1 << 30)), 7, "a number is taken as it is");
        assert_eq!(fixed(99, Some(1 << 30)), 33, "at most every layer");
        assert_eq!(fixed(7, None), 0, "no GPU: nothing is offloaded");
    }

    #[test]
    fn detects_this_machine() {
        let hw = Hardware::detect();
        assert!(hw.physical_cores >= 1 && hw.physical_cores <= hw.logical_cores);
        assert!(hw.total_ram > 0);
        assert!(thread_count(0) >= 1);
        assert_eq!(thread_count(3), 3);
    }
}
