//! Patch extraction for the non-vanilla patch types (`--patch-types fuzzy custom …`, §4.2), with
//! the extraction crate's cache in the instance's report directory.
//!
//! The files at the base commit come from the repository mirror when `--repo-mirror` is given,
//! otherwise from a container of the instance image (`/testbed` is the repository at the base
//! commit). The custom format's script runs in such a container too: model output is never
//! handed to a host interpreter. The container has no network and carries the run's labels.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use swtbench_backend::{BackendError, ContainerBackend, ContainerFile, ContainerSpec, ExecRequest};
use swtbench_core::Instance;
use swtbench_extract::source::symlink_error;
use swtbench_extract::{
    extract, FileSource, GitMirrorSource, PatchType, PythonError, PythonOutput, PythonRunner,
    SourceError, SourceErrorKind,
};
use swtbench_spec::ExecSpec;
use tokio::runtime::Handle;

use crate::execute::ContainerRegistry;
use crate::outcome::ExtractError;
use swtbench_plan::settings::RunSettings;

/// Why no patch came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractFailure {
    /// Every patch type failed on the model output (a property of the prediction): the
    /// extraction's summary of why, one line per patch type joined with `; `.
    NothingExtracted(String),
    /// The machinery failed (container, files unreadable); a rerun retries.
    Infrastructure(ExtractError),
}

/// Prints the hex bytes of file `$1` (repository-relative) under the directory `$2`; exits 3 when it
/// is not a regular file, 4 when it does not exist, and 5 (printing the relative path of the
/// link) when a component is a symbolic link, which `git apply` refuses to write beyond. The
/// path is walked one component at a time so that links are reported instead of followed.
const READ_FILE_SCRIPT: &str = r#"set -f; r=$2; f=$r; IFS=/; for s in $1; do f="$f/$s"; if [ -L "$f" ]; then printf %s "${f#"$r"/}"; exit 5; fi; done; unset IFS; if [ -f "$f" ]; then od -An -v -tx1 "$f" | tr -d ' \n'; elif [ -e "$f" ]; then exit 3; else exit 4; fi"#;

/// Reads files and runs Python inside one started container.
struct InContainer<B: ContainerBackend> {
    backend: Arc<B>,
    id: String,
    handle: Handle,
}

impl<B: ContainerBackend> InContainer<B> {
    fn exec(&self, cmd: Vec<String>) -> Result<swtbench_backend::ExecOutput, BackendError> {
        let req = ExecRequest::new(cmd).timeout(Duration::from_secs(300));
        self.handle.block_on(self.backend.exec(&self.id, &req))
    }
}

impl<B: ContainerBackend> FileSource for InContainer<B> {
    fn read(&self, path: &str) -> Result<Option<String>, SourceError> {
        let out = self
            .exec(vec![
                "/bin/sh".into(),
                "-c".into(),
                READ_FILE_SCRIPT.into(),
                "sh".into(),
                path.to_string(),
                "/testbed".into(),
            ])
            .map_err(|e| SourceError::new(path, SourceErrorKind::Unavailable, e))?;
        match out.exit_code {
            Some(0) => {
                let text = String::from_utf8_lossy(&out.output);
                let bytes = hex::decode(text.trim()).map_err(|e| {
                    SourceError::new(path, SourceErrorKind::Unavailable, e.to_string())
                })?;
                String::from_utf8(bytes)
                    .map(Some)
                    .map_err(|_| SourceError::new(path, SourceErrorKind::NotText, "not UTF-8 text"))
            }
            Some(5) => Err(symlink_error(
                path,
                String::from_utf8_lossy(&out.output).trim(),
            )),
            Some(3) => Err(SourceError::new(
                path,
                SourceErrorKind::NotAFile,
                "not a regular file",
            )),
            Some(4) => Ok(None),
            other => Err(SourceError::new(
                path,
                SourceErrorKind::Unavailable,
                format!("reading it in the container ended with {other:?}"),
            )),
        }
    }
}

impl<B: ContainerBackend> PythonRunner for InContainer<B> {
    fn run(&self, script: &str, input: &[u8]) -> Result<PythonOutput, PythonError> {
        let files = [
            ContainerFile::new("/root/swtbench_custom_patch.py", script.to_string()),
            ContainerFile::new("/root/swtbench_custom_in.json", input.to_vec()),
        ];
        self.handle
            .block_on(self.backend.copy_in(&self.id, &files))
            .map_err(|e| PythonError(e.to_string()))?;
        let out = self
            .exec(vec![
                "python3".into(),
                "/root/swtbench_custom_patch.py".into(),
                "/root/swtbench_custom_in.json".into(),
                "/root/swtbench_custom_out.json".into(),
            ])
            .map_err(|e| PythonError(e.to_string()))?;
        let stdout = self
            .handle
            .block_on(
                self.backend
                    .copy_out(&self.id, "/root/swtbench_custom_out.json"),
            )
            .unwrap_or_default();
        Ok(PythonOutput {
            status: out.exit_code.map(|c| c as i32),
            stdout,
            stderr: out.output,
        })
    }
}

/// One extraction to do.
#[derive(Debug, Clone, Copy)]
pub struct ExtractJob<'a> {
    pub instance: &'a Instance,
    pub spec: &'a ExecSpec,
    /// The instance image (for the container source and the custom script).
    pub image: &'a str,
    /// Where the extraction cache lives (the instance's report directory).
    pub report_dir: &'a Path,
    /// The raw model output.
    pub raw: &'a str,
}

/// Extracts the model patch of an instance (or reuses the cached extraction).
pub async fn extract_patch<B: ContainerBackend>(
    backend: Arc<B>,
    settings: &RunSettings,
    registry: &ContainerRegistry,
    job: ExtractJob<'_>,
) -> Result<String, ExtractFailure> {
    let ExtractJob {
        instance,
        spec,
        image,
        report_dir,
        raw,
    } = job;
    let infra = ExtractFailure::Infrastructure;
    let mirror = match &settings.images.repo_mirror {
        Some(dir) => GitMirrorSource::locate(dir, &instance.repo, &instance.base_commit)
            .map_err(|e| infra(ExtractError::Mirror(e.to_string())))?,
        None => None,
    };
    let needs_container = mirror.is_none() || settings.patch_types.contains(&PatchType::Custom);
    let mut container: Option<String> = None;
    if needs_container {
        let mut cspec = ContainerSpec::new(image);
        cspec.labels = registry.labels(&settings.run_id, instance.instance_id.as_str(), "extract");
        cspec.user = Some("root".into());
        cspec.platform = Some(spec.platform().to_string());
        let id = registry
            .create(&backend, &cspec)
            .await
            .map_err(|e| infra(ExtractError::Container(e)))?;
        container = Some(id.clone());
        if let Err(e) = backend.container_start(&id).await {
            if backend.container_remove(&id).await.is_ok() {
                registry.remove(&id);
            }
            return Err(infra(ExtractError::Container(e)));
        }
    }
    let raw_owned = raw.to_string();
    let types = settings.patch_types.clone();
    let options = settings.extract;
    let dir = report_dir.to_path_buf();
    let handle = Handle::current();
    let backend2 = backend.clone();
    let cid = container.clone();
    let task = tokio::task::spawn_blocking(move || {
        let in_container = cid.map(|id| InContainer {
            backend: backend2,
            id,
            handle,
        });
        let source: &dyn FileSource = match (&mirror, &in_container) {
            (Some(m), _) => m,
            (None, Some(c)) => c,
            (None, None) => return Err(ExtractError::NoSource),
        };
        let python = in_container.as_ref().map(|c| c as &dyn PythonRunner);
        swtbench_extract::cache::load_or_extract(&dir, &raw_owned, &types, &options, || {
            extract(&raw_owned, &types, source, python, &options)
        })
        .map_err(|e| ExtractError::Cache(e.to_string()))
    });
    // The whole extraction gets the run timeout. When it is over, removing the container ends the
    // command the blocking task waits for, and the task with it.
    let deadline = settings.exec.timeout;
    let result = tokio::time::timeout(deadline, task).await;
    if let Some(id) = &container {
        // A container that could not be removed stays registered for the clean-up at the end.
        if backend.container_remove(id).await.is_ok() {
            registry.remove(id);
        }
    }
    let Ok(result) = result else {
        return Err(infra(ExtractError::TimedOut { after: deadline }));
    };
    let cached = result
        .map_err(|e| infra(ExtractError::Task(e.to_string())))?
        .map_err(infra)?;
    let extraction = cached.extraction;
    if extraction.succeeded() && !extraction.patch.trim().is_empty() {
        Ok(extraction.patch)
    } else if !extraction.is_cacheable() {
        Err(infra(ExtractError::Incomplete(
            extraction.failure_summary(),
        )))
    } else if !extraction.patch.trim().is_empty() {
        // Every type failed, but parity-style attempts kept their edits: the original runs the
        // diff of those, and so does this.
        Ok(extraction.patch)
    } else {
        Err(ExtractFailure::NothingExtracted(
            extraction.failure_summary().replace('\n', "; "),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::READ_FILE_SCRIPT;
    use std::process::Command;

    /// The in-container reader's script, run with the host's `sh` on a test-made tree.
    fn read(root: &std::path::Path, path: &str) -> (Option<i32>, String) {
        let out = Command::new("sh")
            .args(["-c", READ_FILE_SCRIPT, "sh", path])
            .arg(root)
            .output()
            .expect("sh");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn the_reader_reports_links_instead_of_following_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("pkg/sub")).expect("mkdir");
        std::fs::write(root.join("pkg/mod.py"), "x = 1\n").expect("write");
        std::os::unix::fs::symlink("pkg", root.join("link")).expect("link");
        std::os::unix::fs::symlink("mod.py", root.join("pkg/alias.py")).expect("link");
        assert_eq!(read(root, "pkg/mod.py"), (Some(0), hex::encode("x = 1\n")));
        assert_eq!(read(root, "link/mod.py"), (Some(5), "link".into()));
        assert_eq!(read(root, "pkg/alias.py"), (Some(5), "pkg/alias.py".into()));
        assert_eq!(read(root, "pkg/sub").0, Some(3));
        assert_eq!(read(root, "pkg/none.py").0, Some(4));
        // No globbing and no word splitting on spaces.
        assert_eq!(read(root, "pkg/*.py").0, Some(4));
        assert_eq!(read(root, "pkg/mod .py").0, Some(4));
    }
}
