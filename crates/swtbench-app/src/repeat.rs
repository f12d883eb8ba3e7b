//! `run --repeat N`: the evaluation N times, each in fresh containers, and what changed between
//! the repeats ([`swtbench_grade::stability`]).
//!
//! The first repeat is the run itself (its outputs, reports and page where a run without
//! `--repeat` puts them: the scores are the first repeat's). Repeat k ≥ 2 is a whole evaluation
//! of its own under `<output dir>/repeats/<run id>/<k>/` (its own shared runs too: nothing is
//! reused from another repeat, so every run executes again). Rerunning the same command resumes
//! each repeat. The stability is written to `evaluation_results/<model>.<run id>.stability.json`,
//! and the tests that flipped to `<model>.<run id>.flaky.json` (for gold predictions, the list
//! `--flaky-list` takes). [`repeat_rest`] is the loop over repeats 2..N; a front end shows it
//! through [`RepeatFront`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use swtbench_grade::stability::{self, Stability};
use swtbench_grade::InstanceReport;
use swtbench_plan::settings::OutputRoots;
use swtbench_plan::RunSettings;
use swtbench_runner::events::EvaluationStats;

use crate::error::{Error, Result};
use crate::evaluate::{self, Engine, Finished, Observer, Request, Stopping};
use crate::lines::Line;
use crate::settings::RunOptions;

/// The directory under the output directory that holds the repeats after the first.
pub const REPEATS_DIR: &str = "repeats";

/// The output directory of repeat `k` (from 1) of `run_id`.
pub fn output_dir(base: &Path, run_id: &str, k: usize) -> PathBuf {
    match k {
        0 | 1 => base.to_path_buf(),
        k => base.join(REPEATS_DIR).join(run_id).join(k.to_string()),
    }
}

/// The reports of a run by instance id, from `<logs>/<run id>/<model dir>/<id>/report.json`.
pub fn read_reports(
    logs_root: &Path,
    run_id: &str,
    model_dir: &str,
) -> Result<BTreeMap<String, InstanceReport>> {
    let dir = swtbench_core::layout::LogsRoot::new(logs_root).model_reports_dir(run_id, model_dir);
    let mut out = BTreeMap::new();
    for id in swtbench_runner::report::reported_ids(&dir) {
        let path = dir.join(&id).join(swtbench_core::layout::REPORT_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::environment(anyhow!("reading {}: {e}", path.display())))?;
        let report = InstanceReport::from_report_json(&text, Some(&id)).map_err(|e| {
            Error::input(anyhow!("reading {}: {e}", path.display()))
                .with_hint("run the same command again to write it anew")
        })?;
        out.insert(id, report);
    }
    Ok(out)
}

/// Where a repeated run's stability and flaky list were written.
#[derive(Debug, Clone)]
pub struct Written {
    pub stability: Stability,
    pub stability_path: PathBuf,
    pub flaky_path: PathBuf,
}

/// The stability of the `repeats` repeats of `run_id` under `base`, written next to the first
/// repeat's run report. `instances`: the run's instances (those of its run report).
pub fn analyse(
    base: &Path,
    run_id: &str,
    model_dir: &str,
    repeats: usize,
    instances: &[String],
) -> Result<Written> {
    let mut per_repeat = Vec::with_capacity(repeats);
    for k in 1..=repeats {
        let roots = OutputRoots::under(&output_dir(base, run_id, k));
        let mut reports = read_reports(&roots.logs, run_id, model_dir)?;
        // Reports of instances an earlier invocation evaluated are not this run's.
        reports.retain(|id, _| instances.iter().any(|i| i == id));
        per_repeat.push(reports);
    }
    let mut stability = stability::stability(&per_repeat);
    // Instances without a report in any repeat are unstable too (never graded).
    for id in instances {
        stability
            .instances
            .entry(id.clone())
            .or_insert(stability::InstanceStability {
                graded: 0,
                resolved: 0,
                applied: 0,
                stable: false,
                flaky: Default::default(),
            });
    }
    let results = OutputRoots::under(base).results;
    let whole = swtbench_core::layout::evaluation_results_path(&results, model_dir, run_id);
    let stability_path = whole.with_extension("stability.json");
    let flaky_path = whole.with_extension("flaky.json");
    let write = |path: &Path, text: &str| {
        swtbench_data::fsutil::write_atomic(path, text.as_bytes()).map_err(|e| {
            Error::environment(anyhow!("writing {}: {}", path.display(), e.source))
                .with_hint("--output-dir must name a directory this user can write to")
        })
    };
    write(&stability_path, &stability.to_json())?;
    write(
        &flaky_path,
        &stability::flaky_list_json(&stability.flaky_list()),
    )?;
    Ok(Written {
        stability,
        stability_path,
        flaky_path,
    })
}

impl Written {
    /// What the end of the repeats says: the stability and where it was written.
    pub fn lines(&self) -> Vec<Line> {
        vec![
            Line::Info(format!("stability: {}", self.stability.summary())),
            Line::Info(format!(
                "stability report: {}; flaky tests: {}",
                self.stability_path.display(),
                self.flaky_path.display()
            )),
        ]
    }
}

/// What a front end shows of the repeats after the first (it shows, the loop decides and
/// evaluates each repeat with [`evaluate::evaluate`]).
pub trait RepeatFront {
    /// Shows a line: each repeat's start and, once it is graded, its counts.
    fn say(&self, line: Line);
    /// What sees one repeat's evaluation (the events file, when asked for, is `events`).
    fn observer(&self, events: Option<&Path>) -> Box<dyn Observer + '_>;
    /// How a repeat is stopped.
    fn stopping(&self) -> Stopping;
}

/// The line of repeat `k` once it is graded (`s`: its counts).
pub fn finished_line(k: usize, s: &EvaluationStats) -> Line {
    Line::Info(format!(
        "repeat {k}: {} resolved, {} unresolved, {} error(s); runs: {} executed, {} reused",
        s.resolved, s.unresolved, s.errors, s.runs_executed, s.runs_reused
    ))
}

/// What the repeats after the first need: the run's options (resolved again for each repeat's
/// output tree) and what the first repeat found.
#[derive(Debug, Clone, Copy)]
pub struct Repeats<'a> {
    pub options: &'a RunOptions,
    /// N of `--repeat N`.
    pub repeats: usize,
    /// The model's directory name (`swtbench_core::layout::model_dir_name`).
    pub model_dir: &'a str,
    /// The instances of the first repeat's run report.
    pub instances: &'a [String],
    /// `--events` was given: each repeat writes its own `events.jsonl` in its directory.
    pub events: bool,
}

/// How the repeats after the first ended.
#[derive(Debug)]
pub enum RepeatsEnd {
    /// A repeat was killed (a second Ctrl-C): its containers were removed, no reports written.
    Killed,
    /// A repeat was interrupted: its partial reports were written; no stability.
    Interrupted,
    /// Every repeat finished; the stability over all of them was written.
    Done(Written),
}

/// Repeats 2..N of `run --repeat N` (the first is the run itself, done by the caller), each a
/// whole evaluation in its own output tree, then the stability over all of them ([`analyse`]).
/// `request` makes a repeat's request for its settings (the run's inputs, without the HTML page).
/// A repeat that stopped early is an environment error (rerunning resumes).
pub fn repeat_rest(
    engine: &Engine,
    r: &Repeats<'_>,
    request: &dyn Fn(RunSettings) -> Result<Request>,
    front: &dyn RepeatFront,
) -> Result<RepeatsEnd> {
    let (base, run_id) = (&r.options.output_dir, &r.options.run_id);
    for k in 2..=r.repeats {
        let dir = output_dir(base, run_id, k);
        front.say(Line::Info(format!(
            "repeat {k} of {}, in {}",
            r.repeats,
            dir.display()
        )));
        let mut settings = r.options.clone().resolve(&engine.host_facts())?;
        settings.outputs = OutputRoots::under(&dir);
        let events = r.events.then(|| dir.join("events.jsonl"));
        let observer = front.observer(events.as_deref());
        match evaluate::evaluate(engine, request(settings)?, &front.stopping(), &*observer)? {
            // A repeat's request is never a dry run.
            Finished::Planned(_) => {}
            Finished::Killed => return Ok(RepeatsEnd::Killed),
            Finished::Done(done) => {
                if let Some(reason) = &done.output.aborted {
                    return Err(
                        Error::environment(anyhow!("repeat {k} stopped early: {reason}"))
                            .with_hint(
                                "fix that and run the same command again: finished runs are reused",
                            ),
                    );
                }
                if done.output.cancelled.is_some() {
                    return Ok(RepeatsEnd::Interrupted);
                }
                front.say(finished_line(k, &done.output.stats));
            }
        }
    }
    let written = analyse(base, run_id, r.model_dir, r.repeats, r.instances)?;
    Ok(RepeatsEnd::Done(written))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_repeat_is_the_run_itself_and_the_others_have_trees_of_their_own() {
        let base = Path::new("/out");
        assert_eq!(output_dir(base, "r", 1), PathBuf::from("/out"));
        assert_eq!(output_dir(base, "r", 3), PathBuf::from("/out/repeats/r/3"));
    }
}
