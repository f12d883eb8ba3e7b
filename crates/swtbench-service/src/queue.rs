//! The durable queue of the service: every accepted prediction is a row of a database before the
//! service answers, and a job is marked done only after its evaluation wrote its reports (its
//! verdict and its `report.json` are stored with it). Identical submissions (the same content key)
//! are one job.
//!
//! Two databases hold it, behind one [`Queue`]; the API and the workers do not know which:
//!
//! - **SQLite** (the default, [`sqlite`]): a file in the service's directory, WAL mode. One
//!   service owns it at a time (a lock file beside the database); at start-up it puts back the
//!   jobs a killed service left running.
//! - **PostgreSQL** ([`postgres`], `--queue postgres://…`): shared by the service and by
//!   `swtbench worker` processes on other hosts. Workers claim jobs with `FOR UPDATE SKIP LOCKED`.
//!
//! In both, a running job is **leased**: its worker ([`Holder`]: host, pid, process start time)
//! renews the lease while it evaluates ([`Queue::heartbeat`]); a lease that runs out (the worker
//! died, or lost the database) puts the job back in the queue, and after [`MAX_ATTEMPTS`] takes
//! the job fails instead. A job put back resumes: its finished runs are reused by their keys on
//! the host that made them.
//!
//! It must not evaluate anything or know about HTTP: the workers and the API call it.

pub mod postgres;
pub mod sqlite;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The database file in the service's directory (the SQLite queue).
pub const DB_FILE: &str = sqlite::DB_FILE;
/// The lock file that keeps a second service off the same SQLite queue.
pub const LOCK_FILE: &str = sqlite::LOCK_FILE;

/// How many times a job is taken before an infrastructure fault (the engine unreachable, its
/// worker dead) makes it fail.
pub const MAX_ATTEMPTS: u32 = 3;

/// How long a worker holds a job without renewing its lease, unless told otherwise.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// What went wrong with the queue.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("the queue database {path}: {source}")]
    Db {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("the PostgreSQL queue {url}: {source}")]
    Postgres {
        /// The URL without its password.
        url: String,
        #[source]
        source: ::postgres::Error,
    },
    #[error("another service holds the queue in {dir} (its lock file {lock} is taken)")]
    Busy { dir: PathBuf, lock: PathBuf },
    #[error("the queue's lock file {path}: {source}")]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the queue {queue} has schema version {found}, newer than this swtbench knows ({known})"
    )]
    NewerSchema {
        queue: String,
        found: i64,
        known: i64,
    },
    #[error("--queue {given:?}: {why}")]
    Location { given: String, why: String },
    #[error("the queue {queue}: {what}")]
    Corrupt { queue: String, what: String },
}

/// Where the queue is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueLocation {
    /// The SQLite file in the service's directory, owned by one service.
    Sqlite { dir: PathBuf },
    /// A PostgreSQL database, shared by the service and its workers on other hosts.
    Postgres { url: String },
}

impl QueueLocation {
    /// The location `--queue` gives (`None`: the SQLite file in `dir`). A PostgreSQL URL is
    /// `postgres://` or `postgresql://`; its `sslmode` may be `disable` or `prefer` (no TLS).
    pub fn parse(queue: Option<&str>, dir: &Path) -> Result<QueueLocation, QueueError> {
        let Some(given) = queue else {
            return Ok(QueueLocation::Sqlite {
                dir: dir.to_path_buf(),
            });
        };
        let bad = |why: &str| QueueError::Location {
            given: postgres::without_password(given),
            why: why.to_string(),
        };
        if given.starts_with("postgres://") || given.starts_with("postgresql://") {
            postgres::check_url(given).map_err(|why| bad(&why.to_string()))?;
            return Ok(QueueLocation::Postgres {
                url: given.to_string(),
            });
        }
        Err(bad(
            "not a PostgreSQL URL (postgres://USER@HOST[:PORT]/DATABASE); leave --queue out for \
             the service's own SQLite queue",
        ))
    }

    /// How notes and errors name it (a URL without its password).
    pub fn display(&self) -> String {
        match self {
            QueueLocation::Sqlite { dir } => dir.join(DB_FILE).display().to_string(),
            QueueLocation::Postgres { url } => postgres::without_password(url),
        }
    }

    /// Whether processes on other hosts can share it.
    pub fn is_shared(&self) -> bool {
        matches!(self, QueueLocation::Postgres { .. })
    }
}

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Queued,
    Running,
    /// Evaluated: the verdict is there.
    Done,
    /// The evaluation could not be made (the error says why).
    Failed,
    Cancelled,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Queued => "queued",
            State::Running => "running",
            State::Done => "done",
            State::Failed => "failed",
            State::Cancelled => "cancelled",
        }
    }

    pub(crate) fn parse(s: &str) -> State {
        match s {
            "running" => State::Running,
            "done" => State::Done,
            "failed" => State::Failed,
            "cancelled" => State::Cancelled,
            _ => State::Queued,
        }
    }

    /// Whether the job will not change any more.
    pub fn is_final(self) -> bool {
        matches!(self, State::Done | State::Failed | State::Cancelled)
    }
}

/// What one job evaluates: a prediction and the options asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpec {
    pub instance_id: String,
    pub model: String,
    pub model_patch: String,
    /// Run without the coverage tracer (the verdict only).
    #[serde(default)]
    pub no_coverage: bool,
}

impl JobSpec {
    /// The content key: identical submissions share one job. `context` is what the service's
    /// settings make of it (the dataset, the run flags): the same prediction under other settings
    /// is another job.
    pub fn key(&self, context: &str) -> String {
        let text = serde_json::json!({
            "context": context,
            "instance_id": self.instance_id,
            "model": self.model,
            "model_patch": self.model_patch,
            "no_coverage": self.no_coverage,
        })
        .to_string();
        swtbench_core::hash::sha256_hex(text)
    }
}

/// The id of the job with content key `key` (stable: the same submission gets the same id).
pub fn job_id(key: &str) -> String {
    format!("ev{}", &key[..24])
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Job {
    pub id: String,
    pub spec: JobSpec,
    pub state: State,
    /// How many times a worker took it.
    pub attempts: u32,
    /// The verdict of a done job.
    pub verdict: Option<serde_json::Value>,
    /// Why a failed job failed.
    pub error: Option<String>,
    /// Seconds since the epoch.
    pub created: i64,
    pub started: Option<i64>,
    pub finished: Option<i64>,
}

impl Job {
    pub(crate) fn parse_spec(text: &str) -> Result<JobSpec, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// How many jobs are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub queued: u64,
    pub running: u64,
    pub done: u64,
    pub failed: u64,
    pub cancelled: u64,
}

impl Counts {
    pub(crate) fn add(&mut self, state: &str, n: u64) {
        match State::parse(state) {
            State::Queued => self.queued = n,
            State::Running => self.running = n,
            State::Done => self.done = n,
            State::Failed => self.failed = n,
            State::Cancelled => self.cancelled = n,
        }
    }
}

/// The worker that holds a running job, and how long its lease lasts each time it is taken or
/// renewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// `<host>/<pid>/<process start time>#<worker index>`: the process's session id (as the
    /// containers' labels carry it) and which of its workers.
    pub id: String,
    pub lease: Duration,
}

impl Holder {
    /// Worker `index` of this process.
    pub fn of_this_process(index: usize, lease: Duration) -> Holder {
        Holder {
            id: format!(
                "{}#{index}",
                swtbench_runner::session::Session::current().as_str()
            ),
            lease,
        }
    }

    /// The host the worker runs on.
    pub fn host(&self) -> &str {
        self.id.split('/').next().unwrap_or_default()
    }

    /// How often the worker renews its lease: a quarter of it, between 0.2 and 10 seconds.
    pub fn heartbeat_every(&self) -> Duration {
        (self.lease / 4).clamp(Duration::from_millis(200), Duration::from_secs(10))
    }

    pub(crate) fn lease_ms(&self) -> i64 {
        i64::try_from(self.lease.as_millis()).unwrap_or(i64::MAX)
    }
}

/// How a worker ends a job.
#[derive(Debug, Clone)]
pub enum End {
    /// Evaluated: the verdict, and the instance's `report.json` as the evaluation wrote it (its
    /// exact text), which the API serves whichever host ran the job.
    Done {
        verdict: serde_json::Value,
        report: Option<String>,
    },
    /// Final: the evaluation could not be made (a planning error of the prediction, a fault
    /// after its attempts, a cancellation).
    Failed(String),
    /// An infrastructure fault: queued again, this take counted among its attempts.
    Requeue,
    /// Interrupted by its worker's stop: queued again, this take not counted.
    Interrupted,
}

/// A job's lease ran out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired {
    pub id: String,
    /// `Queued` (taken again later) or `Failed` (it had its attempts).
    pub state: State,
    /// The worker that held it.
    pub holder: Option<String>,
}

/// The error of a job whose lease ran out for the last time.
pub(crate) fn expired_error(holder: &str, attempts: i64) -> String {
    format!(
        "its worker {holder} stopped renewing its lease (it died, or lost the queue) on take \
         {attempts} of {MAX_ATTEMPTS}"
    )
}

/// The queue, whichever database holds it. A queue may be bound to a settings context
/// ([`Queue::with_context`]): it then records that context with every job it adds and takes only
/// jobs of that context (or of none), so a worker never evaluates a job under other run flags
/// than the ones it was submitted under.
#[derive(Debug)]
pub struct Queue {
    backend: Backend,
    context: Option<String>,
}

#[derive(Debug)]
enum Backend {
    Sqlite(sqlite::SqliteQueue),
    Postgres(postgres::PgQueue),
}

macro_rules! each {
    ($self:ident, $q:ident => $e:expr) => {
        match &$self.backend {
            Backend::Sqlite($q) => $e,
            Backend::Postgres($q) => $e,
        }
    };
}

impl Queue {
    /// Opens (creating) the SQLite queue in `dir` and takes it for this process: refused while
    /// another service holds it. Jobs a killed service left running are queued again (or fail,
    /// when they have had their attempts).
    pub fn open(dir: &Path) -> Result<Queue, QueueError> {
        Ok(Queue {
            backend: Backend::Sqlite(sqlite::SqliteQueue::open(dir)?),
            context: None,
        })
    }

    /// Opens the queue at `location`: the SQLite file (as [`Queue::open`]) or a PostgreSQL
    /// database (connected, its schema created or migrated).
    pub fn connect(location: &QueueLocation) -> Result<Queue, QueueError> {
        match location {
            QueueLocation::Sqlite { dir } => Queue::open(dir),
            QueueLocation::Postgres { url } => Ok(Queue {
                backend: Backend::Postgres(postgres::PgQueue::connect(url)?),
                context: None,
            }),
        }
    }

    /// This queue, bound to the settings context `context` (see [`Queue`]).
    pub fn with_context(mut self, context: &str) -> Queue {
        self.context = Some(context.to_string());
        self
    }

    /// How notes name it.
    pub fn display(&self) -> String {
        each!(self, q => q.display())
    }

    /// The PostgreSQL queue, if it is one (its notifications).
    pub fn postgres(&self) -> Option<&postgres::PgQueue> {
        match &self.backend {
            Backend::Postgres(q) => Some(q),
            Backend::Sqlite(_) => None,
        }
    }

    /// Adds the job of `spec` (content key `key`) unless one with that key exists; returns its
    /// id and whether it was new. A cancelled or failed job of the same key is queued again (with
    /// its attempts from zero).
    pub fn submit(&self, spec: &JobSpec, key: &str) -> Result<(String, bool), QueueError> {
        let context = self.context.as_deref();
        each!(self, q => q.submit(spec, key, context))
    }

    /// Records a batch of jobs (already submitted), in order; returns its id (stable for the
    /// same jobs in the same order).
    pub fn add_batch(&self, jobs: &[String]) -> Result<String, QueueError> {
        let id = format!(
            "run{}",
            &swtbench_core::hash::sha256_hex(jobs.join("\n"))[..24]
        );
        each!(self, q => q.add_batch(&id, jobs))?;
        Ok(id)
    }

    /// The jobs of a batch, in order; `None` for an unknown batch.
    pub fn batch(&self, id: &str) -> Result<Option<Vec<Job>>, QueueError> {
        each!(self, q => q.batch(id))
    }

    /// The batches and when each was made, newest first: at most `limit` of them, those after
    /// batch `before` in that order when it is given (`None`: there is no batch `before`).
    pub fn batch_ids(
        &self,
        limit: usize,
        before: Option<&str>,
    ) -> Result<Option<Vec<(String, i64)>>, QueueError> {
        each!(self, q => q.batch_ids(limit, before))
    }

    /// The job `id`, if there is one.
    pub fn get(&self, id: &str) -> Result<Option<Job>, QueueError> {
        each!(self, q => q.get(id))
    }

    /// The `report.json` of job `id` as its evaluation wrote it, if it is done and had one.
    pub fn report(&self, id: &str) -> Result<Option<String>, QueueError> {
        each!(self, q => q.report(id))
    }

    /// Takes the oldest queued job (of this queue's context) for `holder`: it is running from now
    /// on, leased to `holder` for `holder.lease`. Leases that ran out are put back first.
    pub fn claim(&self, holder: &Holder) -> Result<Option<Job>, QueueError> {
        self.expire()?;
        let context = self.context.as_deref();
        each!(self, q => q.claim(holder, context))
    }

    /// Records where the running job `id` writes its logs (`<host>:<directory>`).
    pub fn record_logs(&self, id: &str, holder: &Holder, logs: &str) -> Result<(), QueueError> {
        each!(self, q => q.record_logs(id, holder, logs))
    }

    /// Renews `holder`'s lease of the running job `id`; `false` when the job is no longer
    /// `holder`'s (cancelled, or its lease ran out and it was put back): its evaluation should
    /// stop.
    pub fn heartbeat(&self, id: &str, holder: &Holder) -> Result<bool, QueueError> {
        each!(self, q => q.heartbeat(id, holder))
    }

    /// Ends the running job `id` that `holder` holds (see [`End`]); `false` when it was not
    /// `holder`'s any more (cancelled meanwhile, or put back after its lease ran out): nothing
    /// changes then.
    pub fn finish(&self, id: &str, holder: &Holder, end: &End) -> Result<bool, QueueError> {
        each!(self, q => q.finish(id, holder, end))
    }

    /// Puts back the running jobs whose lease ran out: queued again, or failed when they have
    /// had [`MAX_ATTEMPTS`] takes. Returns them.
    pub fn expire(&self) -> Result<Vec<Expired>, QueueError> {
        each!(self, q => q.expire())
    }

    /// Cancels a job that has not finished; returns its state afterwards (`None`: no such job).
    /// A worker running it (in any process) stops at its next heartbeat, or at once when it
    /// listens for the queue's notifications.
    pub fn cancel(&self, id: &str) -> Result<Option<State>, QueueError> {
        each!(self, q => q.cancel(id))
    }

    /// How many jobs are in each state.
    pub fn counts(&self) -> Result<Counts, QueueError> {
        each!(self, q => q.counts())
    }

    /// How many queued jobs were submitted under another settings context than this queue's:
    /// a worker bound to this context takes none of them.
    pub fn queued_elsewhere(&self) -> Result<u64, QueueError> {
        match &self.context {
            None => Ok(0),
            Some(c) => each!(self, q => q.queued_elsewhere(c)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_location_is_sqlite_by_default_and_a_postgres_url_otherwise() {
        let dir = Path::new("/srv/out/service");
        assert_eq!(
            QueueLocation::parse(None, dir).expect("sqlite"),
            QueueLocation::Sqlite {
                dir: dir.to_path_buf()
            }
        );
        let pg = QueueLocation::parse(Some("postgres://sw:secret@db:5433/queue"), dir)
            .expect("postgres");
        assert!(pg.is_shared());
        assert_eq!(pg.display(), "postgres://sw@db:5433/queue");
        let e = QueueLocation::parse(Some("mysql://db/q"), dir).expect_err("refused");
        assert!(e.to_string().contains("not a PostgreSQL URL"), "{e}");
        let e = QueueLocation::parse(Some("postgres://sw:secret@db/q?sslmode=require"), dir)
            .expect_err("no TLS");
        assert!(
            e.to_string().contains("sslmode=require") && !e.to_string().contains("secret"),
            "{e}"
        );
    }

    #[test]
    fn a_holder_is_this_process_session_and_its_worker() {
        let h = Holder::of_this_process(3, Duration::from_secs(60));
        let session = swtbench_runner::session::Session::current();
        assert_eq!(h.id, format!("{}#3", session.as_str()));
        assert_eq!(Some(h.host()), session.as_str().split('/').next());
        assert_eq!(h.heartbeat_every(), Duration::from_secs(10));
        let short = Holder {
            lease: Duration::from_secs(2),
            ..h
        };
        assert_eq!(short.heartbeat_every(), Duration::from_millis(500));
    }
}
