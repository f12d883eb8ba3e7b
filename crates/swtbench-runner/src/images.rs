//! Image recipes (base → env → instance) from a rendered spec, the image inventory, and the cache
//! level policy that decides which images a run removes again (§3.5, §3.6).
//!
//! Recipes carry the pristine, key-defining text; the build-only CA bundle and proxy lines are
//! added by the backend's [`swtbench_backend::BuildNetwork`] at build time, so keys never change.
//! With `--repo-mirror` the instance image clones from a small bare repository made from the
//! mirror for the instance's base commit (`swtbench_data::slim_repo`: the commits reachable from
//! it, the tags among them, and only its own trees and blobs) and put into the build context (as
//! bulk files, not copied next to the build log); `setup_repo.sh` and the key stay the same.
//! Build files and logs go where the original puts them (§4.8): base and env images under
//! `image_build_logs/base/<key>`, instance images under `image_build_logs/instances/<key>`, with
//! `:` in the key written as `__`.

use crate::lock::Locked;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use std::sync::Mutex;
use swtbench_plan::settings::build_log_dir;

use std::sync::Arc;
use swtbench_backend::labels::{owned_tag, IMAGE, KIND, MANAGED, RUN_ID};
use swtbench_backend::{
    BuildContext, BuildRequest, CacheVolume, ContainerBackend, ImageInfo, ImageRecipe,
    RegistryCache, RegistryNote,
};

use crate::events::{Event, TransferDirection};
use std::os::unix::fs::PermissionsExt;
use swtbench_data::git_mirror::{github_repo, mirror_dir_name, parse_gitmodules, GitMirror};
use swtbench_spec::{
    ExecSpec, SubmoduleSource, BUILD_FILES_CONTEXT_DIR, MIRROR_CONTEXT_DIR, SUBMODULES_CONTEXT_DIR,
};

use crate::outcome::RecipeError;
use swtbench_plan::plan::{ExistingImage, ImageInventory, BASE_IMAGE_ID_LABEL};
use swtbench_plan::settings::{ImageKind, RunSettings};

/// The recipes of one instance's images. `base` is `None` for an existing local base image.
#[derive(Debug, Clone)]
pub struct InstanceRecipes {
    pub base: Option<ImageRecipe>,
    pub env: ImageRecipe,
    pub instance: ImageRecipe,
}

/// Labels of an image swtbench builds as `tag`. Images the run will remove again (above the
/// cache level) also carry the run id, so `swtbench clean --run-id` finds them after a crash.
pub fn image_labels(
    settings: &RunSettings,
    kind: ImageKind,
    tag: &str,
) -> BTreeMap<String, String> {
    let mut l = BTreeMap::from([
        (MANAGED.to_string(), "true".to_string()),
        (KIND.to_string(), kind.as_str().to_string()),
        (IMAGE.to_string(), tag.to_string()),
    ]);
    if !settings.images.cache_level.keeps(kind) {
        l.insert(RUN_ID.to_string(), settings.run_id.clone());
    }
    l
}

/// The tag by which `image` is swtbench's own, if it is: the tag its `swtbench.image` label names
/// (see [`owned_tag`]); for images built before that label, a tag of swtbench's naming scheme for
/// the image's kind (`exec.base.`, `exec.env.`, `exec.eval.`). Images built `FROM` swtbench's
/// inherit its labels but are not its own: removal commands leave them alone.
pub fn own_tag(image: &ImageInfo) -> Option<String> {
    if image.labels.contains_key(IMAGE) {
        return owned_tag(&image.labels, &image.tags);
    }
    let prefix = match image.labels.get(KIND).map(String::as_str) {
        Some("base") => "exec.base.",
        Some("env") => "exec.env.",
        Some("instance") => "exec.eval.",
        _ => return None,
    };
    image
        .tags
        .iter()
        .find(|t| {
            t.strip_prefix("localhost/")
                .unwrap_or(t)
                .starts_with(prefix)
        })
        .cloned()
}

fn request(
    settings: &RunSettings,
    spec: &ExecSpec,
    tag: &str,
    kind: ImageKind,
    context: BuildContext,
) -> ImageRecipe {
    let mut request = BuildRequest::new(tag, context);
    request.labels = image_labels(settings, kind, tag);
    request.platform = Some(spec.platform().to_string());
    request.timeout = settings.images.build_timeout;
    ImageRecipe {
        request,
        log_dir: Some(build_log_dir(&settings.outputs.build_logs, kind, tag)),
    }
}

fn ctx_err(tag: &str) -> impl Fn(swtbench_backend::BackendError) -> RecipeError + '_ {
    move |e| RecipeError::Context {
        tag: tag.to_string(),
        message: e.to_string(),
    }
}

/// The recipes of `spec`'s images. `base_image_id` is the id of an existing local base image
/// (recorded on the env image to notice when the base tag moves). `with_mirror_files`: put the
/// repository mirror into the instance context (only needed when the instance image is built).
pub fn recipes(
    settings: &RunSettings,
    spec: &ExecSpec,
    base_image_id: Option<&str>,
    with_mirror_files: bool,
) -> Result<InstanceRecipes, RecipeError> {
    let base = spec.base_dockerfile.as_ref().map(|df| {
        request(
            settings,
            spec,
            &spec.keys.base,
            ImageKind::Base,
            BuildContext::new(df.clone()),
        )
    });
    let env_tag = &spec.keys.env;
    let mut env_ctx = BuildContext::new(spec.env_dockerfile.clone());
    env_ctx
        .add_file("setup_env.sh", spec.setup_env_sh.clone(), 0o755)
        .map_err(ctx_err(env_tag))?;
    // The coverage tracer's native line counter, which the env Dockerfile builds at its end.
    for (path, text, mode) in swtbench_spec::env_context_files() {
        env_ctx
            .add_file(&path, text, mode)
            .map_err(ctx_err(env_tag))?;
    }
    let mut env = request(settings, spec, env_tag, ImageKind::Env, env_ctx);
    env.request.by_commit = !settings.images.step_builds;
    if let Some(id) = base_image_id {
        env.request
            .labels
            .insert(BASE_IMAGE_ID_LABEL.to_string(), id.to_string());
    }
    let inst_tag = &spec.keys.instance;
    // Submodules whose repositories have mirrors too, each as a small repository of the commit
    // the base commit points to (only when the image is built).
    let submodules = match (&settings.images.repo_mirror, with_mirror_files) {
        (Some(mirror), true) => mirrored_submodules(mirror, &spec.repo, &spec.base_commit),
        _ => Vec::new(),
    };
    let sources: Vec<SubmoduleSource> = submodules.iter().map(|(s, _)| s.clone()).collect();
    let mut inst_ctx = match &settings.images.repo_mirror {
        Some(_) => BuildContext::new(spec.instance_dockerfile_with_mirrors(&sources)),
        None => BuildContext::new(spec.instance_dockerfile.clone()),
    };
    inst_ctx
        .add_file("setup_repo.sh", spec.setup_repo_sh.clone(), 0o755)
        .map_err(ctx_err(inst_tag))?;
    if let (Some(mirror), true) = (&settings.images.repo_mirror, with_mirror_files) {
        add_slim_repo(
            &mut inst_ctx,
            mirror,
            &spec.repo,
            &spec.base_commit,
            inst_tag,
        )?;
    }
    for (source, slim) in &submodules {
        add_tree(
            &mut inst_ctx,
            &slim.path().join("repo.git"),
            &format!("{SUBMODULES_CONTEXT_DIR}/{}", source.dir),
            inst_tag,
        )?;
    }
    if let (Some(files), true) = (&spec.build_files, with_mirror_files) {
        add_tree(&mut inst_ctx, &files.dir, BUILD_FILES_CONTEXT_DIR, inst_tag)?;
    }
    let mut instance = request(settings, spec, inst_tag, ImageKind::Instance, inst_ctx);
    instance.request.by_commit = !settings.images.step_builds;
    instance.request.cache_volume = spec.compiler_cache.as_ref().map(|c| CacheVolume {
        name: c.volume.clone(),
        labels: c
            .labels
            .iter()
            .cloned()
            .chain([(MANAGED.to_string(), "true".to_string())])
            .collect(),
        target: c.target.clone(),
        env: c.env.clone(),
        path_prepend: c.path_prepend.clone(),
    });
    Ok(InstanceRecipes {
        base,
        env,
        instance,
    })
}

/// Removes the compiler cache volume of the env image `env_tag` (`--compiler-cache`), if it has
/// one: the volumes labelled as its compiler cache. Returns how many were removed.
pub async fn remove_compiler_cache<B: ContainerBackend>(
    backend: &B,
    env_tag: &str,
) -> Result<usize, swtbench_backend::BackendError> {
    use swtbench_spec::compiler_cache::{ENV_LABEL, KIND_LABEL, VOLUME_KIND};
    let filter =
        swtbench_backend::LabelFilter::new(KIND_LABEL, VOLUME_KIND).and(ENV_LABEL, env_tag);
    let mut removed = 0;
    for name in backend.volumes_with_label(&filter).await? {
        if backend.volume_remove(&name).await? {
            removed += 1;
        }
    }
    Ok(removed)
}

/// The submodules of `repo` at `base_commit` (its `.gitmodules`) whose GitHub repositories have a
/// mirror under `mirror_dir` too, each with the small repository of the commit the base commit
/// points to (`repo.git` in a temporary directory that lives as long as the returned value). Best effort: a
/// submodule that cannot be served so is left to the build as before (its own URL).
fn mirrored_submodules(
    mirror_dir: &Path,
    repo: &str,
    base_commit: &str,
) -> Vec<(SubmoduleSource, tempfile::TempDir)> {
    let Ok(Some(main)) = GitMirror::locate(mirror_dir, repo) else {
        return Vec::new();
    };
    let Ok(Some(text)) = main.show(base_commit, ".gitmodules") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for sub in parse_gitmodules(&String::from_utf8_lossy(&text)) {
        let Some(sub_repo) = github_repo(&sub.url) else {
            continue;
        };
        let (Ok(Some(commit)), Ok(Some(mirror))) = (
            main.gitlink(base_commit, &sub.path),
            GitMirror::locate(mirror_dir, &sub_repo),
        ) else {
            continue;
        };
        let Ok(tmp) = tempfile::Builder::new().prefix("swtbench-sub-").tempdir() else {
            continue;
        };
        if mirror
            .write_slim_repo(&commit, &tmp.path().join("repo.git"))
            .is_ok()
        {
            let source = SubmoduleSource {
                url: sub.url,
                dir: mirror_dir_name(&sub_repo),
            };
            out.push((source, tmp));
        }
    }
    out
}

/// Makes the small repository of `base_commit` from the mirror of `repo` under `mirror_dir` and
/// adds it under [`MIRROR_CONTEXT_DIR`].
fn add_slim_repo(
    ctx: &mut BuildContext,
    mirror_dir: &Path,
    repo: &str,
    base_commit: &str,
    tag: &str,
) -> Result<(), RecipeError> {
    let path = mirror_dir.join(mirror_dir_name(repo));
    let err = |message: String| RecipeError::Mirror {
        path: path.clone(),
        message,
    };
    if !path.is_dir() {
        return Err(err(format!(
            "no mirror of {repo} there; make it with `git clone --mirror https://github.com/{repo} {}`",
            path.display(),
        )));
    }
    let mirror = GitMirror::open(&path).map_err(|e| err(e.to_string()))?;
    let tmp = tempfile::Builder::new()
        .prefix("swtbench-slim-")
        .tempdir()
        .map_err(|e| err(format!("making a temporary directory: {e}")))?;
    let slim = tmp.path().join("repo.git");
    mirror
        .write_slim_repo(base_commit, &slim)
        .map_err(|e| err(e.to_string()))?;
    add_tree(ctx, &slim, MIRROR_CONTEXT_DIR, tag)
}

/// Adds every directory and regular file under `dir` (with its executable bit) under `under`.
fn add_tree(ctx: &mut BuildContext, dir: &Path, under: &str, tag: &str) -> Result<(), RecipeError> {
    let io = |source: std::io::Error| RecipeError::Files {
        path: dir.to_path_buf(),
        message: source.to_string(),
    };
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).map_err(io)? {
            let entry = entry.map_err(io)?;
            let ft = entry.file_type().map_err(io)?;
            let path = entry.path();
            if ft.is_dir() {
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                // Git needs `refs/` and `objects/` even when a packed mirror leaves them empty.
                ctx.add_bulk_dir(&format!("{under}/{}", rel.to_string_lossy()))
                    .map_err(ctx_err(tag))?;
                stack.push(path);
            } else if ft.is_file() {
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                let name = format!("{under}/{}", rel.to_string_lossy());
                let bytes = std::fs::read(&path).map_err(io)?;
                let exec = entry.metadata().map_err(io)?.permissions().mode() & 0o111 != 0;
                ctx.add_bulk_file(&name, bytes, if exec { 0o755 } else { 0o644 })
                    .map_err(ctx_err(tag))?;
            }
        }
    }
    Ok(())
}

/// Looks up every tag in `tags` on the engine.
pub async fn image_inventory<B: ContainerBackend>(
    backend: &B,
    tags: impl IntoIterator<Item = String>,
) -> Result<ImageInventory, swtbench_backend::BackendError> {
    let mut out = ImageInventory::new();
    for tag in tags {
        if out.contains_key(&tag) {
            continue;
        }
        let found = backend.image_inspect(&tag).await?;
        out.insert(tag, found.as_ref().map(ExistingImage::from));
    }
    Ok(out)
}

/// Decides which images the run removes again, and when: an instance image when the last instance
/// that needs it is done, env and base images at the end.
#[derive(Debug)]
pub struct ImageLifecycle {
    level: swtbench_plan::settings::CacheLevel,
    clean: bool,
    /// Tags that existed before the run (from the plan's inventory).
    existed: BTreeSet<String>,
    /// Tags that existed with this run id's label: temporary images an earlier, killed process
    /// of the same run built. They go as if this run had built them.
    temporary: BTreeSet<String>,
    /// Local base images (never removed).
    external: BTreeSet<String>,
    kinds: BTreeMap<String, ImageKind>,
    /// Instances still needing each instance image.
    remaining: Mutex<HashMap<String, usize>>,
}

impl ImageLifecycle {
    pub fn new(
        settings: &RunSettings,
        plan: &swtbench_plan::plan::Plan,
        inventory: &ImageInventory,
    ) -> ImageLifecycle {
        let mut kinds = BTreeMap::new();
        let mut external = BTreeSet::new();
        let mut remaining: HashMap<String, usize> = HashMap::new();
        for i in plan.instances.iter().filter(|i| i.needs_containers()) {
            if let Some(chain) = &i.images {
                kinds.insert(chain.base.clone(), ImageKind::Base);
                kinds.insert(chain.env.clone(), ImageKind::Env);
                kinds.insert(chain.instance.clone(), ImageKind::Instance);
                if chain.base_external {
                    external.insert(chain.base.clone());
                }
                *remaining.entry(chain.instance.clone()).or_default() += 1;
            }
        }
        ImageLifecycle {
            level: settings.images.cache_level,
            clean: settings.images.clean,
            existed: inventory
                .iter()
                .filter(|(_, v)| v.is_some())
                .map(|(k, _)| k.clone())
                .collect(),
            temporary: inventory
                .iter()
                .filter(|(_, v)| {
                    v.as_ref()
                        .is_some_and(|i| i.labels.get(RUN_ID) == Some(&settings.run_id))
                })
                .map(|(k, _)| k.clone())
                .collect(),
            external,
            kinds,
            remaining: Mutex::new(remaining),
        }
    }

    /// Whether `tag` should go once unused, given whether this run built it (or an earlier
    /// process of the same run id did).
    pub fn should_remove(&self, tag: &str, built_by_run: bool) -> bool {
        let Some(kind) = self.kinds.get(tag) else {
            return false;
        };
        if self.external.contains(tag) || self.level.keeps(*kind) {
            return false;
        }
        built_by_run || self.temporary.contains(tag) || (self.clean && self.existed.contains(tag))
    }

    /// One instance no longer needs `instance_tag`. Returns true when it was the last one.
    pub fn release(&self, instance_tag: &str) -> bool {
        let mut r = self.remaining.locked();
        match r.get_mut(instance_tag) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                r.remove(instance_tag);
                true
            }
            None => false,
        }
    }

    /// Every image the run used, children first (instance, env, base): the order to remove in.
    pub fn all_children_first(&self) -> Vec<(String, ImageKind)> {
        let mut v: Vec<(String, ImageKind)> =
            self.kinds.iter().map(|(t, k)| (t.clone(), *k)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v
    }
}

/// The builder's registry cache of `--registry`, its notes sent as events.
pub fn registry_cache(
    settings: &RunSettings,
    sink: Arc<dyn crate::events::EventSink>,
) -> Option<RegistryCache> {
    let reg = settings.images.registry.as_ref()?;
    Some(RegistryCache {
        prefix: reg.prefix.clone(),
        pull: true,
        push: reg.push,
        auth: reg.auth.clone(),
        pull_slots: tokio::sync::Semaphore::new(reg.pull_workers.max(1)),
        attempts: 3,
        pause: std::time::Duration::from_secs(2),
        observer: Box::new(note_events(sink)),
    })
}

/// Turns registry notes into events; transfer progress is thinned out (a layer finished, or
/// 8 MiB more since the last one of that image).
pub fn note_events(sink: Arc<dyn crate::events::EventSink>) -> impl Fn(RegistryNote) + Send + Sync {
    let last: Mutex<HashMap<(String, bool), (usize, u64)>> = Mutex::new(HashMap::new());
    move |note| {
        let ms = |d: std::time::Duration| d.as_millis() as u64;
        let event = match note {
            RegistryNote::PullStarted { tag, reference } => {
                Event::ImagePullStarted { tag, reference }
            }
            RegistryNote::Progress {
                tag,
                reference,
                pushing,
                progress: p,
            } => {
                {
                    let mut last = last.lock().unwrap_or_else(|p| p.into_inner());
                    let seen = last.entry((tag.clone(), pushing)).or_insert((0, 0));
                    let layer_done = p.layers_done > seen.0;
                    if !layer_done && p.bytes < seen.1 + (8 << 20) {
                        return;
                    }
                    *seen = (p.layers_done, p.bytes);
                }
                Event::ImageTransfer {
                    tag,
                    reference,
                    direction: if pushing {
                        TransferDirection::Push
                    } else {
                        TransferDirection::Pull
                    },
                    layers: p.layers,
                    layers_done: p.layers_done,
                    bytes: p.bytes,
                    total_bytes: p.total_bytes,
                }
            }
            RegistryNote::PullRetry {
                tag,
                reference,
                attempt,
                pause,
                reason,
            } => Event::ImagePullRetry {
                tag,
                reference,
                attempt,
                pause_ms: ms(pause),
                reason,
            },
            RegistryNote::PullFallback {
                tag,
                reference,
                missing,
                reason,
            } => Event::ImagePullFallback {
                tag,
                reference,
                missing,
                reason,
            },
            RegistryNote::Pushed {
                tag,
                reference,
                duration,
                bytes,
            } => Event::ImagePushed {
                tag,
                reference,
                duration_ms: ms(duration),
                bytes,
            },
            RegistryNote::PushFailed {
                tag,
                reference,
                reason,
            } => Event::ImagePushFailed {
                tag,
                reference,
                reason,
            },
        };
        sink.event(&event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_of(compiler_cache: bool) -> ExecSpec {
        let row = serde_json::json!({
            "instance_id": "matplotlib__matplotlib-23913", "repo": "matplotlib/matplotlib",
            "version": "3.6", "base_commit": "b0b0", "environment_setup_commit": "e0e0",
            "patch": "", "test_patch": "",
        });
        let instance =
            swtbench_core::Instance::from_row(&row, swtbench_core::PatchLayout::Swebench)
                .expect("a row");
        let table = swtbench_spec::SpecTable::embedded()
            .with_env_provider(swtbench_spec::Provider::Uv, None)
            .0
            .with_compiler_cache(compiler_cache);
        let no_files =
            |_: &str, _: &str, p: &str| -> Result<Option<String>, swtbench_spec::ReadError> {
                Err(format!("no file should be read, asked for {p}").into())
            };
        ExecSpec::new(&instance, &table, swtbench_spec::Arch::X86_64, &no_files).expect("a spec")
    }

    #[test]
    fn the_compiler_cache_volume_is_mounted_by_the_instance_build_only() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let settings = RunSettings::new("r1", dir.path());
        let off = recipes(&settings, &spec_of(false), None, false).expect("recipes");
        assert!(off.env.request.cache_volume.is_none());
        assert!(off.instance.request.cache_volume.is_none());
        let spec = spec_of(true);
        let on = recipes(&settings, &spec, None, false).expect("recipes");
        assert!(
            on.env.request.cache_volume.is_none(),
            "the env build has no cache"
        );
        let cache = on
            .instance
            .request
            .cache_volume
            .as_ref()
            .expect("the instance build mounts the cache");
        let expected = spec.compiler_cache.as_ref().expect("a cache");
        assert_eq!(cache.name, expected.volume);
        assert_eq!(cache.target, swtbench_spec::compiler_cache::CACHE_DIR);
        assert_eq!(
            cache.labels.get(KIND).map(String::as_str),
            Some("compiler-cache")
        );
        assert_eq!(cache.labels.get(IMAGE), Some(&spec.keys.env));
        assert_eq!(cache.labels.get(MANAGED).map(String::as_str), Some("true"));
        assert_eq!(cache.path_prepend, vec!["/usr/lib/ccache".to_string()]);
        // The image's own settings are not the cache's: nothing of it is committed.
        let dockerfile = |r: &ImageRecipe| r.request.context.dockerfile().unwrap_or("").to_string();
        assert!(dockerfile(&on.instance).contains("FROM"));
        assert!(!dockerfile(&on.instance).contains("ccache"));
        assert!(dockerfile(&on.env).contains("ccache"));
        assert!(!dockerfile(&off.env).contains("ccache"));
    }

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    #[test]
    fn the_context_holds_the_slim_repository_of_the_base_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).expect("mkdir");
        git(&work, &["init", "-q", "-b", "main"]);
        std::fs::write(work.join("a.txt"), "one\n").expect("write");
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "one"]);
        let base = git(&work, &["rev-parse", "HEAD"]);
        std::fs::write(work.join("later.txt"), "later\n").expect("write");
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "two"]);
        let mirrors = dir.path().join("mirrors");
        let m = mirrors.join("o__r.git");
        let (w, ms) = (work.to_string_lossy(), m.to_string_lossy());
        git(dir.path(), &["clone", "-q", "--mirror", &w, &ms]);

        let mut ctx = BuildContext::new("FROM x\n");
        add_slim_repo(&mut ctx, &mirrors, "o/r", &base, "t").expect("slim repository");
        let names: Vec<&str> = ctx.bulk_files().map(|(p, _)| p).collect();
        for want in ["HEAD", "config", "packed-refs"] {
            assert!(
                names.contains(&format!("swtbench-mirror.git/{want}").as_str()),
                "{names:?}"
            );
        }
        assert!(names.iter().any(|n| n.ends_with(".pack")), "{names:?}");
        assert!(!names.iter().any(|n| n.contains("hooks/")), "{names:?}");
        let config = ctx
            .bulk_files()
            .find(|(p, _)| *p == "swtbench-mirror.git/config")
            .map(|(_, f)| String::from_utf8_lossy(&f.contents).into_owned())
            .unwrap_or_default();
        assert!(config.contains("abbrev = 7"), "{config}");
        assert_eq!(
            ctx.files().count(),
            1,
            "only the Dockerfile is image-defining"
        );
    }

    #[test]
    fn build_files_enter_the_context_with_their_directories_and_executable_bits() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("o__r");
        std::fs::create_dir_all(root.join("build/lib-1.0/empty")).expect("mkdir");
        std::fs::write(root.join("build/lib-1.0/configure"), "#!/bin/sh\n").expect("write");
        std::fs::write(root.join("build/lib-1.0/README"), "r\n").expect("write");
        std::fs::set_permissions(
            root.join("build/lib-1.0/configure"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
        let mut ctx = BuildContext::new("FROM x\n");
        add_tree(&mut ctx, &root, BUILD_FILES_CONTEXT_DIR, "t").expect("tree");
        let file = |p: &str| {
            ctx.bulk_files()
                .find(|(n, _)| *n == format!("{BUILD_FILES_CONTEXT_DIR}/{p}"))
                .map(|(_, f)| (f.mode, f.contents.clone()))
        };
        assert_eq!(
            file("build/lib-1.0/configure"),
            Some((0o755, b"#!/bin/sh\n".to_vec()))
        );
        assert_eq!(file("build/lib-1.0/README"), Some((0o644, b"r\n".to_vec())));
        let dirs: Vec<&str> = ctx.dirs_under(BUILD_FILES_CONTEXT_DIR).collect();
        assert!(
            dirs.iter().any(|d| d.ends_with("build/lib-1.0/empty")),
            "{dirs:?}"
        );
        assert_eq!(
            ctx.files().count(),
            1,
            "build files are bulk, not image-defining"
        );
        let err = add_tree(&mut ctx, &dir.path().join("gone"), "x", "t").expect_err("missing");
        assert!(err.to_string().contains("gone"), "{err}");
    }

    #[test]
    fn a_missing_mirror_says_how_to_make_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut ctx = BuildContext::new("FROM x\n");
        let err = add_slim_repo(&mut ctx, dir.path(), "o/r", "abc", "t").expect_err("no mirror");
        let text = err.to_string();
        assert!(
            text.contains(&dir.path().join("o__r.git").display().to_string()),
            "{text}"
        );
        assert!(
            text.contains("git clone --mirror https://github.com/o/r"),
            "{text}"
        );
    }

    #[test]
    fn mirror_files_are_bulk_context_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let m = dir.path().join("o__r.git");
        std::fs::create_dir_all(m.join("refs/heads")).expect("mkdir");
        std::fs::write(m.join("HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::write(m.join("refs/heads/main"), "abc\n").expect("write");
        let mut ctx = BuildContext::new("FROM x\n");
        add_tree(&mut ctx, &m, MIRROR_CONTEXT_DIR, "t").expect("mirror");
        let mut names: Vec<&str> = ctx.bulk_files().map(|(p, _)| p).collect();
        names.sort();
        assert_eq!(
            names,
            vec![
                "swtbench-mirror.git/HEAD",
                "swtbench-mirror.git/refs/heads/main"
            ]
        );
        assert_eq!(
            ctx.files().count(),
            1,
            "only the Dockerfile is image-defining"
        );
    }
}
