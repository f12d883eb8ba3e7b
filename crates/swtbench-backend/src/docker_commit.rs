//! Executing a commit build ([`crate::commit_build`]) on the Docker engine: one container of the
//! `FROM` image, the plan's files put in and its `RUN` steps executed in order, the container
//! committed once with the plan's settings, and removed whatever happened.
//!
//! The build log reads like the classic builder's (`Step i/N : …` and each step's output), so
//! failures are read the same way, and a failed step ends the build with
//! [`BackendError::BuildFailed`] and the log's last lines. The container is labelled like the
//! image it makes, and with its owner (the process building): a process that starts after the
//! builder was killed removes it as a dead owner's leftover. It also lives at most as long as
//! the build may (its main process is `sleep` for the build's time limit, and the engine removes
//! it when that ends), for the case where no swtbench process starts again.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backend::{ContainerBackend, LogSink};
use crate::commit_build::{cmd_change, CommitPlan, CommitStep};
use crate::docker::DockerBackend;
use crate::error::{BackendError, Result};
use crate::labels::{BUILD_CONTAINER_PREFIX, SESSION};
use crate::model::{BuildRequest, ContainerSpec, ExecRequest, ImageInfo, NetworkAccess};
use crate::output::{strip_ansi, LineSplitter, OutputSink};

/// How long the build container lives when the build has no time limit.
const NO_LIMIT_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// Lines of the log kept for the error of a failed build.
const TAIL_LINES: usize = 30;

/// The build container while the build runs. Dropped before the build is done (the build's
/// future was cancelled: Ctrl-C, a time limit of the caller), it removes the container itself, on
/// a connection and runtime of its own, and waits for that (at most [`REMOVAL_WAIT`]): the
/// cancelled future can no longer do it, and the process may be about to exit.
///
/// It exists before the container does: the container is created under a name of its own, and a
/// future dropped while the engine was still creating it (the container is there, the answer was
/// not read) removes it by that name, asking again for a while as the engine may finish the
/// creation after the first attempt.
struct BuildContainer {
    /// The container's name, then its id once the engine answered the creation.
    id: String,
    options: crate::docker::DockerOptions,
    created: bool,
    done: bool,
    /// Set when the guard is dropped before the creation was answered: the creating task then
    /// removes the container itself once the engine has made it.
    abandoned: Arc<AtomicBool>,
}

/// How long a cancelled build waits for its container's removal.
const REMOVAL_WAIT: Duration = Duration::from_secs(20);
/// How long a build cancelled during its container's creation keeps looking for the container.
const CREATION_WAIT: Duration = Duration::from_secs(5);

impl Drop for BuildContainer {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.abandoned.store(true, Ordering::SeqCst);
        let (id, options, created) = (self.id.clone(), self.options.clone(), self.created);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                rt.block_on(async {
                    let Ok(backend) = DockerBackend::connect(options).await else {
                        return;
                    };
                    let until = Instant::now() + CREATION_WAIT;
                    loop {
                        let removed = backend.container_remove(&id).await;
                        // One removal is enough once the creation was answered, or when the
                        // engine removed something or failed; while it knows no container of
                        // that name, the creation may still be under way: ask again.
                        if created || !matches!(removed, Ok(false)) || Instant::now() >= until {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                });
            }
            let _ = tx.send(());
        });
        let _ = rx.recv_timeout(REMOVAL_WAIT);
    }
}

/// The build log as an output sink: whole lines (ANSI sequences removed), the last ones kept.
struct LogLines<'a, 'b> {
    log: &'a mut LogSink<'b>,
    splitter: LineSplitter,
    tail: VecDeque<String>,
    failed: Option<std::io::Error>,
}

impl LogLines<'_, '_> {
    fn line(&mut self, line: &str) {
        if self.failed.is_none() {
            if let Err(e) = writeln!(self.log, "{line}") {
                self.failed = Some(e);
            }
        }
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(line.to_string());
    }

    fn end_output(&mut self) {
        if let Some(rest) = std::mem::take(&mut self.splitter).finish() {
            self.line(&rest);
        }
    }
}

impl OutputSink for LogLines<'_, '_> {
    fn push(&mut self, bytes: &[u8]) {
        let raw = String::from_utf8_lossy(bytes);
        let text = strip_ansi(&raw);
        for line in self.splitter.push(&text) {
            self.line(&line);
        }
    }
}

impl DockerBackend {
    /// Builds `request` by `plan` (see the module doc).
    pub(crate) async fn build_by_commit(
        &self,
        request: &BuildRequest,
        plan: &CommitPlan,
        mut log: LogSink<'_>,
    ) -> Result<ImageInfo> {
        let tag = request.tag.clone();
        let started = Instant::now();
        let parent_cmd = self.image_command(&plan.from).await?;
        let spec = self.build_container_spec(request, plan).await?;
        // Labelled with this process as its owner (by `container_create`), so that a process
        // that starts after this one was killed removes it (and the image it holds) at once,
        // instead of it living out its `sleep`.
        let owned = self.options().owner.is_some() || spec.labels.contains_key(SESSION);
        let abandoned = Arc::new(AtomicBool::new(false));
        let mut guard = BuildContainer {
            id: spec.name.clone().unwrap_or_default(),
            options: self.options().clone(),
            created: false,
            done: false,
            abandoned: abandoned.clone(),
        };
        let id = match self.create_build_container(spec, abandoned).await {
            Ok(id) => id,
            Err(e) => {
                // A refused creation made nothing. One the engine did not answer in time may still
                // make a container later; it is not waited for here (the engine is slow or hung,
                // and the caller ends the build): that container, never started, stays until
                // this process has ended and another one sweeps its owner's leftovers (it carries
                // the owner, the image's labels and a `swtbench-build-` name).
                guard.done = true;
                return Err(e);
            }
        };
        guard.id = id.clone();
        guard.created = true;
        let mut lines = LogLines {
            log: &mut log,
            splitter: LineSplitter::default(),
            tail: VecDeque::new(),
            failed: None,
        };
        let built = self
            .run_commit_build(&id, plan, request, started, parent_cmd, owned, &mut lines)
            .await;
        self.remove_build_container(request, built.is_ok(), guard, &id)
            .await;
        if let Some(e) = lines.failed.take() {
            return Err(BackendError::io(
                format!("writing the build log of {tag}"),
                &e,
            ));
        }
        if let Err(e) = &built {
            let _ = writeln!(lines.log, "ERROR: {e}");
        }
        let _ = lines.log.flush();
        built?;
        self.image_inspect(&tag)
            .await?
            .ok_or_else(|| BackendError::BuildFailed {
                tag: tag.clone(),
                message: "the commit ended without producing the image".into(),
                log_tail: Vec::new(),
            })
    }

    /// The spec of the build container of `request` from `plan`'s base image: the image's labels
    /// and platform, its network, a lifetime past the build's timeout, a `swtbench-build-` name
    /// and the cache volume (made here when missing).
    async fn build_container_spec(
        &self,
        request: &BuildRequest,
        plan: &CommitPlan,
    ) -> Result<ContainerSpec> {
        let mut spec = ContainerSpec::new(plan.from.clone())
            .with_lifetime(request.timeout.unwrap_or(NO_LIMIT_LIFETIME) + Duration::from_secs(60));
        // The image's own labels, so a container left by a killed process is found and removed
        // with the run's images.
        spec.labels = request.labels.clone();
        spec.platform = request.platform.clone();
        spec.network = if request.host_network {
            NetworkAccess::Host
        } else {
            NetworkAccess::Enabled
        };
        // A cache volume (a compiler cache) is mounted in the build container only: the commit
        // leaves it out of the image.
        if let Some(cache) = &request.cache_volume {
            self.volume_create(&cache.name, &cache.labels).await?;
            spec.volumes
                .push((cache.name.clone(), cache.target.clone()));
        }
        spec.name = Some(format!(
            "{BUILD_CONTAINER_PREFIX}{}",
            crate::docker::unique_token()
        ));
        Ok(spec)
    }

    /// Starts the build container `id`, runs `plan`'s steps in it and commits it as the
    /// request's tag (with `plan`'s setting changes, the base image's `parent_cmd` and, when
    /// `owned`, the owner label emptied), writing the build log to `lines`.
    #[allow(clippy::too_many_arguments)]
    async fn run_commit_build(
        &self,
        id: &str,
        plan: &CommitPlan,
        request: &BuildRequest,
        started: Instant,
        parent_cmd: Option<Vec<String>>,
        owned: bool,
        lines: &mut LogLines<'_, '_>,
    ) -> Result<()> {
        let tag = &request.tag;
        self.container_start(id).await?;
        let total = plan.steps.len() + 1;
        lines.line(&format!("Step 1/{total} : {}", plan.from_instruction));
        lines.line(&format!(
            "swtbench: one container of {}, committed once at the end",
            plan.from
        ));
        lines.line(&format!(
            "swtbench: container up {:.1} s after the build began",
            started.elapsed().as_secs_f64()
        ));
        for (i, step) in plan.steps.iter().enumerate() {
            lines.line(&format!("Step {}/{total} : {}", i + 2, step.instruction()));
            let step_started = Instant::now();
            self.commit_step(id, tag, step, request, started, lines)
                .await?;
            // Where a slow build spends its time, step by step.
            let took = step_started.elapsed().as_secs_f64();
            if took >= 0.05 {
                lines.line(&format!("swtbench: step {} took {took:.1} s", i + 2));
            }
        }
        // What the exec wrapper leaves behind (its pid files) is not part of the image.
        let tidy = ExecRequest::new(["/bin/sh", "-c", "rm -f /tmp/.swtbench-exec-*.pid"]);
        self.exec(id, &tidy).await?;
        let mut changes: Vec<String> = cmd_change(parent_cmd.as_deref()).into_iter().collect();
        changes.extend(plan.changes.iter().cloned());
        if owned {
            // The container's owner is not the image's: a commit keeps every label of the
            // container, and a container made from the image (by a user, say) would inherit
            // the owner and look like a dead process's leftover once the builder has ended.
            changes.push(format!("LABEL {SESSION}=\"\""));
        }
        lines.line(&format!(
            "swtbench: committing as {tag} ({})",
            if changes.is_empty() {
                "no setting changes".to_string()
            } else {
                changes.join("; ")
            }
        ));
        let commit_started = Instant::now();
        self.container_commit(id, tag, &changes, "swtbench commit build")
            .await?;
        lines.line(&format!(
            "swtbench: committed in {:.1} s",
            commit_started.elapsed().as_secs_f64()
        ));
        lines.line(&format!(
            "Successfully built by commit in {:.1} s",
            started.elapsed().as_secs_f64()
        ));
        Ok(())
    }

    /// Removes the build container `id` held by `guard`: in the background when the request
    /// says so and the build succeeded, else now.
    async fn remove_build_container(
        &self,
        request: &BuildRequest,
        built: bool,
        mut guard: BuildContainer,
        id: &str,
    ) {
        if request.remove_container_later && built {
            // Off the build's path: the guard goes with the task, so a task dropped unfinished
            // (the runtime ending) still removes the container.
            let removing = self.background.clone().read_owned().await;
            let backend = self.clone();
            tokio::spawn(async move {
                // The whole guard moves in (not only the field set below); it holds the id.
                let mut guard = guard;
                let _removing = removing;
                let _ = backend.container_remove(&guard.id).await;
                guard.done = true;
            });
        } else {
            let _ = self.container_remove(id).await;
            guard.done = true;
        }
    }

    /// Creates the build container in a task of its own, which runs to its end even when the
    /// build is dropped meanwhile (Ctrl-C): the engine finishes a creation whose client has gone
    /// away, so the task removes the container it made when the build was `abandoned` by then.
    /// The task counts as background work of the connection, which
    /// [`ContainerBackend::settle_background`] (the clean-up after a Ctrl-C) waits for.
    async fn create_build_container(
        &self,
        spec: ContainerSpec,
        abandoned: Arc<AtomicBool>,
    ) -> Result<String> {
        let working = self.background.clone().read_owned().await;
        let backend = self.clone();
        let image = spec.image.clone();
        let task = tokio::spawn(async move {
            let _working = working;
            let created = backend.container_create(&spec).await;
            if let Ok(id) = &created {
                if abandoned.load(Ordering::SeqCst) {
                    let _ = backend.container_remove(id).await;
                }
            }
            created
        });
        task.await.unwrap_or_else(|e| {
            Err(BackendError::Engine {
                operation: format!("creating the build container from {image}"),
                message: format!("the creating task ended: {e}"),
            })
        })
    }

    async fn commit_step(
        &self,
        id: &str,
        tag: &str,
        step: &CommitStep,
        request: &BuildRequest,
        started: Instant,
        lines: &mut LogLines<'_, '_>,
    ) -> Result<()> {
        // A cache volume's variables and PATH directories reach every RUN step.
        let (limit, cache) = (request.timeout, request.cache_volume.as_ref());
        let remaining = match limit {
            Some(l) => match l.checked_sub(started.elapsed()) {
                Some(r) if !r.is_zero() => Some(r),
                _ => {
                    return Err(BackendError::BuildTimeout {
                        tag: tag.to_string(),
                        after: l,
                    })
                }
            },
            None => None,
        };
        let mkdirs = |dirs: Vec<String>| {
            let mut cmd = vec!["mkdir".to_string(), "-p".to_string(), "--".to_string()];
            cmd.extend(dirs);
            ExecRequest::new(cmd)
        };
        let run = match step {
            CommitStep::Copy { dirs, files, .. } => {
                if !dirs.is_empty() {
                    self.checked(id, tag, &mkdirs(dirs.clone()), lines).await?;
                }
                self.copy_in(id, files).await?;
                return Ok(());
            }
            CommitStep::Setting { make_dir, .. } => match make_dir {
                Some(dir) => mkdirs(vec![dir.clone()]),
                None => return Ok(()),
            },
            CommitStep::Run {
                script,
                env,
                working_dir,
                ..
            } => {
                let script = match cache {
                    Some(c) if !c.path_prepend.is_empty() => format!(
                        "PATH=\"{}:$PATH\"; export PATH\n{script}",
                        c.path_prepend.join(":")
                    ),
                    _ => script.clone(),
                };
                let mut r = ExecRequest::new(["/bin/sh", "-c", script.as_str()]);
                r.env = env.clone();
                r.env
                    .extend(cache.iter().flat_map(|c| c.env.iter().cloned()));
                r.working_dir = working_dir.clone();
                r
            }
        };
        let mut run = run;
        run.timeout = remaining;
        let out = self.exec_to(id, &run, lines).await?;
        lines.end_output();
        if out.timed_out {
            return Err(BackendError::BuildTimeout {
                tag: tag.to_string(),
                after: limit.unwrap_or_default(),
            });
        }
        match out.exit_code {
            Some(0) => Ok(()),
            code => Err(BackendError::BuildFailed {
                tag: tag.to_string(),
                message: format!(
                    "The command '{}' returned a non-zero code: {}",
                    step.instruction(),
                    code.map_or("none".to_string(), |c| c.to_string())
                ),
                log_tail: lines.tail.iter().cloned().collect(),
            }),
        }
    }

    /// Runs a helper command of the build (no time limit of its own) and fails the build if it
    /// fails.
    async fn checked(
        &self,
        id: &str,
        tag: &str,
        request: &ExecRequest,
        lines: &mut LogLines<'_, '_>,
    ) -> Result<()> {
        let out = self.exec_to(id, request, lines).await?;
        lines.end_output();
        if out.exit_code == Some(0) {
            Ok(())
        } else {
            Err(BackendError::BuildFailed {
                tag: tag.to_string(),
                message: format!("{} failed", request.cmd.join(" ")),
                log_tail: lines.tail.iter().cloned().collect(),
            })
        }
    }
}
