//! This process as an owner ([`swtbench_core::owner`]): its host, pid and start time read from
//! the system, and the state of another owner's pid read from `/proc`. The decision itself is
//! [`swtbench_core::owner::liveness`]; this module only supplies its inputs.

use std::path::Path;
use std::sync::OnceLock;

pub use swtbench_core::owner::{Liveness, Owner, ProcessState};

/// Where this process's pids mean something: the machine's name (`/proc/sys/kernel/hostname`, the
/// kernel's node name; else `HOSTNAME`; else empty) and, where `/proc` tells it, its pid namespace
/// (`<name>@pidns<inode>`), with `/` replaced. A pid can only be checked from its own namespace: a
/// swtbench in a container that shares the machine's name (`docker run --network host` gives the
/// host's) is another "host" to the swtbench processes outside it, and they to it, so neither
/// takes the other's live containers for a dead process's.
pub fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
        .trim()
        .replace('/', "_");
    match pid_namespace() {
        Some(ns) => format!("{name}@pidns{ns}"),
        None => name,
    }
}

/// The inode of this process's pid namespace (`/proc/self/ns/pid` → `pid:[4026531836]`).
fn pid_namespace() -> Option<u64> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let text = link.to_str()?;
    text.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

/// Start time of process `pid` in clock ticks since boot (field 22 of `/proc/<pid>/stat`).
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: count after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// What this machine says of `pid`: running (with its start time), gone, or nothing (no `/proc`).
pub fn process_state(pid: u32) -> ProcessState {
    if !Path::new("/proc/self/stat").exists() {
        return ProcessState::Unknowable;
    }
    match start_time(pid) {
        Some(start) => ProcessState::Running { start },
        // A process that is there but whose stat cannot be read: cannot tell.
        None if Path::new("/proc").join(pid.to_string()).exists() => ProcessState::Unknowable,
        None => ProcessState::Gone,
    }
}

/// This process as an owner (computed once).
pub fn current() -> &'static Owner {
    static CURRENT: OnceLock<Owner> = OnceLock::new();
    CURRENT.get_or_init(|| {
        let pid = std::process::id();
        Owner::new(&host_name(), pid, start_time(pid).unwrap_or(0))
    })
}

/// Whether the owner named by `label` still runs, seen from this process.
pub fn liveness(label: &str) -> Liveness {
    swtbench_core::owner::liveness_of_label(label, current(), process_state)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process in another pid namespace with the same machine name (a container run with the
    /// host's network) is another host: its owners are never judged by pids of this namespace.
    #[test]
    fn the_host_names_the_pid_namespace_too() {
        let host = host_name();
        if let Some(ns) = pid_namespace() {
            assert!(host.ends_with(&format!("@pidns{ns}")), "{host}");
            let plain = host.split("@pidns").next().unwrap_or_default().to_string();
            let other = Owner::new(&format!("{plain}@pidns1"), 1, 1);
            assert_eq!(
                swtbench_core::owner::liveness(&other, current(), ProcessState::Gone),
                Liveness::OtherHost
            );
        }
    }

    #[test]
    fn this_process_is_current_a_running_one_alive_an_ended_one_dead() {
        let me = current();
        assert_eq!(me.pid, std::process::id());
        assert!(me.start > 0, "{me}");
        assert_eq!(liveness(&me.label()), Liveness::Current);

        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        let started = start_time(pid).unwrap_or(1);
        child.wait().expect("wait");
        let ended = Owner::new(&me.host, pid, started);
        assert_eq!(process_state(pid), ProcessState::Gone);
        assert_eq!(liveness(&ended.label()), Liveness::Dead);

        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn");
        let pid = sleeper.id();
        let start = start_time(pid).expect("stat of a running child");
        assert_eq!(process_state(pid), ProcessState::Running { start });
        assert_eq!(
            liveness(&Owner::new(&me.host, pid, start).label()),
            Liveness::Alive
        );
        // The same pid with another start time is another process.
        assert_eq!(
            liveness(&Owner::new(&me.host, pid, start - 1).label()),
            Liveness::Dead
        );
        sleeper.kill().expect("kill");
        sleeper.wait().expect("wait");
        assert_eq!(
            liveness(&Owner::new("another-machine", pid, start).label()),
            Liveness::OtherHost
        );
    }
}
