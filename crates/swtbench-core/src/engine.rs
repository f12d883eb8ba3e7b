//! What the container engine reports and is asked for, as plain data: images as listed,
//! containers' resource limits and what they wrote, registry credentials. The backend
//! (`swtbench-backend`) talks to the engine with them; the planner reads them without it.

use std::collections::BTreeMap;

/// An image as the engine reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInfo {
    /// Content id, `sha256:…`.
    pub id: String,
    /// Every `name:tag` pointing at it.
    pub tags: Vec<String>,
    /// Creation time, seconds since the Unix epoch.
    pub created_unix: i64,
    pub labels: BTreeMap<String, String>,
    /// `repository@sha256:…` of each registry the image was pulled from or pushed to (the
    /// manifest digests; empty for an image only ever built here).
    pub repo_digests: Vec<String>,
}

/// Resource limits of a container (`--memory`, `--pids-limit`, `--cpus`, `--disk-limit`,
/// `--file-limit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResourceLimits {
    /// Memory, swap included (the container gets no swap beyond it).
    pub memory_bytes: Option<u64>,
    pub pids: Option<u32>,
    /// CPUs in billionths (`--cpus 1.5` is 1_500_000_000).
    pub nano_cpus: Option<u64>,
    /// What the container may add to its writable layer in all. The engine's quota
    /// (`--storage-opt size=`) where the storage driver has one; elsewhere the backend's
    /// `ExecRequest::disk_limit` is watched while a command runs.
    pub disk_bytes: Option<u64>,
    /// Largest file a process may write (`RLIMIT_FSIZE`, enforced by the kernel: a bigger write
    /// fails with "File too large").
    pub file_bytes: Option<u64>,
}

impl ResourceLimits {
    /// No limit at all (the original's containers).
    pub fn is_unlimited(&self) -> bool {
        *self == ResourceLimits::default()
    }
}

/// What a container wrote to its writable layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Bytes in all.
    pub total: u64,
    /// The largest file, when the layer's files were seen (not through the engine's total).
    pub largest: Option<u64>,
}

/// Credentials the engine presents to a registry. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct RegistryAuth {
    pub username: String,
    pub password: String,
    /// `host[:port]` of the registry.
    pub server: String,
}

impl std::fmt::Debug for RegistryAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryAuth")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("server", &self.server)
            .finish()
    }
}
