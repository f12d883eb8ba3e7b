//! Build contexts held in memory (Dockerfile + the files it copies) and the tar archives the engine
//! wants for builds and for copying files into containers.
//!
//! Archives are deterministic (fixed mtime, sorted entries) so the same context always produces the
//! same bytes and the engine's layer cache behaves. Pure: no engine calls, no file system.

use std::collections::BTreeMap;

use crate::error::{BackendError, Result};

/// The context path of the Dockerfile.
pub const DOCKERFILE: &str = "Dockerfile";

/// One file of a build context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub contents: Vec<u8>,
    pub mode: u32,
}

/// A Dockerfile and the files next to it, keyed by relative path.
///
/// *Bulk* files ([`BuildContext::add_bulk_file`]) are sent to the engine like the others but are
/// not part of the image-defining text: [`BuildContext::files`] leaves them out, so they are not
/// copied next to the build log (a repository mirror in the context, for example).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildContext {
    files: BTreeMap<String, ContextFile>,
    bulk: BTreeMap<String, ContextFile>,
    /// Directories to create even when empty (a bare git repository needs its empty `refs/`).
    bulk_dirs: std::collections::BTreeSet<String>,
}

impl BuildContext {
    /// A context holding only a Dockerfile.
    pub fn new(dockerfile: impl Into<String>) -> Self {
        let mut ctx = BuildContext::default();
        ctx.set_dockerfile(dockerfile);
        ctx
    }

    /// Adds (or replaces) a file; `path` is relative to the context root.
    pub fn with_file(
        mut self,
        path: &str,
        contents: impl Into<Vec<u8>>,
        mode: u32,
    ) -> Result<Self> {
        self.add_file(path, contents, mode)?;
        Ok(self)
    }

    /// Adds (or replaces) a file; `path` is relative to the context root.
    pub fn add_file(&mut self, path: &str, contents: impl Into<Vec<u8>>, mode: u32) -> Result<()> {
        let path = normalise_relative(path)?;
        self.files.insert(
            path,
            ContextFile {
                contents: contents.into(),
                mode,
            },
        );
        Ok(())
    }

    /// Adds (or replaces) a bulk file: in the archive, but not among [`BuildContext::files`].
    pub fn add_bulk_file(
        &mut self,
        path: &str,
        contents: impl Into<Vec<u8>>,
        mode: u32,
    ) -> Result<()> {
        let path = normalise_relative(path)?;
        self.bulk.insert(
            path,
            ContextFile {
                contents: contents.into(),
                mode,
            },
        );
        Ok(())
    }

    /// Adds a directory entry to the archive (bulk), so that it exists even when empty.
    pub fn add_bulk_dir(&mut self, path: &str) -> Result<()> {
        let path = normalise_relative(path)?;
        self.bulk_dirs.insert(path);
        Ok(())
    }

    /// The bulk files, sorted by path.
    pub fn bulk_files(&self) -> impl Iterator<Item = (&str, &ContextFile)> {
        self.bulk.iter().map(|(p, f)| (p.as_str(), f))
    }

    /// Sets (or replaces) the Dockerfile.
    pub fn set_dockerfile(&mut self, text: impl Into<String>) {
        self.files.insert(
            DOCKERFILE.to_string(),
            ContextFile {
                contents: text.into().into_bytes(),
                mode: 0o644,
            },
        );
    }

    /// The Dockerfile text, if there is one and it is UTF-8.
    pub fn dockerfile(&self) -> Option<&str> {
        self.files
            .get(DOCKERFILE)
            .and_then(|f| std::str::from_utf8(&f.contents).ok())
    }

    pub fn get(&self, path: &str) -> Option<&ContextFile> {
        self.files.get(path)
    }

    /// A file or bulk file by its path.
    pub fn entry(&self, path: &str) -> Option<&ContextFile> {
        self.files.get(path).or_else(|| self.bulk.get(path))
    }

    /// Every file and bulk file whose path starts with `prefix`, in path order.
    pub fn entries_under<'a>(
        &'a self,
        prefix: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a ContextFile)> + 'a {
        let mut all: Vec<(&str, &ContextFile)> = self
            .files
            .iter()
            .chain(self.bulk.iter())
            .filter(|(p, _)| p.starts_with(prefix))
            .map(|(p, f)| (p.as_str(), f))
            .collect();
        all.sort_by_key(|(p, _)| *p);
        all.into_iter()
    }

    /// The directory entries (see [`BuildContext::add_bulk_dir`]) whose path starts with `prefix`.
    pub fn dirs_under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.bulk_dirs
            .iter()
            .filter(move |d| d.starts_with(prefix))
            .map(String::as_str)
    }

    /// Files in path order.
    pub fn files(&self) -> impl Iterator<Item = (&str, &ContextFile)> {
        self.files.iter().map(|(p, f)| (p.as_str(), f))
    }

    /// The context as an uncompressed tar archive.
    pub fn to_tar(&self) -> Result<Vec<u8>> {
        let mut builder = tar::Builder::new(Vec::new());
        for dir in &self.bulk_dirs {
            append_dir(&mut builder, dir)?;
        }
        let mut all: BTreeMap<&str, &ContextFile> =
            self.bulk.iter().map(|(p, f)| (p.as_str(), f)).collect();
        // A file of the image-defining text wins over a bulk file of the same path.
        all.extend(self.files.iter().map(|(p, f)| (p.as_str(), f)));
        for (path, file) in all {
            append(&mut builder, path, &file.contents, file.mode, 0, 0)?;
        }
        finish(builder)
    }
}

/// One file to put into a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerFile {
    /// Absolute path inside the container. Missing parent directories are created.
    pub path: String,
    pub contents: Vec<u8>,
    /// Permission bits, e.g. `0o644` or `0o755`.
    pub mode: u32,
    pub uid: u64,
    pub gid: u64,
}

impl ContainerFile {
    /// A root-owned file readable by everyone (so a nonroot test user can read it).
    pub fn new(path: impl Into<String>, contents: impl Into<Vec<u8>>) -> Self {
        ContainerFile {
            path: path.into(),
            contents: contents.into(),
            mode: 0o644,
            uid: 0,
            gid: 0,
        }
    }

    pub fn mode(mut self, mode: u32) -> Self {
        self.mode = mode;
        self
    }

    pub fn owner(mut self, uid: u64, gid: u64) -> Self {
        self.uid = uid;
        self.gid = gid;
        self
    }
}

/// Files for a container as one tar archive rooted at `/` (paths lose their leading slash).
pub fn container_files_tar(files: &[ContainerFile]) -> Result<Vec<u8>> {
    // Sized up front (contents, a header or two and padding per file, the end blocks): an eval
    // script can hold a patch of tens of megabytes, and a growing archive would copy it.
    let size: usize = files
        .iter()
        .map(|f| f.contents.len() + 3 * 512 + f.path.len())
        .sum::<usize>()
        + 2048;
    let mut builder = tar::Builder::new(Vec::with_capacity(size));
    for f in files {
        let Some(rel) = f.path.strip_prefix('/') else {
            return Err(BackendError::Invalid(format!(
                "container path {:?} must be absolute",
                f.path
            )));
        };
        let rel = normalise_relative(rel)?;
        append(&mut builder, &rel, &f.contents, f.mode, f.uid, f.gid)?;
    }
    finish(builder)
}

/// Reads the single regular file out of a tar archive as the engine returns it for a path.
pub fn single_file_from_tar(archive: &[u8], what: &str) -> Result<Vec<u8>> {
    let mut ar = tar::Archive::new(archive);
    let entries = ar
        .entries()
        .map_err(|e| BackendError::io(format!("reading archive of {what}"), &e))?;
    for entry in entries {
        let mut entry =
            entry.map_err(|e| BackendError::io(format!("reading archive of {what}"), &e))?;
        if entry.header().entry_type().is_file() {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut out)
                .map_err(|e| BackendError::io(format!("reading archive of {what}"), &e))?;
            return Ok(out);
        }
    }
    Err(BackendError::Invalid(format!(
        "{what} is not a regular file"
    )))
}

fn normalise_relative(path: &str) -> Result<String> {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() || parts.contains(&"..") || path.starts_with('/') {
        return Err(BackendError::Invalid(format!(
            "{path:?} is not a relative path inside the archive"
        )));
    }
    Ok(parts.join("/"))
}

fn append(
    builder: &mut tar::Builder<Vec<u8>>,
    path: &str,
    contents: &[u8],
    mode: u32,
    uid: u64,
    gid: u64,
) -> Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(contents.len() as u64);
    header.set_mode(mode);
    header.set_uid(uid);
    header.set_gid(gid);
    header.set_mtime(0);
    builder
        .append_data(&mut header, path, contents)
        .map_err(|e| BackendError::io(format!("adding {path} to an archive"), &e))
}

fn append_dir(builder: &mut tar::Builder<Vec<u8>>, path: &str) -> Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Directory);
    header.set_size(0);
    header.set_mode(0o755);
    header.set_mtime(0);
    builder
        .append_data(&mut header, format!("{path}/"), std::io::empty())
        .map_err(|e| BackendError::io(format!("adding directory {path} to an archive"), &e))
}

fn finish(builder: tar::Builder<Vec<u8>>) -> Result<Vec<u8>> {
    builder
        .into_inner()
        .map_err(|e| BackendError::io("finishing an archive", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(archive: &[u8]) -> Vec<(String, u32, u64, u64, Vec<u8>)> {
        let mut ar = tar::Archive::new(archive);
        ar.entries()
            .expect("entries")
            .map(|e| {
                let mut e = e.expect("entry");
                let h = e.header().clone();
                let mut data = Vec::new();
                std::io::Read::read_to_end(&mut e, &mut data).expect("read");
                (
                    e.path().expect("path").to_string_lossy().into_owned(),
                    h.mode().expect("mode"),
                    h.uid().expect("uid"),
                    h.gid().expect("gid"),
                    data,
                )
            })
            .collect()
    }

    #[test]
    fn context_tar_holds_dockerfile_and_files_sorted_and_is_deterministic() {
        let ctx = BuildContext::new("FROM x\n")
            .with_file("setup_env.sh", "#!/bin/bash\n", 0o755)
            .and_then(|c| c.with_file("./a/b.txt", "b", 0o600))
            .expect("valid paths");
        let tar1 = ctx.to_tar().expect("tar");
        assert_eq!(tar1, ctx.to_tar().expect("tar"));
        let got = entries(&tar1);
        let names: Vec<&str> = got.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(names, vec!["Dockerfile", "a/b.txt", "setup_env.sh"]);
        assert_eq!(got[2].1, 0o755);
        assert_eq!(got[0].4, b"FROM x\n");
        assert_eq!(ctx.dockerfile(), Some("FROM x\n"));
    }

    #[test]
    fn bulk_files_are_archived_but_not_listed() {
        let mut ctx = BuildContext::new("FROM x\nCOPY ./m.git /root/m.git\n");
        ctx.add_bulk_file("m.git/HEAD", "ref: refs/heads/main\n", 0o644)
            .expect("valid path");
        let names: Vec<&str> = ctx.files().map(|(p, _)| p).collect();
        assert_eq!(names, vec!["Dockerfile"]);
        let bulk: Vec<&str> = ctx.bulk_files().map(|(p, _)| p).collect();
        assert_eq!(bulk, vec!["m.git/HEAD"]);
        let got = entries(&ctx.to_tar().expect("tar"));
        let names: Vec<&str> = got.iter().map(|e| e.0.as_str()).collect();
        assert_eq!(names, vec!["Dockerfile", "m.git/HEAD"]);
        assert!(ctx.add_bulk_file("../x", "", 0o644).is_err());
        ctx.add_bulk_dir("m.git/refs/tags").expect("valid path");
        let mut ar = tar::Archive::new(std::io::Cursor::new(ctx.to_tar().expect("tar")));
        let dirs: Vec<String> = ar
            .entries()
            .expect("entries")
            .map(|e| e.expect("entry"))
            .filter(|e| e.header().entry_type().is_dir())
            .map(|e| e.path().expect("path").to_string_lossy().into_owned())
            .collect();
        assert_eq!(dirs, vec!["m.git/refs/tags/"]);
    }

    #[test]
    fn escaping_or_absolute_context_paths_are_rejected() {
        let mut ctx = BuildContext::default();
        assert!(ctx.add_file("../x", "", 0o644).is_err());
        assert!(ctx.add_file("/etc/passwd", "", 0o644).is_err());
        assert!(ctx.add_file("", "", 0o644).is_err());
    }

    #[test]
    fn container_tar_keeps_modes_and_owners_and_strips_the_root() {
        let files = vec![
            ContainerFile::new("/eval.sh", "echo hi\n").mode(0o755),
            ContainerFile::new("/home/nonroot/x/y.txt", "y").owner(1000, 1000),
        ];
        let got = entries(&container_files_tar(&files).expect("tar"));
        assert_eq!(got[0].0, "eval.sh");
        assert_eq!(got[0].1, 0o755);
        assert_eq!(
            (got[1].0.as_str(), got[1].2, got[1].3),
            ("home/nonroot/x/y.txt", 1000, 1000)
        );
        assert!(container_files_tar(&[ContainerFile::new("relative", "")]).is_err());
    }

    #[test]
    fn single_file_is_read_back_from_an_archive() {
        let ar =
            container_files_tar(&[ContainerFile::new("/root/out.txt", "payload")]).expect("tar");
        assert_eq!(
            single_file_from_tar(&ar, "/root/out.txt").expect("file"),
            b"payload"
        );
        let empty = BuildContext::default().to_tar().expect("tar");
        assert!(single_file_from_tar(&empty, "x").is_err());
    }
}
