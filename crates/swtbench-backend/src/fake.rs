//! `FakeBackend`: an in-memory container engine for runner tests. It keeps images and containers
//! (with the files copied into them), answers `exec` from scripted rules, and records every call so
//! tests can assert what the runner did (how often an image was built, which containers were left).
//!
//! It behaves like the engine where that matters for the runner: a build needs its `FROM` images, a
//! container needs its image, exec needs a running container, output caps apply, removing a missing
//! thing is not an error. Time is logical (a counter), never the wall clock; the only waits are
//! build and container creation delays, hanging commands and a hung engine, on the tokio clock
//! (pause it in tests).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use regex::Regex;

use crate::backend::{ContainerBackend, LogSink};
use crate::error::{BackendError, Result};
use crate::labels::LabelFilter;
use crate::model::{
    BuildRequest, ContainerFile, ContainerInfo, ContainerSpec, EngineInfo, EngineKind, ExecOutput,
    ExecRequest, ImageInfo, ImportRequest, Written,
};
use crate::output::OutputCollector;

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FakeCall {
    EngineInfo,
    ImageInspect {
        name: String,
    },
    ImageRemove {
        name: String,
        force: bool,
    },
    ImagesWithLabel {
        filter: Vec<String>,
    },
    ImageBuild {
        tag: String,
        /// Context paths, sorted.
        files: Vec<String>,
        dockerfile: String,
        build_args: BTreeMap<String, String>,
        labels: BTreeMap<String, String>,
        no_cache: bool,
    },
    ImageImport {
        tag: String,
    },
    ContainerCreate {
        id: String,
        spec: ContainerSpec,
    },
    ContainerStart {
        id: String,
    },
    CopyIn {
        id: String,
        paths: Vec<String>,
    },
    CopyOut {
        id: String,
        path: String,
    },
    Exec {
        id: String,
        cmd: Vec<String>,
        user: Option<String>,
    },
    ContainerKill {
        id: String,
    },
    ContainerWrittenBytes {
        id: String,
    },
    ContainerRemove {
        id: String,
    },
    ContainersWithLabel {
        filter: Vec<String>,
    },
}

/// A scripted answer to an exec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeExec {
    pub output: Vec<u8>,
    pub exit_code: i64,
    /// Pretend the command hit its timeout after printing `output`.
    pub timed_out: bool,
    /// Files the command "writes" into the container (visible to later copy-outs).
    pub writes: Vec<ContainerFile>,
    /// The container stops while the command runs (killed from outside, out of memory): the exec
    /// fails with [`BackendError::ContainerStopped`], as on the engine.
    pub stops_container: bool,
    /// The command does not end by itself: the exec waits (on the tokio clock) for the request's
    /// timeout and then answers as timed out, or fails with [`BackendError::ContainerStopped`] as
    /// soon as its container is killed or removed. Without a timeout it waits for that alone.
    pub hangs: bool,
    /// How long the command runs (tokio clock) before it answers; a command that takes longer
    /// than the request's timeout answers as timed out when the timeout passes.
    pub takes: Duration,
}

impl FakeExec {
    /// Exit 0 with this output.
    pub fn ok(output: impl Into<Vec<u8>>) -> Self {
        FakeExec::exit(0, output)
    }

    pub fn exit(code: i64, output: impl Into<Vec<u8>>) -> Self {
        FakeExec {
            output: output.into(),
            exit_code: code,
            timed_out: false,
            writes: Vec::new(),
            stops_container: false,
            hangs: false,
            takes: Duration::ZERO,
        }
    }

    /// A command that hangs: it printed `output_so_far`, then the timeout killed it (answered at
    /// once, as if the timeout had passed).
    pub fn timeout(output_so_far: impl Into<Vec<u8>>) -> Self {
        FakeExec {
            output: output_so_far.into(),
            exit_code: 137,
            timed_out: true,
            writes: Vec::new(),
            stops_container: false,
            hangs: false,
            takes: Duration::ZERO,
        }
    }

    /// A command that really hangs: the exec takes the request's whole timeout (tokio clock) and
    /// then answers like [`FakeExec::timeout`], unless the container is killed or removed first.
    /// What a caller that gives up early must not wait for.
    pub fn hanging(output_so_far: impl Into<Vec<u8>>) -> Self {
        FakeExec {
            hangs: true,
            ..FakeExec::timeout(output_so_far)
        }
    }

    /// The command runs for `duration` (tokio clock) before it answers.
    pub fn taking(mut self, duration: Duration) -> Self {
        self.takes = duration;
        self
    }

    /// The container is killed from outside while this command runs.
    pub fn stopping_container(mut self) -> Self {
        self.stops_container = true;
        self
    }

    pub fn writing(mut self, file: ContainerFile) -> Self {
        self.writes.push(file);
        self
    }
}

/// What an exec responder sees.
#[derive(Debug)]
pub struct FakeExecContext<'a> {
    pub container_id: &'a str,
    pub spec: &'a ContainerSpec,
    pub request: &'a ExecRequest,
    /// Files copied into (or written in) the container so far, by absolute path.
    pub files: &'a BTreeMap<String, ContainerFile>,
}

impl FakeExecContext<'_> {
    /// The command joined with spaces, as patterns are matched against.
    pub fn command_line(&self) -> String {
        self.request.cmd.join(" ")
    }

    /// A file's contents as text, if it was copied in.
    pub fn file_text(&self, path: &str) -> Option<String> {
        self.files
            .get(path)
            .map(|f| String::from_utf8_lossy(&f.contents).into_owned())
    }
}

type Responder = Arc<dyn Fn(&FakeExecContext<'_>) -> Option<FakeExec> + Send + Sync>;

#[derive(Debug, Clone)]
struct FakeContainer {
    spec: ContainerSpec,
    state: &'static str,
    files: BTreeMap<String, ContainerFile>,
}

#[derive(Default)]
struct State {
    clock: i64,
    next_id: u64,
    images: BTreeMap<String, ImageInfo>,
    containers: BTreeMap<String, FakeContainer>,
    calls: Vec<FakeCall>,
    responders: Vec<Responder>,
    default_exec: Option<FakeExec>,
    build_failures: Vec<(Regex, String)>,
    build_delay: Duration,
    create_delay: Duration,
    unreachable: bool,
    failing_creates: usize,
    /// `Some(deadline)`: the engine hangs (see [`FakeBackend::set_hung`]).
    hung: Option<Duration>,
}

/// The in-memory engine. Cheap to clone (shared state).
#[derive(Clone, Default)]
pub struct FakeBackend {
    state: Arc<Mutex<State>>,
    /// Woken whenever a container is killed or removed (hanging commands watch it).
    containers_changed: Arc<tokio::sync::Notify>,
    /// Hanging commands whose exec is being awaited right now.
    hanging_now: Arc<std::sync::atomic::AtomicUsize>,
}

impl std::fmt::Debug for FakeBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("FakeBackend")
            .field("images", &s.images.keys().collect::<Vec<_>>())
            .field("containers", &s.containers.keys().collect::<Vec<_>>())
            .field("calls", &s.calls.len())
            .finish()
    }
}

const ENDPOINT: &str = "fake://engine";

impl FakeBackend {
    pub fn new() -> Self {
        FakeBackend::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock has already failed; keep the state readable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds an image as if it had been built or imported before.
    pub fn add_image(&self, tag: &str, labels: BTreeMap<String, String>) -> ImageInfo {
        let mut s = self.lock();
        insert_image(&mut s, tag, labels)
    }

    /// Answers execs whose command line (joined with spaces) matches `pattern`. Rules are tried in
    /// the order they were added; the first that answers wins.
    pub fn on_exec(&self, pattern: &str, result: FakeExec) {
        let re = Regex::new(pattern)
            .unwrap_or_else(|e| panic!("bad fake exec pattern {pattern:?}: {e}"));
        self.on_exec_with(move |ctx| re.is_match(&ctx.command_line()).then(|| result.clone()));
    }

    /// Answers execs with a function of the container's state (`None`: not mine, try the next).
    pub fn on_exec_with(
        &self,
        responder: impl Fn(&FakeExecContext<'_>) -> Option<FakeExec> + Send + Sync + 'static,
    ) {
        self.lock().responders.push(Arc::new(responder));
    }

    /// The answer when no rule matches (initially: exit 0, no output).
    pub fn set_default_exec(&self, result: FakeExec) {
        self.lock().default_exec = Some(result);
    }

    /// Builds of tags matching `pattern` fail with `message`.
    pub fn fail_builds(&self, pattern: &str, message: &str) {
        let re = Regex::new(pattern)
            .unwrap_or_else(|e| panic!("bad fake build pattern {pattern:?}: {e}"));
        self.lock().build_failures.push((re, message.to_string()));
    }

    /// The next `n` container creations fail as an engine answering HTTP 500 would.
    pub fn fail_next_creates(&self, n: usize) {
        self.lock().failing_creates = n;
    }

    /// Every build takes this long (use with a paused tokio clock).
    pub fn set_build_delay(&self, delay: Duration) {
        self.lock().build_delay = delay;
    }

    /// Every container creation takes this long (use with a paused tokio clock). As on the engine,
    /// a creation whose caller went away meanwhile still makes its container.
    pub fn set_create_delay(&self, delay: Duration) {
        self.lock().create_delay = delay;
    }

    /// Makes every call fail as if the daemon were down.
    pub fn set_unreachable(&self, unreachable: bool) {
        self.lock().unreachable = unreachable;
    }

    /// Makes the engine hang as the Docker backend reports a hung daemon: with `Some(deadline)`,
    /// every call waits `deadline` (a ping [`crate::liveness::PROBE_DEADLINE`]) and then fails with
    /// [`BackendError::EngineHung`], unrecorded; so does a hanging command in progress. `None`
    /// makes it answer again.
    pub fn set_hung(&self, deadline: Option<Duration>) {
        self.lock().hung = deadline;
        self.containers_changed.notify_waiters();
    }

    /// Waits and fails as a hung engine does, when it is hung ([`FakeBackend::set_hung`]).
    async fn unless_hung(&self, operation: impl FnOnce() -> String) -> Result<()> {
        let Some(deadline) = self.lock().hung else {
            return Ok(());
        };
        tokio::time::sleep(deadline).await;
        Err(BackendError::EngineHung {
            operation: operation(),
            after: deadline,
        })
    }

    /// Execs of [`FakeExec::hanging`] commands that are still being awaited (neither answered nor
    /// dropped by the caller).
    pub fn hanging_execs(&self) -> usize {
        self.hanging_now.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn calls(&self) -> Vec<FakeCall> {
        self.lock().calls.clone()
    }

    /// How many recorded calls satisfy `pred`.
    pub fn count_calls(&self, pred: impl Fn(&FakeCall) -> bool) -> usize {
        self.lock().calls.iter().filter(|c| pred(c)).count()
    }

    /// How many times `tag` was built.
    pub fn builds_of(&self, tag: &str) -> usize {
        self.count_calls(|c| matches!(c, FakeCall::ImageBuild { tag: t, .. } if t == tag))
    }

    pub fn images(&self) -> Vec<ImageInfo> {
        self.lock().images.values().cloned().collect()
    }

    /// Containers that exist now (not removed).
    pub fn containers(&self) -> Vec<ContainerInfo> {
        let s = self.lock();
        s.containers
            .iter()
            .map(|(id, c)| container_info(id, c))
            .collect()
    }

    /// Files in a container, by path.
    pub fn container_files(&self, id: &str) -> Option<BTreeMap<String, ContainerFile>> {
        self.lock().containers.get(id).map(|c| c.files.clone())
    }

    fn enter(&self, call: FakeCall) -> Result<MutexGuard<'_, State>> {
        let mut s = self.lock();
        if s.unreachable {
            return Err(BackendError::Unreachable {
                endpoint: ENDPOINT.into(),
                reason: "the fake engine is switched off".into(),
            });
        }
        s.calls.push(call);
        s.clock += 1;
        Ok(s)
    }

    /// The engine's side of a container creation.
    fn finish_create(&self, id: String, spec: &ContainerSpec) -> Result<String> {
        let mut s = self.lock();
        if let Some(name) = &spec.name {
            if s.containers
                .values()
                .any(|c| c.spec.name.as_ref() == Some(name))
            {
                return Err(BackendError::Engine {
                    operation: format!("creating a container from {}", spec.image),
                    message: format!(
                        "Conflict. The container name \"/{name}\" is already in use (HTTP 409)"
                    ),
                });
            }
        }
        s.containers.insert(
            id.clone(),
            FakeContainer {
                spec: spec.clone(),
                state: "created",
                files: BTreeMap::new(),
            },
        );
        Ok(id)
    }

    /// The wait of a hanging command: until the request's timeout (`Ok`: it timed out) or until
    /// the container stops running (`Err`, as the engine's exec ends when its container dies).
    async fn hang(&self, id: &str, request: &ExecRequest) -> Result<()> {
        struct InFlight<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for InFlight<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        self.hanging_now
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _in_flight = InFlight(&self.hanging_now);
        let deadline = request.timeout.map(|t| tokio::time::Instant::now() + t);
        loop {
            // Registered before the state is looked at, so a kill in between is not missed.
            let changed = self.containers_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let reason = match self.lock().containers.get(id) {
                Some(c) if c.state == "running" => None,
                Some(_) => Some("it was killed while the command ran"),
                None => Some("it was removed while the command ran"),
            };
            if let Some(reason) = reason {
                return Err(BackendError::ContainerStopped {
                    id: id.into(),
                    reason: reason.into(),
                });
            }
            let hung = self.lock().hung;
            if let Some(after) = hung {
                tokio::time::sleep(after).await;
                return Err(BackendError::EngineHung {
                    operation: format!("waiting for the output of a command in container {id}"),
                    after,
                });
            }
            match deadline {
                Some(d) => tokio::select! {
                    _ = tokio::time::sleep_until(d) => return Ok(()),
                    _ = &mut changed => {}
                },
                None => changed.await,
            }
        }
    }
}

fn insert_image(s: &mut State, tag: &str, labels: BTreeMap<String, String>) -> ImageInfo {
    s.clock += 1;
    s.next_id += 1;
    let tag = normalise_tag(tag);
    // A new image under an existing tag leaves the old one untagged, as on the engine.
    let info = ImageInfo {
        id: format!("sha256:{:064x}", s.next_id),
        tags: vec![tag.clone()],
        created_unix: 1_700_000_000 + s.clock,
        labels,
        repo_digests: Vec::new(),
    };
    s.images.insert(tag, info.clone());
    info
}

fn normalise_tag(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or(name);
    if last.contains(':') || name.starts_with("sha256:") {
        name.to_string()
    } else {
        format!("{name}:latest")
    }
}

fn find_image<'a>(s: &'a State, name: &str) -> Option<&'a ImageInfo> {
    s.images
        .get(&normalise_tag(name))
        .or_else(|| s.images.values().find(|i| i.id == name))
}

fn container_info(id: &str, c: &FakeContainer) -> ContainerInfo {
    ContainerInfo {
        id: id.to_string(),
        names: c.spec.name.iter().cloned().collect(),
        image: c.spec.image.clone(),
        labels: c.spec.labels.clone(),
        state: c.state.to_string(),
    }
}

/// The images a Dockerfile starts from (stage aliases and `scratch` excluded).
fn from_images(dockerfile: &str) -> Vec<String> {
    let mut aliases: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for line in dockerfile.lines() {
        let mut words = line.split_whitespace();
        if !words.next().is_some_and(|w| w.eq_ignore_ascii_case("FROM")) {
            continue;
        }
        let rest: Vec<&str> = words.filter(|w| !w.starts_with("--")).collect();
        let Some(image) = rest.first() else { continue };
        if *image != "scratch" && !aliases.iter().any(|a| a == image) {
            images.push(image.to_string());
        }
        if rest.len() >= 3 && rest[1].eq_ignore_ascii_case("AS") {
            aliases.push(rest[2].to_string());
        }
    }
    images
}

impl ContainerBackend for FakeBackend {
    async fn engine_info(&self) -> Result<EngineInfo> {
        if self.lock().hung.is_some() {
            let after = crate::liveness::PROBE_DEADLINE;
            tokio::time::sleep(after).await;
            return Err(BackendError::EngineHung {
                operation: "pinging the fake engine".into(),
                after,
            });
        }
        drop(self.enter(FakeCall::EngineInfo)?);
        Ok(EngineInfo {
            kind: EngineKind::Other,
            version: "fake".into(),
            api_version: "1.41".into(),
            os_arch: "linux/amd64".into(),
            endpoint: ENDPOINT.into(),
            host: Default::default(),
        })
    }

    async fn image_inspect(&self, name: &str) -> Result<Option<ImageInfo>> {
        self.unless_hung(|| format!("inspecting image {name}"))
            .await?;
        let s = self.enter(FakeCall::ImageInspect { name: name.into() })?;
        Ok(find_image(&s, name).cloned())
    }

    async fn image_remove(&self, name: &str, force: bool) -> Result<bool> {
        self.unless_hung(|| format!("removing image {name}"))
            .await?;
        let mut s = self.enter(FakeCall::ImageRemove {
            name: name.into(),
            force,
        })?;
        let Some(image) = find_image(&s, name).cloned() else {
            return Ok(false);
        };
        let in_use = s.containers.values().any(|c| {
            let img = normalise_tag(&c.spec.image);
            image.tags.contains(&img) || c.spec.image == image.id
        });
        if in_use && !force {
            return Err(BackendError::Engine {
                operation: format!("removing image {name}"),
                message: "conflict: image is being used by a container (HTTP 409)".into(),
            });
        }
        s.images.retain(|_, i| i.id != image.id);
        Ok(true)
    }

    async fn images_with_label(&self, filter: &LabelFilter) -> Result<Vec<ImageInfo>> {
        self.unless_hung(|| "listing images".to_string()).await?;
        let s = self.enter(FakeCall::ImagesWithLabel {
            filter: filter.to_engine_filters(),
        })?;
        Ok(s.images
            .values()
            .filter(|i| filter.matches(&i.labels))
            .cloned()
            .collect())
    }

    async fn image_build(&self, request: BuildRequest, log: LogSink<'_>) -> Result<ImageInfo> {
        self.unless_hung(|| format!("building image {}", request.tag))
            .await?;
        let dockerfile = request.context.dockerfile().unwrap_or("").to_string();
        let delay = {
            let s = self.enter(FakeCall::ImageBuild {
                tag: request.tag.clone(),
                files: request
                    .context
                    .files()
                    .map(|(p, _)| p.to_string())
                    .collect(),
                dockerfile: dockerfile.clone(),
                build_args: request.build_args.clone(),
                labels: request.labels.clone(),
                no_cache: request.no_cache,
            })?;
            s.build_delay
        };
        let write_err = |e: std::io::Error| {
            BackendError::io(format!("writing the build log of {}", request.tag), &e)
        };
        let steps: Vec<&str> = dockerfile
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .collect();
        for (i, step) in steps.iter().enumerate() {
            writeln!(log, "Step {}/{} : {}", i + 1, steps.len(), step).map_err(write_err)?;
        }
        if !delay.is_zero() {
            if let Some(limit) = request.timeout.filter(|t| *t < delay) {
                tokio::time::sleep(limit).await;
                return Err(BackendError::BuildTimeout {
                    tag: request.tag,
                    after: limit,
                });
            }
            tokio::time::sleep(delay).await;
        }
        let mut s = self.lock();
        let failure = s
            .build_failures
            .iter()
            .find(|(re, _)| re.is_match(&request.tag))
            .map(|(_, m)| m.clone());
        let missing = from_images(&dockerfile)
            .into_iter()
            .find(|img| find_image(&s, img).is_none())
            .map(|img| format!("pull access denied for {img}, repository does not exist"));
        if let Some(message) = failure.or(missing) {
            writeln!(log, "ERROR: {message}").map_err(write_err)?;
            return Err(BackendError::BuildFailed {
                tag: request.tag,
                message,
                log_tail: steps.iter().map(|s| s.to_string()).collect(),
            });
        }
        writeln!(log, "Successfully tagged {}", request.tag).map_err(write_err)?;
        Ok(insert_image(&mut s, &request.tag, request.labels))
    }

    async fn image_import(&self, request: ImportRequest) -> Result<ImageInfo> {
        self.unless_hung(|| format!("importing {}", request.tag))
            .await?;
        let mut s = self.enter(FakeCall::ImageImport {
            tag: request.tag.clone(),
        })?;
        Ok(insert_image(&mut s, &request.tag, request.labels))
    }

    async fn container_create(&self, spec: &ContainerSpec) -> Result<String> {
        self.unless_hung(|| format!("creating a container from {}", spec.image))
            .await?;
        let id = {
            let mut s = self.lock();
            s.next_id += 1;
            format!("fake{:060}", s.next_id)
        };
        let delay = {
            let mut s = self.enter(FakeCall::ContainerCreate {
                id: id.clone(),
                spec: spec.clone(),
            })?;
            if s.failing_creates > 0 {
                s.failing_creates -= 1;
                return Err(BackendError::Engine {
                    operation: format!("creating a container from {}", spec.image),
                    message: "server error (HTTP 500)".into(),
                });
            }
            // The engine resolves the image when the request arrives.
            if find_image(&s, &spec.image).is_none() {
                return Err(BackendError::ImageNotFound(spec.image.clone()));
            }
            s.create_delay
        };
        if delay.is_zero() {
            return self.finish_create(id, spec);
        }
        // The "engine" goes on with the request whether or not the caller still waits.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (me, spec) = (self.clone(), spec.clone());
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(me.finish_create(id, &spec));
        });
        rx.await.unwrap_or_else(|_| {
            Err(BackendError::Invalid(
                "the fake engine's create task ended".into(),
            ))
        })
    }

    async fn container_start(&self, id: &str) -> Result<()> {
        self.unless_hung(|| format!("starting container {id}"))
            .await?;
        let mut s = self.enter(FakeCall::ContainerStart { id: id.into() })?;
        let c = s
            .containers
            .get_mut(id)
            .ok_or_else(|| BackendError::ContainerNotFound(id.into()))?;
        c.state = "running";
        Ok(())
    }

    async fn copy_in(&self, id: &str, files: &[ContainerFile]) -> Result<()> {
        self.unless_hung(|| format!("copying files into container {id}"))
            .await?;
        // Same validation as the real archive.
        crate::context::container_files_tar(files)?;
        let mut s = self.enter(FakeCall::CopyIn {
            id: id.into(),
            paths: files.iter().map(|f| f.path.clone()).collect(),
        })?;
        let c = s
            .containers
            .get_mut(id)
            .ok_or_else(|| BackendError::ContainerNotFound(id.into()))?;
        for f in files {
            c.files.insert(f.path.clone(), f.clone());
        }
        Ok(())
    }

    async fn copy_out(&self, id: &str, path: &str) -> Result<Vec<u8>> {
        self.unless_hung(|| format!("copying {path} out of container {id}"))
            .await?;
        let s = self.enter(FakeCall::CopyOut {
            id: id.into(),
            path: path.into(),
        })?;
        let c = s
            .containers
            .get(id)
            .ok_or_else(|| BackendError::ContainerNotFound(id.into()))?;
        c.files
            .get(path)
            .map(|f| f.contents.clone())
            .ok_or_else(|| BackendError::PathNotFound {
                container: id.into(),
                path: path.into(),
            })
    }

    async fn exec(&self, id: &str, request: &ExecRequest) -> Result<ExecOutput> {
        self.unless_hung(|| format!("exec in container {id}"))
            .await?;
        if request.cmd.is_empty() {
            return Err(BackendError::Invalid("exec needs a command".into()));
        }
        let (container, responders, default) = {
            let s = self.enter(FakeCall::Exec {
                id: id.into(),
                cmd: request.cmd.clone(),
                user: request.user.clone(),
            })?;
            let c = s
                .containers
                .get(id)
                .cloned()
                .ok_or_else(|| BackendError::ContainerNotFound(id.into()))?;
            (c, s.responders.clone(), s.default_exec.clone())
        };
        if container.state != "running" {
            return Err(BackendError::Engine {
                operation: format!("exec in container {id}"),
                message: format!("Container {id} is not running (HTTP 409)"),
            });
        }
        // Responders run without the lock so they may be arbitrary test code.
        let ctx = FakeExecContext {
            container_id: id,
            spec: &container.spec,
            request,
            files: &container.files,
        };
        let answer = responders
            .iter()
            .find_map(|r| r(&ctx))
            .or(default)
            .unwrap_or_else(|| FakeExec::ok(Vec::new()));
        if !answer.writes.is_empty() {
            let mut s = self.lock();
            if let Some(c) = s.containers.get_mut(id) {
                for f in &answer.writes {
                    c.files.insert(f.path.clone(), f.clone());
                }
            }
        }
        if answer.hangs {
            self.hang(id, request).await?;
        }
        let mut answer = answer;
        if !answer.takes.is_zero() {
            match request.timeout.filter(|t| *t < answer.takes) {
                Some(limit) => {
                    tokio::time::sleep(limit).await;
                    answer.timed_out = true;
                    answer.exit_code = 137;
                }
                None => tokio::time::sleep(answer.takes).await,
            }
        }
        if answer.stops_container && !answer.timed_out {
            if let Some(c) = self.lock().containers.get_mut(id) {
                c.state = "exited";
            }
            return Err(BackendError::ContainerStopped {
                id: id.into(),
                reason: "it exited with code 137".into(),
            });
        }
        let mut collector = OutputCollector::new(request.output_limit);
        collector.push(&answer.output);
        let collected = collector.finish();
        Ok(ExecOutput {
            output: collected.bytes,
            exit_code: Some(answer.exit_code),
            timed_out: answer.timed_out,
            omitted_bytes: collected.omitted,
            container_killed: false,
            disk_limit_hit: false,
            duration: if answer.timed_out {
                request.timeout.unwrap_or_default()
            } else {
                answer.takes
            },
        })
    }

    async fn container_kill(&self, id: &str) -> Result<()> {
        self.unless_hung(|| format!("killing container {id}"))
            .await?;
        let mut s = self.enter(FakeCall::ContainerKill { id: id.into() })?;
        let c = s
            .containers
            .get_mut(id)
            .ok_or_else(|| BackendError::ContainerNotFound(id.into()))?;
        c.state = "exited";
        drop(s);
        self.containers_changed.notify_waiters();
        Ok(())
    }

    async fn container_written_bytes(&self, id: &str) -> Result<Option<Written>> {
        let s = self.enter(FakeCall::ContainerWrittenBytes { id: id.into() })?;
        let c = s
            .containers
            .get(id)
            .ok_or_else(|| BackendError::ContainerNotFound(id.into()))?;
        let sizes = c.files.values().map(|f| f.contents.len() as u64);
        Ok(Some(Written {
            total: sizes.clone().sum(),
            largest: sizes.max().or(Some(0)),
        }))
    }

    async fn container_remove(&self, id: &str) -> Result<bool> {
        self.unless_hung(|| format!("removing container {id}"))
            .await?;
        let mut s = self.enter(FakeCall::ContainerRemove { id: id.into() })?;
        let removed = s.containers.remove(id).is_some();
        drop(s);
        self.containers_changed.notify_waiters();
        Ok(removed)
    }

    async fn containers_with_label(&self, filter: &LabelFilter) -> Result<Vec<ContainerInfo>> {
        self.unless_hung(|| "listing containers".to_string())
            .await?;
        let s = self.enter(FakeCall::ContainersWithLabel {
            filter: filter.to_engine_filters(),
        })?;
        Ok(s.containers
            .iter()
            .filter(|(_, c)| filter.matches(&c.spec.labels))
            .map(|(id, c)| container_info(id, c))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::BuildContext;
    use crate::labels;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
    }

    #[test]
    fn container_lifecycle_is_simulated_and_recorded() {
        rt().block_on(async {
            let fake = FakeBackend::new();
            fake.add_image("base:1", BTreeMap::new());
            fake.on_exec(
                r"^/bin/bash /eval\.sh$",
                FakeExec::exit(1, "+ pytest\nFAILED t.py::x\n"),
            );
            fake.on_exec_with(|ctx| {
                (ctx.request.cmd == ["cat", "/root/in.txt"])
                    .then(|| FakeExec::ok(ctx.file_text("/root/in.txt").unwrap_or_default()))
            });

            let mut spec = ContainerSpec::new("base:1");
            spec.labels = labels::run_labels("r1", "i1", "gold_pre");
            let id = fake.container_create(&spec).await.expect("create");
            let not_started = fake.exec(&id, &ExecRequest::new(["true"])).await;
            assert!(not_started.is_err(), "exec needs a running container");
            fake.container_start(&id).await.expect("start");
            fake.copy_in(&id, &[ContainerFile::new("/root/in.txt", "hello")])
                .await
                .expect("copy in");

            let eval = fake
                .exec(&id, &ExecRequest::new(["/bin/bash", "/eval.sh"]))
                .await
                .expect("exec");
            assert_eq!(
                (eval.exit_code, eval.text().as_str()),
                (Some(1), "+ pytest\nFAILED t.py::x\n")
            );
            let cat = fake
                .exec(&id, &ExecRequest::new(["cat", "/root/in.txt"]))
                .await
                .expect("exec");
            assert_eq!(cat.text(), "hello");
            let capped = fake
                .exec(
                    &id,
                    &ExecRequest::new(["/bin/bash", "/eval.sh"]).output_limit(4),
                )
                .await
                .expect("exec");
            assert!(capped.omitted_bytes > 0);
            assert!(fake.copy_out(&id, "/nope").await.is_err());

            let listed = fake
                .containers_with_label(&LabelFilter::run_id("r1"))
                .await
                .expect("list");
            assert_eq!(listed.len(), 1);
            assert!(fake.container_remove(&id).await.expect("remove"));
            assert!(!fake.container_remove(&id).await.expect("remove again"));
            assert!(fake.containers().is_empty());
            assert_eq!(
                fake.count_calls(|c| matches!(c, FakeCall::Exec { .. })),
                4,
                "every exec is recorded, failed ones too"
            );
        });
    }

    #[test]
    fn builds_need_their_from_image_and_scripted_failures_fail() {
        rt().block_on(async {
            let fake = FakeBackend::new();
            let mut log = Vec::new();
            let req = BuildRequest::new("env:1", BuildContext::new("FROM base:1\nRUN x\n"));
            let err = fake
                .image_build(req.clone(), &mut log)
                .await
                .expect_err("no base yet");
            assert!(matches!(err, BackendError::BuildFailed { .. }), "{err}");
            fake.add_image("base:1", BTreeMap::new());
            let built = fake.image_build(req, &mut log).await.expect("build");
            assert_eq!(built.tags, vec!["env:1".to_string()]);
            assert!(String::from_utf8_lossy(&log).contains("Step 2/2 : RUN x"));

            fake.fail_builds("^inst", "RUN failed with exit code 1");
            let req = BuildRequest::new("inst:1", BuildContext::new("FROM env:1\n"));
            assert!(fake.image_build(req, &mut log).await.is_err());
            assert_eq!(fake.builds_of("env:1"), 2);
        });
    }

    #[test]
    fn in_use_images_need_force_to_be_removed() {
        rt().block_on(async {
            let fake = FakeBackend::new();
            fake.add_image("img", BTreeMap::new());
            let id = fake
                .container_create(&ContainerSpec::new("img:latest"))
                .await
                .expect("create");
            assert!(fake.image_remove("img", false).await.is_err());
            assert!(fake.image_remove("img:latest", true).await.expect("forced"));
            assert!(!fake.image_exists("img").await.expect("inspect"));
            fake.container_remove(&id).await.expect("remove");
        });
    }

    #[tokio::test(start_paused = true)]
    async fn a_hanging_command_takes_its_timeout_or_ends_with_its_container() {
        let fake = FakeBackend::new();
        fake.add_image("img:1", BTreeMap::new());
        fake.set_default_exec(FakeExec::hanging("started\n"));
        let id = fake
            .container_create(&ContainerSpec::new("img:1"))
            .await
            .expect("create");
        fake.container_start(&id).await.expect("start");

        let started = tokio::time::Instant::now();
        let req = ExecRequest::new(["/bin/bash", "/eval.sh"]).timeout(Duration::from_secs(600));
        let out = fake.exec(&id, &req).await.expect("timed out, not failed");
        assert!(out.timed_out);
        assert_eq!(out.text(), "started\n");
        assert_eq!(started.elapsed(), Duration::from_secs(600));
        assert_eq!(fake.hanging_execs(), 0);

        // Removed from another task after 5 s: the exec ends then, as on the engine.
        let remover = {
            let fake = fake.clone();
            let id = id.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                assert_eq!(fake.hanging_execs(), 1);
                fake.container_remove(&id).await.expect("remove");
            })
        };
        let started = tokio::time::Instant::now();
        let err = fake.exec(&id, &req).await.expect_err("container removed");
        assert!(
            matches!(err, BackendError::ContainerStopped { .. }),
            "{err}"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        remover.await.expect("remover");

        // A dropped exec is no longer counted as waiting.
        let id = fake
            .container_create(&ContainerSpec::new("img:1"))
            .await
            .expect("create");
        fake.container_start(&id).await.expect("start");
        let gave_up = tokio::time::timeout(Duration::from_secs(1), fake.exec(&id, &req)).await;
        assert!(gave_up.is_err());
        assert_eq!(fake.hanging_execs(), 0);
    }

    #[test]
    fn stage_aliases_and_scratch_are_not_required_images() {
        assert_eq!(
            from_images(
                "FROM --platform=linux/x86_64 a:1 AS build\nFROM build\nFROM scratch\nFROM b\n"
            ),
            vec!["a:1", "b"]
        );
    }
}
