//! `swtbench slurm`: an evaluation as a Slurm array job (one task per shard, each running
//! `swtbench run … --shard K/N` on a node with a container engine) and a merge job that depends
//! on it (`swtbench run … --merge`). The scripts are rendered from data ([`array_script`],
//! [`merge_script`]); [`submit`] hands them to `sbatch` and records the job ids next to them
//! (`<output dir>/slurm/<run id>/jobs.json`), which [`run_status`] reads back together with the
//! shards' progress in the shared output tree and the scheduler's view of the jobs.
//!
//! Submitting again after failures submits only the shards that did not finish (their finished
//! runs are reused), and a new merge job.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::anyhow;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::lines::Line;
use crate::shards::ShardStatus;

/// File name of the submission record, in the script directory.
pub const JOBS_FILE: &str = "jobs.json";

/// `sbatch` options of the shard tasks (each one only when given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SbatchOptions {
    pub partition: Option<String>,
    pub time: Option<String>,
    pub cpus_per_task: Option<u32>,
    pub mem: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// Further `#SBATCH` options, as given (`--constraint=docker`).
    pub extra: Vec<String>,
}

/// What the scripts of one run are made of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub run_id: String,
    /// N of `--shard K/N`.
    pub shards: usize,
    /// The swtbench binary as the nodes see it.
    pub binary: PathBuf,
    /// The working directory of every task (the run flags' relative paths are relative to it).
    pub workdir: PathBuf,
    /// `swtbench run`'s flags as given, without `--shard`.
    pub run_flags: Vec<String>,
    pub options: SbatchOptions,
    /// Where the scripts, the tasks' output and the record go.
    pub script_dir: PathBuf,
}

impl Job {
    fn job_name(&self) -> String {
        let safe: String = self
            .run_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("swtbench-{safe}")
    }

    fn command(&self, extra: &str) -> String {
        let mut words = vec![
            crate::shell::quote(&self.binary.display().to_string()),
            "run".to_string(),
        ];
        words.extend(self.run_flags.iter().map(|f| crate::shell::quote(f)));
        format!("exec {} {extra}", words.join(" "))
    }

    fn header(&self, name: &str, output: &str) -> Vec<String> {
        let mut lines = vec![
            format!("#SBATCH --job-name={name}"),
            format!(
                "#SBATCH --output={}",
                self.script_dir.join(output).display()
            ),
            format!("#SBATCH --chdir={}", self.workdir.display()),
        ];
        let o = &self.options;
        let mut opt = |flag: &str, v: &Option<String>| {
            if let Some(v) = v {
                lines.push(format!("#SBATCH --{flag}={v}"));
            }
        };
        opt("partition", &o.partition);
        opt("time", &o.time);
        opt("account", &o.account);
        opt("qos", &o.qos);
        lines
    }
}

/// `1-3`, `2,4-5`: the `--array` value of the shard indices (from 1).
pub fn array_ranges(indices: &[usize]) -> String {
    let mut sorted = indices.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// The array job of the shards `indices` (from 1) of `job`.
pub fn array_script(job: &Job, indices: &[usize]) -> String {
    let mut lines = vec![
        "#!/bin/bash".to_string(),
        format!(
            "# swtbench: the shards of run {} (array task K runs --shard K/{}).",
            job.run_id, job.shards
        ),
    ];
    lines.extend(job.header(&job.job_name(), "shard-%a.out"));
    lines.push(format!("#SBATCH --array={}", array_ranges(indices)));
    if let Some(c) = job.options.cpus_per_task {
        lines.push(format!("#SBATCH --cpus-per-task={c}"));
    }
    if let Some(m) = &job.options.mem {
        lines.push(format!("#SBATCH --mem={m}"));
    }
    lines.extend(job.options.extra.iter().map(|e| format!("#SBATCH {e}")));
    lines.push("set -euo pipefail".into());
    lines.push(
        "# Each node needs a container engine: Docker, or rootless Podman's Docker-compatible \
         socket in DOCKER_HOST."
            .into(),
    );
    lines.push(job.command(&format!(
        "--shard \"${{SLURM_ARRAY_TASK_ID}}/{}\"",
        job.shards
    )));
    lines.join("\n") + "\n"
}

/// The merge job of `job`: the reports over all shards, once they ended (the dependency is given
/// when it is submitted).
pub fn merge_script(job: &Job) -> String {
    let mut lines = vec![
        "#!/bin/bash".to_string(),
        format!(
            "# swtbench: the reports over the {} shards of run {} (runs nothing; fails naming \
             the shards that did not finish).",
            job.shards, job.run_id
        ),
    ];
    lines.extend(job.header(&format!("{}-merge", job.job_name()), "merge.out"));
    lines.push("set -euo pipefail".into());
    lines.push(job.command("--merge"));
    lines.join("\n") + "\n"
}

/// What was submitted, recorded next to the scripts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submission {
    pub format: u32,
    pub run_id: String,
    /// The run's model directory (where the shards' reports go).
    pub model_dir: String,
    /// The run's output directory, as the tasks see it.
    pub output_dir: PathBuf,
    pub shards: usize,
    /// The shards submitted in the latest array job (all of them the first time).
    pub submitted: Vec<usize>,
    /// Array job id (none when every shard had finished before).
    pub array_job: Option<String>,
    pub merge_job: String,
    /// Earlier submissions' job ids, oldest first.
    #[serde(default)]
    pub earlier: Vec<String>,
}

/// The scripts of a submission, written.
#[derive(Debug, Clone)]
pub struct Scripts {
    pub array: Option<PathBuf>,
    pub merge: PathBuf,
}

/// The script directory of a run: `<output dir>/slurm/<run id>`.
pub fn script_dir(output_dir: &Path, run_id: &str) -> PathBuf {
    output_dir.join("slurm").join(run_id)
}

/// Writes the scripts for the shards `indices` (none: only the merge).
pub fn write_scripts(job: &Job, indices: &[usize]) -> Result<Scripts> {
    let env = |e: std::io::Error, p: &Path| {
        Error::environment(anyhow!("writing {}: {e}", p.display()))
            .with_hint("--output-dir must name a directory this user can write to")
    };
    std::fs::create_dir_all(&job.script_dir).map_err(|e| env(e, &job.script_dir))?;
    let array = match indices.is_empty() {
        true => None,
        false => {
            let p = job.script_dir.join("shards.sbatch");
            swtbench_data::fsutil::write_atomic(&p, array_script(job, indices).as_bytes())
                .map_err(|e| env(e.source, &p))?;
            Some(p)
        }
    };
    let merge = job.script_dir.join("merge.sbatch");
    swtbench_data::fsutil::write_atomic(&merge, merge_script(job).as_bytes())
        .map_err(|e| env(e.source, &merge))?;
    Ok(Scripts { array, merge })
}

/// The job id `sbatch --parsable` printed (`123` or `123;cluster`).
pub fn parse_job_id(stdout: &str) -> Option<String> {
    let id = stdout.trim().split(';').next()?.trim();
    (!id.is_empty() && id.chars().all(|c| c.is_ascii_digit())).then(|| id.to_string())
}

fn sbatch(args: &[String], script: &Path) -> Result<String> {
    let out = Command::new("sbatch")
        .arg("--parsable")
        .args(args)
        .arg(script)
        .output()
        .map_err(|e| {
            Error::environment(anyhow!("running sbatch: {e}"))
                .with_hint("submit from a Slurm login node (sbatch on PATH), or use --print")
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(Error::environment(anyhow!(
            "sbatch {} failed ({}): {}",
            script.display(),
            out.status,
            stderr.trim()
        ))
        .with_hint("check the #SBATCH options (--partition, --time, …) against the cluster"));
    }
    parse_job_id(&stdout).ok_or_else(|| {
        Error::environment(anyhow!(
            "sbatch {} printed no job id: {:?}",
            script.display(),
            stdout.trim()
        ))
    })
}

/// What `slurm submit` is asked for: the run (its flags, checked), the shards, and how to submit.
#[derive(Debug, Clone)]
pub struct SubmitRequest {
    pub run_id: String,
    /// `--output-dir` as given.
    pub output_dir: PathBuf,
    /// The predictions' model.
    pub model: String,
    pub shards: usize,
    /// `--swtbench`: the binary as the nodes see it (default: this process's binary).
    pub binary: Option<PathBuf>,
    pub run_flags: Vec<String>,
    pub options: SbatchOptions,
    /// Write the scripts and say how to submit them, without submitting.
    pub print: bool,
}

/// `slurm submit`: the shards that did not finish (from the shared tree), their scripts written,
/// and submitted (or, with `print`, how to submit them), saying what it did through `say`.
pub fn submit_run(request: &SubmitRequest, say: &mut dyn FnMut(Line)) -> Result<()> {
    let quote = crate::shell::quote;
    let run_id = &request.run_id;
    let model_dir = swtbench_core::layout::model_dir_name(&request.model);
    let output_dir = std::path::absolute(&request.output_dir).map_err(|e| {
        Error::input(anyhow!(
            "--output-dir {}: {e}",
            request.output_dir.display()
        ))
    })?;
    let roots = swtbench_plan::settings::OutputRoots::under(&output_dir);
    let statuses = crate::shards::status(&roots.logs, &roots.results, &model_dir, run_id)?;
    let indices = shards_to_submit(statuses.as_deref(), request.shards, run_id)?;
    let script_dir = script_dir(&output_dir, run_id);
    let earlier = read_submission(&script_dir)?;
    if let (Some(e), false) = (&earlier, request.print) {
        check_not_submitted(e, run_id, &request.output_dir)?;
    }
    let binary = match &request.binary {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|e| {
            Error::environment(anyhow!("finding this swtbench binary: {e}"))
                .with_hint("give --swtbench PATH")
        })?,
    };
    let workdir = std::env::current_dir()
        .map_err(|e| Error::environment(anyhow!("the working directory: {e}")))?;
    let job = Job {
        run_id: run_id.clone(),
        shards: request.shards,
        binary,
        workdir,
        run_flags: request.run_flags.clone(),
        options: request.options.clone(),
        script_dir,
    };
    let finished = request.shards - indices.len();
    if finished > 0 {
        say(Line::Info(format!(
            "{finished} of {} shard(s) finished before; submitting {}",
            request.shards,
            match indices.is_empty() {
                true => "only the merge".to_string(),
                false => format!("shard(s) {}", array_ranges(&indices)),
            }
        )));
    }
    let scripts = write_scripts(&job, &indices)?;
    if request.print {
        let mut text = String::new();
        if let Some(a) = &scripts.array {
            text.push_str(&format!("{}\n", a.display()));
        }
        text.push_str(&format!("{}\n", scripts.merge.display()));
        say(Line::Data(text.trim_end().to_string()));
        say(Line::Info(match &scripts.array {
            Some(a) => format!(
                "submit with: id=$(sbatch --parsable {}) && sbatch --dependency=afterany:$id {}",
                quote(&a.display().to_string()),
                quote(&scripts.merge.display().to_string())
            ),
            None => format!("submit with: sbatch {}", scripts.merge.display()),
        }));
        return Ok(());
    }
    let submitted = submit(
        &job,
        &scripts,
        &indices,
        &model_dir,
        &output_dir,
        earlier.as_ref(),
    )?;
    if let Some(a) = &submitted.array_job {
        say(Line::Data(format!(
            "array job {a}: shard(s) {} of {}",
            array_ranges(&indices),
            request.shards
        )));
    }
    say(Line::Data(format!(
        "merge job {} (after the shards)",
        submitted.merge_job
    )));
    say(Line::Info(format!(
        "progress: swtbench slurm status --run-id {} --output-dir {}",
        quote(run_id),
        quote(&output_dir.display().to_string())
    )));
    Ok(())
}

/// Submits the scripts: the array job, then the merge job after it (`afterany`: the merge runs
/// even when a shard failed, and then says which). Records the submission.
pub fn submit(
    job: &Job,
    scripts: &Scripts,
    indices: &[usize],
    model_dir: &str,
    output_dir: &Path,
    earlier: Option<&Submission>,
) -> Result<Submission> {
    let array_job = match &scripts.array {
        Some(p) => Some(sbatch(&[], p)?),
        None => None,
    };
    let dependency: Vec<String> = array_job
        .iter()
        .map(|id| format!("--dependency=afterany:{id}"))
        .collect();
    let merge_job = sbatch(&dependency, &scripts.merge)?;
    let mut history = earlier.map(|e| e.earlier.clone()).unwrap_or_default();
    if let Some(e) = earlier {
        history.extend(e.array_job.iter().cloned());
        history.push(e.merge_job.clone());
    }
    let submission = Submission {
        format: 1,
        run_id: job.run_id.clone(),
        model_dir: model_dir.to_string(),
        output_dir: output_dir.to_path_buf(),
        shards: job.shards,
        submitted: indices.to_vec(),
        array_job,
        merge_job,
        earlier: history,
    };
    let path = job.script_dir.join(JOBS_FILE);
    let mut text = serde_json::to_string_pretty(&submission).unwrap_or_default();
    text.push('\n');
    swtbench_data::fsutil::write_atomic(&path, text.as_bytes()).map_err(|e| {
        Error::environment(anyhow!(
            "submitted (array {:?}, merge {}), but writing {} failed: {}",
            submission.array_job,
            submission.merge_job,
            path.display(),
            e.source
        ))
    })?;
    Ok(submission)
}

/// The recorded submission of a run, if any.
pub fn read_submission(script_dir: &Path) -> Result<Option<Submission>> {
    let path = script_dir.join(JOBS_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::input(anyhow!("reading {}: {e}", path.display()))
                .with_hint("remove the file to forget the earlier submission")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::environment(anyhow!(
            "reading {}: {e}",
            path.display()
        ))),
    }
}

/// A job's id (`123_2`) → the scheduler's state of it (`RUNNING`).
pub type JobStates = BTreeMap<String, String>;

/// The scheduler's state of the jobs it still knows (`123_2` → `RUNNING`): `squeue` for the
/// queued and running ones, `scontrol` for those that ended recently. Jobs it forgot are absent.
pub fn scheduler_states(job_ids: &[String]) -> Result<JobStates> {
    let mut states = BTreeMap::new();
    if job_ids.is_empty() {
        return Ok(states);
    }
    let out = Command::new("scontrol")
        .args(["show", "job", "--oneliner"])
        .output()
        .map_err(|e| {
            Error::environment(anyhow!("running scontrol: {e}"))
                .with_hint("run on a Slurm login node (scontrol on PATH)")
        })?;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
                .map(str::to_string)
        };
        let (Some(id), Some(state)) = (field("JobId"), field("JobState")) else {
            continue;
        };
        let array = field("ArrayJobId");
        let task = field("ArrayTaskId");
        let name = match (&array, &task) {
            (Some(a), Some(t)) => format!("{a}_{t}"),
            _ => id.clone(),
        };
        let wanted = |j: &str| job_ids.iter().any(|w| w == j);
        if wanted(&id) || array.as_deref().is_some_and(wanted) {
            states.insert(name, state);
        }
    }
    Ok(states)
}

/// Job states that are not over yet.
fn active(state: &str) -> bool {
    matches!(
        state,
        "PENDING"
            | "RUNNING"
            | "CONFIGURING"
            | "COMPLETING"
            | "SUSPENDED"
            | "REQUEUED"
            | "RESIZING"
    )
}

/// Refuses to submit `run_id` again while a job of its `earlier` submission is not over (asks
/// the scheduler); `output_dir` is the one given, for the hint.
pub fn check_not_submitted(earlier: &Submission, run_id: &str, output_dir: &Path) -> Result<()> {
    let ids: Vec<String> = earlier
        .array_job
        .iter()
        .cloned()
        .chain([earlier.merge_job.clone()])
        .collect();
    let states = scheduler_states(&ids)?;
    match states.iter().find(|(_, s)| active(s)) {
        None => Ok(()),
        Some((job, state)) => Err(Error::input(anyhow!(
            "run id {run_id} is still submitted: job {job} is {state}"
        ))
        .with_hint(format!(
            "wait for it (`swtbench slurm status --run-id {run_id} --output-dir {}`), or cancel its \
             jobs (scancel {}) and submit again",
            output_dir.display(),
            ids.join(" ")
        ))),
    }
}

/// `slurm status`: each shard's progress in the shared tree, its job's state, and whether the
/// merge wrote the run report.
#[derive(Debug)]
pub struct RunStatus {
    pub submission: Submission,
    pub shards: Vec<ShardStatus>,
    /// The scheduler's states (empty when it could not be asked: see `scheduler_error`).
    pub states: BTreeMap<String, String>,
    /// Why the scheduler could not be asked (the output tree is shown alone).
    pub scheduler_error: Option<Error>,
    /// The run report over all shards is written.
    pub merged: bool,
}

/// The status of `run_id` submitted from `output_dir`; an error when it was not submitted.
pub fn run_status(output_dir: &Path, run_id: &str) -> Result<RunStatus> {
    let script_dir = script_dir(output_dir, run_id);
    let Some(sub) = read_submission(&script_dir)? else {
        return Err(Error::input(anyhow!(
            "run id {run_id} was not submitted to Slurm from {} (no {})",
            output_dir.display(),
            script_dir.join(JOBS_FILE).display()
        ))
        .with_hint("give the --run-id and --output-dir given to `swtbench slurm submit`"));
    };
    let roots = swtbench_plan::settings::OutputRoots::under(output_dir);
    let shards = crate::shards::status(&roots.logs, &roots.results, &sub.model_dir, &sub.run_id)?
        .unwrap_or_default();
    let ids: Vec<String> = sub
        .array_job
        .iter()
        .cloned()
        .chain([sub.merge_job.clone()])
        .collect();
    let (states, scheduler_error) = match scheduler_states(&ids) {
        Ok(s) => (s, None),
        Err(e) => (BTreeMap::new(), Some(e)),
    };
    let merged =
        swtbench_runner::report::run_report_path(&roots.results, &sub.model_dir, &sub.run_id, None)
            .is_file();
    Ok(RunStatus {
        submission: sub,
        shards,
        states,
        scheduler_error,
        merged,
    })
}

impl RunStatus {
    /// The status as the JSON `slurm status --json` prints.
    pub fn to_json(&self) -> String {
        let sub = &self.submission;
        let value = serde_json::json!({
            "run_id": sub.run_id,
            "shards": self.shards,
            "jobs": self.states,
            "array_job": sub.array_job,
            "merge_job": sub.merge_job,
            "merged": self.merged,
        });
        serde_json::to_string_pretty(&value).unwrap_or_default()
    }

    /// What `slurm status` prints: why the scheduler could not be asked, then the status (the
    /// JSON, or the lines for people).
    pub fn lines(&self, json: bool) -> Vec<crate::lines::Line> {
        use crate::lines::Line;
        let mut lines = Vec::new();
        if let Some(e) = &self.scheduler_error {
            lines.push(Line::Warn(format!("{e}; showing the output tree only")));
        }
        lines.push(Line::Data(match json {
            true => self.to_json(),
            false => self.to_text(),
        }));
        lines
    }

    /// The status as lines for people: one per shard, then the merge job's.
    pub fn to_text(&self) -> String {
        let sub = &self.submission;
        let mut lines = Vec::new();
        if self.shards.is_empty() {
            lines.push(format!("no shard of run {} started yet", sub.run_id));
        }
        for s in &self.shards {
            let task_job = sub
                .array_job
                .as_deref()
                .filter(|_| sub.submitted.contains(&s.shard.index));
            lines.push(shard_line(s, task_job, &self.states));
        }
        let merge_state = self
            .states
            .get(&sub.merge_job)
            .map_or("not known to the scheduler (ended)".to_string(), |s| {
                s.clone()
            });
        lines.push(format!(
            "merge job {}: {merge_state}; run report over all shards {}",
            sub.merge_job,
            if self.merged {
                "written"
            } else {
                "not written yet"
            }
        ));
        lines.join("\n")
    }
}

/// One shard's line of `slurm status`: its progress in the tree and its task's state.
pub fn shard_line(
    s: &ShardStatus,
    array_job: Option<&str>,
    states: &BTreeMap<String, String>,
) -> String {
    let task = array_job.map(|a| format!("{a}_{}", s.shard.index));
    let sched = match task.as_deref().map(|t| (t, states.get(t))) {
        Some((t, Some(state))) => format!("; job {t} {state}"),
        Some((t, None)) => {
            // A pending array is listed once, with the task range.
            match array_job.and_then(|a| {
                states
                    .iter()
                    .find(|(k, _)| k.starts_with(&format!("{a}_[")))
            }) {
                Some((_, state)) => format!("; job {t} {state}"),
                None => format!("; job {t} not known to the scheduler (ended)"),
            }
        }
        None => String::new(),
    };
    format!("{}{sched}", s.describe())
}

/// Which shards of a run to submit: those that did not finish, from the shared tree (all of
/// them when no shard started yet). Refuses a run split into another number of shards.
pub fn shards_to_submit(
    statuses: Option<&[ShardStatus]>,
    shards: usize,
    run_id: &str,
) -> Result<Vec<usize>> {
    let Some(statuses) = statuses else {
        return Ok((1..=shards).collect());
    };
    if let Some(first) = statuses.first() {
        if first.shard.count != shards {
            return Err(Error::input(anyhow!(
                "run id {run_id} was split into {} shard(s) before; this is --shards {shards}",
                first.shard.count
            ))
            .with_hint("give the same --shards, or use another --run-id"));
        }
    }
    Ok(statuses
        .iter()
        .filter(|s| !s.finished())
        .map(|s| s.shard.index)
        .collect())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    fn job() -> Job {
        Job {
            run_id: "my run".into(),
            shards: 3,
            binary: "/opt/swt bench/swtbench".into(),
            workdir: "/shared/eval".into(),
            run_flags: vec![
                "--dataset".into(),
                "d.jsonl".into(),
                "--predictions".into(),
                "it's.jsonl".into(),
                "--run-id".into(),
                "my run".into(),
            ],
            options: SbatchOptions {
                partition: Some("gpu".into()),
                time: Some("04:00:00".into()),
                cpus_per_task: Some(8),
                mem: Some("32G".into()),
                extra: vec!["--constraint=docker".into()],
                ..Default::default()
            },
            script_dir: "/shared/eval/slurm/my run".into(),
        }
    }

    #[test]
    fn array_ranges_compress_consecutive_shards() {
        assert_eq!(array_ranges(&[1, 2, 3]), "1-3");
        assert_eq!(array_ranges(&[5, 2, 4, 2]), "2,4-5");
        assert_eq!(array_ranges(&[7]), "7");
    }

    #[test]
    fn the_array_script_runs_each_task_as_its_shard_with_the_run_flags_quoted() {
        let s = array_script(&job(), &[2, 3]);
        assert!(s.starts_with("#!/bin/bash\n"), "{s}");
        for line in [
            "#SBATCH --job-name=swtbench-my_run",
            "#SBATCH --array=2-3",
            "#SBATCH --output=/shared/eval/slurm/my run/shard-%a.out",
            "#SBATCH --chdir=/shared/eval",
            "#SBATCH --partition=gpu",
            "#SBATCH --time=04:00:00",
            "#SBATCH --cpus-per-task=8",
            "#SBATCH --mem=32G",
            "#SBATCH --constraint=docker",
        ] {
            assert!(s.lines().any(|l| l == line), "{line} missing in\n{s}");
        }
        let exec = s.lines().last().unwrap();
        assert_eq!(
            exec,
            r#"exec '/opt/swt bench/swtbench' run --dataset d.jsonl --predictions 'it'\''s.jsonl' --run-id 'my run' --shard "${SLURM_ARRAY_TASK_ID}/3""#
        );
        // Every #SBATCH line comes before the first command (sbatch stops reading there).
        let first_cmd = s.lines().position(|l| l.starts_with("set ")).unwrap();
        assert!(s.lines().skip(first_cmd).all(|l| !l.starts_with("#SBATCH")));
    }

    #[test]
    fn the_merge_script_merges_with_the_same_flags() {
        let s = merge_script(&job());
        assert!(
            s.contains("#SBATCH --job-name=swtbench-my_run-merge\n"),
            "{s}"
        );
        assert!(s.contains("#SBATCH --output=/shared/eval/slurm/my run/merge.out\n"));
        assert!(!s.contains("--array"));
        assert!(!s.contains("--cpus-per-task"));
        assert!(s.trim_end().ends_with("--run-id 'my run' --merge"), "{s}");
    }

    #[test]
    fn job_ids_from_sbatch_parsable() {
        assert_eq!(parse_job_id("123\n").as_deref(), Some("123"));
        assert_eq!(parse_job_id("77;cluster\n").as_deref(), Some("77"));
        assert_eq!(parse_job_id("Submitted batch job 5"), None);
        assert_eq!(parse_job_id(""), None);
    }
}
