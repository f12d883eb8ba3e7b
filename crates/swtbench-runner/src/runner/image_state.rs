//! The images of an evaluation: making each instance's chain (base → env → instance) available,
//! building ahead of the workers, telling what was built or failed (once per image), and removing
//! what the cache level does not keep: an instance image when its last instance is done, the rest
//! at the end.
//!
//! [`ImageState`] is the one place this state lives: what the plan decided per image, the
//! builder (whose single flight builds each image at most once), the cache-level policy
//! ([`ImageLifecycle`]) and [`ImageMarks`], what has happened to each tag so far. It decides
//! nothing about instances or runs.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use swtbench_backend::labels::{LabelFilter, KIND, RUN_ID};
use swtbench_backend::{
    BackendError, BuildNetwork, BuildOutcome, ContainerBackend, EnsuredImage, ImageBuilder,
    ImageInfo, ImageRecipe, RebuildPolicy,
};
use swtbench_spec::ExecSpec;

use super::books::Books;
use crate::events::{Event, ImageOutcome};
use crate::execute::ContainerRegistry;
use crate::images::{recipes, ImageLifecycle, InstanceRecipes};
use crate::lock::Locked;
use crate::outcome::RecipeError;
use crate::outcome::{BuildFailure, ImageError};
use swtbench_plan::plan::{ImageAction, ImageChainPlan, ImageInventory, InstancePlan, Plan};
use swtbench_plan::settings::{ImageKind, RunSettings};

/// An image tag (`exec.env.x86_64.…:latest`, a local base image's name).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct ImageTag(String);

impl From<&str> for ImageTag {
    fn from(tag: &str) -> Self {
        ImageTag(tag.to_string())
    }
}

impl Borrow<str> for ImageTag {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// What has happened to each image so far. Each `first_*` transition answers `true` once per tag,
/// to the one caller that does what follows (send the event, count the build, remove the image).
#[derive(Debug, Default)]
pub(super) struct ImageMarks {
    inner: Mutex<Marks>,
}

#[derive(Debug, Default)]
struct Marks {
    /// `image_build_started` was sent.
    build_announced: HashSet<ImageTag>,
    /// `image_ready` (built) was sent and the build counted.
    built_reported: HashSet<ImageTag>,
    /// `image_ready` (failed) was sent.
    failure_reported: HashSet<ImageTag>,

    /// Instance images whose whole chain was ensured in this evaluation.
    chain_ready: HashSet<ImageTag>,
    /// Images whose removal was started.
    removal_started: HashSet<ImageTag>,
    /// Recipes by instance image, shared by the prefetcher and the workers until the chain is
    /// ready: with a mirror, the instance context holds the whole repository.
    recipes: HashMap<ImageTag, Arc<InstanceRecipes>>,
    /// One maker of an instance's recipes at a time; the others wait for its result.
    recipe_gates: HashMap<ImageTag, Arc<tokio::sync::Mutex<()>>>,
}

impl ImageMarks {
    pub fn first_build_announcement(&self, tag: &str) -> bool {
        self.inner.locked().build_announced.insert(tag.into())
    }

    pub fn first_built_report(&self, tag: &str) -> bool {
        self.inner.locked().built_reported.insert(tag.into())
    }

    pub fn first_failure_report(&self, tag: &str) -> bool {
        self.inner.locked().failure_reported.insert(tag.into())
    }

    pub fn first_removal(&self, tag: &str) -> bool {
        self.inner.locked().removal_started.insert(tag.into())
    }

    pub fn chain_ready(&self, instance_tag: &str) -> bool {
        self.inner.locked().chain_ready.contains(instance_tag)
    }

    /// The chain of `instance_tag` is ensured: later callers get it from the builder's cache, so
    /// its recipes go.
    pub fn mark_chain_ready(&self, instance_tag: &str) {
        let mut m = self.inner.locked();
        m.chain_ready.insert(instance_tag.into());
        m.recipes.remove(instance_tag);
        m.recipe_gates.remove(instance_tag);
    }

    /// The recipes of `instance_tag`'s chain: the kept ones, or `make`'s. One caller makes them
    /// (slim repositories of a mirror: a second or more of CPU and the repository's size on disk
    /// each); callers that ask meanwhile (the prefetcher, the instance's other runs) wait for it
    /// and take its recipes. A failure is not kept: the next caller tries again.
    pub async fn recipes(
        &self,
        instance_tag: &str,
        make: impl FnOnce() -> Result<InstanceRecipes, RecipeError>,
    ) -> Result<Arc<InstanceRecipes>, RecipeError> {
        let gate = {
            let mut m = self.inner.locked();
            if let Some(r) = m.recipes.get(instance_tag).cloned() {
                return Ok(r);
            }
            m.recipe_gates
                .entry(instance_tag.into())
                .or_default()
                .clone()
        };
        let _maker = gate.lock().await;
        if let Some(r) = self.inner.locked().recipes.get(instance_tag).cloned() {
            return Ok(r);
        }
        let made = Arc::new(make()?);
        self.inner
            .locked()
            .recipes
            .insert(instance_tag.into(), made.clone());
        Ok(made)
    }
}

/// What building, pulling and removing an evaluation's images needs of it: the image state, the
/// engine, the settings, the containers made (for clean-up) and the bookkeeping.
pub(super) struct ImageCx<'a, B: ContainerBackend> {
    pub state: &'a ImageState<B>,
    pub backend: &'a Arc<B>,
    pub settings: &'a RunSettings,
    pub registry: &'a ContainerRegistry,
    pub books: &'a Books,
}

pub(super) struct ImageState<B: ContainerBackend> {
    builder: ImageBuilder<B>,
    lifecycle: ImageLifecycle,
    /// The images that existed when the plan was made.
    inventory: ImageInventory,
    /// The plan's action per tag.
    actions: BTreeMap<String, ImageAction>,
    marks: ImageMarks,
    /// The pulls and layout checks of prebuilt images (`--instance-image`).
    prebuilt: crate::prebuilt::PrebuiltFlights,
}

impl<B: ContainerBackend> ImageState<B> {
    pub fn new(
        backend: Arc<B>,
        network: BuildNetwork,
        settings: &RunSettings,
        plan: &Plan,
        inventory: ImageInventory,
        sink: Arc<dyn crate::events::EventSink>,
    ) -> ImageState<B> {
        let builder = ImageBuilder::new(backend, settings.images.build_workers.max(1), network)
            .with_registry(crate::images::registry_cache(settings, sink));
        // The images the plan reuses were looked up moments ago: no engine call per instance
        // to find them again (under load those take seconds, and would let the instances that
        // happen to be answered first take the container slots before the longest ones).
        for image in plan
            .images
            .iter()
            .filter(|i| i.action == ImageAction::Reuse)
        {
            if let Some(Some(found)) = inventory.get(&image.tag) {
                builder.seed(&image.tag, found.to_info(&image.tag));
            }
        }
        ImageState {
            builder,
            lifecycle: ImageLifecycle::new(settings, plan, &inventory),
            inventory,
            actions: plan
                .images
                .iter()
                .map(|i| (i.tag.clone(), i.action.clone()))
                .collect(),
            marks: ImageMarks::default(),
            prebuilt: crate::prebuilt::PrebuiltFlights::default(),
        }
    }

    /// Makes the prebuilt image of an instance available and checks its layout (once per image
    /// and base commit); returns the name its runs start from.
    pub async fn ensure_prebuilt(
        &self,
        cx: &ImageCx<'_, B>,
        image: &swtbench_plan::prebuilt::PrebuiltImage,
        instance: &swtbench_core::Instance,
    ) -> Result<String, crate::outcome::PrebuiltError> {
        let Some(settings) = &cx.settings.images.prebuilt else {
            return Err(crate::outcome::PrebuiltError::Engine {
                reference: image.reference.clone(),
                message: "planned without --instance-image (a bug)".into(),
            });
        };
        let ctx = crate::prebuilt::PrebuiltContext {
            backend: cx.backend,
            containers: cx.registry,
            settings,
            run_id: &cx.settings.run_id,
            flights: &self.prebuilt,
        };
        let ensured = crate::prebuilt::ensure_prebuilt(&ctx, image, instance).await?;
        if let Some(done) = ensured.pulled {
            cx.books.stats(|s| s.images_pulled += 1);
            cx.books.emit(Event::ImageReady {
                tag: ensured.tag.clone(),
                kind: ImageKind::Instance,
                outcome: ImageOutcome::Pulled {
                    reference: ensured.tag.clone(),
                    id: ensured.id.clone(),
                    duration_ms: done.duration.as_millis() as u64,
                    bytes: done.bytes,
                },
            });
        }
        Ok(ensured.tag)
    }

    /// Whether the plan builds (or rebuilds) `tag`.
    pub fn planned_build(&self, tag: &str) -> bool {
        matches!(
            self.actions.get(tag),
            Some(ImageAction::Build | ImageAction::Rebuild(_))
        )
    }

    /// Whether the plan builds any image of `chain`: the instance then waits for a build.
    pub fn builds_any(&self, chain: Option<&ImageChainPlan>) -> bool {
        chain.is_some_and(|c| {
            [&c.base, &c.env, &c.instance]
                .into_iter()
                .any(|t| self.planned_build(t))
        })
    }

    fn policy(&self, settings: &RunSettings, tag: &str) -> RebuildPolicy {
        if settings.images.force_rebuild
            || matches!(self.actions.get(tag), Some(ImageAction::Rebuild(_)))
        {
            RebuildPolicy::Force
        } else {
            RebuildPolicy::Reuse
        }
    }

    /// The id of the chain's local base image as the plan saw it (it goes into the run keys).
    pub fn external_base_id(&self, chain: Option<&ImageChainPlan>) -> Option<String> {
        let chain = chain.filter(|c| c.base_external)?;
        self.inventory
            .get(&chain.base)
            .and_then(Option::as_ref)
            .map(|i| i.id.clone())
    }
}

/// Sends `image_build_started` for a planned build, once per image.
fn announce<B: ContainerBackend>(cx: &ImageCx<'_, B>, tag: &str, kind: ImageKind, who: &str) {
    let images = cx.state;
    if images.planned_build(tag) && images.marks.first_build_announcement(tag) {
        cx.books.emit(Event::ImageBuildStarted {
            tag: tag.to_string(),
            kind,
            instance_id: who.to_string(),
        });
    }
}

/// Counts and reports a build, once, by the worker whose call built it.
fn report_built<B: ContainerBackend>(cx: &ImageCx<'_, B>, e: &EnsuredImage, kind: ImageKind) {
    if let BuildOutcome::Pulled {
        reference,
        duration,
        bytes,
    } = &e.outcome
    {
        if cx.state.marks.first_built_report(&e.tag) {
            cx.books.stats(|s| s.images_pulled += 1);
            cx.books.emit(Event::ImageReady {
                tag: e.tag.clone(),
                kind,
                outcome: ImageOutcome::Pulled {
                    reference: reference.clone(),
                    id: e.image.id.clone(),
                    duration_ms: duration.as_millis() as u64,
                    bytes: *bytes,
                },
            });
        }
    }
    if let BuildOutcome::Built { duration } = e.outcome {
        if cx.state.marks.first_built_report(&e.tag) {
            cx.books.stats(|s| s.images_built += 1);
            cx.books.emit(Event::ImageReady {
                tag: e.tag.clone(),
                kind,
                outcome: ImageOutcome::Built {
                    duration_ms: duration.as_millis() as u64,
                },
            });
        }
    }
}

/// The failure of a build. Every instance of the image fails with it; the event is sent once.
fn report_failure<B: ContainerBackend>(
    cx: &ImageCx<'_, B>,
    tag: &str,
    kind: ImageKind,
    error: BackendError,
) -> ImageError {
    let failure = BuildFailure::new(tag, kind, error, &cx.settings.outputs.build_logs);
    if cx.state.marks.first_failure_report(tag) {
        cx.books.emit(Event::ImageReady {
            tag: tag.to_string(),
            kind,
            outcome: ImageOutcome::Failed {
                reason: failure.clone(),
            },
        });
    }
    ImageError::Build(failure)
}

/// Ensures one image of a chain on top of `parent`.
async fn ensure_one<B: ContainerBackend>(
    cx: &ImageCx<'_, B>,
    recipe: &ImageRecipe,
    kind: ImageKind,
    parent: Option<&EnsuredImage>,
    who: &str,
) -> Result<EnsuredImage, ImageError> {
    let images = cx.state;
    let tag = recipe.tag();
    announce(cx, tag, kind, who);
    let policy = images.policy(cx.settings, tag);
    // A build that met a transient failure (the engine's 5xx, the network) is tried once more
    // after a pause, as one build for every instance that needs it.
    let retry = |e: &BackendError| {
        let failure = BuildFailure::new(tag, kind, e.clone(), &cx.settings.outputs.build_logs);
        let pause = if e.is_transient() {
            crate::retry::ENGINE_BACKOFF[1]
        } else if failure.unreachable.is_some() {
            crate::retry::BUILD_NETWORK_BACKOFF
        } else {
            return None;
        };
        // In short: the whole text (log line, hint) comes once, if the retry fails too.
        cx.books.warn(format!(
            "building image {tag}: {}; trying the build once more in {} s",
            failure.short_cause(),
            pause.as_secs()
        ));
        Some(pause)
    };
    let first = images
        .builder
        .ensure_retrying(recipe, policy, parent, retry)
        .await;
    let e = first.map_err(|e| report_failure(cx, tag, kind, e))?;
    report_built(cx, &e, kind);
    Ok(e)
}

/// The local base image of `chain`, when the spec builds on one.
async fn external_base<B: ContainerBackend>(
    cx: &ImageCx<'_, B>,
    chain: &ImageChainPlan,
) -> Result<Option<ImageInfo>, ImageError> {
    if !chain.base_external {
        return Ok(None);
    }
    // As the plan found it (the plan skips an instance whose local base image is missing).
    if let Some(Some(found)) = cx.state.inventory.get(&chain.base) {
        return Ok(Some(found.to_info(&chain.base)));
    }
    let found = cx
        .backend
        .image_inspect(&chain.base)
        .await
        .map_err(ImageError::Engine)?;
    match found {
        Some(info) => Ok(Some(info)),
        None => Err(ImageError::BaseImageMissing {
            tag: chain.base.clone(),
        }),
    }
}

/// Makes the instance's three images available; returns the instance image tag.
pub(super) async fn ensure_images<B: ContainerBackend>(
    cx: &ImageCx<'_, B>,
    ip: &InstancePlan,
    spec: &ExecSpec,
) -> Result<String, ImageError> {
    let id = ip.instance_id.as_str();
    let images = cx.state;
    let chain = ip.images.as_ref().ok_or(ImageError::NotPlanned)?;
    let base_info = external_base(cx, chain).await?;
    let builds_instance = images.planned_build(&chain.instance)
        || !matches!(images.inventory.get(&chain.instance), Some(Some(_)));
    // Once the image is ready the builder answers from its cache: no mirror needed.
    let with_mirror = builds_instance && !images.marks.chain_ready(&chain.instance);
    let recipes = images
        .marks
        .recipes(&chain.instance, || {
            let base_id = base_info.as_ref().map(|b| b.id.as_str());
            recipes(cx.settings, spec, base_id, with_mirror).map(|mut r| {
                // A build's container goes away while the instance runs: images are removed
                // only after `settle_background` (`remove_image`, the clean-up at the end).
                r.env.request.remove_container_later = true;
                r.instance.request.remove_container_later = true;
                r
            })
        })
        .await
        .map_err(ImageError::Recipe)?;
    let base = match (&recipes.base, base_info) {
        (Some(recipe), _) => ensure_one(cx, recipe, ImageKind::Base, None, id).await?,
        (None, Some(info)) => EnsuredImage {
            tag: chain.base.clone(),
            image: info,
            outcome: BuildOutcome::Reused,
        },
        (None, None) => return Err(ImageError::NoBaseSource),
    };
    let env = ensure_one(cx, &recipes.env, ImageKind::Env, Some(&base), id).await?;
    let inst = ensure_one(cx, &recipes.instance, ImageKind::Instance, Some(&env), id).await?;
    images.marks.mark_chain_ready(&chain.instance);
    Ok(inst.tag)
}

/// One instance is done with its instance image: the last one removes it when the cache level
/// does not keep it.
pub(super) async fn release_instance_image<B: ContainerBackend>(
    cx: &ImageCx<'_, B>,
    ip: &InstancePlan,
) {
    let Some(chain) = ip.images.as_ref().filter(|_| ip.needs_containers()) else {
        return;
    };
    let images = cx.state;
    if images.lifecycle.release(&chain.instance) {
        let built = images.builder.built_tags().contains(&chain.instance);
        if images.lifecycle.should_remove(&chain.instance, built) {
            remove_image(cx, &chain.instance, ImageKind::Instance).await;
        }
    }
}

async fn remove_image<B: ContainerBackend>(cx: &ImageCx<'_, B>, tag: &str, kind: ImageKind) {
    if !cx.state.marks.first_removal(tag) {
        return;
    }
    // The containers of its runs may still be going (removed in the background), and those of
    // the builds made on it (an instance image is no build's parent: nothing to wait for).
    cx.registry.settle_removals().await;
    if kind != ImageKind::Instance {
        cx.backend.settle_background().await;
    }
    match cx.backend.image_remove(tag, false).await {
        Ok(true) => {
            // An env image's compiler cache goes with it.
            if kind == ImageKind::Env {
                if let Err(e) = crate::images::remove_compiler_cache(cx.backend.as_ref(), tag).await
                {
                    cx.books
                        .warn(format!("could not remove the compiler cache of {tag}: {e}"));
                }
            }
            // The builder keeps its answer for the tag, so a late prefetch cannot build it
            // again for nobody.
            cx.books.stats(|s| s.images_removed += 1);
            cx.books.emit(Event::ImageRemoved {
                tag: tag.to_string(),
                kind,
            });
        }
        Ok(false) => {}
        Err(e) => cx.books.warn(removal_warning(tag, &e.to_string())),
    }
}

/// What a run says of an image it meant to remove and could not. The engine refuses (HTTP 409)
/// while another run on the same engine uses the image (its containers, or images built on it):
/// that is the normal case of concurrent runs, said as such, with where it is documented.
fn removal_warning(tag: &str, error: &str) -> String {
    if error.contains("(HTTP 409)") {
        format!(
            "kept image {tag}: another run on this engine is still using it (the engine refused \
             to remove it: HTTP 409); once that run has ended, `swtbench images rm --run-id` of \
             this run or `swtbench clean` removes it (docs/usage.md, \"Several runs on one \
             engine\")"
        )
    } else {
        format!("could not remove image {tag}: {error}")
    }
}

/// The kind of an image swtbench built, from its label.
fn kind_of(image: &ImageInfo) -> Option<ImageKind> {
    match image.labels.get(KIND).map(String::as_str) {
        Some("base") => Some(ImageKind::Base),
        Some("env") => Some(ImageKind::Env),
        Some("instance") => Some(ImageKind::Instance),
        _ => None,
    }
}

/// Removes the images above the cache level that are still there, children first.
/// The images of the plan that [`remove_images_at_end`] removes (those of the run id that an
/// earlier process left are found by label only then).
pub(super) fn images_to_remove_at_end<B: ContainerBackend>(cx: &ImageCx<'_, B>) -> Vec<String> {
    let images = cx.state;
    let built: BTreeSet<String> = images.builder.built_tags().into_iter().collect();
    images
        .lifecycle
        .all_children_first()
        .into_iter()
        .filter(|(tag, _)| images.lifecycle.should_remove(tag, built.contains(tag)))
        .map(|(tag, _)| tag)
        .collect()
}

pub(super) async fn remove_images_at_end<B: ContainerBackend>(cx: &ImageCx<'_, B>) {
    let images = cx.state;
    let built: BTreeSet<String> = images.builder.built_tags().into_iter().collect();
    for (tag, kind) in images.lifecycle.all_children_first() {
        if images.lifecycle.should_remove(&tag, built.contains(&tag)) {
            remove_image(cx, &tag, kind).await;
        }
    }
    // Temporary images of this run id that this process did not need (an earlier, killed process
    // of the run built them and every run that needed them is reused now).
    let filter = LabelFilter::new(RUN_ID, cx.settings.run_id.as_str());
    let Ok(mut found) = cx.backend.images_with_label(&filter).await else {
        return;
    };
    found.sort_by_key(|i| std::cmp::Reverse(kind_of(i)));
    for image in found {
        let Some(kind) = kind_of(&image) else {
            continue;
        };
        if cx.settings.images.cache_level.keeps(kind) {
            continue;
        }
        // Only the run's own tag: an image built FROM it inherited the run id but is not ours.
        if let Some(tag) = crate::images::own_tag(&image) {
            remove_image(cx, &tag, kind).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_recipes() -> Result<InstanceRecipes, RecipeError> {
        Err(RecipeError::Mirror {
            path: "/m".into(),
            message: "must not be made".into(),
        })
    }

    #[test]
    fn an_image_in_use_by_another_run_is_said_to_be_kept() {
        let w = removal_warning(
            "exec.eval.x:latest",
            "removing image exec.eval.x:latest failed: conflict: unable to remove repository \
             reference (must force) - container 1a2b is using its referenced image (HTTP 409)",
        );
        assert!(
            w.starts_with("kept image exec.eval.x:latest: another run on this engine"),
            "{w}"
        );
        assert!(w.contains("Several runs on one engine"), "{w}");
        let w = removal_warning("t:1", "removing image t:1 failed: engine gone");
        assert_eq!(
            w,
            "could not remove image t:1: removing image t:1 failed: engine gone"
        );
    }

    #[test]
    fn each_report_happens_once_per_tag() {
        let m = ImageMarks::default();
        assert!(m.first_build_announcement("env:1"));
        assert!(!m.first_build_announcement("env:1"));
        assert!(m.first_build_announcement("inst:1"), "per tag");
        // Announcing, reporting a build, a failure and a removal are separate transitions.
        assert!(m.first_built_report("env:1"));
        assert!(!m.first_built_report("env:1"));
        assert!(m.first_failure_report("env:1"));
        assert!(!m.first_failure_report("env:1"));
        assert!(m.first_removal("env:1"));
        assert!(!m.first_removal("env:1"));
        assert!(m.first_built_report("inst:1"));
    }

    #[tokio::test]
    async fn recipes_are_kept_until_the_chain_is_ready() {
        let m = ImageMarks::default();
        let tag = "inst:1";
        let err = m
            .recipes(tag, no_recipes)
            .await
            .expect_err("made and failed");
        assert!(matches!(err, RecipeError::Mirror { .. }));
        assert!(!m.chain_ready(tag));
        let made = m
            .recipes(tag, || Ok(test_recipes(tag)))
            .await
            .expect("made");
        let again = m
            .recipes(tag, no_recipes)
            .await
            .expect("kept, not made again");
        assert!(Arc::ptr_eq(&made, &again));

        m.mark_chain_ready(tag);
        assert!(m.chain_ready(tag));
        assert!(!m.chain_ready("other:1"));
        // Ready: the kept recipes went, a later caller makes its own (without the mirror).
        assert!(m.recipes(tag, no_recipes).await.is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 3)]
    async fn callers_at_the_same_time_make_the_recipes_once() {
        let m = Arc::new(ImageMarks::default());
        let made = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tag = "inst:1";
        let callers: Vec<_> = (0..3)
            .map(|_| {
                let (m, made) = (m.clone(), made.clone());
                tokio::spawn(async move {
                    m.recipes(tag, || {
                        made.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        // Slow, as writing a slim repository is: the others ask meanwhile.
                        std::thread::sleep(std::time::Duration::from_millis(300));
                        Ok(test_recipes(tag))
                    })
                    .await
                    .expect("made")
                })
            })
            .collect();
        let mut got = Vec::new();
        for c in callers {
            got.push(c.await.expect("caller"));
        }
        assert_eq!(
            made.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "made once"
        );
        assert!(got.iter().all(|r| Arc::ptr_eq(r, &got[0])));
    }

    fn test_recipes(tag: &str) -> InstanceRecipes {
        let recipe = |t: &str| ImageRecipe {
            request: swtbench_backend::BuildRequest::new(
                t,
                swtbench_backend::BuildContext::new("FROM scratch\n"),
            ),
            log_dir: None,
        };
        InstanceRecipes {
            base: None,
            env: recipe("env:1"),
            instance: recipe(tag),
        }
    }
}
