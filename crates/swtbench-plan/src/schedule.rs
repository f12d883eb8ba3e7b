//! How long work is expected to take, and the order that follows: the longest expected work
//! first, so that the slowest runs start early and the end of an evaluation is not one long run
//! on an otherwise idle machine.
//!
//! Pure: estimates are made from durations the caller read (a run's key file records how long
//! its eval script ran) and from per-repository figures embedded here. A run is estimated, in
//! this order of preference, from
//!
//! 1. the duration its own directory recorded (an output made again: other limits, a changed
//!    eval script with the same directory, a rebuilt image),
//! 2. the duration another run of the same instance recorded (the gold and base runs of an
//!    instance are usually on disk when a new model is evaluated: the model's runs are expected
//!    to take as long as the gold run of the same side, before or after the fix),
//! 3. the repository's typical duration ([`repo_run_secs`]),
//! 4. [`DEFAULT_RUN_SECS`] for a repository outside the table.
//!
//! Every estimate is capped at the run timeout. An instance's image builds are estimated per
//! kind ([`ENV_BUILD_SECS`], [`INSTANCE_BUILD_SECS`]): builds are not recorded.

use serde::Serialize;
use swtbench_core::RunKind;

/// Per repository, the median time the test runner reported for one run of its tests, in seconds
/// (`assets/scheduling/README.md` says where from): `repo<TAB>median_secs<TAB>logs` lines. Sizes
/// differ by two orders of magnitude (Django's targeted test modules take a fraction of a second,
/// requests' suites that reach the network over a minute), which is what the order needs; a
/// run's own record replaces the figure after its first execution.
const REPO_RUN_SECS: &str = include_str!("../../../assets/scheduling/run-secs.tsv");

/// A repository the table does not have.
pub const DEFAULT_RUN_SECS: f64 = 10.0;

/// What a run costs besides its tests: a fresh container, the files copied in, the environment
/// activated, the patches applied, the output copied out.
pub const RUN_OVERHEAD_SECS: f64 = 5.0;

/// An env image (a Python environment with the repository's dependencies).
pub const ENV_BUILD_SECS: f64 = 600.0;

/// An instance image (the repository cloned at its commit and installed).
pub const INSTANCE_BUILD_SECS: f64 = 150.0;

/// The repository's typical test time per run, when the table has it.
pub fn repo_run_secs(repo: &str) -> Option<f64> {
    REPO_RUN_SECS
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let mut cols = l.split('\t');
            (cols.next() == Some(repo)).then(|| cols.next()?.parse().ok())?
        })
}

/// A duration a run's key file recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    pub duration_ms: u64,
    pub timed_out: bool,
}

/// Where an estimate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "from", content = "run", rename_all = "snake_case")]
pub enum Basis {
    /// The run's own directory recorded it.
    Recorded,
    /// Another run of the instance recorded it.
    SameInstance(RunKind),
    /// The repository's typical duration.
    Repository,
    /// A repository outside the table.
    Default,
}

impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Basis::Recorded => f.write_str("recorded"),
            Basis::SameInstance(kind) => write!(f, "as {kind}"),
            Basis::Repository => f.write_str("repository typical"),
            Basis::Default => f.write_str("default"),
        }
    }
}

/// The expected duration of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Estimate {
    pub ms: u64,
    #[serde(flatten)]
    pub basis: Basis,
}

fn secs_ms(secs: f64) -> u64 {
    (secs * 1000.0).round() as u64
}

/// What a recorded run is expected to take when run again: its tests, or the whole timeout.
fn from_recorded(r: Recorded, timeout_ms: u64) -> u64 {
    if r.timed_out {
        timeout_ms
    } else {
        r.duration_ms + secs_ms(RUN_OVERHEAD_SECS)
    }
}

/// The expected duration of `kind` in an instance of `repo`: from `own` (its directory's
/// record), else from `others` (records of the instance's other runs; the one on the same side
/// of the fix is preferred, then the gold run, then any), else from the repository.
pub fn estimate_run(
    kind: RunKind,
    own: Option<Recorded>,
    others: &[(RunKind, Recorded)],
    repo: &str,
    timeout_ms: u64,
) -> Estimate {
    let cap = |ms: u64| ms.min(timeout_ms.max(1));
    if let Some(r) = own {
        return Estimate {
            ms: cap(from_recorded(r, timeout_ms)),
            basis: Basis::Recorded,
        };
    }
    let rank = |other: RunKind| {
        let same_side = other.is_post() == kind.is_post();
        let gold = matches!(other, RunKind::GoldPre | RunKind::GoldPost);
        (!same_side, !gold, other)
    };
    if let Some((other, r)) = others
        .iter()
        .filter(|(k, _)| *k != kind)
        .min_by_key(|(k, _)| rank(*k))
    {
        return Estimate {
            ms: cap(from_recorded(*r, timeout_ms)),
            basis: Basis::SameInstance(*other),
        };
    }
    let (secs, basis) = match repo_run_secs(repo) {
        Some(s) => (s, Basis::Repository),
        None => (DEFAULT_RUN_SECS, Basis::Default),
    };
    Estimate {
        ms: cap(secs_ms(secs + RUN_OVERHEAD_SECS)),
        basis,
    }
}

/// What one instance is expected to cost: the builds before its first run, and its runs (which
/// may run side by side).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct InstanceCost {
    /// The image builds it waits for (those the plan builds; an env image counts for every
    /// instance that needs it).
    pub build_ms: u64,
    /// Its longest run.
    pub longest_run_ms: u64,
    /// All its runs together.
    pub runs_ms: u64,
    /// Whether `build_ms` holds an env image build (shared with the instances of that env).
    pub builds_env: bool,
}

impl InstanceCost {
    /// Its runs' estimates, and which of its images are built.
    pub fn new(runs: &[u64], builds_env: bool, builds_instance: bool) -> InstanceCost {
        let mut build_ms = 0;
        if builds_env {
            build_ms += secs_ms(ENV_BUILD_SECS);
        }
        if builds_instance {
            build_ms += secs_ms(INSTANCE_BUILD_SECS);
        }
        InstanceCost {
            build_ms,
            longest_run_ms: runs.iter().copied().max().unwrap_or(0),
            runs_ms: runs.iter().sum(),
            builds_env,
        }
    }

    /// Its longest chain: the builds, then its longest run. What bounds the instance's end when
    /// its runs run side by side.
    pub fn chain_ms(&self) -> u64 {
        self.build_ms + self.longest_run_ms
    }
}

/// The order to start instances in: the longest chain first, then the most work, then the
/// given order (stable: the same inputs give the same order).
pub fn order_instances(costs: &[InstanceCost]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by_key(|&i| {
        let c = &costs[i];
        (
            std::cmp::Reverse(c.chain_ms()),
            std::cmp::Reverse(c.runs_ms),
            i,
        )
    });
    order
}

/// How many test containers may run at once: `workers`, and no more than the host's memory
/// (`budget`) holds at each container's memory limit (at least one). Every test container has the
/// same limit, so the memory bound is a count too.
pub fn containers_at_once(workers: usize, limit: Option<u64>, budget: Option<u64>) -> usize {
    let workers = workers.max(1);
    match (limit, budget) {
        (Some(limit), Some(budget)) if limit > 0 => {
            let fit = usize::try_from(budget / limit).unwrap_or(usize::MAX);
            workers.min(fit.max(1))
        }
        _ => workers,
    }
}

/// Splits work into `count` shards of about equal expected cost: the costliest first, each to
/// the shard with the least so far (the lowest-numbered among equals). `costs` are (id, ms);
/// the answer is each one's shard, 0-based, in the order given. The same input gives the same
/// shards on every machine (ties are broken by id, not by input order).
pub fn partition(costs: &[(&str, u64)], count: usize) -> Vec<usize> {
    let count = count.max(1);
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&a, &b| {
        costs[b]
            .1
            .cmp(&costs[a].1)
            .then_with(|| costs[a].0.cmp(costs[b].0))
    });
    let mut load = vec![(0u64, 0usize); count];
    let mut shard_of = vec![0; costs.len()];
    for i in order {
        // The least loaded, then the one with fewer instances, then the lowest number.
        let (k, _) = load
            .iter()
            .enumerate()
            .min_by_key(|(k, (ms, n))| (*ms, *n, *k))
            .unwrap_or((0, &(0, 0)));
        load[k].0 += costs[i].1;
        load[k].1 += 1;
        shard_of[i] = k;
    }
    shard_of
}

/// One item of [`partition_grouped`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupedCost<'a> {
    pub id: &'a str,
    /// The group it shares a one-off cost with (the env image its instance image is built on),
    /// if any.
    pub group: Option<&'a str>,
    /// Its own cost, ms.
    pub ms: u64,
    /// The group's one-off cost, ms: paid once by each shard holding members of the group.
    pub group_ms: u64,
}

/// [`partition`] for items that share one-off costs: the members of a group stay in one shard
/// (its one-off cost paid once), unless the group is more than a shard's share of all the work;
/// then it is cut into about equal pieces of consecutive members (by id), each paying the one-off
/// cost. Deterministic like [`partition`]: the same items in any order give the same shards.
pub fn partition_grouped(items: &[GroupedCost<'_>], count: usize) -> Vec<usize> {
    let count = count.max(1);
    let mut groups: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for (i, it) in items.iter().enumerate() {
        groups.entry(it.group.unwrap_or(it.id)).or_default().push(i);
    }
    let one_off = |members: &[usize]| {
        members
            .iter()
            .map(|&i| items[i].group_ms)
            .max()
            .unwrap_or(0)
    };
    let own = |members: &[usize]| members.iter().map(|&i| items[i].ms).sum::<u64>();
    for members in groups.values_mut() {
        members.sort_by(|&a, &b| items[a].id.cmp(items[b].id));
    }
    let total: u64 = groups.values().map(|m| one_off(m) + own(m)).sum();
    let share = (total / count as u64).max(1);
    let mut pieces: Vec<(String, Vec<usize>)> = Vec::new();
    for (key, members) in &groups {
        let cost = one_off(members) + own(members);
        let n = (cost.div_ceil(share) as usize).clamp(1, members.len());
        // Consecutive members, each piece about 1/n of the group's own cost.
        let target = own(members).div_ceil(n as u64).max(1);
        let mut piece = Vec::new();
        let mut acc = 0u64;
        let mut made = 0usize;
        for &i in members {
            if !piece.is_empty() && acc + items[i].ms > target && made + 1 < n {
                pieces.push((format!("{key}#{made:06}"), std::mem::take(&mut piece)));
                made += 1;
                acc = 0;
            }
            acc += items[i].ms;
            piece.push(i);
        }
        pieces.push((format!("{key}#{made:06}"), piece));
    }
    let costs: Vec<(&str, u64)> = pieces
        .iter()
        .map(|(name, m)| (name.as_str(), one_off(m) + own(m)))
        .collect();
    let mut shard_of = vec![0; items.len()];
    for ((_, members), k) in pieces.iter().zip(partition(&costs, count)) {
        for &i in members {
            shard_of[i] = k;
        }
    }
    shard_of
}

/// `1.5 s`, `2 min 5 s`, `1 h 3 min`: an estimate for people.
pub fn describe_ms(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0..=9 => format!("{:.1} s", ms as f64 / 1000.0),
        10..=59 => format!("{secs} s"),
        60..=3599 => match secs % 60 {
            0 => format!("{} min", secs / 60),
            s => format!("{} min {s} s", secs / 60),
        },
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: u64 = 3_600_000;

    fn rec(ms: u64) -> Recorded {
        Recorded {
            duration_ms: ms,
            timed_out: false,
        }
    }

    #[test]
    fn an_own_record_beats_the_instances_other_runs_which_beat_the_repository() {
        let others = [(RunKind::GoldPre, rec(40_000))];
        let own = estimate_run(
            RunKind::PredPre,
            Some(rec(20_000)),
            &others,
            "sympy/sympy",
            HOUR,
        );
        assert_eq!(own.basis, Basis::Recorded);
        assert_eq!(own.ms, 25_000, "the tests plus the run's overhead");

        let sibling = estimate_run(RunKind::PredPre, None, &others, "sympy/sympy", HOUR);
        assert_eq!(sibling.basis, Basis::SameInstance(RunKind::GoldPre));
        assert_eq!(sibling.ms, 45_000);

        let repo = estimate_run(RunKind::PredPre, None, &[], "sympy/sympy", HOUR);
        assert_eq!(repo.basis, Basis::Repository);
        assert_eq!(repo.ms, 7_300, "sympy's 2.3 s plus the overhead");

        let unknown = estimate_run(RunKind::PredPre, None, &[], "acme/widgets", HOUR);
        assert_eq!(unknown.basis, Basis::Default);
        assert_eq!(unknown.ms, 15_000);
    }

    #[test]
    fn the_same_side_of_the_fix_is_preferred_then_gold_and_a_timeout_costs_the_timeout() {
        let others = [
            (RunKind::BasePost, rec(1_000)),
            (RunKind::GoldPre, rec(2_000)),
            (RunKind::BasePre, rec(3_000)),
            (RunKind::GoldPost, rec(4_000)),
        ];
        let e = estimate_run(RunKind::PredPost, None, &others, "x/y", HOUR);
        assert_eq!(e.basis, Basis::SameInstance(RunKind::GoldPost));
        let e = estimate_run(RunKind::PredPre, None, &others[..1], "x/y", HOUR);
        assert_eq!(e.basis, Basis::SameInstance(RunKind::BasePost), "any, last");
        // A run never takes its own record as another's.
        let e = estimate_run(RunKind::GoldPre, None, &others[1..2], "x/y", HOUR);
        assert_eq!(e.basis, Basis::Default);

        let hung = Recorded {
            duration_ms: 59_990,
            timed_out: true,
        };
        let e = estimate_run(RunKind::PredPre, Some(hung), &[], "x/y", 60_000);
        assert_eq!(e.ms, 60_000);
        let e = estimate_run(RunKind::PredPre, None, &[], "psf/requests", 60_000);
        assert_eq!(e.ms, 60_000, "capped at the timeout");
    }

    #[test]
    fn the_longest_chain_goes_first_then_the_most_work_then_the_given_order() {
        let costs = [
            InstanceCost::new(&[1_000, 1_000], false, false),
            InstanceCost::new(&[60_000], false, false),
            InstanceCost::new(&[1_000], false, true),
            InstanceCost::new(&[1_000, 1_000, 1_000], false, false),
            InstanceCost::new(&[1_000, 1_000], false, false),
        ];
        assert_eq!(costs[2].chain_ms(), 151_000);
        assert_eq!(order_instances(&costs), vec![2, 1, 3, 0, 4]);
        assert!(order_instances(&[]).is_empty());
    }

    #[test]
    fn every_line_of_the_embedded_table_reads() {
        let rows: Vec<&str> = REPO_RUN_SECS
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect();
        assert!(rows.len() >= 12, "{rows:?}");
        for row in rows {
            let repo = row.split('\t').next().unwrap_or_default();
            let secs = repo_run_secs(repo);
            assert!(secs.is_some_and(|s| s > 0.0), "{row}");
        }
        assert_eq!(repo_run_secs("django/django"), Some(0.3));
        assert_eq!(repo_run_secs("django"), None);
    }

    #[test]
    fn containers_at_once_are_bounded_by_the_workers_and_the_hosts_memory() {
        const GIB: u64 = 1 << 30;
        assert_eq!(containers_at_once(4, Some(2 * GIB), Some(24 * GIB)), 4);
        assert_eq!(containers_at_once(32, Some(2 * GIB), Some(24 * GIB)), 12);
        assert_eq!(
            containers_at_once(4, Some(32 * GIB), Some(24 * GIB)),
            1,
            "at least one"
        );
        assert_eq!(
            containers_at_once(4, None, Some(24 * GIB)),
            4,
            "no memory limit"
        );
        assert_eq!(
            containers_at_once(4, Some(2 * GIB), None),
            4,
            "host unknown"
        );
        assert_eq!(containers_at_once(0, None, None), 1);
    }

    #[test]
    fn shards_get_about_equal_work_whatever_the_input_order() {
        let costs = [
            ("a", 90),
            ("b", 50),
            ("c", 40),
            ("d", 30),
            ("e", 20),
            ("f", 0),
            ("g", 0),
        ];
        let shards = partition(&costs, 3);
        let load = |k: usize| -> u64 {
            costs
                .iter()
                .zip(&shards)
                .filter(|(_, s)| **s == k)
                .map(|(c, _)| c.1)
                .sum()
        };
        assert_eq!((load(0), load(1), load(2)), (90, 70, 70));
        // The free instances (already reused) are spread too.
        assert_eq!(shards, vec![0, 1, 2, 2, 1, 1, 2]);
        let mut reversed = costs;
        reversed.reverse();
        let again = partition(&reversed, 3);
        let by_id = |c: &[(&str, u64)], s: &[usize]| -> Vec<(String, usize)> {
            let mut v: Vec<_> = c
                .iter()
                .zip(s)
                .map(|(c, s)| (c.0.to_string(), *s))
                .collect();
            v.sort();
            v
        };
        assert_eq!(by_id(&costs, &shards), by_id(&reversed, &again));
        assert_eq!(partition(&costs, 1), vec![0; 7]);
        assert!(partition(&[], 4).is_empty());
    }

    #[test]
    fn estimates_read_like_durations() {
        assert_eq!(describe_ms(1_500), "1.5 s");
        assert_eq!(describe_ms(45_000), "45 s");
        assert_eq!(describe_ms(125_000), "2 min 5 s");
        assert_eq!(describe_ms(600_000), "10 min");
        assert_eq!(describe_ms(3_780_000), "1 h 3 min");
    }

    #[test]
    fn grouped_items_stay_together_unless_a_group_is_bigger_than_a_share() {
        let ids: Vec<String> = (0..12).map(|i| format!("r__r-{i:02}")).collect();
        let envs = ["e1", "e2", "e3"];
        // Three envs of four instances (each 2 min on its own, the env 10 min once).
        let items: Vec<GroupedCost> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| GroupedCost {
                id,
                group: Some(envs[i % 3]),
                ms: 120_000,
                group_ms: 600_000,
            })
            .collect();
        let of = partition_grouped(&items, 3);
        for e in 0..3 {
            let shards: std::collections::BTreeSet<usize> =
                (0..12).filter(|i| i % 3 == e).map(|i| of[i]).collect();
            assert_eq!(shards.len(), 1, "env {e} in one shard: {of:?}");
        }
        assert_eq!(
            of.iter().collect::<std::collections::BTreeSet<_>>().len(),
            3
        );
        // One env of twelve over three shards: cut into three pieces of four.
        let one: Vec<GroupedCost> = items
            .iter()
            .map(|it| GroupedCost {
                group: Some("e"),
                ..*it
            })
            .collect();
        let of = partition_grouped(&one, 3);
        let sizes: Vec<usize> = (0..3)
            .map(|k| of.iter().filter(|&&s| s == k).count())
            .collect();
        assert_eq!(sizes, vec![4, 4, 4]);
        // The same items in another order: the same shard for each.
        let mut reversed = one.clone();
        reversed.reverse();
        let back = partition_grouped(&reversed, 3);
        for (i, it) in reversed.iter().enumerate() {
            let j = one
                .iter()
                .position(|o| o.id == it.id)
                .expect("the same ids");
            assert_eq!(back[i], of[j], "{}", it.id);
        }
        // Without groups it is the plain partition.
        let plain: Vec<GroupedCost> = items
            .iter()
            .map(|it| GroupedCost {
                group: None,
                group_ms: 0,
                ..*it
            })
            .collect();
        let costs: Vec<(&str, u64)> = plain.iter().map(|it| (it.id, it.ms)).collect();
        assert_eq!(partition_grouped(&plain, 5), partition(&costs, 5));
    }
}
