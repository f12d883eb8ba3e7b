//! The split of an evaluation into shards (`--shard K/N`): which instance each shard evaluates.
//!
//! The split is made once, by the first shard to start, from the plan's expected work per
//! instance ([`swtbench_runner::schedule::partition`]), and recorded in the run's logs directory
//! (`<logs>/<run_id>/.swtbench-shards.json`); every later shard follows the record. Expected work
//! changes as runs finish (their key files record durations), so a split made again by each shard
//! could differ between shards that start at different times; the record makes it the same for
//! all. It is written under a temporary name and linked to its place, which fails when another
//! shard linked its own first (then that one is read): atomic on local file systems and NFS.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde::{Deserialize, Serialize};
use swtbench_runner::plan::{Plan, ShardPlan};
use swtbench_runner::settings::Shard;

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

/// The split of `plan`'s instances (those of the run report) into `count` shards.
fn split(plan: &Plan, count: usize) -> Record {
    let costs: Vec<(&str, u64)> = plan
        .instances
        .iter()
        .filter(|ip| ip.in_run())
        .map(|ip| {
            let work = ip.cost.map_or(0, |c| c.build_ms + c.runs_ms);
            (ip.instance_id.as_str(), work)
        })
        .collect();
    let of = swtbench_runner::schedule::partition(&costs, count);
    let mut work_ms = vec![0; count];
    let mut shards = BTreeMap::new();
    for ((id, ms), k) in costs.iter().zip(of) {
        work_ms[k] += ms;
        shards.insert(id.to_string(), k + 1);
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
