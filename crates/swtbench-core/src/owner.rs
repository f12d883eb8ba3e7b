//! Which process owns a container or a temporary file, and whether that owner still runs.
//!
//! Everything swtbench creates on the engine carries its owner, the process that made it, as
//! `<host>/<pid>/<start>`: the machine's name, the process id and the process's start time (clock
//! ticks since boot, field 22 of `/proc/<pid>/stat`). The start time tells the owner from a new
//! process that reused its pid. A later process removes what a *dead* owner left, never what a
//! live one (another run on the same engine) is using.
//!
//! This module is the decision only: an owner and what the machine says of its pid in, a
//! [`Liveness`] out. Reading `/proc` is the I/O crates' (`swtbench_data::owner`).

use std::fmt;

/// The process that created something: `<host>/<pid>/<start>` as a label.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The machine's name (`/` replaced: it separates the fields).
    pub host: String,
    pub pid: u32,
    /// Start time in clock ticks since boot; 0 when the owner could not read its own.
    pub start: u64,
}

impl Owner {
    /// An owner; a `/` in `host` becomes `_`.
    pub fn new(host: &str, pid: u32, start: u64) -> Owner {
        Owner {
            host: host.replace('/', "_"),
            pid,
            start,
        }
    }

    /// Reads a label written by [`Owner::label`]; `None` for anything else (an empty label, one
    /// of a format this version does not know).
    pub fn parse(label: &str) -> Option<Owner> {
        let mut parts = label.split('/');
        let (Some(host), Some(pid), Some(start), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        if host.is_empty() {
            return None;
        }
        Some(Owner {
            host: host.to_string(),
            pid: pid.parse().ok()?,
            start: start.parse().ok()?,
        })
    }

    /// The label value: `<host>/<pid>/<start>`.
    pub fn label(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.host, self.pid, self.start)
    }
}

/// What this machine says of a process id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    /// A process with this id runs, started at `start` (clock ticks since boot).
    Running { start: u64 },
    /// No process has this id.
    Gone,
    /// The machine cannot say (no `/proc`).
    Unknowable,
}

/// Whether the owner of something still runs, seen from one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    /// The process looking.
    Current,
    /// Another process of this machine that still runs.
    Alive,
    /// A process of this machine that has ended (killed, crashed): what it left is a leftover.
    Dead,
    /// A process of another machine: its liveness cannot be checked from here.
    OtherHost,
    /// Cannot be told: a label this version does not read (or none), or a machine without
    /// `/proc`.
    Unknown,
}

impl Liveness {
    /// Whether what this owner made may be removed as a leftover: only a dead owner's.
    pub fn is_leftover(self) -> bool {
        self == Liveness::Dead
    }
}

/// The decision: whether `owner` still runs, seen from `me`, given what the machine says of
/// `owner.pid` (`state`; ignored for another host).
///
/// - the same owner as `me`: [`Liveness::Current`];
/// - another host: [`Liveness::OtherHost`];
/// - no pid, or a pid now held by a process with another start time: [`Liveness::Dead`];
/// - the pid with the same start time, or an owner that did not know its start time (0) whose
///   pid runs: [`Liveness::Alive`] (when unsure, the owner is taken to be alive);
/// - the machine cannot tell: [`Liveness::Unknown`].
pub fn liveness(owner: &Owner, me: &Owner, state: ProcessState) -> Liveness {
    if owner == me {
        return Liveness::Current;
    }
    if owner.host != me.host {
        return Liveness::OtherHost;
    }
    match state {
        ProcessState::Unknowable => Liveness::Unknown,
        ProcessState::Gone => Liveness::Dead,
        ProcessState::Running { start } if owner.start == 0 || start == owner.start => {
            Liveness::Alive
        }
        ProcessState::Running { .. } => Liveness::Dead,
    }
}

/// [`liveness`] of a label's owner: [`Liveness::Unknown`] when the label is not an owner;
/// `state` is asked only for an owner of this host that is not `me`.
pub fn liveness_of_label(
    label: &str,
    me: &Owner,
    state: impl FnOnce(u32) -> ProcessState,
) -> Liveness {
    let Some(owner) = Owner::parse(label) else {
        return Liveness::Unknown;
    };
    if owner == *me || owner.host != me.host {
        return liveness(&owner, me, ProcessState::Unknowable);
    }
    liveness(&owner, me, state(owner.pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Owner {
        Owner::new("box", 100, 5000)
    }

    #[test]
    fn labels_read_back_and_other_text_is_no_owner() {
        let o = Owner::new("a/b", 7, 9);
        assert_eq!(o.label(), "a_b/7/9");
        assert_eq!(Owner::parse(&o.label()), Some(o));
        for bad in [
            "",
            "box",
            "box/1",
            "box/x/1",
            "box/1/x",
            "box/1/2/3",
            "/1/2",
        ] {
            assert_eq!(Owner::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_decision_over_every_case() {
        let me = me();
        let other = |pid, start| Owner::new("box", pid, start);
        let running = |start| ProcessState::Running { start };
        // Myself, whatever /proc says.
        assert_eq!(liveness(&me, &me, running(1)), Liveness::Current);
        // Another process of this host, still running with the start time it recorded.
        assert_eq!(liveness(&other(200, 42), &me, running(42)), Liveness::Alive);
        // Its pid is gone.
        assert_eq!(
            liveness(&other(200, 42), &me, ProcessState::Gone),
            Liveness::Dead
        );
        // Its pid was reused by a process that started later.
        assert_eq!(liveness(&other(200, 42), &me, running(43)), Liveness::Dead);
        // My own pid, but an earlier process of it (this process reused a dead owner's pid).
        assert_eq!(liveness(&other(100, 1), &me, running(5000)), Liveness::Dead);
        // An owner that did not know its start time: alive while its pid runs.
        assert_eq!(liveness(&other(200, 0), &me, running(77)), Liveness::Alive);
        assert_eq!(
            liveness(&other(200, 0), &me, ProcessState::Gone),
            Liveness::Dead
        );
        // No /proc here: cannot tell.
        assert_eq!(
            liveness(&other(200, 42), &me, ProcessState::Unknowable),
            Liveness::Unknown
        );
        // Another machine: never decided from this one's /proc.
        let far = Owner::new("elsewhere", 200, 42);
        assert_eq!(liveness(&far, &me, ProcessState::Gone), Liveness::OtherHost);
        assert!(Liveness::Dead.is_leftover());
        for l in [
            Liveness::Current,
            Liveness::Alive,
            Liveness::OtherHost,
            Liveness::Unknown,
        ] {
            assert!(!l.is_leftover(), "{l:?}");
        }
    }

    #[test]
    fn a_label_is_decided_with_the_state_of_its_pid_only_when_needed() {
        let me = me();
        let mut asked = Vec::new();
        let mut probe = |pid| {
            asked.push(pid);
            ProcessState::Gone
        };
        assert_eq!(
            liveness_of_label("box/200/42", &me, &mut probe),
            Liveness::Dead
        );
        assert_eq!(
            liveness_of_label("box/100/5000", &me, &mut probe),
            Liveness::Current
        );
        assert_eq!(
            liveness_of_label("far/200/42", &me, &mut probe),
            Liveness::OtherHost
        );
        assert_eq!(liveness_of_label("", &me, &mut probe), Liveness::Unknown);
        assert_eq!(asked, vec![200]);
    }
}
