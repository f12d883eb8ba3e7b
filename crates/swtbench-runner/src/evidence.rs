//! Collecting a run's structured evidence (docs/integrity.md): the evidence hook is put into the
//! container's Python environments before the eval script runs, and what it wrote is copied out
//! after, into the run directory, next to `test_output.txt`.
//!
//! Per run, fresh random names and a fresh secret: a directory `/var/tmp/.swtbench-<r>` holding
//! the hook's code, the secret file (the hook reads and deletes it when the test runner starts,
//! before any test module is imported) and later the evidence file, whose name is only in the
//! secret file; a `.pth` line in each site-packages directory that loads the hook. Nothing of
//! this is in the eval script or its output, so the log is the original's, and the content keys
//! stay as they are. The files are read with the engine's archive API after the script, not with
//! programs inside the container (which the tests may have replaced).

use std::path::Path;
use std::time::Duration;

use swtbench_backend::{BackendError, ContainerBackend, ContainerFile, ExecRequest};
use swtbench_grade::evidence::{
    EvidenceMeta, EvidenceState, EVIDENCE_FILE, EVIDENCE_FORMAT, EVIDENCE_LIMIT, EVIDENCE_META_FILE,
};

use crate::fsutil::{remove_if_exists, write_atomic};

/// The hook, byte for byte as it is copied into containers.
pub const HOOK_PY: &str = include_str!("../../../assets/evidence/hook.py");

/// Where site-packages directories are looked for (conda envs of the original's images, the
/// venv and uv providers' environment, a Python image's own, Debian's).
pub const SITE_GLOBS: &[&str] = &[
    "/opt/miniconda3/envs/*/lib/python*/site-packages",
    "/opt/conda/envs/*/lib/python*/site-packages",
    "/opt/swtbench-venv/lib/python*/site-packages",
    "/usr/local/lib/python3*/site-packages",
    "/usr/lib/python3/dist-packages",
];

/// One run's names and secret.
#[derive(Debug, Clone)]
pub struct EvidencePlan {
    pub dir: String,
    pub secret: [u8; 32],
    pub key_path: String,
    pub evidence_path: String,
    pub pth_name: String,
}

fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    use std::io::Read;
    let mut buf = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf)
}

impl EvidencePlan {
    /// Fresh names and a fresh secret.
    pub fn new() -> std::io::Result<EvidencePlan> {
        let names: [u8; 16] = random_bytes()?;
        let secret: [u8; 32] = random_bytes()?;
        let dir_part = hex::encode(&names[..8]);
        let dir = format!("/var/tmp/.swtbench-{dir_part}");
        Ok(EvidencePlan {
            key_path: format!("{dir}/k"),
            evidence_path: format!("{dir}/{}.ev", hex::encode(&names[8..])),
            pth_name: format!("00-swtbench-evidence-{dir_part}.pth"),
            dir,
            secret,
        })
    }

    /// The secret file's text: the secret and the evidence file's path.
    fn key_text(&self) -> String {
        format!("{}\n{}\n", hex::encode(self.secret), self.evidence_path)
    }

    /// The `.pth` line (a `.pth` line starting with `import` is executed at interpreter start).
    pub fn pth_line(&self) -> String {
        let hook = format!("{}/hook.py", self.dir);
        format!(
            "import os; exec(compile(open({hook:?}).read(), {hook:?}, 'exec'), \
             {{'__name__': '_swtbench_hook', 'KEY_PATH': {key:?}}}) if os.path.exists({key:?}) \
             else None\n",
            key = self.key_path
        )
    }

    /// The files copied in with the eval script.
    pub fn files(&self) -> Vec<ContainerFile> {
        vec![
            ContainerFile::new(format!("{}/hook.py", self.dir), HOOK_PY),
            ContainerFile::new(format!("{}/p.pth", self.dir), self.pth_line()),
            ContainerFile::new(self.key_path.clone(), self.key_text()),
        ]
    }

    /// The `.pth` file in each of `sites` (site-packages directories an earlier container of the
    /// same image had), for the archive copied in before the container starts: what
    /// [`install`]'s root step puts there.
    pub fn site_files(&self, sites: &[String]) -> Vec<ContainerFile> {
        sites
            .iter()
            .map(|site| ContainerFile::new(format!("{site}/{}", self.pth_name), self.pth_line()))
            .collect()
    }

    /// The root shell script that opens the directory to the test user and puts the `.pth` file
    /// into every site-packages directory there is, printing each.
    pub fn install_script(&self) -> String {
        format!(
            "chmod 777 {dir} || exit 0\nfor d in {globs}; do\n  if [ -d \"$d\" ]; then cp {dir}/p.pth \"$d/{pth}\" && echo \"$d\"; fi\ndone\nexit 0\n",
            dir = self.dir,
            globs = SITE_GLOBS.join(" "),
            pth = self.pth_name
        )
    }
}

/// Puts the hook in place (as root, before the eval script: nothing of the model's has run yet).
/// Returns the site-packages directories that got it (empty: the image has none, or the step
/// failed; the run then has no evidence).
pub async fn install<B: ContainerBackend>(
    backend: &B,
    id: &str,
    plan: &EvidencePlan,
) -> Vec<String> {
    let mut request = ExecRequest::new(["/bin/sh", "-c", &plan.install_script()])
        .timeout(Duration::from_secs(30));
    request.user = Some("root".to_string());
    request.output_limit = Some(64 << 10);
    match backend.exec(id, &request).await {
        Ok(out) if out.exit_code == Some(0) && !out.timed_out => {
            String::from_utf8_lossy(&out.output)
                .lines()
                .filter(|l| l.starts_with('/'))
                .map(str::to_string)
                .collect()
        }
        _ => Vec::new(),
    }
}

/// What collecting found: the record and the evidence file's bytes when collected.
#[derive(Debug, Clone)]
pub struct Collected {
    pub meta: EvidenceMeta,
    pub raw: Option<Vec<u8>>,
}

/// Reads the secret file (still there: the runner never took it) and the evidence file out of
/// the container after the eval script.
pub async fn collect<B: ContainerBackend>(
    backend: &B,
    id: &str,
    plan: &EvidencePlan,
    sites: Vec<String>,
) -> Result<Collected, BackendError> {
    let meta = |state, raw: Option<&[u8]>| EvidenceMeta {
        format: EVIDENCE_FORMAT,
        state,
        secret: hex::encode(plan.secret),
        sha256: raw.map(swtbench_core::hash::sha256_hex),
        bytes: raw.map_or(0, |r| r.len() as u64),
        sites: sites.clone(),
    };
    if sites.is_empty() {
        return Ok(Collected {
            meta: meta(EvidenceState::NotInstrumented, None),
            raw: None,
        });
    }
    match backend.copy_out_bounded(id, &plan.key_path, 4096).await {
        Ok(Some(text)) if text == plan.key_text().as_bytes() => {
            return Ok(Collected {
                meta: meta(EvidenceState::NotTaken, None),
                raw: None,
            })
        }
        // Someone wrote a secret file of their own: the hook's evidence is then not to be
        // ignored as "not taken".
        Ok(_) => {}
        Err(BackendError::PathNotFound { .. } | BackendError::Invalid(_)) => {}
        Err(e) => return Err(e),
    }
    // Read with a cap: the tests can make the file any size.
    match backend
        .copy_out_bounded(id, &plan.evidence_path, EVIDENCE_LIMIT)
        .await
    {
        Ok(None) => Ok(Collected {
            meta: meta(EvidenceState::Oversized, None),
            raw: None,
        }),
        Ok(Some(raw)) => Ok(Collected {
            meta: meta(EvidenceState::Collected, Some(&raw)),
            raw: Some(raw),
        }),
        // Gone, or replaced by something that is not a regular file (a directory, a link).
        Err(BackendError::PathNotFound { .. } | BackendError::Invalid(_)) => Ok(Collected {
            meta: meta(EvidenceState::Missing, None),
            raw: None,
        }),
        Err(e) => Err(e),
    }
}

/// Writes the evidence files of a run (before its key file).
pub fn write(dir: &Path, collected: &Collected) -> std::io::Result<()> {
    if let Some(raw) = &collected.raw {
        write_atomic(&dir.join(EVIDENCE_FILE), raw).map_err(|e| e.source)?;
    }
    write_atomic(
        &dir.join(EVIDENCE_META_FILE),
        collected.meta.to_json().as_bytes(),
    )
    .map_err(|e| e.source)
}

/// Removes the evidence files an earlier execution of the run left.
pub fn remove_stale(dir: &Path) -> std::io::Result<()> {
    remove_if_exists(&dir.join(EVIDENCE_META_FILE))?;
    remove_if_exists(&dir.join(EVIDENCE_FILE))
}

/// Copies the evidence files of a run with the same key (a `same as` run, a shared run reused).
pub fn copy(from: &Path, to: &Path) -> std::io::Result<()> {
    remove_stale(to)?;
    for name in [EVIDENCE_FILE, EVIDENCE_META_FILE] {
        match std::fs::read(from.join(name)) {
            Ok(bytes) => write_atomic(&to.join(name), &bytes).map_err(|e| e.source)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The two evidence files of a run directory as the grading reads them.
pub fn read_files(dir: &Path) -> std::io::Result<(Option<String>, Option<Vec<u8>>)> {
    let meta = match std::fs::read_to_string(dir.join(EVIDENCE_META_FILE)) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let raw = match std::fs::read(dir.join(EVIDENCE_FILE)) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    Ok((meta, raw))
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    #[test]
    fn every_run_gets_its_own_names_and_secret() {
        let a = EvidencePlan::new().unwrap();
        let b = EvidencePlan::new().unwrap();
        assert_ne!(a.dir, b.dir);
        assert_ne!(a.secret, b.secret);
        assert!(a.evidence_path.starts_with(&a.dir) && a.key_path.starts_with(&a.dir));
        // The evidence file's name is only in the secret file.
        let name = a.evidence_path.rsplit('/').next().unwrap();
        assert!(!a.pth_line().contains(name));
        assert!(!a.install_script().contains(name));
        assert!(a.pth_line().starts_with("import os;") && a.pth_line().ends_with("None\n"));
        assert_eq!(a.pth_line().lines().count(), 1, "a .pth line is one line");
    }
}
