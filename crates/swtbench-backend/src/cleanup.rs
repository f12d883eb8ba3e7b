//! Removing what swtbench created: everything carrying some labels (Ctrl-C, `swtbench clean
//! --run-id R`), and a guard that removes one container when the code using it is done or unwinds.

use std::sync::Arc;

use crate::backend::ContainerBackend;
use crate::error::{BackendError, Result};
use crate::labels::LabelFilter;

/// What a cleanup removed, and what it could not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Ids removed.
    pub removed: Vec<String>,
    /// Ids that could not be removed, with the reason.
    pub failed: Vec<(String, BackendError)>,
}

impl CleanupReport {
    pub fn is_clean(&self) -> bool {
        self.failed.is_empty()
    }
}

/// Force-removes every container carrying the labels (running ones are killed).
pub async fn remove_containers<B: ContainerBackend>(
    backend: &B,
    filter: &LabelFilter,
) -> Result<CleanupReport> {
    let mut report = CleanupReport::default();
    for c in backend.containers_with_label(filter).await? {
        match backend.container_remove(&c.id).await {
            Ok(_) => report.removed.push(c.id),
            Err(e) => report.failed.push((c.id, e)),
        }
    }
    Ok(report)
}

/// Removes every image carrying the labels (`force`: even when containers still use them).
pub async fn remove_images<B: ContainerBackend>(
    backend: &B,
    filter: &LabelFilter,
    force: bool,
) -> Result<CleanupReport> {
    let mut report = CleanupReport::default();
    for i in backend.images_with_label(filter).await? {
        match backend.image_remove(&i.id, force).await {
            Ok(_) => report.removed.push(i.id),
            Err(e) => report.failed.push((i.id, e)),
        }
    }
    Ok(report)
}

/// Owns a container: [`ContainerGuard::remove`] removes it and reports errors; dropping the guard
/// without that (an early return, a panic, a cancelled task) removes it in the background on the
/// current tokio runtime. Labels plus [`remove_containers`] catch whatever a dying process leaves.
#[derive(Debug)]
pub struct ContainerGuard<B: ContainerBackend> {
    backend: Arc<B>,
    id: Option<String>,
}

impl<B: ContainerBackend> ContainerGuard<B> {
    pub fn new(backend: Arc<B>, id: String) -> Self {
        ContainerGuard {
            backend,
            id: Some(id),
        }
    }

    pub fn id(&self) -> &str {
        self.id.as_deref().unwrap_or_default()
    }

    /// Removes the container now. `Ok(false)`: it was gone already.
    pub async fn remove(mut self) -> Result<bool> {
        match self.id.take() {
            Some(id) => self.backend.container_remove(&id).await,
            None => Ok(false),
        }
    }

    /// Gives up ownership: the container stays.
    pub fn keep(mut self) -> String {
        self.id.take().unwrap_or_default()
    }
}

impl<B: ContainerBackend> Drop for ContainerGuard<B> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let backend = self.backend.clone();
            handle.spawn(async move {
                let _ = backend.container_remove(&id).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeBackend;
    use crate::labels;
    use crate::model::ContainerSpec;
    use std::collections::BTreeMap;

    async fn make(fake: &FakeBackend, run_id: &str, run: &str) -> String {
        let mut spec = ContainerSpec::new("img:1");
        spec.labels = labels::run_labels(run_id, "i", run);
        fake.container_create(&spec).await.expect("create")
    }

    #[tokio::test]
    async fn removal_by_label_takes_only_matching_containers() {
        let fake = FakeBackend::new();
        fake.add_image("img:1", BTreeMap::new());
        for run in ["pred_pre", "gold_pre"] {
            make(&fake, "r1", run).await;
        }
        let other = make(&fake, "r2", "pred_pre").await;
        let report = remove_containers(&fake, &LabelFilter::run_id("r1"))
            .await
            .expect("cleanup");
        assert_eq!(report.removed.len(), 2);
        assert!(report.is_clean());
        let left: Vec<String> = fake.containers().into_iter().map(|c| c.id).collect();
        assert_eq!(left, vec![other]);
    }

    #[tokio::test]
    async fn a_dropped_guard_removes_its_container_and_keep_keeps_it() {
        let fake = Arc::new(FakeBackend::new());
        fake.add_image("img:1", BTreeMap::new());
        let id = make(&fake, "r1", "pred_pre").await;
        {
            let _guard = ContainerGuard::new(fake.clone(), id.clone());
        }
        // The removal runs as a task on this runtime; let it run.
        tokio::task::yield_now().await;
        assert!(fake.containers().is_empty());

        let kept = make(&fake, "r1", "pred_post").await;
        let guard = ContainerGuard::new(fake.clone(), kept.clone());
        assert_eq!(guard.keep(), kept);
        tokio::task::yield_now().await;
        assert_eq!(fake.containers().len(), 1);
        let guard = ContainerGuard::new(fake.clone(), kept);
        assert!(guard.remove().await.expect("remove"));
        assert!(fake.containers().is_empty());
    }

    #[tokio::test]
    async fn images_are_removed_by_label() {
        let fake = FakeBackend::new();
        let temp = BTreeMap::from([(labels::RUN_ID.to_string(), "r1".to_string())]);
        fake.add_image("tmp:1", temp);
        fake.add_image("keep:1", BTreeMap::new());
        let report = remove_images(&fake, &LabelFilter::run_id("r1"), false)
            .await
            .expect("cleanup");
        assert_eq!(report.removed.len(), 1);
        assert_eq!(fake.images().len(), 1);
    }
}
