//! The split of an evaluation into shards (`--shard K/N`): which instance each shard evaluates.
//!
//! The split is made once, by the first shard to start, from the plan's expected work per
//! instance ([`swtbench_plan::schedule::partition`]), and recorded in the run's logs directory
//! (`<logs>/<run_id>/.swtbench-shards.json`); every later shard follows the record. Expected work
//! changes as runs finish (their key files record durations), so a split made again by each shard
//! could differ between shards that start at different times; the record makes it the same for
//! all. It is written under a temporary name and linked to its place, which fails when another
//! shard linked its own first (then that one is read): atomic on local file systems and NFS.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde::{Deserialize, Serialize};
use swtbench_plan::plan::{Plan, ShardPlan};
use swtbench_plan::settings::Shard;

use crate::error::{Error, Result};

/// File name of the record, in `<logs>/<run_id>/`.
pub const SHARDS_FILE: &str = ".swtbench-shards.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    format: u32,
    count: usize,
    /// Instance id → shard (from 1).
    shards: BTreeMap<String, usize>,
    /// Expected work of each shard when the split was made, in ms.
    work_ms: Vec<u64>,
}

/// The split of `plan`'s instances (those of the run report) into `count` shards. Instances
/// whose env image the plan builds stay with the others of that env (it is built once) unless
/// they are more than a shard's share of the work.
fn split(plan: &Plan, count: usize) -> Record {
    use swtbench_plan::schedule::{GroupedCost, ENV_BUILD_SECS};
    let env_ms = (ENV_BUILD_SECS * 1000.0) as u64;
    let items: Vec<GroupedCost> = plan
        .instances
        .iter()
        .filter(|ip| ip.in_run())
        .map(|ip| {
            let cost = ip.cost.unwrap_or_default();
            let env = ip
                .spec
                .as_ref()
                .map(|s| s.keys.env.as_str())
                .filter(|_| cost.builds_env);
            let own = cost.build_ms + cost.runs_ms;
            GroupedCost {
                id: ip.instance_id.as_str(),
                group: env,
                ms: if env.is_some() {
                    own.saturating_sub(env_ms)
                } else {
                    own
                },
                group_ms: if env.is_some() { env_ms } else { 0 },
            }
        })
        .collect();
    let of = swtbench_plan::schedule::partition_grouped(&items, count);
    let mut work_ms = vec![0; count];
    let mut shards = BTreeMap::new();
    for (it, k) in items.iter().zip(of) {
        work_ms[k] += it.ms + it.group_ms;
        shards.insert(it.id.to_string(), k + 1);
    }
    Record {
        format: 1,
        count,
        shards,
        work_ms,
    }
}

fn record_path(logs_root: &Path, run_id: &str) -> PathBuf {
    logs_root.join(run_id).join(SHARDS_FILE)
}

fn read(path: &Path) -> Result<Option<Record>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::input(anyhow!("reading the shard split {}: {e}", path.display()))
                .with_hint("remove the file to split the run again (when no shard is running)")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::environment(anyhow!(
            "reading the shard split {}: {e}",
            path.display()
        ))),
    }
}

/// Writes `record` at `path` unless one is there already; gives back the one that is there.
fn write_once(path: &Path, record: &Record) -> Result<Record> {
    let env = |e: std::io::Error| {
        Error::environment(anyhow!("writing the shard split {}: {e}", path.display()))
            .with_hint("--output-dir must name a directory this user can write to")
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(env)?;
    let tmp = dir.join(format!(
        "{SHARDS_FILE}.{}.tmp",
        swtbench_runner::session::Session::current()
            .as_str()
            .replace('/', "_")
    ));
    let mut text = serde_json::to_string_pretty(record).unwrap_or_default();
    text.push('\n');
    std::fs::write(&tmp, text).map_err(env)?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(record.clone()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read(path)?.ok_or_else(|| env(e))
        }
        Err(e) => Err(env(e)),
    }
}

/// The instances of `shard`, from the run's recorded split (made now from `plan` when there is
/// none, and recorded when `record`), and the shard's place among the others. Refuses a record
/// made for another number of shards or other instances.
pub fn instances_of(
    logs_root: &Path,
    run_id: &str,
    shard: Shard,
    plan: &Plan,
    record: bool,
) -> Result<(Vec<String>, ShardPlan)> {
    let path = record_path(logs_root, run_id);
    let made = split(plan, shard.count);
    let record = match read(&path)? {
        Some(r) => r,
        None if record => write_once(&path, &made)?,
        None => made.clone(),
    };
    let same_instances = record.shards.keys().eq(made.shards.keys());
    if record.count != shard.count || !same_instances {
        return Err(Error::input(anyhow!(
            "run id {run_id} was split into {} shard(s) of {} instance(s) ({}); this is \
             --shard {shard} of {} instance(s)",
            record.count,
            record.shards.len(),
            path.display(),
            made.shards.len()
        ))
        .with_hint(
            "give every shard the same selection and N, use another --run-id, or remove the \
             file to split the run again (when no shard of it is running)",
        ));
    }
    let mine = record
        .shards
        .iter()
        .filter(|(_, k)| **k == shard.index)
        .map(|(id, _)| id.clone())
        .collect();
    let info = ShardPlan {
        index: shard.index,
        count: shard.count,
        of_instances: record.shards.len(),
        work_ms: record.work_ms,
    };
    Ok((mine, info))
}

/// How far one shard of a run is, from the shared output tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShardStatus {
    pub shard: Shard,
    /// Its instances, sorted.
    pub instances: Vec<String>,
    /// How many of them have a `report.json` under the run's model directory.
    pub graded: usize,
    /// Its run report, when it wrote one.
    pub report: Option<PathBuf>,
    /// Instances its run report lists as interrupted (the shard stopped before them).
    pub interrupted: Vec<String>,
    /// What its run report said, for the merge.
    #[serde(skip)]
    outcomes: swtbench_runner::ShardOutcomes,
}

impl ShardStatus {
    /// The shard wrote its run report and evaluated every instance it was given.
    pub fn finished(&self) -> bool {
        self.report.is_some() && self.interrupted.is_empty()
    }

    /// One line: `shard 2/3: 4 of 9 graded, finished` and the like.
    pub fn describe(&self) -> String {
        let state = match (&self.report, self.interrupted.len()) {
            (None, _) => "no run report yet (not started, running, or killed)".to_string(),
            (Some(_), 0) => "finished".to_string(),
            (Some(_), n) => format!("interrupted before {n} instance(s)"),
        };
        format!(
            "shard {}: {} of {} instance(s) graded, {state}",
            self.shard,
            self.graded,
            self.instances.len()
        )
    }
}

/// Where a run's shards are, from its recorded split: `None` when the run was not split.
pub fn status(
    logs_root: &Path,
    results_dir: &Path,
    model_dir: &str,
    run_id: &str,
) -> Result<Option<Vec<ShardStatus>>> {
    let path = record_path(logs_root, run_id);
    let Some(record) = read(&path)? else {
        return Ok(None);
    };
    let reports_dir =
        swtbench_core::layout::LogsRoot::new(logs_root).model_reports_dir(run_id, model_dir);
    let mut out = Vec::with_capacity(record.count);
    for index in 1..=record.count {
        let shard = Shard {
            index,
            count: record.count,
        };
        let instances: Vec<String> = record
            .shards
            .iter()
            .filter(|(_, k)| **k == index)
            .map(|(id, _)| id.clone())
            .collect();
        let graded = instances
            .iter()
            .filter(|id| {
                reports_dir
                    .join(id.as_str())
                    .join(swtbench_core::layout::REPORT_FILE)
                    .is_file()
            })
            .count();
        let report_path =
            swtbench_runner::report::run_report_path(results_dir, model_dir, run_id, Some(shard));
        let (report, interrupted, outcomes) = match std::fs::read(&report_path) {
            Ok(bytes) => {
                let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
                    Error::input(anyhow!(
                        "reading the run report of shard {shard} {}: {e}",
                        report_path.display()
                    ))
                    .with_hint(format!("run shard {shard} again to write it anew"))
                })?;
                let said = ShardReport::from_value(&value);
                let interrupted = instances
                    .iter()
                    .filter(|id| said.interrupted.contains(id.as_str()))
                    .cloned()
                    .collect();
                (Some(report_path), interrupted, said.outcomes)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                (None, Vec::new(), Default::default())
            }
            Err(e) => {
                return Err(Error::environment(anyhow!(
                    "reading the run report of shard {shard} {}: {e}",
                    report_path.display()
                )))
            }
        };
        out.push(ShardStatus {
            shard,
            instances,
            graded,
            report,
            interrupted,
            outcomes,
        });
    }
    Ok(Some(out))
}

/// What the merge needs of a shard's run report.
#[derive(Debug, Default)]
struct ShardReport {
    interrupted: std::collections::BTreeSet<String>,
    outcomes: swtbench_runner::ShardOutcomes,
}

impl ShardReport {
    fn from_value(v: &serde_json::Value) -> ShardReport {
        let ids = |key: &str| -> std::collections::BTreeSet<String> {
            v.get(key)
                .and_then(|a| a.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let texts = |key: &str| -> BTreeMap<String, String> {
            v.get(key)
                .and_then(|o| o.as_object())
                .map(|o| {
                    o.iter()
                        .filter_map(|(k, s)| Some((k.clone(), s.as_str()?.to_string())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let reasons = texts("error_reasons");
        let causes = texts("error_causes");
        let skipped = ids("skipped_ids");
        let interrupted_text = swtbench_grade::run_report::SkipReason::Interrupted.to_string();
        let interrupted = reasons
            .iter()
            .filter(|(_, r)| **r == interrupted_text)
            .map(|(id, _)| id.clone())
            .collect();
        let errors = ids("error_ids")
            .into_iter()
            .filter(|id| !skipped.contains(id))
            .filter_map(|id| {
                let reason = reasons.get(&id)?.clone();
                let cause = causes.get(&id).cloned();
                Some((id, (reason, cause)))
            })
            .collect();
        ShardReport {
            interrupted,
            outcomes: swtbench_runner::ShardOutcomes {
                reused: ids("completed_ids"),
                errors,
            },
        }
    }
}

/// For `run --merge`: checks that every shard of the run finished and that the merge selects
/// the instances that were split, and gives back what the shards' run reports said. Names the
/// shards and instances that are missing.
pub fn merge_outcomes(
    logs_root: &Path,
    results_dir: &Path,
    model_dir: &str,
    run_id: &str,
    plan: &Plan,
) -> Result<swtbench_runner::ShardOutcomes> {
    let path = record_path(logs_root, run_id);
    let Some(statuses) = status(logs_root, results_dir, model_dir, run_id)? else {
        return Err(Error::input(anyhow!(
            "run id {run_id} was not split into shards ({} is not there): nothing to merge",
            path.display()
        ))
        .with_hint(
            "run the shards first (--shard K/N with the same flags), or run without --merge",
        ));
    };
    let split: std::collections::BTreeSet<&str> = statuses
        .iter()
        .flat_map(|s| s.instances.iter().map(String::as_str))
        .collect();
    let selected: std::collections::BTreeSet<&str> = plan
        .instances
        .iter()
        .filter(|ip| ip.in_run())
        .map(|ip| ip.instance_id.as_str())
        .collect();
    if split != selected {
        let extra = selected.difference(&split).count();
        let absent = split.difference(&selected).count();
        return Err(Error::input(anyhow!(
            "run id {run_id} was split into {} shard(s) of {} instance(s) ({}); this merge selects \
             {} instance(s): {extra} not in the split, {absent} of the split not selected",
            statuses.len(),
            split.len(),
            path.display(),
            selected.len()
        ))
        .with_hint(
            "merge with the same dataset, selection and predictions the shards were given",
        ));
    }
    let unfinished: Vec<String> = statuses
        .iter()
        .filter(|s| !s.finished())
        .map(|s| {
            let waiting: Vec<&str> = if s.report.is_none() {
                s.instances.iter().map(String::as_str).collect()
            } else {
                s.interrupted.iter().map(String::as_str).collect()
            };
            format!(
                "{} ({})",
                s.describe(),
                swtbench_core::text::first_few(&waiting)
            )
        })
        .collect();
    if !unfinished.is_empty() {
        let shards: Vec<String> = statuses
            .iter()
            .filter(|s| !s.finished())
            .map(|s| format!("--shard {}", s.shard))
            .collect();
        return Err(Error::input(anyhow!(
            "not every shard of run id {run_id} finished: {}",
            unfinished.join("; ")
        ))
        .with_hint(format!(
            "run {} with the same flags (finished runs are reused), then merge again",
            shards.join(", ")
        )));
    }
    let mut merged = swtbench_runner::ShardOutcomes::default();
    for s in statuses {
        let mine: std::collections::BTreeSet<&String> = s.instances.iter().collect();
        merged
            .reused
            .extend(s.outcomes.reused.into_iter().filter(|id| mine.contains(id)));
        merged.errors.extend(
            s.outcomes
                .errors
                .into_iter()
                .filter(|(id, _)| mine.contains(id)),
        );
    }
    Ok(merged)
}

/// For `images build --shard K/N`: which of `specs` (instance id, its env image's key when its
/// spec rendered) shard `shard` builds. Instances that share an env image stay together, so that
/// the env image is built once, unless their builds are more than a shard's share of the work:
/// then they are cut into about equal pieces, each building the env image (on machines of their
/// own it has to be built or pulled on each anyway). Work is counted at the schedule's estimates
/// (an env image, and an image per instance) as if nothing were built yet, so that the split
/// depends on the inputs only and is the same on every machine. Gives back the positions in
/// `specs` of the shard's instances, in order.
pub fn image_shard(specs: &[(&str, Option<&str>)], shard: Shard) -> Vec<usize> {
    use swtbench_plan::schedule::{GroupedCost, ENV_BUILD_SECS, INSTANCE_BUILD_SECS};
    let items: Vec<GroupedCost> = specs
        .iter()
        .map(|(id, env)| GroupedCost {
            id,
            group: *env,
            ms: (INSTANCE_BUILD_SECS * 1000.0) as u64,
            group_ms: if env.is_some() {
                (ENV_BUILD_SECS * 1000.0) as u64
            } else {
                0
            },
        })
        .collect();
    swtbench_plan::schedule::partition_grouped(&items, shard.count)
        .into_iter()
        .enumerate()
        .filter(|(_, k)| k + 1 == shard.index)
        .map(|(i, _)| i)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_shards_keep_an_env_image_in_one_shard_and_cover_every_instance_once() {
        let specs: Vec<(String, Option<String>)> = (0..20)
            .map(|i| {
                (
                    format!("repo__r-{i}"),
                    (i % 7 != 3).then(|| format!("env-{}", i % 5)),
                )
            })
            .collect();
        let view: Vec<(&str, Option<&str>)> = specs
            .iter()
            .map(|(id, env)| (id.as_str(), env.as_deref()))
            .collect();
        let count = 3;
        let parts: Vec<Vec<usize>> = (1..=count)
            .map(|index| image_shard(&view, Shard { index, count }))
            .collect();
        let mut all: Vec<usize> = parts.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..20).collect::<Vec<_>>(),
            "each instance in exactly one shard"
        );
        // Five env images of 3-4 instances (plus three without a spec) over 3 shards: no group
        // is bigger than a shard's share, so each env image is built by one shard.
        for env in 0..5 {
            let key = format!("env-{env}");
            let holders = parts
                .iter()
                .filter(|p| p.iter().any(|&i| specs[i].1.as_deref() == Some(&key)))
                .count();
            assert_eq!(holders, 1, "{key} is built by one shard");
        }
        assert!(parts.iter().all(|p| !p.is_empty()), "{parts:?}");
        // The same inputs in another order give the same instances per shard.
        let mut reversed = view.clone();
        reversed.reverse();
        let ids = |v: &[(&str, Option<&str>)], p: Vec<usize>| -> Vec<String> {
            let mut ids: Vec<String> = p.into_iter().map(|i| v[i].0.to_string()).collect();
            ids.sort();
            ids
        };
        for index in 1..=count {
            let s = Shard { index, count };
            assert_eq!(
                ids(&view, image_shard(&view, s)),
                ids(&reversed, image_shard(&reversed, s))
            );
        }
    }

    #[test]
    fn a_group_bigger_than_a_shards_share_is_cut_into_pieces() {
        let ids: Vec<String> = (0..12).map(|i| format!("repo__r-{i:02}")).collect();
        let view: Vec<(&str, Option<&str>)> =
            ids.iter().map(|id| (id.as_str(), Some("env"))).collect();
        let sizes: Vec<usize> = (1..=3)
            .map(|index| image_shard(&view, Shard { index, count: 3 }).len())
            .collect();
        assert_eq!(sizes, vec![4, 4, 4]);
        assert_eq!(image_shard(&view, Shard { index: 1, count: 1 }).len(), 12);
    }
}
