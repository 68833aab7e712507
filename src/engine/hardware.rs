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

    #[test]
    fn detects_this_machine() {
        let hw = Hardware::detect();
        assert!(hw.physical_cores >= 1 && hw.physical_cores <= hw.logical_cores);
        assert!(hw.total_ram > 0);
        assert!(thread_count(0) >= 1);
        assert_eq!(thread_count(3), 3);
    }
}
