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

/// This machine's name, as the owner part of temporary file names (`/proc/sys/kernel/hostname`,
/// else `HOSTNAME`, else empty), without the characters a file name cannot hold.
fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    name.trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(64)
        .collect()
}

/// The prefix of this process's temporary files: [`TEMP_PREFIX`], the host and the process id
/// (`.swtbench-tmp-<host>.<pid>.`), so that a sweep can tell a dead owner's file from a live
/// one's at once ([`temp_owner_gone`]).
pub fn owned_temp_prefix() -> String {
    format!("{TEMP_PREFIX}{}.{}.", host_name(), std::process::id())
}

/// Whether the owner named in a temporary file's name (after [`TEMP_PREFIX`]) is a process of
/// this machine that no longer runs. `false` when the name names no owner (an older version's
/// file), another machine (shared output directories), or when this machine cannot tell (no
/// `/proc`): those wait for [`STALE_TEMP_AGE`].
pub fn temp_owner_gone(file_name: &str) -> bool {
    let Some(rest) = file_name.strip_prefix(TEMP_PREFIX) else {
        return false;
    };
    let mut parts = rest.splitn(3, '.');
    let (Some(host), Some(pid), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    if host != host_name() || !Path::new("/proc/self").exists() {
        return false;
    }
    pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists()
}

/// Removes the temporary files [`write_atomic`] left in `dir` (not below it) when its process was
/// killed mid-write: those whose owner process on this machine is gone ([`temp_owner_gone`]),
/// and any older than [`STALE_TEMP_AGE`]; a write in progress in another live process (shared
/// gold/base directories) is never touched. Returns how many went; errors are ignored (the next
/// start tries again).
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
        if (old || temp_owner_gone(name)) && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
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
        let host = host_name();
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
