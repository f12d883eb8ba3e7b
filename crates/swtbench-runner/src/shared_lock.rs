//! One process at a time executes a shared run (gold or base, before or after the fix), however
//! many swtbench processes use the output directory: several models or seeds evaluated at once,
//! or shards of one evaluation. The others wait for it and then reuse its output.
//!
//! The claim is per content key, not per directory: identical runs of several instances (one
//! repository state) have one key and are executed once, in whichever directory the first
//! process got to; the others copy it. It is an advisory lock of the kernel (`flock`) on
//! `<logs root>/.swtbench-locks/<key[..2]>/<key>.lock` (the run trees themselves hold only what
//! the original's do), and next to it `<key>.done` names the directory (relative to the logs
//! root) whose output has the key. Lock files are never removed (removing a lock file while another process opens it
//! lets two processes lock two different files). The kernel releases it when its holder ends,
//! however it ends: a `kill -9` leaves nothing to clean up. On NFS, Linux maps `flock` to the
//! protocol's byte-range locks, which the server releases when the client's lease expires (NFSv4:
//! after its lease time, 90 s by default) or the client's lock manager says it restarted
//! (NFSv3); `docs/scheduling.md` says what swtbench relies on.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::session::Session;

/// How often a waiting process tries the lock again.
pub const RETRY_EVERY: Duration = Duration::from_millis(500);

/// Held while this process executes a shared run; released on drop.
#[derive(Debug)]
pub struct SharedRunLock {
    _file: File,
}

/// Directory of the lock files, in the logs root.
pub const LOCKS_DIR: &str = ".swtbench-locks";

/// `<logs root>/.swtbench-locks/<key[..2]>/<key>.<ext>`.
fn key_file(logs_root: &Path, key: &str, ext: &str) -> PathBuf {
    let fan = key.get(..2).unwrap_or("__");
    logs_root
        .join(LOCKS_DIR)
        .join(fan)
        .join(format!("{key}.{ext}"))
}

/// The lock file of a content key.
pub fn lock_path(logs_root: &Path, key: &str) -> PathBuf {
    key_file(logs_root, key, "lock")
}

/// Records, for the processes that waited, that `run_dir` (under `logs_root`) holds the output
/// with `key`. Written by the lock's holder before it lets go.
pub fn record_done(logs_root: &Path, key: &str, run_dir: &Path) -> std::io::Result<()> {
    let rel = run_dir.strip_prefix(logs_root).unwrap_or(run_dir);
    swtbench_data::fsutil::write_atomic(
        &key_file(logs_root, key, "done"),
        rel.to_string_lossy().as_bytes(),
    )
    .map_err(|e| std::io::Error::other(e.to_string()))
}

/// The directory an earlier holder recorded for `key`, if any.
pub fn done_dir(logs_root: &Path, key: &str) -> Option<PathBuf> {
    let rel = std::fs::read_to_string(key_file(logs_root, key, "done")).ok()?;
    Some(logs_root.join(rel.trim()))
}

/// How taking the lock went.
#[derive(Debug)]
pub enum Claim {
    Taken(SharedRunLock),
    /// Another process (or another evaluation of this one) holds it: the session it wrote.
    Busy(Option<String>),
}

/// Tries once to take the lock of `key` (under `logs_root`).
pub fn try_claim(logs_root: &Path, key: &str) -> std::io::Result<Claim> {
    let path = lock_path(logs_root, key);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)?;
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim().to_string();
            return Ok(Claim::Busy((!holder.is_empty()).then_some(holder)));
        }
        Err(e) => return Err(e.into()),
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = writeln!(file, "{}", Session::current().as_str());
    let _ = file.flush();
    Ok(Claim::Taken(SharedRunLock { _file: file }))
}

/// Takes the lock of `key`, waiting (without blocking a thread) while another holds it;
/// `on_wait` is called once, with the holder, when it has to wait.
pub async fn claim(
    logs_root: &Path,
    key: &str,
    mut on_wait: impl FnMut(Option<&str>),
) -> std::io::Result<SharedRunLock> {
    let mut told = false;
    loop {
        match try_claim(logs_root, key)? {
            Claim::Taken(lock) => return Ok(lock),
            Claim::Busy(holder) => {
                if !told {
                    on_wait(holder.as_deref());
                    told = true;
                }
                tokio::time::sleep(RETRY_EVERY).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_files_have_a_tree_of_their_own_and_say_where_the_output_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        assert_eq!(
            lock_path(root, "abcdef"),
            root.join(".swtbench-locks/ab/abcdef.lock")
        );
        assert_eq!(done_dir(root, "abcdef"), None);
        let run = root.join("gold_pre/i-1/123.nocov");
        record_done(root, "abcdef", &run).expect("recorded");
        assert_eq!(
            std::fs::read_to_string(root.join(".swtbench-locks/ab/abcdef.done")).expect("read"),
            "gold_pre/i-1/123.nocov",
            "relative: the root may be mounted elsewhere on another node"
        );
        assert_eq!(done_dir(root, "abcdef"), Some(run));
    }

    #[tokio::test(start_paused = true)]
    async fn one_holder_at_a_time_and_the_next_one_gets_it_when_it_goes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = "0123abcd".to_string();
        let first = match try_claim(dir.path(), &run).expect("claim") {
            Claim::Taken(l) => l,
            Claim::Busy(_) => panic!("free at first"),
        };
        let Claim::Busy(holder) = try_claim(dir.path(), &run).expect("claim") else {
            panic!("taken twice")
        };
        assert_eq!(holder.as_deref(), Some(Session::current().as_str()));
        let (run2, root) = (run.clone(), dir.path().to_path_buf());
        let waiter = tokio::spawn(async move {
            let mut waited = Vec::new();
            let lock = claim(&root, &run2, |h| waited.push(h.map(str::to_string))).await;
            (lock.is_ok(), waited)
        });
        tokio::time::sleep(RETRY_EVERY * 3).await;
        assert!(!waiter.is_finished(), "waits while the first holds it");
        drop(first);
        let (taken, waited) = waiter.await.expect("joined");
        assert!(taken);
        assert_eq!(waited.len(), 1, "told once: {waited:?}");
        assert!(lock_path(dir.path(), &run).is_file(), "the file stays");
    }

    #[test]
    fn a_killed_holder_leaves_nothing_to_wait_for() {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = "fedc9876";
        std::fs::create_dir_all(lock_path(dir.path(), run).parent().expect("parent"))
            .expect("mkdir");
        // A process takes the lock (a shell that becomes `sleep`, the lock's file open in it) and
        // is killed with SIGKILL while holding it.
        let script = format!(
            "exec 9>>'{}'; flock -x 9; exec sleep 60",
            lock_path(dir.path(), run).display()
        );
        let mut child = std::process::Command::new("sh")
            .args(["-c", &script])
            .spawn()
            .expect("sh");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while matches!(try_claim(dir.path(), run), Ok(Claim::Taken(_))) {
            assert!(
                std::time::Instant::now() < deadline,
                "flock(1) never took it"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().expect("kill -9");
        let _ = child.wait();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            if matches!(try_claim(dir.path(), run), Ok(Claim::Taken(_))) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "still locked after the kill"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
