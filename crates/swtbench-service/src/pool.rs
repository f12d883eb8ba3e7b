//! The workers of one process and the threads beside them, for `swtbench serve` and for
//! `swtbench worker` (a process that only evaluates, on any host that reaches the PostgreSQL
//! queue): the worker threads ([`crate::worker::work`]), a reaper that puts back the jobs whose
//! lease ran out (in the service), and, on a PostgreSQL queue, a listener of its notifications
//! (new jobs wake idle workers at once, a cancellation from any process stops the evaluation
//! here, a verdict stored by another host wakes the requests waiting for it).

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use swtbench_runner::events::CancelReason;

use crate::queue::{Queue, QueueError, QueueLocation, State};
use crate::worker::Template;
use crate::{Config, ServeError, Shared};

/// Where the jobs are and how they are held.
#[derive(Debug, Clone)]
pub struct Pool {
    pub queue: QueueLocation,
    /// How long a worker holds a job without renewing its lease (it renews it four times as
    /// often, at most every 10 s).
    pub lease: Duration,
}

impl Pool {
    /// Opens the queue, bound to the settings context of `template`.
    pub fn open(&self, template: &dyn Template) -> Result<Queue, QueueError> {
        Ok(Queue::connect(&self.queue)?.with_context(template.context()))
    }
}

/// Starts `workers` worker threads on `shared`, with the listener of a PostgreSQL queue and
/// (`reaper`) the thread that puts back expired jobs. They end when `shared` stops.
pub fn start(
    shared: &Arc<Shared>,
    workers: usize,
    reaper: bool,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    let mut handles = Vec::new();
    for i in 0..workers {
        let s = shared.clone();
        handles.push(
            std::thread::Builder::new()
                .name(format!("swtbench-worker-{i}"))
                .spawn(move || crate::worker::work(s, i))?,
        );
    }
    if reaper {
        let s = shared.clone();
        handles.push(
            std::thread::Builder::new()
                .name("swtbench-reaper".into())
                .spawn(move || reap(&s))?,
        );
    }
    if shared.queue.postgres().is_some() {
        let s = shared.clone();
        handles.push(
            std::thread::Builder::new()
                .name("swtbench-listener".into())
                .spawn(move || listen(&s))?,
        );
    }
    Ok(handles)
}

/// Puts back the jobs whose lease ran out, every half lease (between 1 and 30 seconds), until the
/// service stops.
fn reap(shared: &Shared) {
    let every = (shared.lease / 2).clamp(Duration::from_secs(1), Duration::from_secs(30));
    while !shared.stopping.load(Ordering::SeqCst) {
        shared.sleep(every);
        match shared.queue.expire() {
            Ok(expired) if expired.is_empty() => {}
            Ok(expired) => {
                for e in &expired {
                    let holder = e.holder.as_deref().unwrap_or("?");
                    shared.note(match e.state {
                        State::Failed => format!(
                            "{}: its worker {holder} stopped renewing its lease; it had its \
                             attempts and failed",
                            e.id
                        ),
                        _ => format!(
                            "{}: its worker {holder} stopped renewing its lease; queued again",
                            e.id
                        ),
                    });
                }
                shared.work_added();
                shared.job_changed();
            }
            Err(e) => shared.note(format!("putting back expired jobs: {e}")),
        }
    }
}

/// Listens to the PostgreSQL queue's notifications until `shared` stops, connecting again when
/// the connection is lost.
fn listen(shared: &Shared) {
    let Some(pg) = shared.queue.postgres() else {
        return;
    };
    let mut listener = None;
    let mut failing = false;
    while !shared.stopping.load(Ordering::SeqCst) {
        let l = match &mut listener {
            Some(l) => l,
            None => match pg.listen() {
                Ok(l) => {
                    if failing {
                        shared.note("listening to the queue's notifications again".into());
                        failing = false;
                    }
                    // Whatever was announced while nobody listened: look again.
                    shared.work_added();
                    shared.job_changed();
                    listener.insert(l)
                }
                Err(e) => {
                    if !failing {
                        shared.note(format!("listening to the queue's notifications: {e}"));
                        failing = true;
                    }
                    shared.sleep(Duration::from_secs(2));
                    continue;
                }
            },
        };
        match l.next(Duration::from_millis(500)) {
            Ok(payloads) if payloads.is_empty() => {}
            Ok(payloads) => {
                for p in &payloads {
                    if let Some(id) = p.strip_prefix("cancel ") {
                        if let Some(c) = shared
                            .cancels
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .get(id)
                        {
                            c.request(CancelReason::Interrupt);
                        }
                    }
                }
                shared.work_added();
                shared.job_changed();
            }
            Err(e) => {
                shared.note(format!("the queue's notifications: {e}"));
                failing = true;
                listener = None;
            }
        }
    }
}

/// How `swtbench worker` runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub pool: Pool,
    /// Worker threads in this process.
    pub workers: usize,
    /// This process's directory for its job files (events, predictions).
    pub dir: PathBuf,
    /// The instance images' budget (`--image-cache-size`); `None`: every image is kept.
    pub image_cache: Option<u64>,
}

/// `swtbench worker`: joins the pool of the shared queue with `config.workers` workers, which
/// take jobs of `template`'s settings until SIGINT or SIGTERM; then the running jobs are
/// interrupted (queued again at once, this take not counted) and it returns.
pub fn run_workers(
    config: WorkerConfig,
    template: Arc<dyn Template>,
    note: Box<dyn Fn(String) + Send + Sync>,
) -> Result<(), ServeError> {
    let queue = config.pool.open(template.as_ref())?;
    let shown = queue.display();
    let elsewhere = queue.queued_elsewhere()?;
    let service = Config {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        workers: config.workers,
        dir: config.dir.clone(),
        tokens: None,
        max_body: 0,
        rate_limit: 0,
        image_cache: config.image_cache,
    };
    let shared =
        Arc::new(Shared::new(queue, template, service, note).with_lease(config.pool.lease));
    let host = crate::queue::Holder::of_this_process(0, config.pool.lease);
    shared.note(format!(
        "{} worker(s) on {} taking jobs of {shown} (lease {} s)",
        config.workers,
        host.host(),
        config.pool.lease.as_secs_f64()
    ));
    if elsewhere > 0 {
        shared.note(format!(
            "{elsewhere} queued job(s) were submitted under other run flags than this worker's: \
             it takes none of them (give it the service's run flags after `--`)"
        ));
    }
    // What processes killed on this host before this one left (a dead worker's containers and
    // unfinished files) goes first, as the service does.
    if let Ok(Some(removed)) =
        swtbench_app::clean::sweep_ended_processes(&shared.template.logs_root())
    {
        shared.note(removed);
    }
    let handles = start(&shared, config.workers, false).map_err(|source| ServeError::Io {
        what: "starting a worker thread".into(),
        source,
    })?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| ServeError::Io {
            what: "starting the async runtime".into(),
            source,
        })?;
    let stop = shared.clone();
    rt.block_on(async move {
        crate::stop_signal().await;
        stop.note("stopping: running jobs are queued again".into());
        stop.stop();
    });
    drop(rt);
    for h in handles {
        let _ = h.join();
    }
    Ok(())
}
