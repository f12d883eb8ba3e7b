//! The SQLite queue: one database file (WAL mode, `synchronous=FULL`) in the service's directory,
//! owned by one service at a time through a lock file beside it. Its schema version is SQLite's
//! `user_version`; older files are migrated when opened.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::{params, Connection, OptionalExtension};

use super::{expired_error, Counts, End, Expired, Holder, Job, JobSpec, QueueError, State};
use super::{job_id, MAX_ATTEMPTS};

/// The database file in the service's directory.
pub const DB_FILE: &str = "queue.sqlite";
/// The lock file that keeps a second service off the same queue.
pub const LOCK_FILE: &str = "queue.lock";

/// The schema, version by version: migration `i` makes version `i + 1` of version `i`. Version 1
/// is the first release's (which set no version); version 2 adds the leases, the settings context
/// and what a worker stores of a done job.
const MIGRATIONS: &[&str] = &[
    "
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
",
    "
ALTER TABLE jobs ADD COLUMN context TEXT;
ALTER TABLE jobs ADD COLUMN holder TEXT;
ALTER TABLE jobs ADD COLUMN lease_until INTEGER;
ALTER TABLE jobs ADD COLUMN report TEXT;
ALTER TABLE jobs ADD COLUMN logs TEXT;
",
];

const JOB_COLUMNS: &str = "id, spec, state, attempts, verdict, error, created, started, finished";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The SQLite queue, shared by the API and the workers of the process that owns it.
#[derive(Debug)]
pub struct SqliteQueue {
    path: PathBuf,
    conn: Mutex<Connection>,
    _lock: std::fs::File,
}

impl SqliteQueue {
    /// Opens (creating, migrating) the queue in `dir` and takes it for this process. The jobs a
    /// killed service left running are put back at once: the lock is ours, so their worker is
    /// gone.
    pub fn open(dir: &Path) -> Result<SqliteQueue, QueueError> {
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
        let mut conn = Connection::open(&path).map_err(db)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(db)?;
        // Every commit reaches the disk before the service answers.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(db)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(db)?;
        migrate(&mut conn, &path)?;
        let queue = SqliteQueue {
            path,
            conn: Mutex::new(conn),
            _lock: lock,
        };
        queue.with(|c| expire(c, true))?;
        Ok(queue)
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

    pub fn display(&self) -> String {
        self.path.display().to_string()
    }

    pub fn submit(
        &self,
        spec: &JobSpec,
        key: &str,
        context: Option<&str>,
    ) -> Result<(String, bool), QueueError> {
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
                        "INSERT INTO jobs (id, key, spec, state, created, seq, context) \
                         VALUES (?1, ?2, ?3, 'queued', ?4, ?5, ?6)",
                        params![id, key, text, now(), seq, context],
                    )?;
                    true
                }
                Some("cancelled") | Some("failed") => {
                    tx.execute(
                        "UPDATE jobs SET state = 'queued', error = NULL, verdict = NULL, \
                         report = NULL, logs = NULL, holder = NULL, lease_until = NULL, \
                         attempts = 0, started = NULL, finished = NULL WHERE id = ?1",
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

    pub fn add_batch(&self, id: &str, jobs: &[String]) -> Result<(), QueueError> {
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
            tx.commit()
        })
    }

    pub fn batch_ids(
        &self,
        limit: usize,
        before: Option<&str>,
    ) -> Result<Option<Vec<(String, i64)>>, QueueError> {
        self.with(|c| {
            let (created, id) = match before {
                None => (i64::MAX, String::new()),
                Some(b) => {
                    let created: Option<i64> = c
                        .query_row("SELECT created FROM batches WHERE id = ?1", [b], |r| {
                            r.get(0)
                        })
                        .optional()?;
                    match created {
                        Some(t) => (t, b.to_string()),
                        None => return Ok(None),
                    }
                }
            };
            let mut st = c.prepare(
                "SELECT id, created FROM batches \
                 WHERE created < ?1 OR (created = ?1 AND id < ?2) \
                 ORDER BY created DESC, id DESC LIMIT ?3",
            )?;
            let rows = st.query_map(params![created, id, limit as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
            })?;
            Ok(Some(rows.collect::<rusqlite::Result<Vec<_>>>()?))
        })
    }

    pub fn batch(&self, id: &str) -> Result<Option<Vec<Job>>, QueueError> {
        self.with(|c| {
            let exists: Option<String> = c
                .query_row("SELECT id FROM batches WHERE id = ?1", [id], |r| r.get(0))
                .optional()?;
            if exists.is_none() {
                return Ok(None);
            }
            let mut st = c.prepare(&format!(
                "SELECT {} FROM batch_jobs b JOIN jobs j ON j.id = b.job \
                 WHERE b.batch = ?1 ORDER BY b.pos",
                JOB_COLUMNS
                    .split(", ")
                    .map(|col| format!("j.{col}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))?;
            let rows = st.query_map([id], row_job)?;
            Ok(Some(rows.collect::<rusqlite::Result<Vec<_>>>()?))
        })
    }

    pub fn get(&self, id: &str) -> Result<Option<Job>, QueueError> {
        self.with(|c| {
            c.query_row(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"),
                [id],
                row_job,
            )
            .optional()
        })
    }

    pub fn report(&self, id: &str) -> Result<Option<String>, QueueError> {
        self.with(|c| {
            c.query_row("SELECT report FROM jobs WHERE id = ?1", [id], |r| {
                r.get::<_, Option<String>>(0)
            })
            .optional()
            .map(Option::flatten)
        })
    }

    pub fn claim(&self, holder: &Holder, context: Option<&str>) -> Result<Option<Job>, QueueError> {
        self.with(|c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let id: Option<String> = tx
                .query_row(
                    "SELECT id FROM jobs WHERE state = 'queued' \
                     AND (?1 IS NULL OR context IS NULL OR context = ?1) ORDER BY seq LIMIT 1",
                    [context],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(id) = id else {
                return Ok(None);
            };
            tx.execute(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, started = ?2, \
                 holder = ?3, lease_until = ?4, logs = NULL WHERE id = ?1",
                params![
                    id,
                    now(),
                    holder.id,
                    now_ms().saturating_add(holder.lease_ms())
                ],
            )?;
            let job = tx.query_row(
                &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?1"),
                [&id],
                row_job,
            )?;
            tx.commit()?;
            Ok(Some(job))
        })
    }

    pub fn record_logs(&self, id: &str, holder: &Holder, logs: &str) -> Result<(), QueueError> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET logs = ?3 WHERE id = ?1 AND holder = ?2 AND state = 'running'",
                params![id, holder.id, logs],
            )
            .map(drop)
        })
    }

    pub fn heartbeat(&self, id: &str, holder: &Holder) -> Result<bool, QueueError> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET lease_until = ?3 \
                 WHERE id = ?1 AND holder = ?2 AND state = 'running'",
                params![id, holder.id, now_ms().saturating_add(holder.lease_ms())],
            )
            .map(|n| n == 1)
        })
    }

    pub fn finish(&self, id: &str, holder: &Holder, end: &End) -> Result<bool, QueueError> {
        let (state, verdict, report, error) = match end {
            End::Done { verdict, report } => {
                ("done", Some(verdict.to_string()), report.clone(), None)
            }
            End::Failed(e) => ("failed", None, None, Some(e.clone())),
            End::Requeue | End::Interrupted => ("queued", None, None, None),
        };
        let uncount = i64::from(matches!(end, End::Interrupted));
        let finished = (state != "queued").then(now);
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET state = ?3, verdict = ?4, report = ?5, error = ?6, \
                 finished = ?7, lease_until = NULL, attempts = MAX(attempts - ?8, 0), \
                 started = CASE WHEN ?3 = 'queued' THEN NULL ELSE started END \
                 WHERE id = ?1 AND holder = ?2 AND state = 'running'",
                params![id, holder.id, state, verdict, report, error, finished, uncount],
            )
            .map(|n| n == 1)
        })
    }

    pub fn expire(&self) -> Result<Vec<Expired>, QueueError> {
        self.with(|c| expire(c, false))
    }

    pub fn cancel(&self, id: &str) -> Result<Option<State>, QueueError> {
        self.with(|c| {
            c.execute(
                "UPDATE jobs SET state = 'cancelled', finished = ?2, lease_until = NULL \
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

    pub fn counts(&self) -> Result<Counts, QueueError> {
        self.with(|c| {
            let mut st = c.prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state")?;
            let mut counts = Counts::default();
            let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            for row in rows {
                let (state, n) = row?;
                counts.add(&state, n as u64);
            }
            Ok(counts)
        })
    }

    pub fn queued_elsewhere(&self, context: &str) -> Result<u64, QueueError> {
        self.with(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM jobs WHERE state = 'queued' \
                 AND context IS NOT NULL AND context != ?1",
                [context],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
        })
    }
}

/// Brings the schema to the last version, one migration per transaction; refuses a file of a
/// newer version.
fn migrate(conn: &mut Connection, path: &Path) -> Result<(), QueueError> {
    let db = |source| QueueError::Db {
        path: path.to_path_buf(),
        source,
    };
    let known = MIGRATIONS.len() as i64;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(db)?;
    if version > known {
        return Err(QueueError::NewerSchema {
            queue: path.display().to_string(),
            found: version,
            known,
        });
    }
    // A file of the first release has its tables and version 0: its first migration changes
    // nothing (IF NOT EXISTS).
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.transaction().map_err(db)?;
        tx.execute_batch(sql).map_err(db)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)
            .map_err(db)?;
        tx.commit().map_err(db)?;
    }
    Ok(())
}

/// Puts back the running jobs whose lease ran out (`all`: every running job).
fn expire(c: &mut Connection, all: bool) -> rusqlite::Result<Vec<Expired>> {
    let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let rows: Vec<(String, Option<String>, i64)> = {
        let mut st = tx.prepare(
            "SELECT id, holder, attempts FROM jobs WHERE state = 'running' \
             AND (?1 OR lease_until IS NULL OR lease_until < ?2)",
        )?;
        let rows = st.query_map(params![all, now_ms()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut out = Vec::with_capacity(rows.len());
    for (id, holder, attempts) in rows {
        let last = attempts >= i64::from(MAX_ATTEMPTS);
        let state = if last { State::Failed } else { State::Queued };
        let error = last.then(|| expired_error(holder.as_deref().unwrap_or("?"), attempts));
        tx.execute(
            "UPDATE jobs SET state = ?2, error = ?3, lease_until = NULL, \
             started = CASE WHEN ?2 = 'queued' THEN NULL ELSE started END, \
             finished = CASE WHEN ?2 = 'queued' THEN NULL ELSE ?4 END WHERE id = ?1",
            params![id, state.as_str(), error, now()],
        )?;
        out.push(Expired { id, state, holder });
    }
    tx.commit()?;
    Ok(out)
}

fn row_job(r: &rusqlite::Row<'_>) -> rusqlite::Result<Job> {
    let spec: String = r.get(1)?;
    let state: String = r.get(2)?;
    let verdict: Option<String> = r.get(4)?;
    Ok(Job {
        id: r.get(0)?,
        spec: Job::parse_spec(&spec).map_err(|e| {
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
    use std::time::Duration;

    use super::super::Queue;
    use super::*;

    fn spec(patch: &str) -> JobSpec {
        JobSpec {
            instance_id: "swtfix__calc-1".into(),
            model: "m".into(),
            model_patch: patch.into(),
            no_coverage: false,
        }
    }

    fn holder(name: &str, lease_ms: u64) -> Holder {
        Holder {
            id: format!("host/1/1#{name}"),
            lease: Duration::from_millis(lease_ms),
        }
    }

    fn done(v: serde_json::Value) -> End {
        End::Done {
            verdict: v,
            report: Some("{\n  \"x\": 1\n}".into()),
        }
    }

    #[test]
    fn identical_submissions_are_one_job_and_the_oldest_is_claimed_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = Queue::open(dir.path()).expect("open");
        let w = holder("a", 60_000);
        let (a, new_a) = q.submit(&spec("A"), &spec("A").key("ctx")).expect("a");
        let (b, new_b) = q.submit(&spec("B"), &spec("B").key("ctx")).expect("b");
        let (a2, new_a2) = q.submit(&spec("A"), &spec("A").key("ctx")).expect("a2");
        assert!(new_a && new_b && !new_a2);
        assert_eq!(a, a2);
        assert_ne!(a, b);
        // Another context (other settings) is another job.
        let (c, _) = q.submit(&spec("A"), &spec("A").key("other")).expect("c");
        assert_ne!(a, c);
        let first = q.claim(&w).expect("claim").expect("a job");
        assert_eq!(
            (first.id.as_str(), first.state, first.attempts),
            (a.as_str(), State::Running, 1)
        );
        assert_eq!(q.counts().expect("counts").queued, 2);
        assert!(q
            .finish(&a, &w, &done(serde_json::json!({"resolved": true})))
            .expect("finish"));
        let job = q.get(&a).expect("get").expect("job");
        assert_eq!(job.state, State::Done);
        assert_eq!(job.verdict, Some(serde_json::json!({"resolved": true})));
        assert_eq!(
            q.report(&a).expect("report").as_deref(),
            Some("{\n  \"x\": 1\n}")
        );
        assert_eq!(q.claim(&w).expect("claim").expect("b").id, b);
    }

    #[test]
    fn a_second_service_is_refused_and_a_killed_ones_running_jobs_are_queued_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = Queue::open(dir.path()).expect("open");
        let (a, _) = q.submit(&spec("A"), &spec("A").key("ctx")).expect("a");
        assert_eq!(
            q.claim(&holder("a", 60_000)).expect("claim").expect("a").id,
            a
        );
        assert!(matches!(
            Queue::open(dir.path()),
            Err(QueueError::Busy { .. })
        ));
        drop(q);
        let q = Queue::open(dir.path()).expect("open again");
        let job = q.get(&a).expect("get").expect("job");
        assert_eq!(job.state, State::Queued);
        let again = q.claim(&holder("b", 60_000)).expect("claim").expect("a");
        assert_eq!((again.id, again.attempts), (a, 2));
    }

    #[test]
    fn a_cancelled_job_stays_cancelled_when_its_worker_ends_and_comes_back_when_resubmitted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = Queue::open(dir.path()).expect("open");
        let w = holder("a", 60_000);
        let (a, _) = q.submit(&spec("A"), &spec("A").key("ctx")).expect("a");
        q.claim(&w).expect("claim");
        assert_eq!(q.cancel(&a).expect("cancel"), Some(State::Cancelled));
        assert!(!q.heartbeat(&a, &w).expect("heartbeat"));
        assert!(!q
            .finish(&a, &w, &done(serde_json::json!({})))
            .expect("finish"));
        assert_eq!(
            q.get(&a).expect("get").expect("job").state,
            State::Cancelled
        );
        assert_eq!(q.cancel("nope").expect("cancel"), None);
        let (again, new) = q.submit(&spec("A"), &spec("A").key("ctx")).expect("again");
        assert!(new);
        let job = q.get(&again).expect("get").expect("job");
        assert_eq!((job.state, job.attempts), (State::Queued, 0));
    }

    #[test]
    fn a_lease_that_runs_out_puts_the_job_back_until_its_attempts_are_spent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = Queue::open(dir.path()).expect("open");
        let (a, _) = q.submit(&spec("A"), &spec("A").key("ctx")).expect("a");
        for take in 1..=MAX_ATTEMPTS {
            let w = holder(&format!("w{take}"), 1);
            let job = q.claim(&w).expect("claim").expect("a");
            assert_eq!(job.attempts, take);
            std::thread::sleep(Duration::from_millis(5));
            let expired = q.expire().expect("expire");
            let want = if take < MAX_ATTEMPTS {
                State::Queued
            } else {
                State::Failed
            };
            assert_eq!(
                expired,
                [Expired {
                    id: a.clone(),
                    state: want,
                    holder: Some(w.id.clone())
                }]
            );
            // The dead worker's late result changes nothing.
            assert!(!q
                .finish(&a, &w, &done(serde_json::json!({})))
                .expect("finish"));
        }
        let job = q.get(&a).expect("get").expect("job");
        assert_eq!(job.state, State::Failed);
        let error = job.error.expect("an error");
        assert!(
            error.contains("host/1/1#w3") && error.contains("take 3 of 3"),
            "{error}"
        );
        assert!(q.claim(&holder("x", 60_000)).expect("claim").is_none());
    }

    #[test]
    fn a_heartbeat_keeps_the_lease_and_an_interrupted_take_does_not_count() {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = Queue::open(dir.path()).expect("open");
        let (a, _) = q.submit(&spec("A"), &spec("A").key("ctx")).expect("a");
        let w = holder("a", 300);
        q.claim(&w).expect("claim").expect("a");
        for _ in 0..4 {
            std::thread::sleep(Duration::from_millis(100));
            assert!(q.heartbeat(&a, &w).expect("heartbeat"));
            assert_eq!(q.expire().expect("expire"), []);
        }
        assert!(q.finish(&a, &w, &End::Interrupted).expect("finish"));
        let job = q.get(&a).expect("get").expect("job");
        assert_eq!((job.state, job.attempts), (State::Queued, 0));
    }

    #[test]
    fn a_queue_bound_to_settings_takes_only_their_jobs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = Queue::open(dir.path()).expect("open").with_context("one");
        q.submit(&spec("A"), &spec("A").key("one")).expect("a");
        drop(q);
        let q = Queue::open(dir.path()).expect("open").with_context("two");
        assert_eq!(q.queued_elsewhere().expect("elsewhere"), 1);
        assert!(q.claim(&holder("a", 60_000)).expect("claim").is_none());
    }

    #[test]
    fn a_file_of_the_first_release_is_migrated_and_a_newer_one_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let c = Connection::open(dir.path().join(DB_FILE)).expect("open");
            c.execute_batch(MIGRATIONS[0]).expect("v1");
            c.execute(
                "INSERT INTO jobs (id, key, spec, state, created, seq) \
                 VALUES ('evold', 'k', ?1, 'running', 1, 1)",
                [serde_json::to_string(&spec("A")).expect("json")],
            )
            .expect("insert");
        }
        let q = Queue::open(dir.path()).expect("migrated");
        let job = q
            .claim(&holder("a", 60_000))
            .expect("claim")
            .expect("old job");
        assert_eq!((job.id.as_str(), job.attempts), ("evold", 1));
        drop(q);
        Connection::open(dir.path().join(DB_FILE))
            .expect("open")
            .pragma_update(None, "user_version", 99)
            .expect("version");
        assert!(matches!(
            Queue::open(dir.path()),
            Err(QueueError::NewerSchema { found: 99, .. })
        ));
    }

    #[test]
    fn a_batch_keeps_its_order_and_is_found_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let q = Queue::open(dir.path()).expect("open");
        let (b, _) = q.submit(&spec("B"), &spec("B").key("ctx")).expect("b");
        let (a, _) = q.submit(&spec("A"), &spec("A").key("ctx")).expect("a");
        let id = q.add_batch(&[b.clone(), a.clone()]).expect("batch");
        assert_eq!(q.add_batch(&[b.clone(), a.clone()]).expect("again"), id);
        let jobs = q.batch(&id).expect("batch").expect("found");
        let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(ids, [b.as_str(), a.as_str()]);
        assert!(q.batch("runnope").expect("batch").is_none());
    }
}
