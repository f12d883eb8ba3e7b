//! `ImageBuilder`: builds each image at most once per process however many workers ask for it, with
//! a bound on concurrent builds, and writes the build files and log next to each other.
//!
//! Single flight is an in-process map from image tag to a once-cell: the first worker to ask builds
//! (or decides to reuse), every other worker awaits the same answer, failures included. No lock
//! files: one swtbench process owns its builds. If the worker that is building is cancelled, the
//! next waiter takes the build over.
//!
//! A chain (base → env → instance) is ensured in order; a child is rebuilt when its parent was
//! built by this process or is newer than the child (the reference harness's staleness rule,
//! which it applied to instance images only).

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{OnceCell, Semaphore};

use crate::backend::ContainerBackend;
use crate::error::{BackendError, Result};
use crate::model::{BuildRequest, ImageInfo};
use crate::network::BuildNetwork;

/// File name of the build log inside a recipe's log directory.
pub const BUILD_LOG: &str = "build_image.log";

/// How to make one image, and where its build files and log go.
#[derive(Debug, Clone)]
pub struct ImageRecipe {
    /// What to build (the tag is `request.tag`). The context is the pristine, image-defining text;
    /// the CA/proxy adjustments are applied at build time only.
    pub request: BuildRequest,
    /// Directory receiving the context files (`Dockerfile`, `setup_env.sh`, …) and
    /// [`BUILD_LOG`] when the image is built. `None`: the log is discarded.
    pub log_dir: Option<PathBuf>,
}

impl ImageRecipe {
    pub fn tag(&self) -> &str {
        &self.request.tag
    }
}

/// Whether an existing image may be reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RebuildPolicy {
    /// Reuse an existing, up-to-date image.
    #[default]
    Reuse,
    /// Rebuild without the layer cache (once per process; later asks reuse that build).
    Force,
}

/// How an image came to be available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildOutcome {
    /// It existed and was up to date.
    Reused,
    /// This process built it.
    Built { duration: Duration },
    /// This process pulled it from the registry cache (`reference`) and gave it its local name.
    Pulled {
        reference: String,
        duration: Duration,
        bytes: u64,
    },
}

/// What happens between the builder and a registry cache, for progress and events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryNote {
    PullStarted {
        tag: String,
        reference: String,
    },
    Progress {
        tag: String,
        reference: String,
        pushing: bool,
        progress: crate::model::TransferProgress,
    },
    /// A pull attempt failed and is tried again after `pause`.
    PullRetry {
        tag: String,
        reference: String,
        attempt: u32,
        pause: Duration,
        reason: String,
    },
    /// The registry does not have the image, or the pull failed after its retries: it is built.
    PullFallback {
        tag: String,
        reference: String,
        missing: bool,
        reason: String,
    },
    Pushed {
        tag: String,
        reference: String,
        duration: Duration,
        bytes: u64,
    },
    PushFailed {
        tag: String,
        reference: String,
        reason: String,
    },
}

/// A registry used as a cache of the images a builder makes: `<prefix>/<tag>` is pulled before
/// a build (when the image is missing locally and not forced), and pushed after (with `push`).
pub struct RegistryCache {
    /// `host[:port][/namespace]`.
    pub prefix: String,
    pub pull: bool,
    pub push: bool,
    pub auth: Option<crate::model::RegistryAuth>,
    /// Bounds concurrent pulls (`--pull-workers`).
    pub pull_slots: Semaphore,
    /// Attempts per pull; failures other than "missing" are retried after `pauses[i]`.
    pub attempts: u32,
    pub pause: Duration,
    pub observer: Box<dyn Fn(RegistryNote) + Send + Sync>,
}

impl std::fmt::Debug for RegistryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryCache")
            .field("prefix", &self.prefix)
            .field("pull", &self.pull)
            .field("push", &self.push)
            .field("auth", &self.auth)
            .finish_non_exhaustive()
    }
}

impl RegistryCache {
    /// The registry reference of a local tag.
    pub fn reference(&self, tag: &str) -> String {
        let tag = tag.strip_prefix("localhost/").unwrap_or(tag);
        format!("{}/{tag}", self.prefix.trim_end_matches('/'))
    }
}

/// The registry name an image carries during a transfer: removed when the transfer is dropped
/// unfinished (Ctrl-C, a cancelled task), as the transfer removes it when it ends. A pulled image
/// that got no local name yet goes with it; one that did keeps that name.
struct TransferName<B: ContainerBackend> {
    backend: Arc<B>,
    reference: Option<String>,
}

impl<B: ContainerBackend> TransferName<B> {
    fn new(backend: &Arc<B>, reference: &str) -> Self {
        TransferName {
            backend: backend.clone(),
            reference: Some(reference.to_string()),
        }
    }

    /// Removes the name now (its absence is no error), as the transfer's last step.
    async fn remove(mut self) {
        if let Some(reference) = self.reference.take() {
            let _ = self.backend.image_remove(&reference, false).await;
        }
    }
}

impl<B: ContainerBackend> Drop for TransferName<B> {
    fn drop(&mut self) {
        let Some(reference) = self.reference.take() else {
            return;
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let backend = self.backend.clone();
            handle.spawn(async move {
                let _ = backend.image_remove(&reference, false).await;
            });
        }
    }
}

/// Pulls `reference` and names it `tag` locally (the registry name is removed again, so the
/// image looks as if built here, also when the pull is dropped unfinished). Returns the bytes
/// moved.
pub async fn pull_as<B: ContainerBackend>(
    backend: &Arc<B>,
    reference: &str,
    tag: &str,
    auth: Option<&crate::model::RegistryAuth>,
    progress: crate::model::ProgressSink<'_>,
) -> Result<u64> {
    let bytes = std::sync::atomic::AtomicU64::new(0);
    let sink = |p: crate::model::TransferProgress| {
        bytes.store(
            p.total_bytes.max(p.bytes),
            std::sync::atomic::Ordering::Relaxed,
        );
        progress(p);
    };
    let name = TransferName::new(backend, reference);
    backend.image_pull(reference, auth, &sink).await?;
    backend.image_tag(reference, tag).await?;
    name.remove().await;
    Ok(bytes.load(std::sync::atomic::Ordering::Relaxed))
}

/// Pushes the local `tag` as `reference` (tagged for the push, untagged after, also when the
/// push is dropped unfinished). Returns the bytes moved.
pub async fn push_as<B: ContainerBackend>(
    backend: &Arc<B>,
    tag: &str,
    reference: &str,
    auth: Option<&crate::model::RegistryAuth>,
    progress: crate::model::ProgressSink<'_>,
) -> Result<u64> {
    let bytes = std::sync::atomic::AtomicU64::new(0);
    let sink = |p: crate::model::TransferProgress| {
        bytes.store(
            p.total_bytes.max(p.bytes),
            std::sync::atomic::Ordering::Relaxed,
        );
        progress(p);
    };
    let name = TransferName::new(backend, reference);
    backend.image_tag(tag, reference).await?;
    let pushed = backend.image_push(reference, auth, &sink).await;
    name.remove().await;
    pushed.map(|()| bytes.load(std::sync::atomic::Ordering::Relaxed))
}

/// An image that is now available.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnsuredImage {
    pub tag: String,
    pub image: ImageInfo,
    pub outcome: BuildOutcome,
}

impl EnsuredImage {
    pub fn was_built(&self) -> bool {
        matches!(self.outcome, BuildOutcome::Built { .. })
    }

    pub fn was_pulled(&self) -> bool {
        matches!(self.outcome, BuildOutcome::Pulled { .. })
    }
}

type Cell = Arc<OnceCell<Result<EnsuredImage>>>;

/// Builds images on a backend, each at most once.
#[derive(Debug)]
pub struct ImageBuilder<B> {
    backend: Arc<B>,
    network: BuildNetwork,
    slots: Semaphore,
    cells: Mutex<HashMap<String, Cell>>,
    registry: Option<RegistryCache>,
    /// One push per tag.
    pushes: Mutex<HashMap<String, Arc<OnceCell<()>>>>,
}

impl<B: ContainerBackend> ImageBuilder<B> {
    /// `max_parallel_builds` (at least 1) bounds concurrent builds; waiting for an image that
    /// another worker builds does not take a slot.
    pub fn new(backend: Arc<B>, max_parallel_builds: usize, network: BuildNetwork) -> Self {
        ImageBuilder {
            backend,
            network,
            slots: Semaphore::new(max_parallel_builds.max(1)),
            cells: Mutex::new(HashMap::new()),
            registry: None,
            pushes: Mutex::new(HashMap::new()),
        }
    }

    /// Uses `registry` as a cache: pull before building, push after (see [`RegistryCache`]).
    pub fn with_registry(mut self, registry: Option<RegistryCache>) -> Self {
        self.registry = registry;
        self
    }

    pub fn registry(&self) -> Option<&RegistryCache> {
        self.registry.as_ref()
    }

    pub fn backend(&self) -> &Arc<B> {
        &self.backend
    }

    /// Makes `recipe`'s image available: reuses it, or builds it once for all callers. `parent` is
    /// the image the recipe starts from, when it is one this builder ensured.
    pub async fn ensure(
        &self,
        recipe: &ImageRecipe,
        policy: RebuildPolicy,
        parent: Option<&EnsuredImage>,
    ) -> Result<EnsuredImage> {
        self.ensure_retrying(recipe, policy, parent, |_| None).await
    }

    /// [`ImageBuilder::ensure`], with a failed build tried once more when `retry` gives a pause
    /// for its error. Every caller waiting for the same tag gets the one outcome.
    pub async fn ensure_retrying(
        &self,
        recipe: &ImageRecipe,
        policy: RebuildPolicy,
        parent: Option<&EnsuredImage>,
        retry: impl Fn(&BackendError) -> Option<Duration>,
    ) -> Result<EnsuredImage> {
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
            cells.entry(recipe.tag().to_string()).or_default().clone()
        };
        let got = cell
            .get_or_init(|| async {
                let first = self.ensure_uncached(recipe, policy, parent).await;
                match first.as_ref().err().and_then(&retry) {
                    Some(pause) => {
                        tokio::time::sleep(pause).await;
                        self.ensure_uncached(recipe, policy, parent).await
                    }
                    None => first,
                }
            })
            .await
            .clone();
        if let (Ok(image), Some(reg)) = (&got, &self.registry) {
            if reg.push && !image.was_pulled() {
                self.push_once(reg, &image.tag).await;
            }
        }
        got
    }

    /// Pushes `tag` to the registry cache once per builder; a failure is a note, not an error
    /// (the image is there locally and the evaluation goes on).
    async fn push_once(&self, reg: &RegistryCache, tag: &str) {
        let cell = {
            let mut p = self.pushes.lock().unwrap_or_else(|p| p.into_inner());
            p.entry(tag.to_string()).or_default().clone()
        };
        cell.get_or_init(|| async {
            let reference = reg.reference(tag);
            let started = Instant::now();
            let progress = |progress| {
                (reg.observer)(RegistryNote::Progress {
                    tag: tag.to_string(),
                    reference: reference.clone(),
                    pushing: true,
                    progress,
                })
            };
            match push_as(&self.backend, tag, &reference, reg.auth.as_ref(), &progress).await {
                Ok(bytes) => (reg.observer)(RegistryNote::Pushed {
                    tag: tag.to_string(),
                    reference,
                    duration: started.elapsed(),
                    bytes,
                }),
                Err(e) => (reg.observer)(RegistryNote::PushFailed {
                    tag: tag.to_string(),
                    reference,
                    reason: e.to_string(),
                }),
            }
        })
        .await;
    }

    /// Tries to pull `tag` from the registry cache (its retries included). `None`: build it.
    async fn try_pull(&self, reg: &RegistryCache, tag: &str) -> Option<EnsuredImage> {
        let reference = reg.reference(tag);
        let _slot = reg.pull_slots.acquire().await.ok()?;
        (reg.observer)(RegistryNote::PullStarted {
            tag: tag.to_string(),
            reference: reference.clone(),
        });
        let started = Instant::now();
        let attempts = reg.attempts.max(1);
        for attempt in 1..=attempts {
            let progress = |progress| {
                (reg.observer)(RegistryNote::Progress {
                    tag: tag.to_string(),
                    reference: reference.clone(),
                    pushing: false,
                    progress,
                })
            };
            let pulled =
                pull_as(&self.backend, &reference, tag, reg.auth.as_ref(), &progress).await;
            let err = match pulled {
                Ok(bytes) => match self.backend.image_inspect(tag).await {
                    Ok(Some(image)) => {
                        return Some(EnsuredImage {
                            tag: tag.to_string(),
                            image,
                            outcome: BuildOutcome::Pulled {
                                reference,
                                duration: started.elapsed(),
                                bytes,
                            },
                        })
                    }
                    Ok(None) => BackendError::ImageNotFound(tag.to_string()),
                    Err(e) => e,
                },
                Err(e) => e,
            };
            let missing = matches!(err, BackendError::PullFailed { missing: true, .. });
            if missing || attempt == attempts {
                (reg.observer)(RegistryNote::PullFallback {
                    tag: tag.to_string(),
                    reference,
                    missing,
                    reason: err.to_string(),
                });
                return None;
            }
            let pause = reg.pause.saturating_mul(1u32 << (attempt - 1).min(8));
            (reg.observer)(RegistryNote::PullRetry {
                tag: tag.to_string(),
                reference: reference.clone(),
                attempt,
                pause,
                reason: err.to_string(),
            });
            tokio::time::sleep(pause).await;
        }
        None
    }

    /// Ensures a chain in order (base, env, instance); each element's parent is the previous one.
    pub async fn ensure_chain(
        &self,
        chain: &[ImageRecipe],
        policy: RebuildPolicy,
    ) -> Result<Vec<EnsuredImage>> {
        let mut done: Vec<EnsuredImage> = Vec::with_capacity(chain.len());
        for recipe in chain {
            let image = self.ensure(recipe, policy, done.last()).await?;
            done.push(image);
        }
        Ok(done)
    }

    /// Takes `image` as the answer for its tag, reused as it is, unless the tag has an answer
    /// already: a caller that looked the image up moments ago (a plan) spares every later
    /// caller the engine's look-up.
    pub fn seed(&self, tag: &str, image: ImageInfo) {
        let cell = {
            let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
            cells.entry(tag.to_string()).or_default().clone()
        };
        let _ = cell.set(Ok(EnsuredImage {
            tag: tag.to_string(),
            image,
            outcome: BuildOutcome::Reused,
        }));
    }

    /// Tags this builder built or pulled (not the reused ones), sorted; what a cache-level
    /// cleanup removes.
    pub fn built_tags(&self) -> Vec<String> {
        let cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
        let mut tags: Vec<String> = cells
            .iter()
            .filter(|(_, c)| matches!(c.get(), Some(Ok(e)) if e.was_built() || e.was_pulled()))
            .map(|(t, _)| t.clone())
            .collect();
        tags.sort();
        tags
    }

    /// Tags this builder pulled from the registry cache, sorted.
    pub fn pulled_tags(&self) -> Vec<String> {
        let cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
        let mut tags: Vec<String> = cells
            .iter()
            .filter(|(_, c)| matches!(c.get(), Some(Ok(e)) if e.was_pulled()))
            .map(|(t, _)| t.clone())
            .collect();
        tags.sort();
        tags
    }

    /// Forgets what is known about `tag` (after removing the image, or to retry a failed build).
    pub fn forget(&self, tag: &str) {
        self.cells
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(tag);
    }

    async fn ensure_uncached(
        &self,
        recipe: &ImageRecipe,
        policy: RebuildPolicy,
        parent: Option<&EnsuredImage>,
    ) -> Result<EnsuredImage> {
        let tag = recipe.tag().to_string();
        let existing = self.backend.image_inspect(&tag).await?;
        if let Some(image) = &existing {
            let parent_newer =
                parent.is_some_and(|p| p.was_built() || p.image.created_unix > image.created_unix);
            if policy == RebuildPolicy::Reuse && !parent_newer {
                return Ok(EnsuredImage {
                    tag,
                    image: image.clone(),
                    outcome: BuildOutcome::Reused,
                });
            }
        }
        // Missing locally and not forced: the registry cache may have it.
        if let (None, RebuildPolicy::Reuse, Some(reg)) = (&existing, policy, &self.registry) {
            if reg.pull {
                if let Some(pulled) = self.try_pull(reg, &tag).await {
                    return Ok(pulled);
                }
            }
        }

        let _slot = self
            .slots
            .acquire()
            .await
            .map_err(|_| BackendError::Invalid("the image builder was shut down".into()))?;
        let started = Instant::now();
        let mut request = recipe.request.clone();
        if policy == RebuildPolicy::Force {
            request.no_cache = true;
        }
        let notes = self.network.apply(&mut request)?;
        let mut log = open_log(recipe)?;
        for note in &notes {
            writeln!(log, "{note}")
                .map_err(|e| BackendError::io(format!("writing the build log of {tag}"), &e))?;
        }
        let image = self.backend.image_build(request, &mut log).await?;
        if let Some(old) = existing.filter(|old| old.id != image.id) {
            // The replaced image is untagged now; drop it unless something still uses it.
            let _ = self.backend.image_remove(&old.id, false).await;
        }
        Ok(EnsuredImage {
            tag,
            image,
            outcome: BuildOutcome::Built {
                duration: started.elapsed(),
            },
        })
    }
}

/// Writes the recipe's pristine context files to its log dir and opens the build log there.
fn open_log(recipe: &ImageRecipe) -> Result<Box<dyn Write + Send>> {
    let Some(dir) = &recipe.log_dir else {
        return Ok(Box::new(std::io::sink()));
    };
    let io = |what: &str, e: std::io::Error| {
        BackendError::io(format!("{what} in {}", dir.display()), &e)
    };
    std::fs::create_dir_all(dir).map_err(|e| io("creating the build log directory", e))?;
    for (path, file) in recipe.request.context.files() {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io("creating a directory", e))?;
        }
        std::fs::write(&target, &file.contents).map_err(|e| io(&format!("writing {path}"), e))?;
    }
    let file =
        std::fs::File::create(dir.join(BUILD_LOG)).map_err(|e| io("creating the build log", e))?;
    Ok(Box::new(std::io::LineWriter::new(file)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::BuildContext;
    use crate::fake::{FakeBackend, FakeCall};
    use std::collections::BTreeMap;

    fn recipe(tag: &str, from: &str) -> ImageRecipe {
        ImageRecipe {
            request: BuildRequest::new(tag, BuildContext::new(format!("FROM {from}\nRUN true\n"))),
            log_dir: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn concurrent_workers_build_each_image_once() {
        let fake = Arc::new(FakeBackend::new());
        fake.add_image("root:1", BTreeMap::new());
        fake.set_build_delay(Duration::from_secs(30));
        let builder = Arc::new(ImageBuilder::new(fake.clone(), 2, BuildNetwork::none()));
        let chain = vec![recipe("base:1", "root:1"), recipe("env:1", "base:1")];
        let mut tasks = Vec::new();
        for i in 0..8 {
            let builder = builder.clone();
            let mut chain = chain.clone();
            // Two instances share base and env.
            chain.push(recipe(&format!("inst:{}", i % 2), "env:1"));
            tasks.push(tokio::spawn(async move {
                builder.ensure_chain(&chain, RebuildPolicy::Reuse).await
            }));
        }
        for t in tasks {
            let got = t.await.expect("task").expect("chain");
            assert_eq!(got.len(), 3);
        }
        for tag in ["base:1", "env:1", "inst:0", "inst:1"] {
            assert_eq!(fake.builds_of(tag), 1, "{tag}");
        }
        assert_eq!(
            builder.built_tags(),
            vec!["base:1", "env:1", "inst:0", "inst:1"]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn existing_images_are_reused_unless_forced_and_force_builds_once() {
        let fake = Arc::new(FakeBackend::new());
        fake.add_image("root:1", BTreeMap::new());
        fake.add_image("base:1", BTreeMap::new());
        let builder = ImageBuilder::new(fake.clone(), 1, BuildNetwork::none());
        let r = recipe("base:1", "root:1");
        let got = builder
            .ensure(&r, RebuildPolicy::Reuse, None)
            .await
            .expect("ensure");
        assert_eq!(got.outcome, BuildOutcome::Reused);
        assert_eq!(fake.builds_of("base:1"), 0);

        let forced = ImageBuilder::new(fake.clone(), 1, BuildNetwork::none());
        let a = forced
            .ensure(&r, RebuildPolicy::Force, None)
            .await
            .expect("force");
        let b = forced
            .ensure(&r, RebuildPolicy::Force, None)
            .await
            .expect("force again");
        assert!(a.was_built());
        assert_eq!(a, b, "a forced rebuild happens once per builder");
        assert_eq!(fake.builds_of("base:1"), 1);
        assert!(fake
            .calls()
            .iter()
            .any(|c| matches!(c, FakeCall::ImageBuild { no_cache: true, .. })));
    }

    #[tokio::test(start_paused = true)]
    async fn a_rebuilt_or_newer_parent_makes_the_child_stale() {
        let fake = Arc::new(FakeBackend::new());
        fake.add_image("root:1", BTreeMap::new());
        fake.add_image("env:1", BTreeMap::new());
        // The base is newer than the env image built on it earlier.
        fake.add_image("base:1", BTreeMap::new());
        let builder = ImageBuilder::new(fake.clone(), 1, BuildNetwork::none());
        let got = builder
            .ensure_chain(
                &[recipe("base:1", "root:1"), recipe("env:1", "base:1")],
                RebuildPolicy::Reuse,
            )
            .await
            .expect("chain");
        assert_eq!(got[0].outcome, BuildOutcome::Reused);
        assert!(got[1].was_built(), "env older than its base is rebuilt");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_is_shared_by_all_waiters_and_forget_allows_a_retry() {
        let fake = Arc::new(FakeBackend::new());
        let builder = Arc::new(ImageBuilder::new(fake.clone(), 4, BuildNetwork::none()));
        let r = recipe("base:1", "missing:1");
        let (a, b) = tokio::join!(
            builder.ensure(&r, RebuildPolicy::Reuse, None),
            builder.ensure(&r, RebuildPolicy::Reuse, None)
        );
        assert!(matches!(a, Err(BackendError::BuildFailed { .. })));
        assert_eq!(a, b);
        assert_eq!(fake.builds_of("base:1"), 1);
        fake.add_image("missing:1", BTreeMap::new());
        builder.forget("base:1");
        assert!(builder.ensure(&r, RebuildPolicy::Reuse, None).await.is_ok());
        assert!(builder.built_tags().contains(&"base:1".to_string()));
    }

    #[tokio::test(start_paused = true)]
    async fn build_files_and_log_land_in_the_log_dir_with_pristine_dockerfile() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fake = Arc::new(FakeBackend::new());
        fake.add_image("root:1", BTreeMap::new());
        let network = BuildNetwork::from_parts(Some(b"CA".to_vec()), |_| None);
        let builder = ImageBuilder::new(fake.clone(), 1, network);
        let mut r = recipe("base:1", "root:1");
        r.request
            .context
            .add_file("setup_env.sh", "echo env\n", 0o755)
            .expect("file");
        r.log_dir = Some(dir.path().join("base__1"));
        builder
            .ensure(&r, RebuildPolicy::Reuse, None)
            .await
            .expect("build");
        let d = dir.path().join("base__1");
        assert_eq!(
            std::fs::read_to_string(d.join("Dockerfile")).expect("df"),
            "FROM root:1\nRUN true\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.join("setup_env.sh")).expect("sh"),
            "echo env\n"
        );
        let log = std::fs::read_to_string(d.join(BUILD_LOG)).expect("log");
        assert!(log.contains("CA bundle"), "{log}");
        assert!(log.contains("Successfully tagged base:1"), "{log}");
        // The engine got the adjusted Dockerfile and the bundle.
        let sent = fake.calls().into_iter().find_map(|c| match c {
            FakeCall::ImageBuild {
                dockerfile, files, ..
            } => Some((dockerfile, files)),
            _ => None,
        });
        let (dockerfile, files) = sent.expect("a build call");
        assert!(dockerfile.contains(" PIP_CERT "));
        assert!(files.contains(&crate::network::CA_CONTEXT_PATH.to_string()));
    }
}
