//! Small file-system helpers: atomic writes (temporary file in the same directory, then rename)
//! so a killed process never leaves a half-written output that looks finished, and a check that an
//! output directory is writable before any work.

use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically, creating the parent directories.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".swtbench-tmp-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    // The temporary file is private (0600); the outputs are ordinary files for other tools and
    // users to read, as the original's were.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
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
            assert_eq!(
                mode & 0o777,
                0o644,
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
}
