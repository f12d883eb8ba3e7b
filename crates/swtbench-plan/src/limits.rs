//! Resource limits a run can hit, and how a hit is told from the container's own counters.
//!
//! A test container runs with a memory limit (swap included), a process limit, a bound on what it
//! may write (the engine's quota or the harness's watch of the writable layer) and a largest file
//! (`RLIMIT_FSIZE`). After the eval script, the kernel's counters of the container's cgroup say
//! whether a limit was reached: `oom_kill` in `memory.events` (cgroup v2) or
//! `memory.oom_control` (v1), `max` in `pids.events` (both). A root test can replace the tools
//! that read them (it can only change the reason given for its own outcome: see docs/limits.md).
//!
//! Pure: text in, [`LimitHit`] out.

use std::fmt;

use serde::{Deserialize, Serialize};
use swtbench_core::engine::{ResourceLimits, Written};

/// The shell command that prints the counters: each readable file's path, then its content.
pub const CGROUP_COUNTERS_SCRIPT: &str = "for f in /sys/fs/cgroup/memory.events \
/sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/pids.events \
/sys/fs/cgroup/pids/pids.events; do [ -r \"$f\" ] && { echo \"== $f\"; cat \"$f\"; }; done; true";

/// Which limit a run reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitHit {
    /// The kernel's OOM killer ended a process of the run (the memory limit).
    Memory,
    /// A process could not be created: the process limit was reached.
    Pids,
    /// The run wrote more than it may (in all, or one file larger than the largest file).
    Disk,
}

impl LimitHit {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitHit::Memory => "memory",
            LimitHit::Pids => "pids",
            LimitHit::Disk => "disk",
        }
    }

    /// The flag that sets this limit.
    pub fn flag(self) -> &'static str {
        match self {
            LimitHit::Memory => "--memory",
            LimitHit::Pids => "--pids-limit",
            LimitHit::Disk => "--disk-limit",
        }
    }

    /// The limit as set, e.g. `4.0 GiB` or `1024 processes`.
    pub fn amount(self, limits: &ResourceLimits) -> String {
        match self {
            LimitHit::Memory => limits.memory_bytes.map_or("-".into(), human_bytes),
            LimitHit::Pids => limits.pids.map_or("-".into(), |p| format!("{p} processes")),
            LimitHit::Disk => match (limits.disk_bytes, limits.file_bytes) {
                (Some(d), Some(f)) => {
                    format!("{} in all, {} per file", human_bytes(d), human_bytes(f))
                }
                (Some(d), None) => format!("{} in all", human_bytes(d)),
                (None, Some(f)) => format!("{} per file", human_bytes(f)),
                (None, None) => "-".into(),
            },
        }
    }
}

impl fmt::Display for LimitHit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LimitHit::Memory => "the memory limit (the OOM killer ended a process)",
            LimitHit::Pids => "the process limit (a process could not be created)",
            LimitHit::Disk => "the disk limit (the run wrote more than it may)",
        })
    }
}

/// What the cgroup counters say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CgroupCounters {
    pub oom_kills: u64,
    /// Process creations refused at the limit.
    pub pids_refused: u64,
}

/// Reads the output of [`CGROUP_COUNTERS_SCRIPT`].
pub fn parse_cgroup_counters(text: &str) -> CgroupCounters {
    let mut c = CgroupCounters::default();
    let mut file = "";
    for line in text.lines() {
        if let Some(path) = line.strip_prefix("== ") {
            file = path;
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(name), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = value.parse::<u64>() else {
            continue;
        };
        if file.contains("/memory") && name == "oom_kill" {
            c.oom_kills = c.oom_kills.max(n);
        } else if file.ends_with("pids.events") && name == "max" {
            c.pids_refused = c.pids_refused.max(n);
        }
    }
    c
}

/// The limit a run reached, from what the harness saw: the disk watch ended the command, the
/// writable layer holds the disk bound or a file of the largest size, the cgroup counters. One
/// hit is named when several happened, in that order (the disk first: the harness ended the run
/// for it).
pub fn classify(
    limits: &ResourceLimits,
    disk_watch_hit: bool,
    written: Option<Written>,
    counters: CgroupCounters,
) -> Option<LimitHit> {
    let at = |bound: Option<u64>, value: Option<u64>| matches!((bound, value), (Some(b), Some(v)) if v >= b);
    let wrote_to_bound = written
        .is_some_and(|w| at(limits.disk_bytes, Some(w.total)) || at(limits.file_bytes, w.largest));
    if disk_watch_hit || wrote_to_bound {
        Some(LimitHit::Disk)
    } else if counters.oom_kills > 0 {
        Some(LimitHit::Memory)
    } else if counters.pids_refused > 0 {
        Some(LimitHit::Pids)
    } else {
        None
    }
}

/// `4.0 GiB`, `512 MiB`, `100 B`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {unit}")
    } else {
        format!("{v:.1} {unit}")
    }
}

/// The limits as one line for the plan and the run report, e.g.
/// `memory 4 GiB, 1024 processes, disk 4 GiB (1 GiB per file), CPUs unlimited`.
pub fn describe(limits: &ResourceLimits) -> String {
    if limits.is_unlimited() {
        return "none (--no-limits)".to_string();
    }
    let memory = limits.memory_bytes.map_or("memory unlimited".into(), |m| {
        format!("memory {}", human_bytes(m))
    });
    let pids = limits
        .pids
        .map_or("processes unlimited".into(), |p| format!("{p} processes"));
    let disk = match (limits.disk_bytes, limits.file_bytes) {
        (Some(d), Some(f)) => format!("disk {} ({} per file)", human_bytes(d), human_bytes(f)),
        (Some(d), None) => format!("disk {}", human_bytes(d)),
        (None, Some(f)) => format!("disk unlimited ({} per file)", human_bytes(f)),
        (None, None) => "disk unlimited".into(),
    };
    let cpus = limits.nano_cpus.map_or("CPUs unlimited".into(), |n| {
        format!("{} CPUs", n as f64 / 1e9)
    });
    format!("{memory}, {pids}, {disk}, {cpus}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1_OOM: &str = "== /sys/fs/cgroup/memory/memory.oom_control\noom_kill_disable 0\nunder_oom 0\noom_kill 1\n== /sys/fs/cgroup/pids/pids.events\nmax 0\n";
    const V2_PIDS: &str = "== /sys/fs/cgroup/memory.events\nlow 0\nhigh 0\nmax 3\noom 0\noom_kill 0\n== /sys/fs/cgroup/pids.events\nmax 12\n";

    #[test]
    fn counters_of_both_cgroup_versions() {
        assert_eq!(
            parse_cgroup_counters(V1_OOM),
            CgroupCounters {
                oom_kills: 1,
                pids_refused: 0
            }
        );
        // memory.events' own `max` (times usage reached the limit) is not a pids refusal.
        assert_eq!(
            parse_cgroup_counters(V2_PIDS),
            CgroupCounters {
                oom_kills: 0,
                pids_refused: 12
            }
        );
        assert_eq!(parse_cgroup_counters(""), CgroupCounters::default());
        assert_eq!(
            parse_cgroup_counters("oom_kill 5\nmax 7\n"),
            CgroupCounters::default(),
            "lines outside a known file count for nothing"
        );
    }

    #[test]
    fn classification_names_one_hit() {
        let limits = ResourceLimits {
            memory_bytes: Some(1 << 30),
            pids: Some(100),
            nano_cpus: None,
            disk_bytes: Some(4 << 30),
            file_bytes: Some(1 << 30),
        };
        let none = CgroupCounters::default();
        let w = |total: u64, largest: Option<u64>| Some(Written { total, largest });
        assert_eq!(classify(&limits, false, w(10, Some(10)), none), None);
        assert_eq!(
            classify(&limits, true, w(10, Some(10)), none),
            Some(LimitHit::Disk)
        );
        assert_eq!(
            classify(&limits, false, w(1 << 30, Some(1 << 30)), none),
            Some(LimitHit::Disk),
            "a file at the largest size"
        );
        assert_eq!(
            classify(&limits, false, w(2 << 30, Some(1 << 20)), none),
            None,
            "many small files past the per-file size but under the disk limit"
        );
        assert_eq!(
            classify(&limits, false, w(4 << 30, None), none),
            Some(LimitHit::Disk),
            "the engine's total at the disk limit"
        );
        let oom = CgroupCounters {
            oom_kills: 1,
            pids_refused: 3,
        };
        assert_eq!(classify(&limits, false, None, oom), Some(LimitHit::Memory));
        let pids = CgroupCounters {
            oom_kills: 0,
            pids_refused: 3,
        };
        assert_eq!(classify(&limits, false, None, pids), Some(LimitHit::Pids));
        assert_eq!(
            classify(
                &ResourceLimits::default(),
                false,
                w(u64::MAX, Some(u64::MAX)),
                none
            ),
            None,
            "no bound, no disk hit"
        );
    }

    #[test]
    fn descriptions() {
        assert_eq!(human_bytes(100), "100 B");
        assert_eq!(human_bytes(4 << 30), "4 GiB");
        assert_eq!(human_bytes(1536 << 20), "1.5 GiB");
        assert_eq!(describe(&ResourceLimits::default()), "none (--no-limits)");
        let l = ResourceLimits {
            memory_bytes: Some(4 << 30),
            pids: Some(1024),
            nano_cpus: Some(1_500_000_000),
            disk_bytes: Some(4 << 30),
            file_bytes: Some(1 << 30),
        };
        assert_eq!(
            describe(&l),
            "memory 4 GiB, 1024 processes, disk 4 GiB (1 GiB per file), 1.5 CPUs"
        );
        assert_eq!(LimitHit::Disk.amount(&l), "4 GiB in all, 1 GiB per file");
        assert_eq!(
            serde_json::to_string(&LimitHit::Memory).expect("json"),
            r#""memory""#
        );
    }
}
