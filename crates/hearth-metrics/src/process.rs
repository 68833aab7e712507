//! The process itself, as every Prometheus exporter shows it
//! (`process_resident_memory_bytes`, `process_open_fds`,
//! `process_start_time_seconds`, `process_cpu_seconds_total`), read from
//! `/proc/self` at each scrape, and `hearth_build_info{version}`.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

pub struct ProcessMetrics {
    resident: Gauge,
    open_fds: Gauge,
    start_time: Gauge<f64, AtomicU64>,
    cpu: Counter<f64, AtomicU64>,
}

impl ProcessMetrics {
    /// Registers the process metrics in `registry` (which has no prefix)
    /// and the build's version in `hearth` (which has hearth's).
    pub fn register(registry: &mut Registry, hearth: &mut Registry) -> Self {
        hearth.register(
            "build",
            "The hearth build that is running",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
        let this = Self {
            resident: Gauge::default(),
            open_fds: Gauge::default(),
            start_time: Gauge::default(),
            cpu: Counter::default(),
        };
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory size in bytes",
            this.resident.clone(),
        );
        registry.register(
            "process_open_fds",
            "Number of open file descriptors",
            this.open_fds.clone(),
        );
        registry.register(
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch in seconds",
            this.start_time.clone(),
        );
        registry.register(
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds",
            this.cpu.clone(),
        );
        this
    }

    /// Reads `/proc/self` now; a value that cannot be read keeps its last.
    pub fn refresh(&self) {
        if let Some(bytes) = resident_bytes() {
            self.resident.set(bytes);
        }
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            self.open_fds.set(dir.count() as i64);
        }
        if let Some((start, cpu)) = stat_times() {
            self.start_time.set(start);
            let counted = self.cpu.get();
            if cpu > counted {
                self.cpu.inc_by(cpu - counted);
            }
        }
    }
}

/// This process's resident memory in bytes, from `/proc/self/statm`.
pub fn resident_bytes() -> Option<i64> {
    let pages = std::fs::read_to_string("/proc/self/statm")
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse::<i64>()
        .ok()?;
    Some(pages * page_size())
}

fn page_size() -> i64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as i64).max(1)
}

/// The process's start time (Unix seconds) and CPU seconds, from
/// `/proc/self/stat` and the boot time in `/proc/stat`.
fn stat_times() -> Option<(f64, f64)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // SAFETY: sysconf has no preconditions.
    let ticks = (unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64).max(1.0);
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    let started: f64 = fields.get(19)?.parse().ok()?;
    let boot: f64 = std::fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    Some((boot + started / ticks, (utime + stime) / ticks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_is_read_from_proc() {
        let mut plain = Registry::default();
        let mut hearth = Registry::with_prefix("hearth");
        let p = ProcessMetrics::register(&mut plain, &mut hearth);
        p.refresh();
        assert!(p.resident.get() > 1 << 20, "{}", p.resident.get());
        assert!(p.open_fds.get() >= 3);
        let now = chrono::Utc::now().timestamp() as f64;
        let start = p.start_time.get();
        assert!(
            start > now - 86_400.0 && start <= now + 1.0,
            "{start} vs {now}"
        );
    }
}
