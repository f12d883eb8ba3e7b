//! What swtbench processes that have ended without cleaning up (killed with `kill -9`, crashed,
//! a machine that lost power) left on the engine, and its removal.
//!
//! Every container swtbench creates carries its owner ([`SESSION`]: host, pid, start time): test
//! and extraction containers, the build containers of commit builds, `envs lock`'s containers.
//! The sweep lists the containers that name an owner and removes those of a *dead* owner (a
//! process of this machine whose pid is gone or now belongs to a process with another start time,
//! [`swtbench_core::owner::liveness`]). It never touches what a live process owns (another
//! evaluation on the same engine), nor this process's own containers, nor what it cannot judge:
//! containers of other machines (left alone unless [`SweepScope::all_hosts`]), and containers
//! without an owner label or with one this version cannot read (a user's container made from an
//! image of a commit build inherits the empty owner the build gives the image).
//!
//! Every `run` (each evaluation, so each job of `serve` too) sweeps at its start, `serve` once
//! when it starts, and `swtbench clean` whenever it is called. What was removed is described by
//! [`summary`], for the line people read.

use std::collections::BTreeMap;

use serde::Serialize;
use swtbench_backend::labels::{
    LabelFilter, BUILD_CONTAINER_PREFIX, IMAGE, INSTANCE_ID, KIND, RUN, RUN_ID, SESSION,
};
use swtbench_backend::{BackendError, ContainerBackend, ContainerInfo};
use swtbench_core::owner::{Liveness, Owner};

use crate::session::Session;

/// What kind of container a leftover is, read from its labels and name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LeftoverKind {
    /// One of an instance's runs (`gold_pre`, …), or its patch extraction or layout check.
    TestRun { instance_id: String, run: String },
    /// The container of a commit build of `image`.
    ImageBuild { image: String },
    /// A container of `swtbench envs lock`.
    EnvLock,
    /// Anything else carrying an owner.
    Container,
}

/// One container a process left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Leftover {
    /// The container's id, 12 characters as the engine's tools print it.
    pub container: String,
    #[serde(flatten)]
    pub what: LeftoverKind,
    /// The owner label (`<host>/<pid>/<start>`); empty for a container without one (an earlier
    /// version's, found by its run id).
    pub owner: String,
    /// The run id it was labelled with, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

impl Leftover {
    /// What a container is, from its labels and name (no engine call).
    pub fn of(c: &ContainerInfo) -> Leftover {
        let label = |k: &str| c.labels.get(k).cloned();
        let build = c
            .names
            .iter()
            .any(|n| n.starts_with(BUILD_CONTAINER_PREFIX));
        let what = match (label(RUN), label(INSTANCE_ID), label(IMAGE)) {
            (Some(run), Some(instance_id), _) => LeftoverKind::TestRun { instance_id, run },
            (None, _, Some(image)) if build => LeftoverKind::ImageBuild { image },
            _ if label(KIND).as_deref() == Some("env-lock") => LeftoverKind::EnvLock,
            _ => LeftoverKind::Container,
        };
        Leftover {
            container: c.id.chars().take(12).collect(),
            what,
            owner: label(SESSION).unwrap_or_default(),
            run_id: label(RUN_ID),
        }
    }

    /// What it was and who left it: `gold_pre of a__b-1 (run id r1), left by pid 4242`.
    pub fn describe(&self) -> String {
        let what = match &self.what {
            LeftoverKind::TestRun { instance_id, run } => format!("{run} of {instance_id}"),
            LeftoverKind::ImageBuild { image } => format!("image build of {image}"),
            LeftoverKind::EnvLock => "environment lock".to_string(),
            LeftoverKind::Container => "container".to_string(),
        };
        let run = self
            .run_id
            .as_deref()
            .map(|r| format!(" (run id {r})"))
            .unwrap_or_default();
        format!("{what}{run}, left by {}", who(&self.owner))
    }
}

/// The owner as people read it: `pid 4242`, `pid 4242 on <host>` for another machine.
fn who(owner: &str) -> String {
    match Owner::parse(owner) {
        Some(o) if o.host == swtbench_data::owner::current().host => format!("pid {}", o.pid),
        Some(o) => format!("pid {} on {}", o.pid, o.host),
        None => "an earlier version".to_string(),
    }
}

/// Which owners' containers a sweep may remove besides the dead ones of this machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepScope {
    /// Also the containers of processes of other machines sharing the engine, whose liveness
    /// cannot be checked from here (`swtbench clean --all-hosts`): only for an engine no other
    /// machine is using right now.
    pub all_hosts: bool,
}

/// Whether a sweep removes a container whose owner is `live` (the decision, data only): a dead
/// owner's always; another machine's only when the scope says so; never this process's, a live
/// process's or one that cannot be judged.
pub fn removes(live: Liveness, scope: SweepScope) -> bool {
    match live {
        Liveness::Dead => true,
        Liveness::OtherHost => scope.all_hosts,
        Liveness::Current | Liveness::Alive | Liveness::Unknown => false,
    }
}

/// A container that names an owner, with the owner's liveness seen from this process.
#[derive(Debug, Clone)]
pub struct Owned {
    pub info: ContainerInfo,
    pub live: Liveness,
}

/// Every container on the engine that names an owner, each with its owner's liveness.
pub async fn owned_containers<B: ContainerBackend>(
    backend: &B,
    me: &Session,
) -> Result<Vec<Owned>, BackendError> {
    let filter = LabelFilter::default().and_present(SESSION);
    let found = backend.containers_with_label(&filter).await?;
    Ok(found
        .into_iter()
        .map(|info| {
            let live = me.liveness(info.labels.get(SESSION).map_or("", String::as_str));
            Owned { info, live }
        })
        .collect())
}

/// What a sweep did.
#[derive(Debug, Default)]
pub struct Sweep {
    /// Removed by this sweep (a container another process removed first is not counted).
    pub removed: Vec<Leftover>,
    /// Could not be removed, with the engine's reason.
    pub failed: Vec<(Leftover, BackendError)>,
}

/// Removes the containers of dead owners (and, with `scope.all_hosts`, of other machines).
pub async fn sweep<B: ContainerBackend>(
    backend: &B,
    me: &Session,
    scope: SweepScope,
) -> Result<Sweep, BackendError> {
    let mut sweep = Sweep::default();
    for c in owned_containers(backend, me).await? {
        if !removes(c.live, scope) {
            continue;
        }
        let left = Leftover::of(&c.info);
        match backend.container_remove(&c.info.id).await {
            Ok(true) => sweep.removed.push(left),
            // Gone meanwhile: another process's sweep, or its own lifetime.
            Ok(false) => {}
            Err(e) => sweep.failed.push((left, e)),
        }
    }
    Ok(sweep)
}

/// Who left what, in a few words: `pid 4242 (run id r1): 2 test runs, 1 image build
/// (exec.eval.x)`, owner after owner in the order of their first container, separated by `; `.
pub fn summary(leftovers: &[Leftover]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut by_owner: BTreeMap<&str, Vec<&Leftover>> = BTreeMap::new();
    for l in leftovers {
        if !by_owner.contains_key(l.owner.as_str()) {
            order.push(&l.owner);
        }
        by_owner.entry(&l.owner).or_default().push(l);
    }
    order
        .into_iter()
        .map(|owner| describe_owner(owner, &by_owner[owner]))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The line that says what a sweep removed: the containers with [`summary`], and the
/// unfinished output files of dead processes.
pub fn removed_line(containers: &[Leftover], partial_files: usize) -> String {
    let mut parts = Vec::new();
    if !containers.is_empty() {
        parts.push(format!(
            "removed {} container(s) left by swtbench processes that have ended: {}",
            containers.len(),
            summary(containers)
        ));
    }
    if partial_files > 0 {
        parts.push(format!(
            "removed {partial_files} unfinished output file(s) of swtbench processes that have ended"
        ));
    }
    parts.join("; ")
}

fn describe_owner(owner: &str, left: &[&Leftover]) -> String {
    let who = who(owner);
    let mut run_ids: Vec<&str> = left.iter().filter_map(|l| l.run_id.as_deref()).collect();
    run_ids.sort_unstable();
    run_ids.dedup();
    let runs = match run_ids.as_slice() {
        [] => String::new(),
        [one] => format!(" (run id {one})"),
        many => format!(" (run ids {})", many.join(", ")),
    };
    let tests = left
        .iter()
        .filter(|l| matches!(l.what, LeftoverKind::TestRun { .. }))
        .count();
    let builds: Vec<&str> = left
        .iter()
        .filter_map(|l| match &l.what {
            LeftoverKind::ImageBuild { image } => Some(image.as_str()),
            _ => None,
        })
        .collect();
    let locks = left
        .iter()
        .filter(|l| l.what == LeftoverKind::EnvLock)
        .count();
    let other = left
        .iter()
        .filter(|l| l.what == LeftoverKind::Container)
        .count();
    let mut parts = Vec::new();
    if tests > 0 {
        parts.push(plural(tests, "test run", "test runs"));
    }
    if !builds.is_empty() {
        const SHOWN: usize = 3;
        let mut names: Vec<&str> = builds.iter().take(SHOWN).copied().collect();
        if builds.len() > SHOWN {
            names.push("…");
        }
        parts.push(format!(
            "{} ({})",
            plural(builds.len(), "image build", "image builds"),
            names.join(", ")
        ));
    }
    if locks > 0 {
        parts.push(plural(locks, "environment lock", "environment locks"));
    }
    if other > 0 {
        parts.push(plural(other, "other container", "other containers"));
    }
    format!("{who}{runs}: {}", parts.join(", "))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str, name: &str, labels: &[(&str, &str)]) -> ContainerInfo {
        ContainerInfo {
            id: id.into(),
            names: vec![name.into()],
            image: "img".into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            state: "running".into(),
        }
    }

    #[test]
    fn only_dead_owners_and_when_asked_other_hosts_are_removed() {
        let narrow = SweepScope::default();
        let wide = SweepScope { all_hosts: true };
        assert!(removes(Liveness::Dead, narrow));
        assert!(!removes(Liveness::OtherHost, narrow));
        assert!(removes(Liveness::OtherHost, wide));
        for keep in [Liveness::Current, Liveness::Alive, Liveness::Unknown] {
            assert!(!removes(keep, narrow) && !removes(keep, wide), "{keep:?}");
        }
    }

    #[test]
    fn what_a_container_is_comes_from_its_labels_and_name() {
        let me = swtbench_data::owner::current().host.clone();
        let owner = format!("{me}/4242/77");
        let run = info(
            "0123456789abcdef",
            "eager_turing",
            &[
                (SESSION, &owner),
                (RUN_ID, "r1"),
                (INSTANCE_ID, "a__b-1"),
                (RUN, "gold_pre"),
                // Inherited from the instance image.
                (IMAGE, "exec.eval.x"),
                (KIND, "instance"),
            ],
        );
        let l = Leftover::of(&run);
        assert_eq!(l.container, "0123456789ab");
        assert_eq!(
            l.what,
            LeftoverKind::TestRun {
                instance_id: "a__b-1".into(),
                run: "gold_pre".into()
            }
        );
        assert_eq!(
            (l.owner.as_str(), l.run_id.as_deref()),
            (owner.as_str(), Some("r1"))
        );
        let build = info(
            "b1",
            "swtbench-build-abc",
            &[
                (SESSION, &owner),
                (IMAGE, "exec.env.y:latest"),
                (KIND, "env"),
            ],
        );
        assert_eq!(
            Leftover::of(&build).what,
            LeftoverKind::ImageBuild {
                image: "exec.env.y:latest".into()
            }
        );
        // The image label alone (inherited by a container a user made) is no build.
        let users = info(
            "u1",
            "my_debug",
            &[(SESSION, ""), (IMAGE, "exec.env.y:latest")],
        );
        assert_eq!(Leftover::of(&users).what, LeftoverKind::Container);
        assert_eq!(
            Leftover::of(&build).describe(),
            "image build of exec.env.y:latest, left by pid 4242"
        );
        assert_eq!(
            l.describe(),
            "gold_pre of a__b-1 (run id r1), left by pid 4242"
        );
        let lock = info(
            "l1",
            "x",
            &[(SESSION, &owner), (KIND, "env-lock"), (RUN_ID, "lock")],
        );
        assert_eq!(Leftover::of(&lock).what, LeftoverKind::EnvLock);
        let json = serde_json::to_value(Leftover::of(&build)).expect("json");
        assert_eq!(
            json,
            serde_json::json!({"container": "b1", "kind": "image_build",
                "image": "exec.env.y:latest", "owner": owner})
        );
    }

    #[test]
    fn the_summary_says_who_left_what() {
        let host = swtbench_data::owner::current().host.clone();
        let left = |owner: &str, run_id: Option<&str>, what: LeftoverKind| Leftover {
            container: "c".into(),
            what,
            owner: owner.into(),
            run_id: run_id.map(str::to_string),
        };
        let a = format!("{host}/4242/1");
        let test = |i: &str| LeftoverKind::TestRun {
            instance_id: i.into(),
            run: "pred_pre".into(),
        };
        let build = |i: &str| LeftoverKind::ImageBuild { image: i.into() };
        let list = vec![
            left(&a, Some("r1"), test("x")),
            left("far/9/9", None, build("exec.env.z")),
            left(&a, Some("r1"), test("y")),
            left(&a, Some("r1"), build("exec.eval.x")),
            left("", Some("r0"), test("x")),
        ];
        assert_eq!(
            summary(&list),
            "pid 4242 (run id r1): 2 test runs, 1 image build (exec.eval.x); pid 9 on far: 1 image \
             build (exec.env.z); an earlier version (run id r0): 1 test run"
        );
        let many: Vec<Leftover> = (0..5)
            .map(|k| {
                left(
                    &a,
                    Some(if k % 2 == 0 { "r2" } else { "r1" }),
                    build(&format!("i{k}")),
                )
            })
            .chain([
                left(&a, None, LeftoverKind::EnvLock),
                left(&a, None, LeftoverKind::Container),
            ])
            .collect();
        assert_eq!(
            summary(&many),
            "pid 4242 (run ids r1, r2): 5 image builds (i0, i1, i2, …), 1 environment lock, 1 other \
             container"
        );
        assert_eq!(summary(&[]), "");
        assert_eq!(
            removed_line(&list[..1], 0),
            "removed 1 container(s) left by swtbench processes that have ended: pid 4242 (run id \
             r1): 1 test run"
        );
        assert_eq!(
            removed_line(&list[..1], 2),
            "removed 1 container(s) left by swtbench processes that have ended: pid 4242 (run id \
             r1): 1 test run; removed 2 unfinished output file(s) of swtbench processes that have \
             ended"
        );
        assert_eq!(removed_line(&[], 0), "");
    }
}
