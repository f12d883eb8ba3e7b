//! Executing one run: a fresh container from the instance image (no network unless allowed, an
//! init, labels, limits), `/eval.sh` (and the tracer) copied in, `/bin/bash /eval.sh` executed
//! with the timeout and the output cap, the outputs written atomically, the container removed (in
//! the background: [`ContainerRegistry::remove_in_background`]).
//!
//! Files of a run directory (§4.8), in the order they are written: the stale key file is removed
//! first; `eval.sh`, `exec_spec.json` and, for the two prediction runs, `model_patch.diff`; after
//! the script, `test_output.txt` (the combined output, written to disk while the script prints,
//! [`crate::output_file`]; a timeout appends [`timeout_marker`]); the key file last. `run_instance.log` collects the harness's own notes. A failure before the output
//! is written leaves no output, so a rerun retries the run.

use crate::lock::Locked;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use swtbench_backend::labels::run_labels;
use swtbench_backend::network::CA_VARIABLES;
use swtbench_backend::{
    BackendError, ContainerBackend, ContainerFile, ContainerSpec, ExecRequest, NetworkAccess,
};
use swtbench_core::layout::{
    EVAL_SCRIPT_FILE, EXEC_SPEC_FILE, MODEL_PATCH_FILE, RUN_INSTANCE_LOG_FILE, TEST_OUTPUT_FILE,
};
use swtbench_core::Instance;
use swtbench_spec::eval::TRACE_PATH;
use swtbench_spec::{ExecSpec, RunInputs};
use tokio::sync::RwLock;

use crate::fsutil::{append_line, remove_if_exists, write_atomic};
use crate::outcome::ExecError;
use crate::output_file::OutputFile;
use crate::session::{Session, SESSION};
use swtbench_plan::keys::{KeyRecord, RunResult, KEY_FILE};
use swtbench_plan::limits::{
    classify, parse_cgroup_counters, CgroupCounters, LimitHit, CGROUP_COUNTERS_SCRIPT,
};
use swtbench_plan::plan::{exec_spec_context, RunPlan};
use swtbench_plan::settings::RunSettings;

/// Where `--ca-in-tests` puts the CA bundle in a test container (readable by every user); the
/// variables of [`CA_VARIABLES`] point at it.
pub const TEST_CA_PATH: &str = "/swtbench-ca-bundle.crt";

/// The line appended to `test_output.txt` when the eval script hit the timeout. None of the log
/// parsers reads it as a test, and it avoids the original's `>>>>> Tests Timed Out` marker, which
/// would void the run's results.
pub fn timeout_marker(timeout: Duration) -> String {
    format!(
        "\n[swtbench: the eval script timed out after {} s and was killed; the output above is what it printed until then]\n",
        timeout.as_secs()
    )
}

/// The line appended to `test_output.txt` when the harness stopped the eval script because the
/// run wrote more than its disk limit (invisible to the parsers, like [`timeout_marker`]).
pub fn disk_limit_marker(limit: u64) -> String {
    format!(
        "\n[swtbench: the run wrote more than its disk limit of {} and was stopped; the output above is what it printed until then]\n",
        swtbench_plan::limits::human_bytes(limit)
    )
}

/// How long the clean-up waits for container creations under way.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(30);

/// Containers this process created and has not removed yet (for cancellation cleanup), and the
/// labels that mark them as this process's.
#[derive(Debug)]
pub struct ContainerRegistry {
    ids: Arc<Mutex<HashSet<String>>>,
    /// Held shared by every creation under way; [`ContainerRegistry::settle`] takes it exclusively
    /// to wait for them.
    creating: Arc<RwLock<()>>,
    /// Held shared by every removal under way in the background
    /// ([`ContainerRegistry::remove_in_background`]); [`ContainerRegistry::settle_removals`]
    /// takes it exclusively to wait for them.
    removing: Arc<RwLock<()>>,
    session: Session,
    /// Per image, the site-packages directories the evidence hook's root step found in its first
    /// container: later runs of the image as root get the `.pth` file with their other files,
    /// before the container starts, instead of a root exec after it.
    evidence_sites: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

impl Default for ContainerRegistry {
    fn default() -> Self {
        ContainerRegistry::new(Session::current())
    }
}

impl ContainerRegistry {
    pub fn new(session: Session) -> Self {
        ContainerRegistry {
            ids: Arc::new(Mutex::new(HashSet::new())),
            creating: Arc::new(RwLock::new(())),
            removing: Arc::new(RwLock::new(())),
            session,
            evidence_sites: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The site-packages directories an earlier container of `image` had (see
    /// [`ContainerRegistry::remember_evidence_sites`]).
    pub fn evidence_sites(&self, image: &str) -> Option<Vec<String>> {
        self.evidence_sites.locked().get(image).cloned()
    }

    /// What the evidence hook's root step found in a container of `image` (kept when it found
    /// any: an image is the same in every container of this process).
    pub fn remember_evidence_sites(&self, image: &str, sites: &[String]) {
        if !sites.is_empty() {
            self.evidence_sites
                .locked()
                .insert(image.to_string(), sites.to_vec());
        }
    }

    /// Creates a container and registers it. The request runs to its end in a task of its own:
    /// the engine finishes a creation whose client has gone away, so a caller dropped meanwhile
    /// (an interrupt) would otherwise leave a container that nobody knows of and that appears
    /// only after the clean-up has looked.
    pub async fn create<B: ContainerBackend>(
        &self,
        backend: &Arc<B>,
        spec: &ContainerSpec,
    ) -> Result<String, BackendError> {
        let creating = self.creating.clone().read_owned().await;
        let (backend, spec, ids) = (backend.clone(), spec.clone(), self.ids.clone());
        let image = spec.image.clone();
        let task = tokio::spawn(async move {
            let _creating = creating;
            let id = backend.container_create(&spec).await?;
            ids.locked().insert(id.clone());
            Ok(id)
        });
        task.await.unwrap_or_else(|e| {
            Err(BackendError::Engine {
                operation: format!("creating a container from {image}"),
                message: format!("the creating task ended: {e}"),
            })
        })
    }

    /// Waits until no creation is under way (every container asked for is registered by then),
    /// at most [`SETTLE_LIMIT`]: an engine that does not answer must not hold up the clean-up,
    /// which also looks for this process's containers by label.
    pub async fn settle(&self) {
        let _ = tokio::time::timeout(SETTLE_LIMIT, self.creating.write()).await;
    }

    /// Removes a finished run's container in a task of its own, off the run's path: removing a
    /// container whose tests wrote thousands of files takes the engine seconds, and nothing of
    /// the run waits for it. The container stays registered until it is gone (a failed removal
    /// leaves it for the clean-up at the end, and `on_failure` says why). Whoever needs it gone
    /// (the removal of its image, the end of the evaluation) waits with
    /// [`ContainerRegistry::settle_removals`].
    pub async fn remove_in_background<B: ContainerBackend>(
        &self,
        backend: &Arc<B>,
        id: String,
        on_failure: impl FnOnce(BackendError) + Send + 'static,
    ) {
        let removing = self.removing.clone().read_owned().await;
        let (backend, ids) = (backend.clone(), self.ids.clone());
        tokio::spawn(async move {
            let _removing = removing;
            match backend.container_remove(&id).await {
                Ok(_) => {
                    ids.locked().remove(&id);
                }
                Err(e) => on_failure(e),
            }
        });
    }

    /// Waits until no removal started by [`ContainerRegistry::remove_in_background`] is under
    /// way, at most [`SETTLE_LIMIT`].
    pub async fn settle_removals(&self) {
        let _ = tokio::time::timeout(SETTLE_LIMIT, self.removing.write()).await;
    }

    /// Whether a creation is under way right now.
    pub fn creating_now(&self) -> bool {
        self.creating.try_write().is_err()
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The labels of a container of this process: run id, instance, run and session.
    pub fn labels(&self, run_id: &str, instance_id: &str, run: &str) -> BTreeMap<String, String> {
        let mut labels = run_labels(run_id, instance_id, run);
        labels.insert(SESSION.to_string(), self.session.as_str().to_string());
        labels
    }

    pub fn remove(&self, id: &str) {
        self.ids.locked().remove(id);
    }
    pub fn ids(&self) -> Vec<String> {
        let mut v: Vec<String> = self.ids.locked().iter().cloned().collect();
        v.sort();
        v
    }
}

/// What executing a run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executed {
    pub result: RunResult,
    /// Harness time around the script: create, copy, start, the evidence and limit reads, the
    /// outputs written (the container's removal runs in the background, see
    /// [`ContainerRegistry::remove_in_background`]).
    pub overhead: Duration,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> ExecError + '_ {
    move |e| ExecError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
        kind: e.kind(),
    }
}

/// Everything one run needs.
#[derive(Debug, Clone, Copy)]
pub struct RunJob<'a> {
    pub instance_id: &'a str,
    pub run: &'a RunPlan,
    /// What the run's texts (`eval.sh`, `exec_spec.json`, the executed script) are rendered
    /// from when it executes: the plan keeps only their hash.
    pub instance: &'a Instance,
    pub spec: &'a ExecSpec,
    /// The model's directory name (for `exec_spec.json`).
    pub model_dir: &'a str,
    pub image: &'a str,
    pub user: &'a str,
    pub platform: &'a str,
    /// The model patch as executed, written as `model_patch.diff` in the prediction runs.
    pub model_patch: &'a str,
    /// The tracer's text when coverage is on.
    pub tracer: Option<&'a str>,
}

/// The script a container executes: the eval script with the line that records the test
/// command's exit code, or the eval script itself when it has no test command line.
#[derive(Debug)]
pub struct ScriptToRun {
    pub text: String,
    pub records_test_exit: bool,
}

/// Writes the files that describe a run before it executes (and drops a stale key first), and
/// returns the script to execute. The texts are rendered here, one after the other, each dropped
/// once written: with a big model patch every one of them is as big as the patch.
pub fn write_run_inputs(
    settings: &RunSettings,
    job: &RunJob<'_>,
) -> Result<ScriptToRun, ExecError> {
    let dir = &job.run.dir;
    // What a process killed mid-write left here.
    swtbench_data::fsutil::remove_stale_temp_files(dir);
    let key = dir.join(KEY_FILE);
    remove_if_exists(&key).map_err(io_err(&key))?;
    crate::evidence::remove_stale(dir).map_err(io_err(dir))?;
    let render_err = |message: String| ExecError::Render {
        run: job.run.kind.to_string(),
        message,
    };
    let inputs = RunInputs {
        model_patch: job.model_patch,
        gold_test_patch: &job.instance.golden_test_patch,
        gold_code_patch: &job.instance.golden_code_patch,
    };
    let mut rendered = job
        .spec
        .render_run(job.run.kind, &inputs, &settings.eval)
        .map_err(|e| render_err(e.to_string()))?;
    // The inputs hold the same patches.
    rendered.patch_list = Vec::new();
    if swtbench_core::hash::sha256_hex(&rendered.eval_script)
        != job.run.key_inputs.eval_script_sha256
    {
        return Err(render_err(
            "the script differs from the one the run's key was computed from".into(),
        ));
    }
    let p = dir.join(EVAL_SCRIPT_FILE);
    write_atomic(&p, rendered.eval_script.as_bytes()).map_err(|e| io_err(&p)(e.source))?;
    let json = job.spec.exec_spec_json_with(
        &rendered,
        &swtbench_spec::eval::patch_list(job.run.kind, &inputs),
        &settings.eval,
        &exec_spec_context(settings, job.model_dir),
    );
    let p = dir.join(EXEC_SPEC_FILE);
    write_atomic(&p, json.as_bytes()).map_err(|e| io_err(&p)(e.source))?;
    drop(json);
    if !job.run.kind.is_shared() {
        let p = dir.join(MODEL_PATCH_FILE);
        write_atomic(&p, job.model_patch.as_bytes()).map_err(|e| io_err(&p)(e.source))?;
    }
    Ok(match rendered.executed_script() {
        Some(text) => ScriptToRun {
            text,
            records_test_exit: true,
        },
        None => ScriptToRun {
            text: rendered.eval_script,
            records_test_exit: false,
        },
    })
}

/// Writes `test_output.txt` and then the key file.
pub fn write_run_outputs(
    run: &RunPlan,
    output: &[u8],
    result: &RunResult,
) -> Result<(), ExecError> {
    let p = run.dir.join(TEST_OUTPUT_FILE);
    write_atomic(&p, output).map_err(|e| io_err(&p)(e.source))?;
    write_key_file(run, result, swtbench_core::hash::sha256_hex(output))
}

/// Writes the key file of a run whose `test_output.txt` (with SHA-256 `output_sha256`) is written.
pub fn write_key_file(
    run: &RunPlan,
    result: &RunResult,
    output_sha256: String,
) -> Result<(), ExecError> {
    let record = KeyRecord {
        key: run.key.clone(),
        inputs: run.key_inputs.clone(),
        result: result.clone(),
        output_sha256,
        limits: run.limits,
    };
    let p = run.dir.join(KEY_FILE);
    write_atomic(&p, record.to_json().as_bytes()).map_err(|e| io_err(&p)(e.source))
}

fn log(dir: &Path, line: &str) {
    let stamp = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S%.3f");
    // The log is informational; failing to append must not fail the run.
    let _ = append_line(&dir.join(RUN_INSTANCE_LOG_FILE), &format!("{stamp} {line}"));
}

/// Executes one run end to end. The container is removed whatever happens, except when the
/// future is dropped (cancellation): then it stays in `registry` for the caller to remove (after
/// [`ContainerRegistry::settle`]).
pub async fn execute_run<B: ContainerBackend>(
    backend: &Arc<B>,
    settings: &RunSettings,
    registry: &ContainerRegistry,
    job: &RunJob<'_>,
) -> Result<Executed, ExecError> {
    let started = Instant::now();
    let dir = &job.run.dir;
    let script = write_run_inputs(settings, job)?;
    let spec = run_container_spec(settings, registry, job);
    let id = crate::retry::engine_request(
        || registry.create(backend, &spec),
        |e, pause| {
            log(
                dir,
                &format!("creating the container failed ({e}); trying again in {pause:?}"),
            )
        },
    )
    .await
    .map_err(ExecError::Engine)?;
    let create_time = started.elapsed();
    log(dir, &format!("container {id} created from {}", job.image));
    let result = run_in_container(backend.as_ref(), settings, registry, &id, job, script).await;
    // A container that could not be removed stays registered for the clean-up at the end.
    let log_dir = dir.clone();
    let removed = id.clone();
    registry
        .remove_in_background(backend, id.clone(), move |e| {
            log(
                &log_dir,
                &format!("removing container {removed} failed: {e}"),
            )
        })
        .await;
    let InContainer {
        output,
        duration: exec_duration,
        exit_code,
        test_exit_code,
        timed_out,
        limit,
        stopped_for_disk,
        evidence,
        steps,
    } = result?;
    if let Some(evidence) = &evidence {
        crate::evidence::write(dir, evidence).map_err(io_err(dir))?;
    }
    let marker = if timed_out {
        Some(timeout_marker(settings.exec.timeout))
    } else if stopped_for_disk {
        Some(disk_limit_marker(
            settings.exec.limits.disk_bytes.unwrap_or_default(),
        ))
    } else {
        None
    };
    let written = output
        .finish(marker.as_deref())
        .map_err(|e| io_err(&e.path)(e.source))?;
    let run_result = RunResult {
        exit_code,
        test_exit_code,
        timed_out,
        omitted_bytes: written.omitted,
        duration_ms: exec_duration.as_millis() as u64,
        limit,
    };
    write_key_file(job.run, &run_result, written.sha256)?;
    log_run_end(dir, settings, &run_result, exec_duration);
    let overhead = started.elapsed().saturating_sub(exec_duration);
    log_overhead(dir, overhead, create_time, steps);
    Ok(Executed {
        result: run_result,
        overhead,
    })
}

/// The spec of a run's container: the job's image, user and platform, the run's labels, the
/// settings' limits and network, the CA variables of `--ca-in-tests`, and a lifetime that ends it
/// shortly after the timeout even when this process is killed.
fn run_container_spec(
    settings: &RunSettings,
    registry: &ContainerRegistry,
    job: &RunJob<'_>,
) -> ContainerSpec {
    // The container ends itself shortly after the timeout even when this process is killed.
    let mut spec = ContainerSpec::new(job.image).with_lifetime(container_lifetime(settings));
    spec.user = Some(job.user.to_string());
    spec.labels = registry.labels(&settings.run_id, job.instance_id, job.run.kind.as_str());
    spec.limits = settings.exec.limits;
    spec.network = if settings.exec.allow_network {
        NetworkAccess::Enabled
    } else {
        NetworkAccess::Isolated
    };
    spec.platform = Some(job.platform.to_string());
    if settings.exec.test_ca.is_some() {
        spec.env.extend(
            CA_VARIABLES
                .iter()
                .map(|v| (v.to_string(), TEST_CA_PATH.to_string())),
        );
    }
    spec
}

/// Writes the limit the run reached, if any, and how its eval script ended into the run log.
fn log_run_end(dir: &Path, settings: &RunSettings, result: &RunResult, exec_duration: Duration) {
    let RunResult {
        exit_code,
        test_exit_code,
        timed_out,
        limit,
        ..
    } = *result;
    if let Some(hit) = limit {
        log(
            dir,
            &format!(
                "the run reached {hit}: {} ({})",
                hit.amount(&settings.exec.limits),
                hit.flag()
            ),
        );
    }
    log(
        dir,
        &if timed_out {
            format!(
                "eval script timed out after {} s; output kept",
                settings.exec.timeout.as_secs()
            )
        } else {
            format!(
                "tests exited with {} after {:.1} s (eval script: {})",
                test_exit_code.map_or("no recorded code".to_string(), |c| c.to_string()),
                exec_duration.as_secs_f64(),
                exit_code.map_or("no code".to_string(), |c| c.to_string()),
            )
        },
    );
}

/// Writes the harness's time around the eval script, and that of each of its steps, into the
/// run log.
fn log_overhead(dir: &Path, overhead: Duration, create_time: Duration, steps: Steps) {
    log(
        dir,
        &format!(
            "harness time around the script: {} ms (create {} ms, files in {} ms, start {} ms, \
             evidence hook {} ms, reads after the script {} ms)",
            overhead.as_millis(),
            create_time.as_millis(),
            steps.copy_in.as_millis(),
            steps.start.as_millis(),
            steps.hook.as_millis(),
            steps.after.as_millis(),
        ),
    );
}

/// How long a run's container may live: the timeout and [`CONTAINER_GRACE`] for the setup
/// before the script and the reads after it.
pub fn container_lifetime(settings: &RunSettings) -> Duration {
    settings.exec.timeout + CONTAINER_GRACE
}

/// See [`container_lifetime`].
pub const CONTAINER_GRACE: Duration = Duration::from_secs(20);

/// What happened in the container.
struct InContainer {
    /// The output, not yet in place.
    output: OutputFile,
    duration: Duration,
    exit_code: Option<i64>,
    test_exit_code: Option<i64>,
    timed_out: bool,
    limit: Option<LimitHit>,
    /// The disk watch ended the script.
    stopped_for_disk: bool,
    /// The test runner's evidence, when the hook was put in place.
    evidence: Option<crate::evidence::Collected>,
    /// How long the harness's own steps in the container took.
    steps: Steps,
}

/// The harness's steps around the eval script, timed (the run log names them).
#[derive(Debug, Default, Clone, Copy)]
struct Steps {
    copy_in: Duration,
    start: Duration,
    hook: Duration,
    after: Duration,
}

async fn run_in_container<B: ContainerBackend>(
    backend: &B,
    settings: &RunSettings,
    registry: &ContainerRegistry,
    id: &str,
    job: &RunJob<'_>,
    script: ScriptToRun,
) -> Result<InContainer, ExecError> {
    let engine = ExecError::Engine;
    let records_test_exit = script.records_test_exit;
    let mut files = run_files(settings, job, script.text);
    let plan = evidence_plan(settings, job);
    // Every file of the run goes in with one archive before the container starts (a round trip
    // less than a copy per step). Nothing runs in the container until then; the root step that
    // puts the hook in place reads none of the run's files, and the eval script runs after it.
    // As root, an image whose site-packages directories an earlier container showed gets the
    // `.pth` file there in the same archive (the hook's directory is root's, as the eval script).
    let known_sites = match &plan {
        Some(_) if job.user == "root" => registry.evidence_sites(job.image),
        _ => None,
    };
    if let Some(plan) = &plan {
        files.extend(plan.files());
        if let Some(sites) = &known_sites {
            files.extend(plan.site_files(sites));
        }
    }
    let mut steps = Steps::default();
    let step = Instant::now();
    backend.copy_in(id, &files).await.map_err(engine)?;
    drop(files);
    steps.copy_in = step.elapsed();
    let step = Instant::now();
    backend.container_start(id).await.map_err(engine)?;
    steps.start = step.elapsed();
    let evidence_started = Instant::now();
    let sites = hook_sites(backend, registry, id, job, plan.as_ref(), known_sites).await;
    let mut evidence_time = evidence_started.elapsed();
    steps.hook = evidence_time;
    let limits = &settings.exec.limits;
    let mut request = ExecRequest::new(["/bin/bash", "/eval.sh"]).timeout(settings.exec.timeout);
    request.output_limit = settings.exec.max_output;
    request.disk_limit = limits.disk_bytes;
    // Straight to disk (head and tail when capped): a test may print more than fits in memory.
    let path = job.run.dir.join(TEST_OUTPUT_FILE);
    let mut output = OutputFile::create_listed(&path, &settings.outputs.logs, request.output_limit)
        .map_err(|e| io_err(&path)(e.source))?;
    let out = backend
        .exec_to(id, &request, &mut output)
        .await
        .map_err(engine)?;
    let ended_early = out.timed_out || out.disk_limit_hit;
    let wants_exit = !ended_early && records_test_exit;
    let step = Instant::now();
    let Leftovers {
        test_exit_code,
        counters,
        written,
        evidence,
        collect_time,
    } = read_leftovers(backend, id, limits, wants_exit, plan.as_ref(), sites).await;
    steps.after = step.elapsed();
    let evidence = evidence.transpose().map_err(engine)?;
    let limit = if limits.is_unlimited() {
        None
    } else {
        classify(limits, out.disk_limit_hit, written, counters)
    };
    evidence_time += collect_time;
    if plan.is_some() {
        log_evidence(job, evidence.as_ref(), evidence_time);
    }
    Ok(InContainer {
        output,
        duration: out.duration,
        exit_code: out.exit_code,
        test_exit_code,
        timed_out: out.timed_out,
        limit,
        stopped_for_disk: out.disk_limit_hit,
        evidence,
        steps,
    })
}

/// The run's files for the container before the evidence hook's: the eval script, the tracer
/// and the CA bundle of `--ca-in-tests`.
fn run_files(settings: &RunSettings, job: &RunJob<'_>, script: String) -> Vec<ContainerFile> {
    let mut files = vec![ContainerFile::new("/eval.sh", script).mode(0o755)];
    if let Some(tracer) = job.tracer {
        files.push(ContainerFile::new(TRACE_PATH, tracer.to_string()));
    }
    if let Some(ca) = &settings.exec.test_ca {
        files.push(ContainerFile::new(TEST_CA_PATH, ca.bytes.as_slice()).mode(0o644));
    }
    files
}

/// The evidence hook's plan when the settings ask for evidence; none (and a line in the run log)
/// when its secret cannot be made.
fn evidence_plan(
    settings: &RunSettings,
    job: &RunJob<'_>,
) -> Option<crate::evidence::EvidencePlan> {
    if settings.exec.evidence {
        match crate::evidence::EvidencePlan::new() {
            Ok(plan) => Some(plan),
            Err(e) => {
                log(
                    &job.run.dir,
                    &format!("no evidence for this run: reading random bytes failed: {e}"),
                );
                None
            }
        }
    } else {
        None
    }
}

/// The site-packages directories that hold the evidence hook of `plan` in the started container:
/// the image's `known_sites` (the hook went in with the run's files), else those the hook is
/// installed into now (remembered for the image); none without a plan.
async fn hook_sites<B: ContainerBackend>(
    backend: &B,
    registry: &ContainerRegistry,
    id: &str,
    job: &RunJob<'_>,
    plan: Option<&crate::evidence::EvidencePlan>,
    known_sites: Option<Vec<String>>,
) -> Vec<String> {
    match (plan, known_sites) {
        (Some(_), Some(sites)) => {
            log(
                &job.run.dir,
                &format!(
                    "evidence hook copied in with the run's files: {} site-packages director{} of the image",
                    sites.len(),
                    if sites.len() == 1 { "y" } else { "ies" }
                ),
            );
            sites
        }
        (Some(plan), None) => {
            let sites = crate::evidence::install(backend, id, plan).await;
            registry.remember_evidence_sites(job.image, &sites);
            sites
        }
        (None, _) => Vec::new(),
    }
}

/// What a run left in its container, read after the eval script.
struct Leftovers {
    /// The test command's exit code as the script recorded it.
    test_exit_code: Option<i64>,
    /// The container's cgroup counters (zero when not read).
    counters: CgroupCounters,
    /// What the container wrote, when a disk or file limit asks.
    written: Option<swtbench_core::engine::Written>,
    /// The evidence of the hook, when it is in place.
    evidence: Option<Result<crate::evidence::Collected, BackendError>>,
    /// How long collecting the evidence took.
    collect_time: Duration,
}

/// Reads what the run left in container `id`.
async fn read_leftovers<B: ContainerBackend>(
    backend: &B,
    id: &str,
    limits: &swtbench_core::engine::ResourceLimits,
    wants_exit: bool,
    plan: Option<&crate::evidence::EvidencePlan>,
    sites: Vec<String>,
) -> Leftovers {
    // What the run left is read at once, three independent requests: one exec for the recorded
    // exit code and the cgroup counters (an exec costs a few hundred milliseconds on some
    // engines), the writable layer's size, and the evidence through the archive API.
    let after = async {
        if wants_exit || !limits.is_unlimited() {
            after_run(backend, id, wants_exit, !limits.is_unlimited()).await
        } else {
            (None, CgroupCounters::default())
        }
    };
    let written = async {
        match limits.disk_bytes.or(limits.file_bytes) {
            Some(_) if !limits.is_unlimited() => {
                backend.container_written_bytes(id).await.ok().flatten()
            }
            _ => None,
        }
    };
    let collect = async {
        let started = Instant::now();
        let evidence = match (plan, sites.is_empty()) {
            (Some(plan), false) => Some(crate::evidence::collect(backend, id, plan, sites).await),
            _ => None,
        };
        (evidence, started.elapsed())
    };
    let ((test_exit_code, counters), written, (evidence, collect_time)) =
        tokio::join!(after, written, collect);
    Leftovers {
        test_exit_code,
        counters,
        written,
        evidence,
        collect_time,
    }
}

/// Writes the evidence's state and size (or that the image had no Python environment for the
/// hook) and the hook's time into the run log.
fn log_evidence(
    job: &RunJob<'_>,
    evidence: Option<&crate::evidence::Collected>,
    evidence_time: Duration,
) {
    log(
        &job.run.dir,
        &match evidence {
            Some(e) => format!(
                "evidence: {} ({} bytes) in {} ms",
                e.meta.state.as_str(),
                e.meta.bytes,
                evidence_time.as_millis()
            ),
            None => format!(
                "evidence: no Python environment for the hook in the image ({} ms)",
                evidence_time.as_millis()
            ),
        },
    );
}

/// What a finished run left for the harness, read by one exec as root: the test command's exit
/// code as the executed script recorded it in [`swtbench_spec::TEST_EXIT_FILE`] (`wants_exit`),
/// and the container's cgroup counters (`wants_counters`; zero when they cannot be read). The tests
/// could have put anything in the exit file: only a regular file is read, at most 64 bytes, and
/// only digits and `-` of it reach the output, so it cannot pose as counters.
async fn after_run<B: ContainerBackend>(
    backend: &B,
    id: &str,
    wants_exit: bool,
    wants_counters: bool,
) -> (Option<i64>, CgroupCounters) {
    let mut request = ExecRequest::new([
        "/bin/sh",
        "-c",
        &after_run_script(wants_exit, wants_counters),
    ])
    .timeout(Duration::from_secs(10));
    request.user = Some("root".to_string());
    request.output_limit = Some(4096);
    match backend.exec(id, &request).await {
        Ok(out) => parse_after_run(&String::from_utf8_lossy(&out.output), wants_exit),
        Err(_) => (None, CgroupCounters::default()),
    }
}

/// The marker line before the recorded exit code in [`after_run_script`]'s output.
const EXIT_MARKER: &str = "== swtbench test exit";

/// The script of `after_run`.
pub fn after_run_script(wants_exit: bool, wants_counters: bool) -> String {
    let mut parts: Vec<String> = Vec::new();
    if wants_counters {
        parts.push(CGROUP_COUNTERS_SCRIPT.to_string());
    }
    if wants_exit {
        parts.push(format!(
            "echo '{EXIT_MARKER}'; f={}; if [ -f \"$f\" ] && [ ! -L \"$f\" ]; then head -c 64 \"$f\" | tr -cd '0-9-'; fi; echo",
            swtbench_spec::TEST_EXIT_FILE
        ));
    }
    parts.push("true".to_string());
    parts.join("; ")
}

/// Reads [`after_run_script`]'s output: the recorded exit code (when asked for and a number) and
/// the cgroup counters printed before it.
pub fn parse_after_run(text: &str, wants_exit: bool) -> (Option<i64>, CgroupCounters) {
    let (counters, exit) = match text.rfind(EXIT_MARKER) {
        Some(at) if wants_exit => (&text[..at], Some(&text[at + EXIT_MARKER.len()..])),
        _ => (text, None),
    };
    let code = exit.and_then(|e| e.trim().parse().ok());
    (code, parse_cgroup_counters(counters))
}

/// Gives `run` the output of `from` (a run with the same key): the run's own input files, the
/// other's `test_output.txt` and result, and its own key file.
pub fn copy_run(
    settings: &RunSettings,
    from: &Path,
    job: &RunJob<'_>,
    result: &RunResult,
) -> Result<(), ExecError> {
    write_run_inputs(settings, job)?;
    // The source has the same key; it must still hold the output written with it. Copied piece
    // by piece while its hash is checked (an output can be hundreds of megabytes).
    let dest = job.run.dir.join(TEST_OUTPUT_FILE);
    let copied = crate::keys::scan_output(
        from,
        Some(&job.run.key),
        || OutputFile::create_listed(&dest, &settings.outputs.logs, None),
        |out, bytes| {
            if let Ok(out) = out {
                swtbench_backend::OutputSink::push(out, bytes);
            }
        },
    )
    .map_err(ExecError::Output)?
    .and_then(|out| out.finish(None))
    .map_err(|e| io_err(&e.path)(e.source))?;
    crate::evidence::copy(from, &job.run.dir).map_err(io_err(&job.run.dir))?;
    write_key_file(job.run, result, copied.sha256)?;
    log(
        &job.run.dir,
        &format!("output copied from {} (same content key)", from.display()),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_after_run_read_gives_the_exit_code_and_counters_and_cannot_be_forged() {
        let both = after_run_script(true, true);
        assert!(
            both.contains("memory.oom_control") && both.contains(swtbench_spec::TEST_EXIT_FILE)
        );
        assert!(both.ends_with("; echo; true"), "{both}");
        assert!(!after_run_script(false, true).contains(EXIT_MARKER));
        assert!(!after_run_script(true, false).contains("cgroup"));

        let out = format!("== /sys/fs/cgroup/memory.events\noom_kill 2\n== /sys/fs/cgroup/pids.events\nmax 0\n{EXIT_MARKER}\n-9\n");
        let (code, c) = parse_after_run(&out, true);
        assert_eq!(code, Some(-9));
        assert_eq!(c.oom_kills, 2);
        assert_eq!(c.pids_refused, 0);
        // Not asked for: no code, even when the text has one.
        assert_eq!(parse_after_run(&out, false).0, None);
        // Nothing recorded, or something that is not a number.
        assert_eq!(parse_after_run(&format!("{EXIT_MARKER}\n\n"), true).0, None);
        assert_eq!(
            parse_after_run(&format!("{EXIT_MARKER}\n1-2\n"), true).0,
            None
        );
        // The exit file's text comes after the counters and cannot add any (the script keeps
        // only digits and `-` of it; the parse ignores what follows the marker).
        let forged = format!("{EXIT_MARKER}\n== /sys/fs/cgroup/memory.events\noom_kill 9\n");
        assert_eq!(parse_after_run(&forged, true).1, CgroupCounters::default());
    }

    use super::*;

    #[test]
    fn the_timeout_marker_is_invisible_to_the_parsers() {
        let log = format!(
            "+ pytest -rA tests/t.py\nApplied patch tests/t.py cleanly.\ncollected 1 item\n{}",
            timeout_marker(Duration::from_secs(20))
        );
        for parser in swtbench_grade::Parser::ALL {
            if parser == swtbench_grade::Parser::ReproductionScript {
                continue;
            }
            let parsed = swtbench_grade::logs::parse_text(&log, parser);
            let disk = swtbench_grade::logs::parse_text(
                &log.replace(
                    &timeout_marker(Duration::from_secs(20)),
                    &disk_limit_marker(1 << 30),
                ),
                parser,
            );
            assert!(
                disk.tests.is_empty() && disk.applied,
                "{parser}: the disk marker"
            );
            assert!(parsed.tests.is_empty(), "{parser}: {:?}", parsed.tests);
            assert!(parsed.applied, "{parser}: the marker must not void the run");
        }
    }
}
