//! The one way swtbench writes its outputs: atomically (a temporary file in the same directory,
//! flushed to disk, then renamed over the target, then the directory flushed), with an ordinary
//! file mode (0666 less the umask, as any file the user creates; never the temporary file's
//! private 0600), creating parent directories. A killed process therefore leaves either the old
//! file or the new one, never a half-written output that looks finished. Every crate that writes
//! a report, a key file, a cache entry or a page uses [`write_atomic`]; there is no other copy.
//!
//! Also the small helpers around it: a writable-directory probe, removing a file that may be
//! missing, appending a line to a log.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::owner::{Liveness, Owner, ProcessState};

/// Writing a file failed; says which file and what the system said.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    // In the message rather than a `#[source]`: error chains would print it twice.
    pub source: std::io::Error,
}

impl From<WriteError> for std::io::Error {
    fn from(e: WriteError) -> Self {
        std::io::Error::new(e.source.kind(), e.to_string())
    }
}

/// Writes `bytes` to `path` atomically and durably, creating the parent directories.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let mut file = AtomicFile::create(path)?;
    file.file().write_all(bytes).map_err(|e| file.error(e))?;
    file.commit()
}

/// An output written piece by piece, with [`write_atomic`]'s guarantees: the pieces go to a
/// temporary file in the target's directory, and [`AtomicFile::commit`] flushes it and renames it
/// over the target. Dropped without a commit, the temporary file is removed and the target is
/// untouched. For outputs too big to hold in memory (a run's `test_output.txt`).
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    dir: PathBuf,
    tmp: tempfile::NamedTempFile,
}

impl AtomicFile {
    /// Creates the temporary file for `path` (and the parent directories).
    pub fn create(path: &Path) -> Result<AtomicFile, WriteError> {
        let err = |source| WriteError {
            path: path.to_path_buf(),
            source,
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(dir).map_err(err)?;
        let mut builder = tempfile::Builder::new();
        let prefix = owned_temp_prefix();
        builder.prefix(&prefix);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let tmp = builder.tempfile_in(dir).map_err(err)?;
        Ok(AtomicFile {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
            tmp,
        })
    }

    /// [`AtomicFile::create`] for a long write (a run's output, written while its script runs):
    /// the temporary file is also listed in this process's journal under `root` (the output
    /// tree's root), so that when the process is killed before the write ends, the next process
    /// that starts on the tree removes it ([`sweep_journals`]), whichever directory it is in.
    /// A journal that cannot be written costs only that: the file is then found as before, when
    /// its directory is written again ([`remove_stale_temp_files`]).
    pub fn create_listed(path: &Path, root: &Path) -> Result<AtomicFile, WriteError> {
        let file = AtomicFile::create(path)?;
        let _ = journal_append(root, file.tmp.path());
        Ok(file)
    }

    /// The temporary file, to write, seek or truncate.
    pub fn file(&mut self) -> &mut std::fs::File {
        self.tmp.as_file_mut()
    }

    /// The target path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `source` as an error writing the target.
    pub fn error(&self, source: std::io::Error) -> WriteError {
        WriteError {
            path: self.path.clone(),
            source,
        }
    }

    /// Flushes the file to disk and renames it over the target, then flushes the directory.
    pub fn commit(self) -> Result<(), WriteError> {
        let err = |source| WriteError {
            path: self.path.clone(),
            source,
        };
        self.tmp.as_file().sync_data().map_err(err)?;
        self.tmp.persist(&self.path).map_err(|e| err(e.error))?;
        // The rename is durable once the directory entry is: flush the directory too (best
        // effort: some file systems refuse to open a directory for syncing).
        #[cfg(unix)]
        if let Ok(d) = std::fs::File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

/// The prefix of [`write_atomic`]'s temporary files.
pub const TEMP_PREFIX: &str = ".swtbench-tmp-";

/// A temporary file of [`write_atomic`] not modified for this long belongs to a process that
/// died while writing (they live for milliseconds; an [`AtomicFile`] that a running script's
/// output goes to is modified whenever the script prints).
pub const STALE_TEMP_AGE: std::time::Duration = std::time::Duration::from_secs(600);

/// A machine's name as the owner part of temporary file names: without the characters a file
/// name part cannot hold (only letters, digits and `-` stay).
fn file_host(host: &str) -> String {
    host.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(64)
        .collect()
}

/// The owner part of this process's temporary file names: `<host>.<pid>-<start>`.
fn owner_part() -> String {
    let me = crate::owner::current();
    format!("{}.{}-{}", file_host(&me.host), me.pid, me.start)
}

/// The prefix of this process's temporary files: [`TEMP_PREFIX`] and the owner (host, process id
/// and the process's start time: `.swtbench-tmp-<host>.<pid>-<start>.`), so that a sweep can tell
/// a dead owner's file from a live one's at once, and a new process that reused the pid from
/// the owner ([`temp_owner_gone`]).
pub fn owned_temp_prefix() -> String {
    format!("{TEMP_PREFIX}{}.", owner_part())
}

/// The owner named by the owner part of a temporary file's or a journal's name (`<host>.<pid>`,
/// an older version's, or `<host>.<pid>-<start>`), with the host as file names spell it.
fn owner_of_part(host: &str, pid: &str) -> Option<Owner> {
    let (pid, start) = match pid.split_once('-') {
        Some((pid, start)) => (pid, start.parse().ok()?),
        None => (pid, 0),
    };
    Some(Owner::new(host, pid.parse().ok()?, start))
}

/// This process as file names spell it (the host without dots).
fn me_in_file_names() -> Owner {
    let me = crate::owner::current();
    Owner::new(&file_host(&me.host), me.pid, me.start)
}

/// Whether the owner of a temporary file (its name after [`TEMP_PREFIX`]) still runs, seen from
/// this process; [`Liveness::Unknown`] when the name names no owner.
fn temp_owner(file_name: &str) -> Liveness {
    let Some(rest) = file_name.strip_prefix(TEMP_PREFIX) else {
        return Liveness::Unknown;
    };
    let mut parts = rest.splitn(3, '.');
    let (Some(host), Some(pid), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return Liveness::Unknown;
    };
    match owner_of_part(host, pid) {
        Some(owner) => decide(&owner),
        None => Liveness::Unknown,
    }
}

fn decide(owner: &Owner) -> Liveness {
    let me = me_in_file_names();
    let state = if owner.host == me.host && *owner != me {
        crate::owner::process_state(owner.pid)
    } else {
        ProcessState::Unknowable
    };
    swtbench_core::owner::liveness(owner, &me, state)
}

/// Whether the owner named in a temporary file's name (after [`TEMP_PREFIX`]) is a process of
/// this machine that no longer runs (or whose pid another process now has). `false` when the
/// name names no owner, another machine (shared output directories), or when this machine cannot
/// tell (no `/proc`): those wait for [`STALE_TEMP_AGE`].
pub fn temp_owner_gone(file_name: &str) -> bool {
    temp_owner(file_name) == Liveness::Dead
}

/// Removes the temporary files [`write_atomic`] left in `dir` (not below it) when its process was
/// killed mid-write: those whose owner process on this machine is gone ([`temp_owner_gone`]),
/// and those older than [`STALE_TEMP_AGE`] whose owner is not a live process of this machine; a
/// write in progress in another live process (shared gold/base directories) is never touched,
/// however quiet. Returns how many went; errors are ignored (the next start tries again).
pub fn remove_stale_temp_files(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    let mut removed = 0;
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str().filter(|n| n.starts_with(TEMP_PREFIX)) else {
            continue;
        };
        let Some(meta) = e.metadata().ok().filter(std::fs::Metadata::is_file) else {
            continue;
        };
        let old = meta
            .modified()
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age >= STALE_TEMP_AGE);
        let goes = match temp_owner(name) {
            Liveness::Dead => true,
            Liveness::Current | Liveness::Alive => false,
            Liveness::OtherHost | Liveness::Unknown => old,
        };
        if goes && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The directory, under an output tree's root, where each process lists the temporary files of
/// its long writes ([`AtomicFile::create_listed`]): one journal per process, named by its owner
/// (`<host>.<pid>-<start>`), a line per temporary file.
pub const JOURNAL_DIR: &str = ".swtbench-writing";

/// The path of this process's journal under `root`.
fn journal_path(root: &Path) -> PathBuf {
    root.join(JOURNAL_DIR).join(owner_part())
}

/// Appends `temp` (made absolute) to this process's journal under `root`.
fn journal_append(root: &Path, temp: &Path) -> std::io::Result<()> {
    let path = journal_path(root);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let temp = std::path::absolute(temp)?;
    let mut line = temp.into_os_string().into_encoded_bytes();
    line.push(b'\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    // One write of the whole line: lines of concurrent writers of this process never interleave.
    f.write_all(&line)
}

/// What [`sweep_journals`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JournalSweep {
    /// Temporary files of dead processes' unfinished writes that were removed.
    pub removed: Vec<PathBuf>,
    /// Journals of dead processes removed (those that ended normally leave theirs too).
    pub journals: usize,
}

/// Removes what processes of this machine that have ended left unfinished under `root`: every
/// temporary file their journals list that is still there (a write a kill interrupted; one that
/// finished was renamed away), then the journal. Journals of live processes, of other machines
/// and of owners that cannot be checked are left alone. Only files whose name is the journal
/// owner's temporary file name are removed, whatever else a journal may say.
pub fn sweep_journals(root: &Path) -> JournalSweep {
    visit_journals(root, true)
}

/// What [`sweep_journals`] would remove under `root` now, without removing anything (`journals`
/// counts the dead processes' journals).
pub fn dead_writers_files(root: &Path) -> JournalSweep {
    visit_journals(root, false)
}

fn visit_journals(root: &Path, remove: bool) -> JournalSweep {
    let mut sweep = JournalSweep::default();
    let Ok(entries) = std::fs::read_dir(root.join(JOURNAL_DIR)) else {
        return sweep;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some((host, pid)) = name.split_once('.') else {
            continue;
        };
        let Some(owner) = owner_of_part(host, pid) else {
            continue;
        };
        if decide(&owner) != Liveness::Dead {
            continue;
        }
        let prefix = format!("{TEMP_PREFIX}{name}.");
        let listed = std::fs::read(e.path()).unwrap_or_default();
        for line in listed.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let path = PathBuf::from(bytes_to_os(line));
            let named = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix));
            if !named {
                continue;
            }
            let found = if remove {
                std::fs::remove_file(&path).is_ok()
            } else {
                path.is_file()
            };
            if found {
                sweep.removed.push(path);
            }
        }
        if !remove || std::fs::remove_file(e.path()).is_ok() {
            sweep.journals += 1;
        }
    }
    sweep
}

#[cfg(unix)]
fn bytes_to_os(bytes: &[u8]) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(bytes).to_os_string()
}

#[cfg(not(unix))]
fn bytes_to_os(bytes: &[u8]) -> std::ffi::OsString {
    String::from_utf8_lossy(bytes).into_owned().into()
}

/// Creates `dir` if needed and checks that a file can be created in it, so that an unwritable
/// output directory is one error before any work instead of a failure per instance.
pub fn check_writable_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = tempfile::Builder::new()
        .prefix(".swtbench-probe-")
        .tempfile_in(dir)?;
    probe.close()
}

/// Removes a file; a missing file is fine.
pub fn remove_if_exists(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Appends a line to a log file (created when missing).
pub fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    writeln!(f, "{line}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_stale_temporary_files_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let old = std::time::SystemTime::now() - STALE_TEMP_AGE - std::time::Duration::from_secs(5);
        let make = |name: &str, stale: bool| {
            let p = dir.path().join(name);
            std::fs::write(&p, b"x").unwrap();
            if stale {
                std::fs::File::options()
                    .write(true)
                    .open(&p)
                    .unwrap()
                    .set_modified(old)
                    .unwrap();
            }
            p
        };
        let stale = make(".swtbench-tmp-abc", true);
        let fresh = make(".swtbench-tmp-def", false);
        let report = make("report.json", true);
        assert_eq!(remove_stale_temp_files(dir.path()), 1);
        assert!(!stale.exists() && fresh.exists() && report.exists());
        assert_eq!(remove_stale_temp_files(&dir.path().join("missing")), 0);
    }

    #[test]
    fn a_fresh_temporary_file_of_a_dead_process_goes_and_a_live_ones_stays() {
        let dir = tempfile::tempdir().unwrap();
        // A process that has exited: its pid is free (reused only after the pid space wraps).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let host = file_host(&crate::owner::host_name());
        let mine = dir.path().join(format!("{}abc", owned_temp_prefix()));
        let gone = dir.path().join(format!("{TEMP_PREFIX}{host}.{dead}.abc"));
        let elsewhere = dir
            .path()
            .join(format!("{TEMP_PREFIX}other-host.{dead}.abc"));
        for p in [&mine, &gone, &elsewhere] {
            std::fs::write(p, b"x").unwrap();
        }
        assert_eq!(remove_stale_temp_files(dir.path()), 1);
        assert!(mine.exists() && !gone.exists() && elsewhere.exists());
        // An atomic write names its temporary file with this process as the owner.
        let mut f = AtomicFile::create(&dir.path().join("out.txt")).unwrap();
        let name = f
            .tmp
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with(&owned_temp_prefix()), "{name}");
        assert!(!temp_owner_gone(&name));
        f.file().write_all(b"y").unwrap();
        f.commit().unwrap();
    }

    /// A child that has ended (its pid free, reused only after the pid space wraps) and one that
    /// runs, with their start times.
    fn ended_and_running() -> ((u32, u64), (std::process::Child, u64)) {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        let dead_start = crate::owner::start_time(dead).unwrap_or(1);
        child.wait().unwrap();
        let sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let start = crate::owner::start_time(sleeper.id()).unwrap();
        ((dead, dead_start), (sleeper, start))
    }

    #[test]
    fn the_start_time_in_a_temporary_name_tells_a_reused_pid_and_a_quiet_live_writer_stays() {
        let dir = tempfile::tempdir().unwrap();
        let host = file_host(&crate::owner::host_name());
        let ((dead, dead_start), (mut sleeper, start)) = ended_and_running();
        let live = sleeper.id();
        let old = std::time::SystemTime::now() - STALE_TEMP_AGE - std::time::Duration::from_secs(5);
        let make = |name: String, stale: bool| {
            let p = dir.path().join(name);
            std::fs::write(&p, b"x").unwrap();
            if stale {
                let f = std::fs::File::options().write(true).open(&p).unwrap();
                f.set_modified(old).unwrap();
            }
            p
        };
        let gone = make(format!("{TEMP_PREFIX}{host}.{dead}-{dead_start}.a"), false);
        // The live child's pid, but recorded with another start time: an earlier process.
        let reused = make(format!("{TEMP_PREFIX}{host}.{live}-{}.b", start - 1), false);
        // The live child's: a write whose script has printed nothing for longer than the age.
        let quiet = make(format!("{TEMP_PREFIX}{host}.{live}-{start}.c"), true);
        // Another machine's, stale and fresh.
        let far_old = make(format!("{TEMP_PREFIX}far.{live}-{start}.d"), true);
        let far_new = make(format!("{TEMP_PREFIX}far.{live}-{start}.e"), false);
        assert_eq!(remove_stale_temp_files(dir.path()), 3);
        assert!(!gone.exists() && !reused.exists() && !far_old.exists());
        assert!(quiet.exists() && far_new.exists());
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        // Its owner ended now: the quiet write is a leftover.
        assert!(temp_owner_gone(
            quiet.file_name().unwrap().to_str().unwrap()
        ));
    }

    #[test]
    fn a_dead_writers_journal_leads_to_its_unfinished_files_in_any_directory() {
        let root = tempfile::tempdir().unwrap();
        let host = file_host(&crate::owner::host_name());
        let ((dead, dead_start), (mut sleeper, start)) = ended_and_running();
        let live = sleeper.id();
        let deep = root.path().join("run/model/inst/gold_pre");
        std::fs::create_dir_all(&deep).unwrap();
        let journal_dir = root.path().join(JOURNAL_DIR);
        std::fs::create_dir_all(&journal_dir).unwrap();
        // A killed writer: one unfinished file, one finished (renamed away), and a line naming a
        // file that is not its temporary file (never removed, whatever a journal says).
        let owner = format!("{host}.{dead}-{dead_start}");
        let unfinished = deep.join(format!("{TEMP_PREFIX}{owner}.x1"));
        let not_temp = deep.join("test_output.txt");
        let others = deep.join(format!("{TEMP_PREFIX}{host}.{live}-{start}.x2"));
        for p in [&unfinished, &not_temp, &others] {
            std::fs::write(p, b"partial").unwrap();
        }
        let finished = deep.join(format!("{TEMP_PREFIX}{owner}.x3"));
        let lines = [&unfinished, &finished, &not_temp, &others]
            .map(|p| p.display().to_string())
            .join("\n");
        std::fs::write(journal_dir.join(&owner), lines).unwrap();
        // A live writer's journal, listing its file in progress.
        let live_journal = journal_dir.join(format!("{host}.{live}-{start}"));
        std::fs::write(&live_journal, format!("{}\n", others.display())).unwrap();

        let would = dead_writers_files(root.path());
        assert_eq!(
            (would.removed, would.journals),
            (vec![unfinished.clone()], 1)
        );
        assert!(unfinished.exists());
        let sweep = sweep_journals(root.path());
        assert_eq!(sweep.removed, vec![unfinished.clone()]);
        assert_eq!(sweep.journals, 1);
        assert!(!unfinished.exists() && !journal_dir.join(&owner).exists());
        assert!(not_temp.exists() && others.exists() && live_journal.exists());

        // Once the live writer has ended, its journal and its file go.
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        let sweep = sweep_journals(root.path());
        assert_eq!((sweep.removed, sweep.journals), (vec![others.clone()], 1));
        assert_eq!(sweep_journals(root.path()), JournalSweep::default());
    }

    #[test]
    fn a_listed_write_is_in_this_processs_journal_and_not_swept_while_it_runs() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("a/b/test_output.txt");
        let mut f = AtomicFile::create_listed(&target, root.path()).unwrap();
        f.file().write_all(b"so far").unwrap();
        let tmp = f.tmp.path().to_path_buf();
        let journal = std::fs::read_to_string(journal_path(root.path())).unwrap();
        assert_eq!(
            journal,
            format!("{}\n", std::path::absolute(&tmp).unwrap().display())
        );
        assert_eq!(sweep_journals(root.path()), JournalSweep::default());
        assert!(tmp.exists());
        f.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"so far");
    }

    #[test]
    fn atomic_write_creates_dirs_and_replaces() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("a/b/c.txt");
        write_atomic(&p, b"one").expect("write");
        write_atomic(&p, b"two").expect("write");
        assert_eq!(std::fs::read(&p).expect("read"), b"two");
        let names: Vec<String> = std::fs::read_dir(dir.path().join("a/b"))
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["c.txt"], "no temporary file is left");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).expect("meta").permissions().mode();
            let umask = rustix_free_umask();
            assert_eq!(
                mode & 0o777,
                0o666 & !umask,
                "an ordinary file mode, not the temp file's 0600"
            );
        }
        remove_if_exists(&p).expect("remove");
        remove_if_exists(&p).expect("remove again");
        append_line(&dir.path().join("x/log"), "l1").expect("append");
        append_line(&dir.path().join("x/log"), "l2").expect("append");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("x/log")).expect("read"),
            "l1\nl2\n"
        );
        check_writable_dir(&dir.path().join("new/dir")).expect("writable");
        assert!(dir.path().join("new/dir").is_dir());
        let leftovers = std::fs::read_dir(dir.path().join("new/dir"))
            .expect("dir")
            .count();
        assert_eq!(leftovers, 0, "the probe is removed");
    }

    #[test]
    fn a_write_error_names_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "x").expect("write");
        let e = write_atomic(&blocker.join("below.json"), b"{}").expect_err("parent is a file");
        assert!(e.to_string().contains("below.json"), "{e}");
    }

    /// The process umask, read from a file created with mode 0666.
    #[cfg(unix)]
    fn rustix_free_umask() -> u32 {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("probe");
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o666)
            .open(&p)
            .expect("create");
        0o666 & !std::fs::metadata(&p).expect("meta").permissions().mode() & 0o777
    }
}
