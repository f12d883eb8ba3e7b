//! `--compiler-cache`: one compiler cache (ccache) shared by the instance builds of an
//! environment image.
//!
//! Repositories with C extensions spend nearly all of an instance image's build compiling, and
//! the instances of one environment compile mostly the same files. With the flag on, the env image
//! has ccache from Debian (so its key changes), and every instance build on it runs its steps with
//! ccache first on `PATH` and its cache in a named volume of the engine, one per env image,
//! mounted at [`CACHE_DIR`] in the build container only. A commit leaves mounted volumes out, so
//! the instance image holds the same files as without the cache (the compilers in
//! `/usr/lib/ccache` are there but not on the image's `PATH`), and test containers never see the
//! volume. The volume is labelled with its env image, and removed with it.

/// Where the cache volume is mounted in a build container.
pub const CACHE_DIR: &str = "/var/cache/swtbench-ccache";
/// Where Debian's ccache puts its compiler links: first on `PATH`, `gcc`, `cc`, `g++`… are ccache.
pub const CCACHE_BIN_DIR: &str = "/usr/lib/ccache";
/// The most one cache holds (ccache drops its oldest entries past it).
pub const MAX_SIZE: &str = "2G";
/// The volume's label naming what it is ([`VOLUME_KIND`]).
pub const KIND_LABEL: &str = "swtbench.kind";
/// The kind of a compiler cache volume.
pub const VOLUME_KIND: &str = "compiler-cache";
/// The volume's label naming the env image key it serves.
pub const ENV_LABEL: &str = "swtbench.image";

/// The env Dockerfile lines that install ccache (appended when the flag is on; part of the key).
pub const INSTALL_LINES: &str = "\n# --compiler-cache: ccache, used by instance builds only (see swtbench's docs/scheduling.md)\nRUN apt-get update && apt-get install -y --no-install-recommends ccache && rm -rf /var/lib/apt/lists/*\n";

/// What an instance build on an env image needs for the shared cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompilerCache {
    /// The engine volume's name (one per env image).
    pub volume: String,
    /// Its labels: [`KIND_LABEL`] = [`VOLUME_KIND`] and [`ENV_LABEL`] = the env image key.
    pub labels: Vec<(String, String)>,
    /// Where it is mounted in the build container ([`CACHE_DIR`]).
    pub target: String,
    /// Variables of every build step (`CCACHE_DIR`, `CCACHE_MAXSIZE`).
    pub env: Vec<(String, String)>,
    /// Directories put first on every build step's `PATH` ([`CCACHE_BIN_DIR`]).
    pub path_prepend: Vec<String>,
}

impl CompilerCache {
    /// The cache of the env image `env_key` (`exec.env.<arch>.<hash>:latest`).
    pub fn for_env(env_key: &str) -> CompilerCache {
        CompilerCache {
            volume: volume_name(env_key),
            labels: vec![
                (KIND_LABEL.to_string(), VOLUME_KIND.to_string()),
                (ENV_LABEL.to_string(), env_key.to_string()),
            ],
            target: CACHE_DIR.to_string(),
            env: vec![
                ("CCACHE_DIR".to_string(), CACHE_DIR.to_string()),
                ("CCACHE_MAXSIZE".to_string(), MAX_SIZE.to_string()),
            ],
            path_prepend: vec![CCACHE_BIN_DIR.to_string()],
        }
    }
}

/// The volume name of `env_key`'s cache: `swtbench-ccache-<arch>.<hash>` (the key without its
/// `exec.env.` prefix and tag; characters a volume name cannot hold become `-`).
pub fn volume_name(env_key: &str) -> String {
    let bare = env_key.strip_prefix("exec.env.").unwrap_or(env_key);
    let bare = bare.strip_suffix(":latest").unwrap_or(bare);
    let clean: String = bare
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("swtbench-ccache-{clean}")
}
