//! `clean`: removes what a run left behind (after `kill -9`, a third Ctrl-C or a crash): its
//! containers and its temporary images (images above its cache level), found by the
//! `swtbench.run_id` label. Outputs on disk are never touched. Containers of a swtbench process
//! that may still be running are left alone unless forced.
//!
//! Each removal is reported to a callback as it happens (the binary prints it); the totals come
//! back as a [`CleanSummary`].

use anyhow::anyhow;
use swtbench_backend::labels::{LabelFilter, KIND, RUN_ID};
use swtbench_backend::{BackendError, ContainerBackend, ImageInfo};
use swtbench_runner::images::own_tag;
use swtbench_runner::session::{Liveness, Session, SESSION};

use crate::error::Failures;
use crate::{Error, Result};

/// What to clean.
#[derive(Debug, Clone)]
pub struct CleanOptions {
    pub run_id: String,
    /// Remove containers only.
    pub keep_images: bool,
    /// Report what would be removed, remove nothing.
    pub dry_run: bool,
    /// Also remove containers of a swtbench process that may still be running.
    pub force: bool,
}

impl CleanOptions {
    /// Refuses options that cannot name a run (before the engine is needed).
    pub fn check(&self) -> Result<()> {
        if self.run_id.trim().is_empty() {
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
    pub containers: usize,
    pub images: usize,
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

    /// The closing line of `clean`.
    pub fn text(&self, options: &CleanOptions) -> String {
        format!(
            "run {}: {} container(s), {} image(s) {}",
            options.run_id,
            self.containers,
            self.images,
            if options.dry_run {
                "would be removed"
            } else {
                "found"
            }
        )
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

/// Removes the run's containers, then (unless `keep_images`) its temporary images, children
/// first; `report(item, name, what)` is called for each.
pub async fn clean_run<B: ContainerBackend>(
    backend: &B,
    options: &CleanOptions,
    report: &mut dyn FnMut(Item, &str, &Cleaned),
) -> Result<CleanSummary> {
    options.check()?;
    let filter = LabelFilter::new(RUN_ID, options.run_id.as_str());
    let containers = backend
        .containers_with_label(&filter)
        .await
        .map_err(Error::environment)?;
    let mut summary = CleanSummary {
        containers: containers.len(),
        ..CleanSummary::default()
    };
    let me = Session::current();
    for c in &containers {
        let name = c.names.first().cloned().unwrap_or_else(|| c.id.clone());
        let owner = c.labels.get(SESSION);
        let live = owner.map(|l| me.liveness(l));
        let what = if !options.force && matches!(live, Some(Liveness::Alive | Liveness::Unknown)) {
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

/// Removes swtbench's own tag of an image ([`own_tag`]): the image goes with it unless it has
/// other tags (a user's, which keep it). An image swtbench does not own is left alone.
pub async fn remove_image<B: ContainerBackend>(
    backend: &B,
    image: &ImageInfo,
    force: bool,
) -> std::result::Result<(), BackendError> {
    match own_tag(image) {
        Some(tag) => backend.image_remove(&tag, force).await.map(|_| ()),
        None => Ok(()),
    }
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
            run_id: "r1".into(),
            keep_images: true,
            dry_run: false,
            force: true,
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
}
