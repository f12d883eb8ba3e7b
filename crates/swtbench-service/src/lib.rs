//! `swtbench serve`: the evaluation service for agent, CI and training loops. An HTTP/JSON API
//! ([`api`], versioned under `/v1`) in front of a durable queue ([`queue`]: SQLite in WAL mode in
//! the service's directory, or a PostgreSQL database shared with `swtbench worker` processes on
//! other hosts, [`pool`]) and worker threads ([`worker`]) that evaluate each accepted
//! prediction with the one evaluation entry point, `swtbench_app::evaluate::evaluate`, as
//! `swtbench run` does. What the service evaluates with (dataset, spec table, run flags) comes
//! from a [`worker::Template`] the binary makes from its command line.
//!
//! It must not parse the command line or print: the binary does both; what happens while it runs
//! goes to the `note` callback.

pub mod api;
pub mod image_cache;
pub mod metrics;
pub mod openapi;
pub mod pool;
pub mod queue;
pub mod quota;
pub mod web;
pub mod worker;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use swtbench_runner::events::CancelReason;
use swtbench_runner::Cancel;

pub use pool::Pool;
pub use queue::{Job, JobSpec, Queue, QueueError, QueueLocation, State};
pub use worker::Template;

/// The directory under the output directory that holds the service's queue and job files.
pub const SERVICE_DIR: &str = "service";
/// The file in the service's directory that holds the address it listens on, once it does.
pub const ADDRESS_FILE: &str = "address";

/// How the service runs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it listens (127.0.0.1 unless told otherwise).
    pub listen: SocketAddr,
    /// Worker threads in this process (0: accept and queue only).
    pub workers: usize,
    /// The service's directory: queue, job events, predictions.
    pub dir: PathBuf,
    /// The accepted bearer tokens (their SHA-256 digests and quotas); `None`: no token asked
    /// (loopback only).
    pub tokens: Option<Vec<quota::Token>>,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// Requests per second one token (or the anonymous caller) may make.
    pub rate_limit: u32,
    /// The bytes the instance images' own layers may take (`--image-cache-size`): after each
    /// job the least recently used beyond it are removed. `None`: every image is kept.
    pub image_cache: Option<u64>,
}

/// Why the service could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error("the service binds to {addr}, which is not a loopback address, without --token-file")]
    NoToken { addr: SocketAddr },
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// What the API and the workers share.
pub struct Shared {
    pub queue: Queue,
    pub template: Arc<dyn Template>,
    pub metrics: metrics::Metrics,
    pub dir: PathBuf,
    pub config: Config,
    /// Set when the service stops: workers take no new job, running ones are queued again.
    pub stopping: AtomicBool,
    /// The cancel handles of the running jobs.
    pub cancels: Mutex<HashMap<String, Cancel>>,
    /// How long a worker of this process holds a job without renewing its lease.
    pub lease: Duration,
    /// The instance images this process's evaluations use, and when each was last used.
    pub images: image_cache::ImageUse,
    changed: tokio::sync::watch::Sender<u64>,
    work: (Mutex<u64>, Condvar),
    note: Box<dyn Fn(String) + Send + Sync>,
    rate: Mutex<api::RateWindow>,
    running: Mutex<quota::Running>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("dir", &self.dir)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// The service's state over an open queue.
    pub fn new(
        queue: Queue,
        template: Arc<dyn Template>,
        config: Config,
        note: Box<dyn Fn(String) + Send + Sync>,
    ) -> Shared {
        let images = image_cache::ImageUse::open(&config.dir);
        Shared {
            images,
            queue,
            template,
            metrics: metrics::Metrics::default(),
            dir: config.dir.clone(),
            config,
            stopping: AtomicBool::new(false),
            cancels: Mutex::new(HashMap::new()),
            lease: queue::DEFAULT_LEASE,
            changed: tokio::sync::watch::channel(0).0,
            work: (Mutex::new(0), Condvar::new()),
            note,
            rate: Mutex::new(api::RateWindow::default()),
            running: Mutex::new(quota::Running::default()),
        }
    }

    /// The same state, its workers holding their jobs under leases of `lease`.
    pub fn with_lease(mut self, lease: Duration) -> Shared {
        self.lease = lease;
        self
    }

    /// Says what happened (the binary prints it).
    pub fn note(&self, text: String) {
        (self.note)(text);
    }

    /// A job changed state: requests waiting for a verdict look again.
    pub fn job_changed(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    /// Watches job changes (requests that wait for a verdict).
    pub fn watch_jobs(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// A job was queued: a waiting worker takes it.
    pub fn work_added(&self) {
        let (m, c) = &self.work;
        *m.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        c.notify_all();
    }

    /// Waits at most `timeout` for new work (a worker with nothing to do).
    pub fn wait_for_work(&self, timeout: Duration) {
        let (m, c) = &self.work;
        let guard = m.lock().unwrap_or_else(|e| e.into_inner());
        let seen = *guard;
        let _ = c.wait_timeout_while(guard, timeout, |n| {
            *n == seen && !self.stopping.load(Ordering::SeqCst)
        });
    }

    /// Sleeps `d`, or less when the service stops.
    pub fn sleep(&self, d: Duration) {
        self.wait_for_work(d);
    }

    /// Stops: no new job is taken and the running ones are interrupted (queued again).
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for cancel in self
            .cancels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
        {
            cancel.request(CancelReason::Interrupt);
        }
        self.work_added();
        self.job_changed();
    }
}

/// Runs the service until SIGINT or SIGTERM: opens the queue at `pool.queue` (the SQLite file in
/// `config.dir`, refused while another service holds it, or a PostgreSQL database), starts the
/// workers, listens. On a stop signal it stops taking jobs, interrupts the running ones (they are
/// queued again and resume at the next start) and returns.
pub fn serve(
    config: Config,
    pool: Pool,
    template: Arc<dyn Template>,
    note: Box<dyn Fn(String) + Send + Sync>,
) -> Result<(), ServeError> {
    if config.tokens.is_none() && !config.listen.ip().is_loopback() {
        return Err(ServeError::NoToken {
            addr: config.listen,
        });
    }
    let queue = pool.open(template.as_ref())?;
    let shown = queue.display();
    let shared =
        Arc::new(Shared::new(queue, template, config.clone(), note).with_lease(pool.lease));
    // What processes killed before this one left (containers, unfinished files) goes first.
    if let Ok(Some(removed)) =
        swtbench_app::clean::sweep_ended_processes(&shared.template.logs_root())
    {
        shared.note(removed);
    }
    let mut workers =
        pool::start(&shared, config.workers, true).map_err(|source| ServeError::Io {
            what: "starting a worker thread".into(),
            source,
        })?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| ServeError::Io {
            what: "starting the async runtime".into(),
            source,
        })?;
    let served = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|source| ServeError::Bind {
                addr: config.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })?;
        let address_file = config.dir.join(ADDRESS_FILE);
        // The SQLite queue made the directory; a PostgreSQL one did not.
        std::fs::create_dir_all(&config.dir)
            .and_then(|()| std::fs::write(&address_file, format!("http://{addr}\n")))
            .map_err(|source| ServeError::Io {
                what: format!("writing {}", address_file.display()),
                source,
            })?;
        shared.note(format!(
            "listening on http://{addr} ({} worker(s); queue {shown})",
            config.workers,
        ));
        let app = api::router(shared.clone());
        let stop = shared.clone();
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                stop_signal().await;
                stop.note("stopping: running jobs are queued again".into());
                stop.stop();
            })
            .await
            .map_err(|source| ServeError::Io {
                what: "serving".into(),
                source,
            })
    });
    shared.stop();
    for w in workers.drain(..) {
        let _ = w.join();
    }
    let _ = std::fs::remove_file(config.dir.join(ADDRESS_FILE));
    drop(rt);
    served
}

/// Ctrl-C or SIGTERM (the one listener of the stop signals, `swtbench_app`'s).
pub(crate) async fn stop_signal() {
    let mut signals = swtbench_app::evaluate::StopSignals::new();
    if !signals.next().await {
        // Ctrl-C cannot be listened for: the service runs until it is killed.
        std::future::pending::<()>().await;
    }
}
