//! `clean`: removes what swtbench processes left behind when they ended without cleaning up
//! (`kill -9`, a third Ctrl-C, a crash).
//!
//! Always: the containers of dead owners on the engine, whatever their run id (test runs, commit
//! builds, `envs lock` containers: [`swtbench_runner::leftovers`]), and the unfinished output
//! files dead processes left under the output directory (their journals,
//! [`swtbench_data::fsutil::sweep_journals`]). Containers of a live process, of this one, and of
//! other machines (unless `all_hosts`) are left alone. With a run id: also that run's containers
//! (found by the `swtbench.run_id` label; those of a process that may still be running only when
//! forced) and its temporary images (images above its cache level). Finished outputs on disk are
//! never touched.
//!
//! Each removal is reported to a callback as it happens (the binary prints it); the totals come
//! back as a [`CleanSummary`].

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::anyhow;
use swtbench_backend::labels::{LabelFilter, KIND, RUN_ID};
use swtbench_backend::{BackendError, ContainerBackend, ImageInfo};
use swtbench_runner::images::own_tag;
use swtbench_runner::leftovers::{self, removed_line, Leftover, SweepScope};
use swtbench_runner::session::{Liveness, Session, SESSION};

use crate::error::Failures;
use crate::{Error, Result};

/// What to clean.
#[derive(Debug, Clone)]
pub struct CleanOptions {
    /// Also the containers and temporary images of this run.
    pub run_id: Option<String>,
    /// Remove the run's containers only, not its images.
    pub keep_images: bool,
    /// Report what would be removed, remove nothing.
    pub dry_run: bool,
    /// Also remove the run's containers of a swtbench process that may still be running.
    pub force: bool,
    /// Also remove the containers of swtbench processes of other machines sharing the engine
    /// (their liveness cannot be checked from here).
    pub all_hosts: bool,
    /// The output directory (`run --output-dir`) whose unfinished files of dead processes go.
    pub output_dir: PathBuf,
}

impl Default for CleanOptions {
    fn default() -> Self {
        CleanOptions {
            run_id: None,
            keep_images: false,
            dry_run: false,
            force: false,
            all_hosts: false,
            output_dir: PathBuf::from("."),
        }
    }
}

impl CleanOptions {
    /// Refuses options that cannot name a run (before the engine is needed).
    pub fn check(&self) -> Result<()> {
        if self.run_id.as_deref().is_some_and(|r| r.trim().is_empty()) {
            return Err(Error::input(anyhow!("--run-id must not be empty")));
        }
        Ok(())
    }
}

/// What kind of thing a [`Cleaned`] item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    Container,
    Image,
    /// An unfinished output file of a dead process.
    File,
}

/// What happened to one container or image.
#[derive(Debug)]
pub enum Cleaned {
    Removed,
    WouldRemove,
    /// A container of a swtbench process that may still be running (`owner` says which).
    LeftAlone {
        owner: String,
    },
    Failed(BackendError),
}

/// Totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanSummary {
    /// The run's containers found (besides the leftovers of dead owners among them).
    pub containers: usize,
    pub images: usize,
    /// Containers of ended processes removed (or that would be), with what each was.
    pub leftovers: Vec<Leftover>,
    /// Unfinished output files of ended processes removed (or that would be).
    pub partial_files: usize,
    /// The removals that failed; the engine went away when one says so (the command then ends
    /// as an environment failure after its summary).
    pub failures: Failures,
}

impl Cleaned {
    /// What `clean` says of one container or image: what was (or would be) removed on stdout,
    /// what was left or failed as a warning.
    pub fn line(&self, item: Item, name: &str) -> crate::lines::Line {
        use crate::lines::Line;
        let noun = match item {
            Item::Container => "container",
            Item::Image => "image",
            Item::File => "file",
        };
        match self {
            Cleaned::Removed => Line::Data(format!("removed {noun} {name}")),
            Cleaned::WouldRemove => Line::Data(format!("{noun} {name}")),
            Cleaned::LeftAlone { owner } => Line::Warn(format!(
                "container {name} belongs to a swtbench process that may still be running ({owner}); \
                 left alone (--force removes it)"
            )),
            Cleaned::Failed(e) => Line::Warn(format!("could not remove {noun} {name}: {e}")),
        }
    }
}

impl CleanSummary {
    fn count_failure(&mut self, what: &Cleaned) {
        if let Cleaned::Failed(e) = what {
            self.failures.record(Some(e));
        }
    }

    /// The closing lines of `clean`: what ended processes left, and the run's totals.
    pub fn texts(&self, options: &CleanOptions) -> Vec<String> {
        let mut lines = Vec::new();
        let left = if options.dry_run {
            let mut parts = Vec::new();
            if !self.leftovers.is_empty() {
                parts.push(format!(
                    "{} container(s) left by swtbench processes that have ended would be \
                     removed: {}",
                    self.leftovers.len(),
                    leftovers::summary(&self.leftovers)
                ));
            }
            if self.partial_files > 0 {
                parts.push(format!(
                    "{} unfinished output file(s) of swtbench processes that have ended would be \
                     removed",
                    self.partial_files
                ));
            }
            parts.join("; ")
        } else {
            removed_line(&self.leftovers, self.partial_files)
        };
        lines.push(if left.is_empty() {
            "nothing left by swtbench processes that have ended".to_string()
        } else {
            left
        });
        if let Some(run_id) = &options.run_id {
            lines.push(format!(
                "run {run_id}: {} container(s), {} image(s) {}",
                self.containers,
                self.images,
                if options.dry_run {
                    "would be removed"
                } else {
                    "found"
                }
            ));
        }
        lines
    }
}

/// [`clean_run`] on the container engine, blocking: the options checked, then one connection.
pub fn clean(
    options: &CleanOptions,
    report: &mut dyn FnMut(Item, &str, &Cleaned),
) -> Result<CleanSummary> {
    options.check()?;
    let (rt, backend) = crate::engine::connect_blocking()?;
    rt.block_on(clean_run(&backend, options, report))
}

/// What a long-lived process removes when it starts (`serve`, before its first job): the
/// containers of dead owners on this machine and the unfinished output files of dead processes
/// under `logs_root`. Returns the line that says what was removed, if anything was. Blocking:
/// its own runtime and engine connection.
pub fn sweep_ended_processes(logs_root: &std::path::Path) -> Result<Option<String>> {
    let engine = crate::evaluate::Engine::connect(crate::evaluate::EngineUse::Required)?;
    engine.sweep_ended_processes(logs_root)
}

impl crate::evaluate::Engine {
    /// [`sweep_ended_processes`] on this engine's connection (a service's worker, after each
    /// job's verdict: its jobs' evaluations leave the sweep to it). Without an engine, the files
    /// only.
    pub fn sweep_ended_processes(&self, logs_root: &std::path::Path) -> Result<Option<String>> {
        let removed = match self.backend() {
            Some(backend) => {
                self.block_on(leftovers::sweep(
                    backend.as_ref(),
                    &Session::current(),
                    SweepScope::default(),
                ))
                .map_err(Error::environment)?
                .removed
            }
            None => Vec::new(),
        };
        let files = swtbench_data::fsutil::sweep_journals(logs_root);
        let line = removed_line(&removed, files.removed.len());
        Ok((!line.is_empty()).then_some(line))
    }
}

/// Removes the leftovers of dead owners (containers, then unfinished files); with a run id, then
/// the run's containers and (unless `keep_images`) its temporary images, children first;
/// `report(item, name, what)` is called for each.
pub async fn clean_run<B: ContainerBackend>(
    backend: &B,
    options: &CleanOptions,
    report: &mut dyn FnMut(Item, &str, &Cleaned),
) -> Result<CleanSummary> {
    options.check()?;
    let me = Session::current();
    let mut summary = CleanSummary::default();
    let handled = sweep_leftovers(backend, &me, options, &mut summary, report).await?;
    let logs = swtbench_plan::settings::OutputRoots::under(&options.output_dir).logs;
    let files = if options.dry_run {
        swtbench_data::fsutil::dead_writers_files(&logs)
    } else {
        swtbench_data::fsutil::sweep_journals(&logs)
    };
    summary.partial_files = files.removed.len();
    for f in &files.removed {
        let what = if options.dry_run {
            Cleaned::WouldRemove
        } else {
            Cleaned::Removed
        };
        report(Item::File, &f.display().to_string(), &what);
    }
    let Some(run_id) = options.run_id.as_deref() else {
        return Ok(summary);
    };
    let filter = LabelFilter::new(RUN_ID, run_id);
    let containers: Vec<_> = backend
        .containers_with_label(&filter)
        .await
        .map_err(Error::environment)?
        .into_iter()
        .filter(|c| !handled.contains(&c.id))
        .collect();
    summary.containers = containers.len();
    for c in &containers {
        let name = c.names.first().cloned().unwrap_or_else(|| c.id.clone());
        let owner = c.labels.get(SESSION);
        let live = owner.map(|l| me.liveness(l));
        let what = if !options.force
            && matches!(
                live,
                Some(Liveness::Alive | Liveness::OtherHost | Liveness::Unknown)
            ) {
            let owner = owner
                .and_then(|l| Session::pid_of(l))
                .map(|p| format!("pid {p}"))
                .unwrap_or_else(|| "another host".into());
            Cleaned::LeftAlone { owner }
        } else if options.dry_run {
            Cleaned::WouldRemove
        } else {
            match backend.container_remove(&c.id).await {
                Ok(_) => Cleaned::Removed,
                Err(e) => Cleaned::Failed(e),
            }
        };
        summary.count_failure(&what);
        report(Item::Container, &name, &what);
    }
    let mut images = if options.keep_images {
        Vec::new()
    } else {
        backend
            .images_with_label(&filter)
            .await
            .map_err(Error::environment)?
            .into_iter()
            // Labels are inherited: an image built FROM a run's image is not the run's.
            .filter(|i| own_tag(i).is_some())
            .collect()
    };
    summary.images = images.len();
    // Children first (instance before env before base).
    let rank = |k: Option<&String>| match k.map(String::as_str) {
        Some("instance") => 0,
        Some("env") => 1,
        _ => 2,
    };
    images.sort_by_key(|i| rank(i.labels.get(KIND)));
    for i in &images {
        let name = own_tag(i).unwrap_or_else(|| i.id.clone());
        let what = if options.dry_run {
            Cleaned::WouldRemove
        } else {
            match remove_image(backend, i, false).await {
                Ok(()) => Cleaned::Removed,
                Err(e) => Cleaned::Failed(e),
            }
        };
        summary.count_failure(&what);
        report(Item::Image, &name, &what);
    }
    Ok(summary)
}

/// Removes (or, in a dry run, lists) the containers of dead owners, and of other machines' with
/// `all_hosts`; returns the ids it handled.
async fn sweep_leftovers<B: ContainerBackend>(
    backend: &B,
    me: &Session,
    options: &CleanOptions,
    summary: &mut CleanSummary,
    report: &mut dyn FnMut(Item, &str, &Cleaned),
) -> Result<BTreeSet<String>> {
    let scope = SweepScope {
        all_hosts: options.all_hosts,
    };
    let mut handled = BTreeSet::new();
    let owned = leftovers::owned_containers(backend, me)
        .await
        .map_err(Error::environment)?;
    for c in owned
        .into_iter()
        .filter(|c| leftovers::removes(c.live, scope))
    {
        let left = Leftover::of(&c.info);
        let name = c
            .info
            .names
            .first()
            .cloned()
            .unwrap_or_else(|| left.container.clone());
        let what = if options.dry_run {
            Cleaned::WouldRemove
        } else {
            match backend.container_remove(&c.info.id).await {
                Ok(true) => Cleaned::Removed,
                // Gone meanwhile (another process's sweep, or its own lifetime).
                Ok(false) => continue,
                Err(e) => Cleaned::Failed(e),
            }
        };
        handled.insert(c.info.id.clone());
        summary.count_failure(&what);
        report(
            Item::Container,
            &format!("{name} ({})", left.describe()),
            &what,
        );
        if !matches!(what, Cleaned::Failed(_)) {
            summary.leftovers.push(left);
        }
    }
    Ok(handled)
}

/// Removes swtbench's own tag of an image ([`own_tag`]): the image goes with it unless it has
/// other tags (a user's, which keep it). An image swtbench does not own is left alone.
pub async fn remove_image<B: ContainerBackend>(
    backend: &B,
    image: &ImageInfo,
    force: bool,
) -> std::result::Result<(), BackendError> {
    let Some(tag) = own_tag(image) else {
        return Ok(());
    };
    backend.image_remove(&tag, force).await?;
    // An env image's compiler cache (`--compiler-cache`) goes with it.
    if image.labels.get(KIND).map(String::as_str) == Some("env") {
        swtbench_runner::images::remove_compiler_cache(backend, &tag).await?;
    }
    Ok(())
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use std::time::Duration;

    use swtbench_backend::labels::run_labels;
    use swtbench_backend::{ContainerSpec, FakeBackend};

    use super::*;

    #[tokio::test]
    async fn an_engine_lost_mid_way_is_an_environment_fault_after_the_summary() {
        let fake = FakeBackend::new();
        fake.add_image("img:1", Default::default());
        for k in 0..3 {
            let mut spec = ContainerSpec::new("img:1");
            spec.labels = run_labels("r1", &format!("a__b-{k}"), "gold_pre");
            fake.container_create(&spec).await.unwrap();
        }
        let options = CleanOptions {
            run_id: Some("r1".into()),
            keep_images: true,
            force: true,
            output_dir: tempfile::tempdir().unwrap().path().to_path_buf(),
            ..CleanOptions::default()
        };
        let mut seen = Vec::new();
        let summary = clean_run(&fake, &options, &mut |_, name, what| {
            seen.push((name.to_string(), matches!(what, Cleaned::Removed)));
            // The engine stops answering after the first removal.
            fake.set_hung(Some(Duration::ZERO));
        })
        .await
        .unwrap();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen[0].1 && !seen[1].1 && !seen[2].1, "{seen:?}");
        assert_eq!((summary.containers, summary.failures.count), (3, 2));
        let why = summary.failures.engine_gone.clone().unwrap();
        assert!(why.contains("stopped answering"), "{why}");
        let err = summary.failures.engine_error().unwrap();
        assert_eq!(err.fault, crate::error::Fault::Environment);

        // Failures that are not the engine's (an image in use, say) stay partial failures.
        let mut other = CleanSummary::default();
        other.count_failure(&Cleaned::Failed(BackendError::ContainerNotFound(
            "x".into(),
        )));
        assert_eq!(
            (other.failures.count, other.failures.engine_gone.as_deref()),
            (1, None)
        );
        assert!(other.failures.engine_error().is_none());
    }

    /// An ended child's owner label and a running child (with its label), on this machine.
    fn ended_and_running() -> (String, std::process::Child, String) {
        let me = swtbench_data::owner::current();
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        let start = swtbench_data::owner::start_time(ended.id()).unwrap_or(1);
        let dead = format!("{}/{}/{start}", me.host, ended.id());
        ended.wait().unwrap();
        let live = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let start = swtbench_data::owner::start_time(live.id()).unwrap();
        let label = format!("{}/{}/{start}", me.host, live.id());
        (dead, live, label)
    }

    async fn container(
        fake: &FakeBackend,
        run_id: &str,
        owner: &str,
        name: Option<&str>,
    ) -> String {
        let mut spec = ContainerSpec::new("img:1");
        spec.labels = run_labels(run_id, "a__b-1", "gold_pre");
        if let Some(n) = name {
            // A commit build's container: its image's labels, no run.
            spec.name = Some(n.to_string());
            spec.labels = [(swtbench_backend::labels::IMAGE, "exec.env.e:latest")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        }
        spec.labels.insert(SESSION.into(), owner.into());
        fake.container_create(&spec).await.unwrap()
    }

    fn ids(fake: &FakeBackend) -> BTreeSet<String> {
        fake.containers().into_iter().map(|c| c.id).collect()
    }

    #[tokio::test]
    async fn clean_removes_what_dead_owners_left_of_any_run_and_nothing_of_the_living() {
        let fake = FakeBackend::new();
        fake.add_image("img:1", Default::default());
        let (dead, mut sleeper, live) = ended_and_running();
        let dead_run = container(&fake, "r1", &dead, None).await;
        let dead_build = container(&fake, "r2", &dead, Some("swtbench-build-x")).await;
        let live_run = container(&fake, "r1", &live, None).await;
        let far = container(&fake, "r3", "elsewhere/1/1", None).await;
        let users = container(&fake, "r3", "", None).await;
        let out = tempfile::tempdir().unwrap();
        let options = CleanOptions {
            output_dir: out.path().to_path_buf(),
            ..CleanOptions::default()
        };
        let all = ids(&fake);

        // A dry run says what would go and removes nothing.
        let mut seen = Vec::new();
        let dry = CleanOptions {
            dry_run: true,
            ..options.clone()
        };
        let summary = clean_run(&fake, &dry, &mut |_, name, what| {
            seen.push(format!("{:?}", what.line(Item::Container, name)));
        })
        .await
        .unwrap();
        assert_eq!(ids(&fake), all);
        assert_eq!(summary.leftovers.len(), 2, "{seen:?}");
        assert!(summary.texts(&dry)[0].contains(
            "2 container(s) left by swtbench processes that have ended would be removed"
        ));

        let mut lines = Vec::new();
        let summary = clean_run(&fake, &options, &mut |item, name, what| {
            lines.push(format!("{:?}", what.line(item, name)));
        })
        .await
        .unwrap();
        let left = ids(&fake);
        assert!(
            !left.contains(&dead_run) && !left.contains(&dead_build),
            "{lines:?}"
        );
        assert_eq!(
            left,
            BTreeSet::from([live_run.clone(), far.clone(), users.clone()])
        );
        let pid = dead.split('/').nth(1).unwrap();
        assert!(
            lines.iter().any(|l| l.contains(&format!(
                "swtbench-build-x (image build of exec.env.e:latest, left by pid {pid})"
            ))),
            "{lines:?}"
        );
        assert_eq!(
            summary.texts(&options),
            vec![format!(
                "removed 2 container(s) left by swtbench processes that have ended: pid {pid} \
                 (run id r1): 1 test run, 1 image build (exec.env.e:latest)"
            )]
        );

        // Again: nothing left by the dead, and the run's live container is left alone unless
        // forced.
        let r1 = CleanOptions {
            run_id: Some("r1".into()),
            ..options.clone()
        };
        let mut lines = Vec::new();
        let summary = clean_run(&fake, &r1, &mut |item, name, what| {
            lines.push(format!("{:?}", what.line(item, name)));
        })
        .await
        .unwrap();
        assert_eq!(
            summary.texts(&r1),
            vec![
                "nothing left by swtbench processes that have ended".to_string(),
                "run r1: 1 container(s), 0 image(s) found".to_string()
            ]
        );
        assert!(ids(&fake).contains(&live_run), "{lines:?}");

        // Other machines' only when asked.
        let wide = CleanOptions {
            all_hosts: true,
            ..options.clone()
        };
        clean_run(&fake, &wide, &mut |_, _, _| {}).await.unwrap();
        assert_eq!(ids(&fake), BTreeSet::from([live_run, users]));
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }
}
