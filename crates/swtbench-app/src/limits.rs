//! The containers' resource limits: what the user asked for, and the safe defaults for what they
//! did not, sized from the engine's host and `--max-workers` (docs/limits.md).
//!
//! Model-written tests are hostile input: without limits a test can fork the host's process table
//! full, allocate its memory away or fill its disk. Every test container therefore gets, unless
//! `--no-limits` asks for the original's unlimited containers:
//! - **memory** (swap included): three quarters of the host's memory shared by the workers,
//!   between [`MIN_DEFAULT_MEMORY`] and [`MAX_DEFAULT_MEMORY`];
//! - **processes**: 256 per host CPU, between 1,024 and 16,384, and at most a share of the host's
//!   `pid_max` per worker;
//! - **disk**: a quarter of the size of the file system holding the engine's data shared by the
//!   workers, between 1 GiB and 10 GiB, and 1 GiB per file (the size, not the free space: the
//!   defaults must not change from one run to the next, or finished runs would not be reused).
//!
//! [`LimitOptions::resolve`] is pure; [`HostFacts::of_engine`] and [`HostFacts::of_this_machine`]
//! read the facts.

use std::path::Path;

use swtbench_backend::{EngineHost, EngineInfo, ResourceLimits};

/// Smallest default memory limit: what the benchmark's heaviest suites need.
pub const MIN_DEFAULT_MEMORY: u64 = 2 << 30;
/// Largest default memory limit.
pub const MAX_DEFAULT_MEMORY: u64 = 16 << 30;
/// Default memory limit when the host's memory is unknown.
pub const FALLBACK_MEMORY: u64 = 4 << 30;
const MIN_DEFAULT_PIDS: u64 = 1024;
const MAX_DEFAULT_PIDS: u64 = 16384;
const PIDS_PER_CPU: u64 = 256;
const MIN_DEFAULT_DISK: u64 = 1 << 30;
const MAX_DEFAULT_DISK: u64 = 10 << 30;
/// Default disk bound when the engine's free space is unknown (a remote engine).
pub const FALLBACK_DISK: u64 = 4 << 30;
/// Default largest file.
pub const DEFAULT_FILE: u64 = 1 << 30;

/// What the user asked of the limits (`None`: the default).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LimitOptions {
    /// `--no-limits`: no limit at all unless one is given explicitly (the original's containers).
    pub no_limits: bool,
    pub memory: Option<u64>,
    pub pids: Option<u32>,
    pub cpus: Option<f64>,
    pub disk: Option<u64>,
    pub file: Option<u64>,
}

/// What the limits are sized from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostFacts {
    pub memory_bytes: Option<u64>,
    pub cpus: Option<u32>,
    /// The kernel's `pid_max`.
    pub pid_max: Option<u64>,
    /// Size of the file system where the engine keeps containers.
    pub disk_size: Option<u64>,
    /// Whose facts these are ("the engine's host", "this machine").
    pub source: String,
}

impl HostFacts {
    /// The engine's own report of its host; `pid_max` and the free space are read here when the
    /// engine runs on this machine (a local socket and its data directory visible).
    pub fn of_engine(info: &EngineInfo) -> HostFacts {
        let EngineHost {
            memory_bytes,
            cpus,
            root_dir,
            ..
        } = &info.host;
        let local = info.endpoint.starts_with("unix://");
        let root = root_dir.as_deref().filter(|_| local).map(Path::new);
        HostFacts {
            memory_bytes: *memory_bytes,
            cpus: *cpus,
            pid_max: if local { read_pid_max() } else { None },
            disk_size: root.and_then(fs_size),
            source: if local {
                "the engine's host (this machine)".into()
            } else {
                format!("the engine's host ({})", info.endpoint)
            },
        }
    }

    /// This machine (a dry run without an engine).
    pub fn of_this_machine() -> HostFacts {
        HostFacts {
            memory_bytes: read_mem_total(),
            cpus: std::thread::available_parallelism()
                .ok()
                .and_then(|n| u32::try_from(n.get()).ok()),
            pid_max: read_pid_max(),
            disk_size: ["/var/lib/docker", "/"]
                .iter()
                .map(Path::new)
                .find(|p| p.is_dir())
                .and_then(fs_size),
            source: "this machine (the engine was not reached)".into(),
        }
    }
}

fn read_mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn read_pid_max() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn fs_size(path: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(path).ok()?;
    Some(s.f_blocks.saturating_mul(s.f_frsize))
}

/// The limits and one line saying how they were chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedLimits {
    pub limits: ResourceLimits,
    pub note: String,
}

impl LimitOptions {
    /// The limits of every test container of a run with `workers` containers at once.
    pub fn resolve(&self, host: &HostFacts, workers: usize) -> ResolvedLimits {
        let workers = workers.max(1) as u64;
        let explicit = ResourceLimits {
            memory_bytes: self.memory,
            pids: self.pids,
            nano_cpus: self.cpus.map(|c| (c * 1e9) as u64),
            disk_bytes: self.disk,
            file_bytes: self.file,
        };
        if self.no_limits {
            return ResolvedLimits {
                limits: explicit,
                note: "--no-limits: only the limits given explicitly".into(),
            };
        }
        let memory = host.memory_bytes.map_or(FALLBACK_MEMORY, |m| {
            (m / 4 * 3 / workers).clamp(MIN_DEFAULT_MEMORY, MAX_DEFAULT_MEMORY)
        });
        let mut pids = host.cpus.map_or(MIN_DEFAULT_PIDS, |c| {
            (u64::from(c) * PIDS_PER_CPU).clamp(MIN_DEFAULT_PIDS, MAX_DEFAULT_PIDS)
        });
        if let Some(max) = host.pid_max {
            pids = pids.min((max / 2 / workers).max(256));
        }
        let disk = host.disk_size.map_or(FALLBACK_DISK, |f| {
            (f / 4 / workers).clamp(MIN_DEFAULT_DISK, MAX_DEFAULT_DISK)
        });
        let disk = self.disk.unwrap_or(disk);
        let limits = ResourceLimits {
            memory_bytes: Some(self.memory.unwrap_or(memory)),
            pids: Some(self.pids.unwrap_or(pids as u32)),
            nano_cpus: explicit.nano_cpus,
            disk_bytes: Some(disk),
            file_bytes: Some(self.file.unwrap_or(DEFAULT_FILE.min(disk))),
        };
        ResolvedLimits {
            limits,
            note: format!(
                "defaults sized from {} and --max-workers {workers}; --no-limits for none",
                host.source
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> HostFacts {
        HostFacts {
            memory_bytes: Some(24 << 30),
            cpus: Some(2),
            pid_max: Some(32768),
            disk_size: Some(80 << 30),
            source: "a test host".into(),
        }
    }

    #[test]
    fn defaults_are_sized_from_the_host_and_the_workers() {
        let r = LimitOptions::default().resolve(&host(), 4);
        assert_eq!(
            r.limits.memory_bytes,
            Some(18 << 30 >> 2),
            "3/4 of 24 GiB over 4"
        );
        assert_eq!(r.limits.pids, Some(1024), "2 CPUs: the floor");
        assert_eq!(
            r.limits.disk_bytes,
            Some(5 << 30),
            "a quarter of 80 GiB over 4"
        );
        assert_eq!(r.limits.file_bytes, Some(1 << 30));
        assert_eq!(r.limits.nano_cpus, None);
        assert!(r.note.contains("a test host") && r.note.contains("--max-workers 4"));

        let many = LimitOptions::default().resolve(&host(), 64);
        assert_eq!(many.limits.memory_bytes, Some(MIN_DEFAULT_MEMORY));
        assert_eq!(many.limits.disk_bytes, Some(MIN_DEFAULT_DISK));
        assert_eq!(many.limits.pids, Some(256), "pid_max shared by 64 workers");

        let big = HostFacts {
            memory_bytes: Some(1 << 40),
            cpus: Some(128),
            pid_max: Some(4 << 20),
            disk_size: Some(10 << 40),
            source: "big".into(),
        };
        let r = LimitOptions::default().resolve(&big, 1);
        assert_eq!(r.limits.memory_bytes, Some(MAX_DEFAULT_MEMORY));
        assert_eq!(r.limits.pids, Some(16384));
        assert_eq!(r.limits.disk_bytes, Some(MAX_DEFAULT_DISK));

        let unknown = LimitOptions::default().resolve(&HostFacts::default(), 4);
        assert_eq!(unknown.limits.memory_bytes, Some(FALLBACK_MEMORY));
        assert_eq!(unknown.limits.pids, Some(1024));
        assert_eq!(unknown.limits.disk_bytes, Some(FALLBACK_DISK));
    }

    #[test]
    fn explicit_values_win_and_no_limits_keeps_only_them() {
        let asked = LimitOptions {
            memory: Some(512 << 20),
            pids: Some(64),
            cpus: Some(1.5),
            disk: Some(100 << 20),
            ..Default::default()
        };
        let r = asked.resolve(&host(), 4);
        assert_eq!(r.limits.memory_bytes, Some(512 << 20));
        assert_eq!(r.limits.pids, Some(64));
        assert_eq!(r.limits.nano_cpus, Some(1_500_000_000));
        assert_eq!(r.limits.disk_bytes, Some(100 << 20));
        assert_eq!(
            r.limits.file_bytes,
            Some(100 << 20),
            "no file larger than the disk"
        );

        let none = LimitOptions {
            no_limits: true,
            ..Default::default()
        }
        .resolve(&host(), 4);
        assert!(none.limits.is_unlimited());
        let some = LimitOptions {
            no_limits: true,
            pids: Some(100),
            ..Default::default()
        }
        .resolve(&host(), 4);
        assert_eq!(
            some.limits,
            ResourceLimits {
                pids: Some(100),
                ..Default::default()
            }
        );
    }
}
