//! The durable queue of the service: every accepted prediction is a row of an SQLite database
//! (WAL mode) in the service's directory before the service answers, and a job is marked done
//! only after its evaluation wrote its reports. Identical submissions (the same content key) are
//! one job. One service owns a queue at a time (a lock file beside the database); at start-up it
//! puts back the jobs a killed service left running, which resume: their finished runs are reused
//! by their keys, so nothing that had finished executes twice.
//!
//! It must not evaluate anything or know about HTTP: the workers and the API call it.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};

/// The database file in the service's directory.
pub const DB_FILE: &str = "queue.sqlite";
/// The lock file that keeps a second service off the same queue.
pub const LOCK_FILE: &str = "queue.lock";

/// What went wrong with the queue.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("the queue database {path}: {source}")]
    Db {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("another service holds the queue in {dir} (its lock file {lock} is taken)")]
    Busy { dir: PathBuf, lock: PathBuf },
    #[error("the queue's lock file {path}: {source}")]
    Lock {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
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

    fn parse(s: &str) -> State {
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

/// How many jobs are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub queued: u64,
    pub running: u64,
    pub done: u64,
    pub failed: u64,
    pub cancelled: u64,
}

/// The queue: one SQLite database, shared by the API and the workers of this process.
#[derive(Debug)]
pub struct Queue {
    path: PathBuf,
    conn: Mutex<Connection>,
    _lock: std::fs::File,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    spec TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    verdict TEXT,
    error TEXT,
    created INTEGER NOT NULL,
    started INTEGER,
    finished INTEGER,
    seq INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state, seq);
CREATE TABLE IF NOT EXISTS batches (
    id TEXT PRIMARY KEY,
    created INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_jobs (
    batch TEXT NOT NULL,
    pos INTEGER NOT NULL,
    job TEXT NOT NULL,
    PRIMARY KEY (batch, pos)
);
";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Queue {
    /// Opens (creating) the queue in `dir` and takes it for this process: refused while another
    /// service holds it. Jobs a killed service left running are queued again.
    pub fn open(dir: &Path) -> Result<Queue, QueueError> {
        std::fs::create_dir_all(dir).map_err(|source| QueueError::Lock {
            path: dir.to_path_buf(),
            source,
        })?;
        let lock_path = dir.join(LOCK_FILE);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|source| QueueError::Lock {
                path: lock_path.clone(),
                source,
            })?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
            |_| QueueError::Busy {
                dir: dir.to_path_buf(),
                lock: lock_path.clone(),
            },
        )?;
        let path = dir.join(DB_FILE);
        let db = |source| QueueError::Db {
            path: path.clone(),
            source,
        };
        let conn = Connection::open(&path).map_err(db)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db)?;
        // Every commit reaches the disk before the service answers.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(db)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(db)?;
        conn.execute_batch(SCHEMA).map_err(db)?;
        // The lock is ours: whatever is still running was left by a process that is gone.
        conn.execute(
            "UPDATE jobs SET state = 'queued', started = NULL WHERE state = 'running'",
            [],
        )
        .map_err(db)?;
        Ok(Queue {
            path,
            conn: Mutex::new(conn),
            _lock: lock,
        })
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, QueueError> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut conn).map_err(|source| QueueError::Db {
            path: self.path.clone(),
            source,
        })
    }

    /// Adds the job of `spec` (content key `key`) unless one with that key exists; returns its
    /// id and whether it was new. A cancelled or failed job of the same key is queued again.
    pub fn submit(&self, spec: &JobSpec, key: &str) -> Result<(String, bool), QueueError> {
        let id = job_id(key);
        let text = serde_json::to_string(spec).unwrap_or_default();
        self.with(|c| {
            let tx = c.transaction()?;
            let state: Option<String> = tx
                .query_row("SELECT state FROM jobs WHERE id = ?1", [&id], |r| r.get(0))
                .optional()?;
            let new = match state.as_deref() {
                None => {
                    let seq: i64 =
                        tx.query_row("SELECT COALESCE(MAX(seq), 0) + 1 FROM jobs", [], |r| {
                            r.get(0)
                        })?;
                    tx.execute(
                        "INSERT INTO jobs (id, key, spec, state, created, seq) \
                         VALUES (?1, ?2, ?3, 'queued', ?4, ?5)",
                        params![id, key, text, now(), seq],
                    )?;
                    true
                }
                Some("cancelled") | Some("failed") => {
                    tx.execute(
                        "UPDATE jobs SET state = 'queued', error = NULL, verdict = NULL, \
                         started = NULL, finished = NULL WHERE id = ?1",
                        [&id],
                    )?;
                    true
                }
                Some(_) => false,
            };
            tx.commit()?;
            Ok((id.clone(), new))
        })
    }

    /// Records a batch of jobs (already submitted), in order; returns its id (stable for the
    /// same jobs in the same order).
    pub fn add_batch(&self, jobs: &[String]) -> Result<String, QueueError> {
        let id = format!(
            "run{}",
            &swtbench_core::hash::sha256_hex(jobs.join("\n"))[..24]
        );
        self.with(|c| {
            let tx = c.transaction()?;
            tx.execute(
                "INSERT OR IGNORE INTO batches (id, created) VALUES (?1, ?2)",
                params![id, now()],
            )?;
            for (pos, job) in jobs.iter().enumerate() {
                tx.execute(
                    "INSERT OR IGNORE INTO batch_jobs (batch, pos, job) VALUES (?1, ?2, ?3)",
                    params![id, pos as i64, job],
                )?;
            }
            tx.commit()?;
            Ok(id.clone())
        })
    }

    /// The jobs of a batch, in order; `None` for an unknown batch.
    pub fn batch(&self, id: &str) -> Result<Option<Vec<Job>>, QueueError> {
        let ids: Option<Vec<String>> = self.with(|c| {
            let exists: Option<String> = c
                .query_row("SELECT id FROM batches WHERE id = ?1", [id], |r| r.get(0))
                .optional()?;
            if exists.is_none() {
                return Ok(None);
            }
            let mut st = c.prepare("SELECT job FROM batch_jobs WHERE batch = ?1 ORDER BY pos")?;
            let rows = st.query_map([id], |r| r.get::<_, String>(0))?;
            Ok(Some(rows.collect::<rusqlite::Result<Vec<_>>>()?))
        })?;
        let Some(ids) = ids else { return Ok(None) };
        let mut jobs = Vec::with_capacity(ids.len());
        for j in ids {
            if let Some(job) = self.get(&j)? {
                jobs.push(job);
            }
        }
        Ok(Some(jobs))
    }

    /// The job `id`, if there is one.
    pub fn get(&self, id: &str) -> Result<Option<Job>, QueueError> {
        self.with(|c| {
            c.query_row(
                "SELECT id, spec, state, attempts, verdict, error, created, started, finished \
                 FROM jobs WHERE id = ?1",
                [id],
                row_job,
            )
            .optional()
        })
    }

    /// Takes the oldest queued job for a worker (it is running from now on).
    pub fn claim(&self) -> Result<Option<Job>, QueueError> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let id: Option<String> = tx
                .query_row(
                    "SELECT id FROM jobs WHERE state = 'queued' ORDER BY seq LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(id) = id else {
                return Ok(None);
            };
            tx.execute(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, started = ?2 \
                 WHERE id = ?1",
                params![id, now()],
            )?;
            let job = tx.query_row(
                "SELECT id, spec, state, attempts, verdict, error, created, started, finished \
                 FROM jobs WHERE id = ?1",
                [&id],
                row_job,
            )?;
            tx.commit()?;
            Ok(Some(job))
        })
    }

    /// Ends a running job: done with its verdict, failed with its error, or queued again (an
    /// evaluation the service's stop interrupted). A job cancelled meanwhile stays cancelled.
    pub fn finish(&self, id: &str, end: &End) -> Result<(), QueueError> {
        self.with(|c| {
            let (state, verdict, error) = match end {
                End::Done(v) => ("done", Some(v.to_string()), None),
                End::Failed(e) => ("failed", None, Some(e.clone())),
                End::Requeue => ("queued", None, None),
            };
            let finished = (state != "queued").then(now);
            c.execute(
                "UPDATE jobs SET state = ?2, verdict = ?3, error = ?4, finished = ?5 \
                 WHERE id = ?1 AND state = 'running'",
                params![id, state, verdict, error, finished],
            )?;
            Ok(())
        })
    }

    /// Cancels a job that has not finished; returns its state afterwards (`None`: no such job).
    pub fn cancel(&self, id: &str) -> Result<Option<State>, QueueError> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET state = 'cancelled', finished = ?2 \
                 WHERE id = ?1 AND state IN ('queued', 'running')",
                params![id, now()],
            )?;
            c.query_row("SELECT state FROM jobs WHERE id = ?1", [id], |r| {
                r.get::<_, String>(0)
            })
            .optional()
            .map(|s| s.map(|s| State::parse(&s)))
        })
    }

    /// How many jobs are in each state.
    pub fn counts(&self) -> Result<Counts, QueueError> {
        self.with(|c| {
            let mut st = c.prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state")?;
            let mut counts = Counts::default();
            let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            for row in rows {
                let (state, n) = row?;
                let n = n as u64;
                match State::parse(&state) {
                    State::Queued => counts.queued = n,
                    State::Running => counts.running = n,
                    State::Done => counts.done = n,
                    State::Failed => counts.failed = n,
                    State::Cancelled => counts.cancelled = n,
                }
            }
            Ok(counts)
        })
    }
}

/// How a worker ends a job.
#[derive(Debug, Clone)]
pub enum End {
    Done(serde_json::Value),
    Failed(String),
    /// Interrupted by the service's stop: evaluated again later.
    Requeue,
}

fn row_job(r: &rusqlite::Row<'_>) -> rusqlite::Result<Job> {
    let spec: String = r.get(1)?;
    let state: String = r.get(2)?;
    let verdict: Option<String> = r.get(4)?;
    Ok(Job {
        id: r.get(0)?,
        spec: serde_json::from_str(&spec).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e))
        })?,
        state: State::parse(&state),
        attempts: r.get::<_, i64>(3)? as u32,
        verdict: verdict.and_then(|v| serde_json::from_str(&v).ok()),
        error: r.get(5)?,
        created: r.get(6)?,
        started: r.get(7)?,
        finished: r.get(8)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(patch: &str) -> JobSpec {
        JobSpec {
            instance_id: "swtfix__calc-1".into(),
            model: "m".into(),
            model_patch: patch.into(),
            no_coverage: false,
        }
    }

    #[test]
    fn identical_submissions_are_one_job_and_the_oldest_is_claimed_first() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::open(dir.path()).unwrap();
        let (a, new_a) = q.submit(&spec("A"), &spec("A").key("ctx")).unwrap();
        let (b, new_b) = q.submit(&spec("B"), &spec("B").key("ctx")).unwrap();
        let (a2, new_a2) = q.submit(&spec("A"), &spec("A").key("ctx")).unwrap();
        assert!(new_a && new_b && !new_a2);
        assert_eq!(a, a2);
        assert_ne!(a, b);
        // Another context (other settings) is another job.
        let (c, _) = q.submit(&spec("A"), &spec("A").key("other")).unwrap();
        assert_ne!(a, c);
        let first = q.claim().unwrap().unwrap();
        assert_eq!(
            (first.id.as_str(), first.state, first.attempts),
            (a.as_str(), State::Running, 1)
        );
        assert_eq!(q.counts().unwrap().queued, 2);
        q.finish(&a, &End::Done(serde_json::json!({"resolved": true})))
            .unwrap();
        let done = q.get(&a).unwrap().unwrap();
        assert_eq!(done.state, State::Done);
        assert_eq!(done.verdict, Some(serde_json::json!({"resolved": true})));
        assert_eq!(q.claim().unwrap().unwrap().id, b);
    }

    #[test]
    fn a_second_service_is_refused_and_a_killed_ones_running_jobs_are_queued_again() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::open(dir.path()).unwrap();
        let (a, _) = q.submit(&spec("A"), &spec("A").key("ctx")).unwrap();
        assert_eq!(q.claim().unwrap().unwrap().id, a);
        assert!(matches!(
            Queue::open(dir.path()),
            Err(QueueError::Busy { .. })
        ));
        drop(q);
        let q = Queue::open(dir.path()).unwrap();
        let job = q.get(&a).unwrap().unwrap();
        assert_eq!(job.state, State::Queued);
        let again = q.claim().unwrap().unwrap();
        assert_eq!((again.id, again.attempts), (a, 2));
    }

    #[test]
    fn a_cancelled_job_stays_cancelled_when_its_worker_ends_and_comes_back_when_resubmitted() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::open(dir.path()).unwrap();
        let (a, _) = q.submit(&spec("A"), &spec("A").key("ctx")).unwrap();
        q.claim().unwrap();
        assert_eq!(q.cancel(&a).unwrap(), Some(State::Cancelled));
        q.finish(&a, &End::Done(serde_json::json!({}))).unwrap();
        assert_eq!(q.get(&a).unwrap().unwrap().state, State::Cancelled);
        assert_eq!(q.cancel("nope").unwrap(), None);
        let (again, new) = q.submit(&spec("A"), &spec("A").key("ctx")).unwrap();
        assert!(new);
        assert_eq!(q.get(&again).unwrap().unwrap().state, State::Queued);
    }

    #[test]
    fn a_batch_keeps_its_order_and_is_found_again() {
        let dir = tempfile::tempdir().unwrap();
        let q = Queue::open(dir.path()).unwrap();
        let (b, _) = q.submit(&spec("B"), &spec("B").key("ctx")).unwrap();
        let (a, _) = q.submit(&spec("A"), &spec("A").key("ctx")).unwrap();
        let id = q.add_batch(&[b.clone(), a.clone()]).unwrap();
        assert_eq!(q.add_batch(&[b.clone(), a.clone()]).unwrap(), id);
        let jobs = q.batch(&id).unwrap().unwrap();
        let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, [b.as_str(), a.as_str()]);
        assert!(q.batch("runnope").unwrap().is_none());
    }
}
