//! `--build-files DIR`: per repository, a tree copied onto its checkouts before the install (see
//! `swtbench_spec::build_files`). `DIR/<owner>__<name>/` holds the files of `owner/name`, laid
//! out as they go under the checkout (`DIR/matplotlib__matplotlib/build/freetype-2.6.1/…`).
//! This reads the tree once and computes its digest.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use swtbench_spec::BuildFiles;

/// What is wrong with a build-files directory.
#[derive(Debug, thiserror::Error)]
pub enum BuildFilesError {
    #[error("--build-files {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--build-files: {} is not a directory named <owner>__<name> (the repository whose checkouts get its files, e.g. matplotlib__matplotlib)", path.display())]
    NotARepository { path: PathBuf },
    #[error("--build-files: {} is a symbolic link or a special file; the tree may hold regular files and directories only", path.display())]
    NotAFile { path: PathBuf },
}

/// The error of an I/O call on `path`.
fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BuildFilesError {
    let path = path.to_path_buf();
    move |source| BuildFilesError::Io { path, source }
}

/// The build files under `root`, by repository (`owner/name`).
pub fn scan(root: &Path) -> Result<BTreeMap<String, BuildFiles>, BuildFilesError> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(root).map_err(io(root))? {
        let entry = entry.map_err(io(root))?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let repo = match name.split_once("__") {
            Some((owner, repo)) if !owner.is_empty() && !repo.is_empty() && path.is_dir() => {
                format!("{owner}/{repo}")
            }
            _ => return Err(BuildFilesError::NotARepository { path }),
        };
        out.insert(repo, scan_tree(&path)?);
    }
    Ok(out)
}

/// One repository's tree: its digest over every entry's relative path, kind, executable bit and
/// contents, in path order (empty directories count).
pub fn scan_tree(dir: &Path) -> Result<BuildFiles, BuildFilesError> {
    let mut entries: Vec<(String, PathBuf, bool)> = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(io(&d))? {
            let entry = entry.map_err(io(&d))?;
            let path = entry.path();
            let ft = entry.file_type().map_err(io(&path))?;
            let rel = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            if ft.is_dir() {
                entries.push((rel, path.clone(), true));
                stack.push(path);
            } else if ft.is_file() {
                entries.push((rel, path, false));
            } else {
                return Err(BuildFilesError::NotAFile { path });
            }
        }
    }
    entries.sort();
    let mut hash = Sha256::new();
    let (mut files, mut bytes) = (0usize, 0u64);
    let mut buf = vec![0u8; 1 << 16];
    for (rel, path, is_dir) in &entries {
        hash.update(rel.as_bytes());
        if *is_dir {
            hash.update(b"\0d\0");
            continue;
        }
        let meta = std::fs::metadata(path).map_err(io(path))?;
        let exec = meta.permissions().mode() & 0o111 != 0;
        hash.update(if exec { b"\0x\0" } else { b"\0f\0" });
        hash.update(meta.len().to_le_bytes());
        let mut f = std::fs::File::open(path).map_err(io(path))?;
        loop {
            let n = f.read(&mut buf).map_err(io(path))?;
            if n == 0 {
                break;
            }
            hash.update(&buf[..n]);
        }
        files += 1;
        bytes += meta.len();
    }
    Ok(BuildFiles {
        dir: dir.to_path_buf(),
        digest: hex::encode(hash.finalize()),
        files,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str, mode: u32) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn the_digest_follows_paths_contents_modes_and_empty_directories() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("acme__widgets");
        write(&repo.join("build/lib-1.0/configure"), "#!/bin/sh\n", 0o755);
        write(&repo.join("build/lib-1.0/README"), "readme\n", 0o644);
        let all = scan(t.path()).unwrap();
        let first = &all["acme/widgets"];
        assert_eq!((first.files, first.bytes), (2, 17));
        assert_eq!(first.dir, repo);
        assert_eq!(first.digest.len(), 64);
        let again = scan_tree(&repo).unwrap();
        assert_eq!(again.digest, first.digest, "the same tree, the same digest");

        std::fs::set_permissions(
            repo.join("build/lib-1.0/configure"),
            std::fs::Permissions::from_mode(0o644),
        )
        .unwrap();
        let not_exec = scan_tree(&repo).unwrap().digest;
        assert_ne!(not_exec, first.digest, "the executable bit counts");

        std::fs::create_dir(repo.join("build/empty")).unwrap();
        let with_dir = scan_tree(&repo).unwrap().digest;
        assert_ne!(with_dir, not_exec, "an empty directory counts");

        write(&repo.join("build/lib-1.0/README"), "readme!\n", 0o644);
        assert_ne!(scan_tree(&repo).unwrap().digest, with_dir, "contents count");
    }

    #[test]
    fn entries_that_are_not_repositories_or_regular_files_are_refused() {
        let t = tempfile::tempdir().unwrap();
        write(&t.path().join("README"), "x", 0o644);
        let e = scan(t.path()).unwrap_err().to_string();
        assert!(e.contains("<owner>__<name>") && e.contains("README"), "{e}");

        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("acme__widgets");
        write(&repo.join("a"), "x", 0o644);
        std::os::unix::fs::symlink("a", repo.join("b")).unwrap();
        let e = scan(t.path()).unwrap_err().to_string();
        assert!(
            e.contains("symbolic link") && e.contains("acme__widgets/b"),
            "{e}"
        );

        let e = scan(&t.path().join("missing")).unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
    }
}
