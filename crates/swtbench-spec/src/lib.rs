//! From an instance to everything a container engine needs to evaluate it: the spec table of
//! `(repo, version)` entries, the three Dockerfiles, `setup_env.sh`, `setup_repo.sh`, the image
//! keys, the test command and the eval script of each of the six runs.
//!
//! This crate is pure: it takes data (the table, the instance, patches, file contents through a
//! [`FileSource`] or getter closure) and returns text. It must not touch files, the network,
//! processes or Docker; the binary and the runner do that and hand the results in (the reader of
//! requirement files from git mirrors and GitHub raw is `swtbench_data::repo_files`).
//!
//! ```
//! use swtbench_spec::{Arch, EvalOptions, ExecSpec, RunInputs, SpecTable};
//! # let row = serde_json::json!({"instance_id": "psf__requests-2317", "repo": "psf/requests",
//! #   "version": "2.4", "base_commit": "abc", "patch": "diff --git a/r.py b/r.py\n",
//! #   "test_patch": "diff --git a/test_requests.py b/test_requests.py\n"});
//! # let instance = swtbench_core::Instance::from_row(&row, swtbench_core::PatchLayout::Swebench).unwrap();
//! let no_files = |_: &str, _: &str, _: &str| Ok(None);
//! let spec = ExecSpec::new(&instance, SpecTable::embedded(), Arch::X86_64, &no_files).unwrap();
//! assert!(spec.keys.env.starts_with("exec.env.x86_64."));
//! let inputs = RunInputs {
//!     model_patch: &instance.golden_test_patch,
//!     gold_test_patch: &instance.golden_test_patch,
//!     gold_code_patch: &instance.golden_code_patch,
//! };
//! let runs = spec.render_runs(&inputs, &EvalOptions::default()).unwrap();
//! assert_eq!(runs.len(), 6);
//! ```

pub mod build_files;
pub mod compiler_cache;
mod error;
pub mod eval;
pub mod lock;
pub mod lockfile;
pub mod pins;
pub mod provider;
pub mod py;
pub mod render;
pub mod reqs;
pub mod table;
pub mod validation;

pub use build_files::{BuildFiles, BUILD_FILES_CONTEXT_DIR};
pub use compiler_cache::CompilerCache;
pub use error::{ReadError, SpecError};
pub use eval::{
    EvalOptions, ExecMode, ExecSpecJsonContext, RenderedRun, RunInputs, TEST_EXIT_FILE,
};
pub use lock::{EnvLock, LockEntry, LockError, LockSource};
pub use pins::{FrozenPins, PinChoice};
pub use render::{
    env_context_files, insert_after_from, system_pre_install, Arch, EnvPins, ExecSpec, FileSource,
    ImageKeys, SubmoduleSource, MIRROR_CONTEXT_DIR, SUBMODULES_CONTEXT_DIR, UV_VERSION,
};
pub use table::{
    BaseImage, Provider, RepoSpec, SpecTable, TableSyntax, VersionSpec, DEFAULT_PYTHON_IMAGE,
};
