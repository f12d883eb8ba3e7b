//! `swtbench envs lock` and `--env-lock FILE`: reading a lock file onto the spec table, and
//! resolving the environments of a selection once, each in a throwaway container of its Python
//! image, into a lock file.
//!
//! The rules (what an entry is, which environment it applies to, what gets resolved and what is
//! written as it is) are `swtbench_spec::lock`; this module reads and writes the file and runs
//! the containers. Resolve containers carry swtbench's labels (`swtbench.kind=env-lock`), stop by
//! themselves after their time limit, and are removed when their resolve ends, failed or not.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use swtbench_backend::labels::{KIND, MANAGED, RUN_ID};
use swtbench_backend::network::{CA_IMAGE_PATH, CA_VARIABLES};
use swtbench_backend::{
    BuildNetwork, ContainerBackend, ContainerFile, ContainerGuard, ContainerSpec, ExecRequest,
    LabelFilter, NetworkAccess,
};
use swtbench_spec::lock::{self, LockHow, LockJob};
use swtbench_spec::{EnvLock, ExecSpec, SpecTable, UV_VERSION};

use crate::lines::Notice;
use crate::{Error, Result};

/// `--env-provider`, `--python-image`, `--env-lock` and `--no-env-lock` as given.
#[derive(Debug, Clone, Default)]
pub struct EnvChoice {
    pub provider: Option<swtbench_spec::Provider>,
    pub python_image: Option<String>,
    pub env_lock: Option<std::path::PathBuf>,
    pub no_env_lock: bool,
    /// `--build-files`: the directory of per-repository trees copied onto checkouts.
    pub build_files: Option<std::path::PathBuf>,
    /// `--compiler-cache`: env images get ccache, instance builds share a cache per env image.
    pub compiler_cache: bool,
}

impl EnvChoice {
    /// `envs show`'s choice: uv unless a provider is given.
    pub fn uv_by_default(mut self) -> EnvChoice {
        self.provider.get_or_insert(swtbench_spec::Provider::Uv);
        self
    }

    /// `envs lock`'s choice: uv unless a provider is given, and no lock (a lock is written from
    /// the environments as they are without one); `--env-lock` is refused.
    pub fn for_lock(self) -> Result<EnvChoice> {
        if self.env_lock.is_some() {
            return Err(Error::input(anyhow!(
                "envs lock writes a lock file; --env-lock reads one"
            ))
            .with_hint("give the file to write with --output"));
        }
        Ok(EnvChoice {
            no_env_lock: true,
            ..self.uv_by_default()
        })
    }
}

/// The table with the provider applied (see `SpecTable::with_env_provider`; `--python-image`
/// alone means uv), then the `--env-lock` file, or the lock compiled in unless
/// `--no-env-lock`; the entries kept on their provider are named in one note.
pub fn apply_env_choice(
    table: SpecTable,
    choice: &EnvChoice,
    notices: &mut Vec<Notice>,
) -> Result<SpecTable> {
    let table = apply_provider(table, choice, notices)?.with_compiler_cache(choice.compiler_cache);
    let table = match &choice.env_lock {
        Some(path) => apply_lock_file(table, path)?,
        None if choice.no_env_lock => table,
        None => apply_embedded_lock(table),
    };
    match &choice.build_files {
        Some(dir) => apply_build_files(table, dir, notices),
        None => Ok(table),
    }
}

/// The table with the build files under `dir` (`swtbench_data::build_files`), each
/// repository's named in a note.
fn apply_build_files(
    table: SpecTable,
    dir: &std::path::Path,
    notices: &mut Vec<Notice>,
) -> Result<SpecTable> {
    let files = swtbench_data::build_files::scan(dir).map_err(|e| Error::input(anyhow!(e)))?;
    if files.is_empty() {
        notices.push(Notice::Warn(format!(
            "--build-files {}: no <owner>__<name> directory in it; no checkout gets build files",
            dir.display()
        )));
    }
    for (repo, f) in &files {
        notices.push(Notice::Info(format!(
            "note: --build-files: {repo}'s checkouts get {} files ({} bytes, sha256 {}) from {}",
            f.files,
            f.bytes,
            &f.digest[..12],
            f.dir.display()
        )));
    }
    Ok(table.with_build_files(files))
}

fn apply_provider(
    table: SpecTable,
    choice: &EnvChoice,
    notices: &mut Vec<Notice>,
) -> Result<SpecTable> {
    use swtbench_spec::Provider;
    let provider = match (choice.provider, &choice.python_image) {
        (Some(p), _) => p,
        (None, Some(_)) => Provider::Uv,
        (None, None) => return Ok(table),
    };
    if let Some(t) = &choice.python_image {
        if provider != Provider::Uv {
            return Err(Error::input(anyhow!(
                "--python-image applies to --env-provider uv only (got {})",
                provider.as_str()
            )));
        }
        if !t.contains("{version}") {
            notices.push(Notice::Warn(format!(
                "--python-image {t:?} has no {{version}}: every uv environment builds on the same image"
            )));
        }
    }
    let (table, notes) = table.with_env_provider(provider, choice.python_image.as_deref());
    if !notes.is_empty() {
        notices.push(Notice::Info(format!(
            "note: --env-provider uv: {} spec entries have a Python older than uv serves; their environments are made with python -m venv and pip on the same Python image: {}",
            notes.len(),
            notes.join(", ")
        )));
    }
    Ok(table)
}

/// Reads `path` and applies it to `table` (after `--spec-table` and `--env-provider`).
pub fn apply_lock_file(table: SpecTable, path: &Path) -> Result<SpecTable> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::input(anyhow!(
            "cannot read environment lock {}: {e}",
            path.display()
        ))
        .with_hint("write one with `swtbench envs lock --output FILE`")
    })?;
    let lock = EnvLock::parse(&text, &path.display().to_string()).map_err(|e| {
        Error::input(e).with_hint("the format is described in docs/environments.md")
    })?;
    table.with_env_lock(lock).map_err(|e| {
        Error::input(e).with_hint(
            "an environment lock applies to the spec table and --env-provider it was written with",
        )
    })
}

/// Applies the lock compiled into the binary ([`EnvLock::embedded`]) to the entries of `table`
/// it matches (repository, version, provider and Python); the others are left as they are.
pub fn apply_embedded_lock(table: SpecTable) -> SpecTable {
    let (lock, _dropped) = EnvLock::embedded().keep_matching(&table);
    if lock.entries.is_empty() {
        return table;
    }
    // Every entry left matches the table, so the check cannot fail.
    table.with_env_lock(lock).unwrap_or(table)
}

/// How `envs lock` resolves.
#[derive(Debug, Clone)]
pub struct LockSettings {
    /// CA bundle and proxy variables passed into the resolve containers.
    pub network: BuildNetwork,
    /// Time limit of one environment's resolve.
    pub timeout: Duration,
    /// The `swtbench.run_id` label of the resolve containers (for `swtbench clean`).
    pub label: String,
}

/// What happened to one environment.
#[derive(Debug, Clone)]
pub struct LockedEnv {
    pub unlocked_env: String,
    pub python_image: String,
    /// `repo version` of the entries written for it.
    pub entries: Vec<String>,
    pub instances: usize,
    pub pins: usize,
    /// `None`: written as it is (frozen pins).
    pub resolve_time: Option<Duration>,
}

/// What `envs lock` locks and where it writes the lock.
#[derive(Debug)]
pub struct LockRequest<'a> {
    pub instances: &'a [swtbench_core::Instance],
    /// The spec table with the provider applied (and no lock).
    pub table: &'a SpecTable,
    pub files: &'a swtbench_data::repo_files::RepoFiles,
    /// `--ca-bundle` (default: `$SSL_CERT_FILE` when it names a file).
    pub ca_bundle: Option<&'a Path>,
    /// Time limit of one environment's resolve.
    pub timeout: Duration,
    /// The lock file to write.
    pub output: &'a Path,
}

/// What [`lock_to_file`] wrote.
#[derive(Debug, Clone)]
pub struct LockWritten {
    /// Entries in the lock file.
    pub entries: usize,
    /// Per environment, what was done.
    pub envs: Vec<LockedEnv>,
    /// The instances whose environments were locked.
    pub instances: usize,
}

impl LockedEnv {
    /// What `envs lock` says of one environment.
    pub fn line(&self) -> String {
        let how = match self.resolve_time {
            Some(t) => format!("resolved in {:.1} s", t.as_secs_f64()),
            None => "frozen pins, written as they are".to_string(),
        };
        format!(
            "{}: {} pins ({how}; {}, {} instances)",
            self.entries.join(", "),
            self.pins,
            self.python_image,
            self.instances
        )
    }
}

impl LockWritten {
    /// The closing line of `envs lock`, which wrote `output`.
    pub fn summary(&self, output: &Path) -> String {
        let resolved = self
            .envs
            .iter()
            .filter(|e| e.resolve_time.is_some())
            .count();
        format!(
            "wrote {}: {} entries, {} environments ({resolved} resolved, {} frozen) of {} instances",
            output.display(),
            self.entries,
            self.envs.len(),
            self.envs.len() - resolved,
            self.instances
        )
    }
}

/// `envs lock`: renders every instance's spec (an instance that cannot be rendered refuses the
/// lock), connects to the engine, resolves the environments ([`lock_environments`], `on_env`
/// after each) and writes the lock file.
pub fn lock_to_file(
    request: &LockRequest<'_>,
    on_env: &mut (dyn FnMut(&LockedEnv) + Send),
) -> Result<LockWritten> {
    let mut specs = Vec::new();
    let mut failed = Vec::new();
    for i in request.instances {
        match ExecSpec::new(i, request.table, swtbench_spec::Arch::host(), request.files) {
            Ok(s) => specs.push(s),
            Err(e) => failed.push(format!("{}: {e}", i.instance_id)),
        }
    }
    if !failed.is_empty() {
        let shown: Vec<&str> = failed.iter().take(10).map(String::as_str).collect();
        return Err(Error::input(anyhow!(
            "{} instances cannot be rendered, so their environments cannot be locked:\n  {}",
            failed.len(),
            shown.join("\n  ")
        ))
        .with_hint("--instance-ids selects the instances to lock; --repo-mirror DIR reads requirement files from local mirrors"));
    }
    if specs.is_empty() {
        return Err(Error::input(anyhow!(
            "no instances selected: nothing to lock"
        )));
    }
    let network = crate::env_vars::checked_build_network(request.ca_bundle)?;
    let settings = LockSettings {
        network,
        timeout: request.timeout,
        label: format!("envs-lock-{}", std::process::id()),
    };
    let (rt, backend) = crate::engine::connect_blocking()?;
    let backend = Arc::new(backend);
    let (lock, envs) = rt.block_on(async {
        let mut signals = crate::evaluate::StopSignals::new();
        tokio::select! {
            done = lock_environments(backend.clone(), &specs, &settings, on_env) => done,
            // A signal that cannot be listened for never ends the lock.
            _ = async { if !signals.next().await { std::future::pending::<()>().await } } => {
                Err(interrupted(&*backend, &settings.label).await)
            }
        }
    })?;
    swtbench_data::fsutil::write_atomic(request.output, lock.render().as_bytes()).map_err(|e| {
        Error::environment(anyhow!("cannot write {}: {e}", request.output.display()))
    })?;
    Ok(LockWritten {
        entries: lock.entries.len(),
        envs,
        instances: specs.len(),
    })
}

/// After Ctrl-C or SIGTERM: removes this lock's resolve containers (the resolve under way was
/// dropped; its container may still be in the making, so the sweep is done twice) and says what
/// was left undone. Nothing is written.
async fn interrupted<B: ContainerBackend>(backend: &B, label: &str) -> Error {
    let filter = LabelFilter::new(RUN_ID, label);
    let mut left = Vec::new();
    let mut unlisted = None;
    for pass in 0..2 {
        if pass > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        left.clear();
        match backend.containers_with_label(&filter).await {
            Ok(found) => {
                unlisted = None;
                for c in found {
                    if backend.container_remove(&c.id).await.is_err() {
                        left.push(c.id);
                    }
                }
            }
            Err(e) => unlisted = Some(e),
        }
    }
    let error = Error::interrupted(anyhow!("interrupted: no lock file was written"));
    match (unlisted, left.is_empty()) {
        (Some(e), _) => error.with_hint(format!(
            "the resolve containers could not be listed ({e}): `swtbench clean --run-id {label}` removes them"
        )),
        (None, false) => error.with_hint(format!(
            "these resolve containers could not be removed: {} (docker rm -f)",
            left.join(" ")
        )),
        (None, true) => error,
    }
}

/// The lock of `specs`' environments, and per environment what was done.
pub async fn lock_environments<B: ContainerBackend>(
    backend: Arc<B>,
    specs: &[ExecSpec],
    settings: &LockSettings,
    on_env: &mut (dyn FnMut(&LockedEnv) + Send),
) -> Result<(EnvLock, Vec<LockedEnv>)> {
    let jobs = lock::lock_jobs(specs).map_err(|refused| {
        let list: Vec<String> = refused
            .iter()
            .take(10)
            .map(|(id, why)| format!("{id}: {why}"))
            .collect();
        Error::input(anyhow!(
            "{} instances have environments that cannot be locked:\n  {}",
            refused.len(),
            list.join("\n  ")
        ))
        .with_hint("lock uv environments: add --env-provider uv")
    })?;
    let mut entries = Vec::new();
    let mut done = Vec::new();
    for job in &jobs {
        let names: Vec<String> = job
            .entries
            .keys()
            .map(|(r, v)| format!("{r} {v}"))
            .collect();
        let (pins, origin, resolve_time) = match &job.how {
            LockHow::Frozen { pins, source } => (pins.clone(), source.clone(), None),
            LockHow::Resolve { script, output } => {
                let started = Instant::now();
                let pins = resolve(backend.clone(), job, script, output, settings)
                    .await
                    .map_err(|e| {
                        let what = anyhow!(
                            "resolving the environment of {} in {} failed: {e}",
                            names.join(", "),
                            job.python_image
                        );
                        Error {
                            fault: e.fault,
                            error: what,
                            hint: e.hint,
                        }
                    })?;
                let tool = if script.contains("uv pip freeze") {
                    format!("uv pip freeze (uv {UV_VERSION})")
                } else {
                    "pip freeze --all".to_string()
                };
                (
                    pins,
                    format!("{tool} after the spec's install in {}", job.python_image),
                    Some(started.elapsed()),
                )
            }
        };
        let locked = LockedEnv {
            unlocked_env: job.unlocked_env.clone(),
            python_image: job.python_image.clone(),
            entries: names,
            instances: job.entries.values().map(Vec::len).sum(),
            pins: pins.len(),
            resolve_time,
        };
        on_env(&locked);
        done.push(locked);
        entries.extend(lock::job_entries(job, pins, origin));
    }
    Ok((EnvLock::new("", entries), done))
}

/// Runs one job's resolve script in a throwaway container and reads the frozen set.
async fn resolve<B: ContainerBackend>(
    backend: Arc<B>,
    job: &LockJob,
    script: &str,
    output: &str,
    settings: &LockSettings,
) -> Result<Vec<String>> {
    let engine = |e: swtbench_backend::BackendError| Error::environment(anyhow!("{e}"));
    if !backend
        .image_exists(&job.python_image)
        .await
        .map_err(engine)?
    {
        return Err(Error::environment(anyhow!(
            "the image {} does not exist locally",
            job.python_image
        ))
        .with_hint("swtbench never pulls or builds the Python image: pull or build it, or name another with --python-image"));
    }
    let mut spec = ContainerSpec::new(job.python_image.clone())
        .with_lifetime(settings.timeout + Duration::from_secs(60));
    spec.network = NetworkAccess::Enabled;
    spec.platform = Some(job.platform.to_string());
    spec.labels.insert(MANAGED.into(), "true".into());
    spec.labels.insert(KIND.into(), "env-lock".into());
    spec.labels.insert(RUN_ID.into(), settings.label.clone());
    let mut files =
        vec![ContainerFile::new("/root/swtbench-env-lock.sh", script.as_bytes()).mode(0o755)];
    let mut env: Vec<(String, String)> = settings
        .network
        .proxies()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(bundle) = settings.network.ca_bundle() {
        files.push(ContainerFile::new(CA_IMAGE_PATH, bundle.to_vec()));
        env.extend(
            CA_VARIABLES
                .iter()
                .map(|v| (v.to_string(), CA_IMAGE_PATH.to_string())),
        );
    }
    spec.env = env;
    let id = backend.container_create(&spec).await.map_err(engine)?;
    let guard = ContainerGuard::new(backend.clone(), id.clone());
    let result = async {
        backend.copy_in(&id, &files).await.map_err(engine)?;
        backend.container_start(&id).await.map_err(engine)?;
        let request = ExecRequest::new(["/bin/bash", "/root/swtbench-env-lock.sh"])
            .timeout(settings.timeout)
            .output_limit(64 * 1024);
        let out = backend.exec(&id, &request).await.map_err(engine)?;
        if out.timed_out || out.exit_code != Some(0) {
            let text = out.text();
            let tail: Vec<&str> = text.lines().rev().take(15).collect();
            let how = if out.timed_out {
                format!("it ran out of time ({} s)", settings.timeout.as_secs())
            } else {
                match out.exit_code {
                    Some(code) => format!("the install exited with {code}"),
                    None => "the install was killed".to_string(),
                }
            };
            return Err(Error::environment(anyhow!(
                "{how}; the last lines:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ))
            .with_hint("the resolve needs PyPI: check the network, the proxy variables and the CA bundle ($SSL_CERT_FILE or --ca-bundle)"));
        }
        let frozen = backend.copy_out(&id, output).await.map_err(engine)?;
        Ok(lock::parse_freeze(&String::from_utf8_lossy(&frozen)))
    }
    .await;
    let removed = guard.remove().await;
    let pins = result?;
    removed.map_err(engine)?;
    if pins.is_empty() {
        return Err(Error::environment(anyhow!("the installed set is empty")));
    }
    Ok(pins)
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use std::collections::BTreeMap;

    use swtbench_backend::{FakeBackend, FakeExec};
    use swtbench_core::{Instance, PatchLayout};
    use swtbench_spec::lock::LOCK_OUTPUT_PATH;
    use swtbench_spec::{Arch, Provider, ReadError, TableSyntax};

    use super::*;

    const TABLE: &str = r#"
[repos."swtfix/calc"]
test_command = "pytest -rA"
[[repos."swtfix/calc".specs]]
versions = ["0.1"]
python = "3.11"
provider = "uv"
pip_packages = ["pytest==8.3.3"]
"#;

    fn specs() -> Vec<ExecSpec> {
        let no =
            |p: &str| -> std::result::Result<String, ReadError> { Err(format!("no {p}").into()) };
        let mut t = SpecTable::embedded().clone();
        t.merge(SpecTable::parse(TABLE, "t.toml", TableSyntax::Toml, &no).unwrap());
        let t = t.with_env_provider(Provider::Uv, Some("py:{version}")).0;
        let no_files =
            |_: &str, _: &str, p: &str| -> std::result::Result<Option<String>, ReadError> {
                Err(format!("no {p}").into())
            };
        ["swtfix__calc-1", "swtfix__calc-2"]
            .iter()
            .map(|id| {
                let row = serde_json::json!({
                    "instance_id": id, "repo": "swtfix/calc", "version": "0.1",
                    "base_commit": "b0", "patch": "diff --git a/x.py b/x.py\n",
                    "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n",
                });
                let i = Instance::from_row(&row, PatchLayout::Swebench).unwrap();
                ExecSpec::new(&i, &t, Arch::X86_64, &no_files).unwrap()
            })
            .collect()
    }

    fn settings() -> LockSettings {
        LockSettings {
            network: BuildNetwork::from_parts(Some(b"CERT".to_vec()), |k| {
                (k == "HTTPS_PROXY").then(|| "http://proxy:3128".to_string())
            }),
            timeout: Duration::from_secs(60),
            label: "envs-lock-test".into(),
        }
    }

    fn lock_with(fake: &Arc<FakeBackend>) -> Result<(EnvLock, Vec<LockedEnv>)> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let specs = specs();
        rt.block_on(lock_environments(
            fake.clone(),
            &specs,
            &settings(),
            &mut |_| {},
        ))
    }

    #[test]
    fn envs_show_and_lock_default_to_uv_and_lock_refuses_a_lock_file() {
        let given = EnvChoice {
            provider: Some(Provider::Conda),
            ..EnvChoice::default()
        };
        assert_eq!(
            given.clone().uv_by_default().provider,
            Some(Provider::Conda)
        );
        assert_eq!(
            EnvChoice::default().uv_by_default().provider,
            Some(Provider::Uv)
        );
        let lock = EnvChoice::default().for_lock().unwrap();
        assert_eq!(
            (lock.provider, lock.no_env_lock),
            (Some(Provider::Uv), true)
        );
        let with_file = EnvChoice {
            env_lock: Some("l.toml".into()),
            ..given
        };
        let e = with_file.for_lock().unwrap_err();
        assert!(e.error.to_string().contains("--env-lock reads one"));
    }

    #[test]
    fn one_labelled_networked_container_per_environment_removed_after() {
        let fake = Arc::new(FakeBackend::new());
        fake.add_image("py:3.11", BTreeMap::new());
        fake.on_exec_with(|ctx| {
            let s = ctx.spec;
            assert_eq!(s.network, NetworkAccess::Enabled);
            assert_eq!(s.labels.get(KIND).map(String::as_str), Some("env-lock"));
            assert_eq!(
                s.labels.get(RUN_ID).map(String::as_str),
                Some("envs-lock-test")
            );
            assert!(s.auto_remove, "the container stops and goes by itself");
            let env: BTreeMap<&str, &str> = s
                .env
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            assert_eq!(env.get("SSL_CERT_FILE"), Some(&CA_IMAGE_PATH));
            assert_eq!(env.get("PIP_CERT"), Some(&CA_IMAGE_PATH));
            assert_eq!(env.get("HTTPS_PROXY"), Some(&"http://proxy:3128"));
            assert_eq!(ctx.file_text(CA_IMAGE_PATH).as_deref(), Some("CERT"));
            let script = ctx.file_text("/root/swtbench-env-lock.sh").unwrap();
            assert!(script.contains("uv pip install pytest==8.3.3"), "{script}");
            Some(FakeExec::ok("").writing(ContainerFile::new(
                LOCK_OUTPUT_PATH,
                "pytest==8.3.3\niniconfig==2.0.0\n",
            )))
        });
        let (lock, envs) = lock_with(&fake).unwrap();
        assert_eq!(envs.len(), 1);
        assert_eq!(envs[0].instances, 2);
        assert!(envs[0].resolve_time.is_some());
        assert_eq!(lock.entries.len(), 1);
        assert_eq!(lock.entries[0].pins, ["iniconfig==2.0.0", "pytest==8.3.3"]);
        assert!(
            lock.entries[0].origin.contains("uv pip freeze"),
            "{}",
            lock.entries[0].origin
        );
        assert_eq!(
            fake.count_calls(|c| matches!(c, swtbench_backend::FakeCall::ContainerCreate { .. })),
            1,
            "two instances, one environment, one resolve"
        );
        assert!(fake.containers().is_empty(), "{:?}", fake.containers());
    }

    #[test]
    fn a_failed_resolve_names_the_environment_and_leaves_no_container() {
        let fake = Arc::new(FakeBackend::new());
        fake.add_image("py:3.11", BTreeMap::new());
        fake.set_default_exec(FakeExec::exit(
            1,
            "Collecting pytest\nerror: no route to pypi.org\n",
        ));
        let e = lock_with(&fake).unwrap_err();
        let text = format!("{e}");
        assert!(
            text.contains("resolving the environment of swtfix/calc 0.1 in py:3.11 failed")
                && text.contains("the install exited with 1")
                && text.contains("no route to pypi.org"),
            "{text}"
        );
        assert!(e.hint.unwrap_or_default().contains("CA bundle"));
        assert!(fake.containers().is_empty(), "{:?}", fake.containers());

        // No image: nothing is created, and the hint says swtbench does not pull it.
        let fake = Arc::new(FakeBackend::new());
        let e = lock_with(&fake).unwrap_err();
        assert!(
            format!("{e}").contains("py:3.11 does not exist locally"),
            "{e}"
        );
        assert!(e.hint.unwrap_or_default().contains("never pulls"));
        assert_eq!(
            fake.count_calls(|c| matches!(c, swtbench_backend::FakeCall::ContainerCreate { .. })),
            0
        );
    }

    #[test]
    fn build_files_reach_the_table_with_a_note_and_bad_trees_are_input_faults() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("swtfix__calc/build/lib-1.0");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::write(repo.join("README"), "r\n").unwrap();
        let choice = EnvChoice {
            no_env_lock: true,
            build_files: Some(dir.path().to_path_buf()),
            ..EnvChoice::default()
        };
        let mut notices = Vec::new();
        let table = apply_env_choice(SpecTable::default(), &choice, &mut notices).unwrap();
        let files = &table.build_files["swtfix/calc"];
        assert_eq!((files.files, files.bytes), (1, 2));
        assert!(
            matches!(&notices[..], [Notice::Info(n)] if n.contains("swtfix/calc's checkouts get 1 files")),
            "{notices:?}"
        );

        let empty = tempfile::tempdir().unwrap();
        let choice = EnvChoice {
            build_files: Some(empty.path().to_path_buf()),
            no_env_lock: true,
            ..EnvChoice::default()
        };
        let mut notices = Vec::new();
        let table = apply_env_choice(SpecTable::default(), &choice, &mut notices).unwrap();
        assert!(table.build_files.is_empty());
        assert!(matches!(&notices[..], [Notice::Warn(w)] if w.contains("no <owner>__<name>")));

        std::fs::write(empty.path().join("notes.txt"), "x").unwrap();
        let e = apply_env_choice(SpecTable::default(), &choice, &mut Vec::new()).unwrap_err();
        assert_eq!(e.fault, crate::Fault::Input);
        assert!(format!("{e}").contains("notes.txt"), "{e}");
    }
}
