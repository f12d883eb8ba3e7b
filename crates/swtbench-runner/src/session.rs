//! Which swtbench process owns what: a session id carried by every container as the
//! [`SESSION`] label, and a lock that lets one process at a time evaluate a run id in an output
//! directory.
//!
//! Two processes may share an engine (and the gold/base output directories) with different run
//! ids, and even the same run id with different output directories. The label lets a process
//! remove only its own containers at the end, and the leftovers of *dead* processes of its run id
//! at the start, never the containers of a process that is still running. The lock stops a second
//! process with the same run id and output directory, whose prediction runs and reports would
//! overwrite the first's.
//!
//! A session id is `<host>/<pid>/<process start time>`: the start time (from `/proc`) tells a
//! live process from a new one that reused the pid. This module reads `/proc` and takes file
//! locks; it makes no engine calls.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// Label on every container swtbench creates: the [`Session`] of the process that created it.
pub use swtbench_backend::labels::SESSION;
/// Whether the process behind a session label still runs.
pub use swtbench_core::owner::Liveness;
use swtbench_core::owner::Owner;

/// The identity of one swtbench process: its owner label ([`swtbench_core::owner::Owner`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session(String);

impl Session {
    /// The session of this process.
    pub fn current() -> Session {
        Session(swtbench_data::owner::current().label())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The process id in a session label, if it has one.
    pub fn pid_of(label: &str) -> Option<u32> {
        label.split('/').nth(1)?.parse().ok()
    }

    /// Whether the process that wrote `label` still runs, seen from this session (the decision
    /// is [`swtbench_core::owner::liveness`]; `/proc` says what became of the pid).
    pub fn liveness(&self, label: &str) -> Liveness {
        if label == self.0 {
            return Liveness::Current;
        }
        let me = Owner::parse(&self.0).unwrap_or_else(|| swtbench_data::owner::current().clone());
        swtbench_core::owner::liveness_of_label(label, &me, swtbench_data::owner::process_state)
    }
}

/// Another process holds the lock of the run.
#[derive(Debug, thiserror::Error)]
pub enum RunLockError {
    #[error(
        "run id {run_id} is being evaluated by another swtbench process{} with the same output \
         directory (lock {})",
        holder.as_deref().map(|h| format!(" ({h})")).unwrap_or_default(),
        path.display()
    )]
    Busy {
        run_id: String,
        path: PathBuf,
        holder: Option<String>,
    },
    #[error("cannot create the run lock {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Held while a process evaluates a run id in an output directory; released when dropped or
/// when the process dies (an advisory lock of the kernel, so `kill -9` cannot leave it stale).
/// The shards of a run (`--shard K/N`) share the run's lock and each holds its own: shards run
/// side by side, a whole run excludes them and they exclude it.
#[derive(Debug)]
pub struct RunLock {
    _files: Vec<File>,
    path: PathBuf,
}

/// File name of the lock, in `<logs root>/<run_id>/`.
pub const RUN_LOCK_FILE: &str = ".swtbench-run.lock";

impl RunLock {
    /// Takes the lock of `run_id` under the logs root, or says who holds it.
    pub fn acquire(logs_root: &Path, run_id: &str) -> Result<RunLock, RunLockError> {
        Self::acquire_part(logs_root, run_id, None)
    }

    /// [`RunLock::acquire`] for a shard of the run (`None`: the whole run).
    pub fn acquire_part(
        logs_root: &Path,
        run_id: &str,
        shard: Option<swtbench_plan::settings::Shard>,
    ) -> Result<RunLock, RunLockError> {
        let dir = logs_root.join(run_id);
        let main = dir.join(RUN_LOCK_FILE);
        let io = |path: &Path, source: std::io::Error| RunLockError::Io {
            path: path.to_path_buf(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(|e| io(&main, e))?;
        use rustix::fs::FlockOperation::{NonBlockingLockExclusive, NonBlockingLockShared};
        let Some(shard) = shard else {
            let file = lock_file(&main, run_id, NonBlockingLockExclusive)?;
            return Ok(RunLock {
                _files: vec![file],
                path: main,
            });
        };
        let whole = lock_file(&main, run_id, NonBlockingLockShared)?;
        let own = dir.join(format!(".swtbench-run.{}.lock", shard.file_tag()));
        let part = lock_file(&own, run_id, NonBlockingLockExclusive)?;
        Ok(RunLock {
            _files: vec![whole, part],
            path: own,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Opens `path` and takes `how` on it, or says who holds it. Lock files are never removed:
/// deleting a lock file while another process opens it lets two processes lock two files.
fn lock_file(
    path: &Path,
    run_id: &str,
    how: rustix::fs::FlockOperation,
) -> Result<File, RunLockError> {
    let io = |source: std::io::Error| RunLockError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io)?;
    if let Err(e) = rustix::fs::flock(&file, how) {
        if e == rustix::io::Errno::WOULDBLOCK {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(RunLockError::Busy {
                run_id: run_id.to_string(),
                path: path.to_path_buf(),
                holder: (!holder.is_empty()).then(|| describe_holder(holder)),
            });
        }
        return Err(io(e.into()));
    }
    if how == rustix::fs::FlockOperation::NonBlockingLockExclusive {
        // Say who holds it, for the message of a process that finds it taken.
        let _ = file.set_len(0);
        let _ = file.rewind();
        let _ = writeln!(file, "{}", Session::current().as_str());
        let _ = file.flush();
    }
    Ok(file)
}

fn describe_holder(session: &str) -> String {
    match Session::pid_of(session) {
        Some(pid) => format!("pid {pid}"),
        None => session.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_current_and_alive_elsewhere_dead_when_gone() {
        let me = Session::current();
        assert_eq!(me.liveness(me.as_str()), Liveness::Current);
        assert_eq!(Session::pid_of(me.as_str()), Some(std::process::id()));

        // A child that has ended: its pid is gone (or reused with another start time).
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        let started = swtbench_data::owner::start_time(pid);
        child.wait().expect("wait");
        let host = swtbench_data::owner::host_name();
        let label = format!("{host}/{pid}/{}", started.unwrap_or(1));
        assert_eq!(me.liveness(&label), Liveness::Dead);

        // A running process seen from another session of this host.
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn");
        let pid = sleeper.id();
        let label = format!(
            "{host}/{pid}/{}",
            swtbench_data::owner::start_time(pid).expect("stat")
        );
        assert_eq!(me.liveness(&label), Liveness::Alive);
        // The same pid with another start time is a different process.
        let reused = format!("{host}/{pid}/1");
        assert_eq!(me.liveness(&reused), Liveness::Dead);
        sleeper.kill().expect("kill");
        sleeper.wait().expect("wait");

        assert_eq!(me.liveness("other-host/1/1"), Liveness::OtherHost);
        assert_eq!(me.liveness("garbage"), Liveness::Unknown);
    }

    #[test]
    fn a_run_lock_is_exclusive_and_released_on_drop() {
        let dir = tempfile::tempdir().expect("tempdir");
        let lock = RunLock::acquire(dir.path(), "r1").expect("first");
        assert!(lock.path().ends_with("r1/.swtbench-run.lock"));
        match RunLock::acquire(dir.path(), "r1") {
            Err(RunLockError::Busy { holder, .. }) => {
                let want = format!("pid {}", std::process::id());
                assert_eq!(holder.as_deref(), Some(want.as_str()));
            }
            other => panic!("expected Busy, got {other:?}"),
        }
        // Another run id is another lock.
        let other = RunLock::acquire(dir.path(), "r2").expect("other run id");
        drop(lock);
        let again = RunLock::acquire(dir.path(), "r1").expect("after release");
        drop(again);

        // Shards run side by side; a whole run and a shard exclude each other; a shard runs once.
        let shard = |k| Some(swtbench_plan::settings::Shard { index: k, count: 3 });
        let one = RunLock::acquire_part(dir.path(), "r1", shard(1)).expect("shard 1");
        let two = RunLock::acquire_part(dir.path(), "r1", shard(2)).expect("shard 2");
        assert!(matches!(
            RunLock::acquire_part(dir.path(), "r1", shard(2)),
            Err(RunLockError::Busy { .. })
        ));
        assert!(matches!(
            RunLock::acquire(dir.path(), "r1"),
            Err(RunLockError::Busy { .. })
        ));
        drop((one, two));
        let whole = RunLock::acquire(dir.path(), "r1").expect("whole after the shards");
        assert!(matches!(
            RunLock::acquire_part(dir.path(), "r1", shard(3)),
            Err(RunLockError::Busy { .. })
        ));
        drop((whole, other));
    }
}
