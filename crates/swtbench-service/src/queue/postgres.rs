//! The PostgreSQL queue: tables `swtbench_jobs`, `swtbench_batches` and `swtbench_batch_jobs` in
//! the database of a `postgres://` URL, shared by the service and the `swtbench worker` processes
//! of any number of hosts. Workers claim the oldest queued job with `FOR UPDATE SKIP LOCKED` (two
//! claimers never get the same job, and neither waits for the other); lease times are the
//! database server's clock, so the hosts' clocks need not agree. Changes are announced on the
//! notification channel [`CHANNEL`] (`queued`, `done <id>`, `cancel <id>`), which
//! [`PgListener`] reads.
//!
//! The schema is versioned (table `swtbench_schema`) and created or migrated when a process
//! connects, under an advisory lock so that processes starting together do it once.
//!
//! Connections have no TLS: `sslmode=disable` or `prefer` (the default, which falls back to plain
//! text) work, `require` is refused when the URL is read.

use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use postgres::{Client, NoTls, Row};

use super::{expired_error, Counts, End, Expired, Holder, Job, JobSpec, QueueError, State};
use super::{job_id, MAX_ATTEMPTS};

/// The notification channel of the queue's changes.
pub const CHANNEL: &str = "swtbench_jobs";

/// The schema, version by version: migration `i` makes version `i + 1` of version `i`.
const MIGRATIONS: &[&str] = &["
CREATE TABLE swtbench_jobs (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    context TEXT,
    spec TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    verdict TEXT,
    report TEXT,
    error TEXT,
    holder TEXT,
    logs TEXT,
    lease_until TIMESTAMPTZ,
    created BIGINT NOT NULL,
    started BIGINT,
    finished BIGINT,
    seq BIGSERIAL NOT NULL
);
CREATE INDEX swtbench_jobs_queued ON swtbench_jobs (seq) WHERE state = 'queued';
CREATE INDEX swtbench_jobs_running ON swtbench_jobs (lease_until) WHERE state = 'running';
CREATE TABLE swtbench_batches (
    id TEXT PRIMARY KEY,
    created BIGINT NOT NULL
);
CREATE TABLE swtbench_batch_jobs (
    batch TEXT NOT NULL REFERENCES swtbench_batches (id),
    pos INTEGER NOT NULL,
    job TEXT NOT NULL REFERENCES swtbench_jobs (id),
    PRIMARY KEY (batch, pos)
);
"];

/// The advisory lock key under which a process migrates the schema.
const MIGRATION_LOCK: i64 = 0x7377_7462_656e_6368;

const JOB_COLUMNS: &str = "id, spec, state, attempts, verdict, error, created, started, finished";
const NOW_S: &str = "EXTRACT(EPOCH FROM now())::BIGINT";
/// Idle connections kept for the next call.
const IDLE: usize = 8;

/// `url` without its password (in the user part or as a `password=` parameter).
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (before_query, None),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split_once(':').map_or(user, |(u, _)| u);
            format!("{user}@{host}")
        }
        None => authority.to_string(),
    };
    let mut out = format!("{scheme}://{authority}");
    if let Some(p) = path {
        out.push('/');
        out.push_str(p);
    }
    if let Some(q) = query {
        let kept: Vec<&str> = q
            .split('&')
            .filter(|kv| !kv.starts_with("password="))
            .collect();
        if !kept.is_empty() {
            out.push('?');
            out.push_str(&kept.join("&"));
        }
    }
    out
}

/// Why this client cannot connect to a PostgreSQL URL.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    /// The driver does not read the URL.
    #[error("{0}")]
    Unreadable(String),
    /// The URL asks for TLS, which this client does not speak.
    #[error(
        "sslmode=require: this swtbench connects to PostgreSQL without TLS (sslmode=disable or \
         prefer); reach the database over a trusted network or a tunnel"
    )]
    TlsRequired,
}

/// Whether `url` can be connected to by this client: a URL the driver reads, without TLS.
pub fn check_url(url: &str) -> Result<(), UrlError> {
    let config =
        postgres::Config::from_str(url).map_err(|e| UrlError::Unreadable(e.to_string()))?;
    if config.get_ssl_mode() == postgres::config::SslMode::Require {
        return Err(UrlError::TlsRequired);
    }
    Ok(())
}

/// Runs `f` on a thread outside any async runtime: the sync client drives its own runtime, which
/// cannot run inside the service's (the API's handlers call the queue).
fn outside_runtime<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_err() {
        return f();
    }
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

/// The PostgreSQL queue: a few pooled connections to one database.
pub struct PgQueue {
    config: postgres::Config,
    shown: String,
    idle: Mutex<Vec<Client>>,
}

impl std::fmt::Debug for PgQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgQueue")
            .field("url", &self.shown)
            .finish_non_exhaustive()
    }
}

impl Drop for PgQueue {
    fn drop(&mut self) {
        let idle = std::mem::take(self.idle.get_mut().unwrap_or_else(|e| e.into_inner()));
        outside_runtime(move || drop(idle));
    }
}

impl PgQueue {
    /// Connects to the database of `url` (a password missing from it is taken from
    /// `PGPASSWORD`) and creates or migrates the queue's schema.
    pub fn connect(url: &str) -> Result<PgQueue, QueueError> {
        let shown = without_password(url);
        let mut config =
            postgres::Config::from_str(url).map_err(|source| QueueError::Postgres {
                url: shown.clone(),
                source,
            })?;
        if config.get_password().is_none() {
            if let Ok(p) = std::env::var("PGPASSWORD") {
                config.password(p);
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("swtbench");
        }
        let queue = PgQueue {
            config,
            shown,
            idle: Mutex::new(Vec::new()),
        };
        queue.with(migrate)?;
        let (found, known) = queue.with(schema_version)?;
        if found > known {
            return Err(QueueError::NewerSchema {
                queue: queue.shown.clone(),
                found: i64::from(found),
                known: i64::from(known),
            });
        }
        Ok(queue)
    }

    pub fn display(&self) -> String {
        self.shown.clone()
    }

    fn error(&self, source: postgres::Error) -> QueueError {
        QueueError::Postgres {
            url: self.shown.clone(),
            source,
        }
    }

    fn new_client(&self) -> Result<Client, postgres::Error> {
        self.config.connect(NoTls)
    }

    /// Runs `f` on a pooled connection (a new one when none is idle). A pooled connection that
    /// turns out closed (the server restarted) is replaced once.
    fn with<T: Send>(
        &self,
        f: impl Fn(&mut Client) -> Result<T, postgres::Error> + Send + Sync,
    ) -> Result<T, QueueError> {
        outside_runtime(|| {
            let pooled = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let (mut client, reused) = match pooled {
                Some(c) if !c.is_closed() => (c, true),
                _ => (self.new_client().map_err(|e| self.error(e))?, false),
            };
            let mut result = f(&mut client);
            if reused && client.is_closed() && result.is_err() {
                client = self.new_client().map_err(|e| self.error(e))?;
                result = f(&mut client);
            }
            if !client.is_closed() {
                let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
                if idle.len() < IDLE {
                    idle.push(client);
                }
            }
            result.map_err(|e| self.error(e))
        })
    }

    /// A connection of its own that listens to the queue's notifications.
    pub fn listen(&self) -> Result<PgListener, QueueError> {
        outside_runtime(|| {
            let mut client = self.new_client().map_err(|e| self.error(e))?;
            client
                .batch_execute(&format!("LISTEN {CHANNEL}"))
                .map_err(|e| self.error(e))?;
            Ok(PgListener {
                client: Some(client),
            })
        })
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
            let mut tx = c.transaction()?;
            // No conflict target: the id and the key are both unique, and a concurrent insert of
            // the same job by another process (it waits for ours) conflicts on either; with
            // `(id)` alone a conflict found on the key's index is an error, not a skip.
            let inserted = tx.query_opt(
                &format!(
                    "INSERT INTO swtbench_jobs (id, key, context, spec, state, created) \
                     VALUES ($1, $2, $3, $4, 'queued', {NOW_S}) \
                     ON CONFLICT DO NOTHING RETURNING id"
                ),
                &[&id, &key, &context, &text],
            )?;
            let new = inserted.is_some()
                || tx.execute(
                    "UPDATE swtbench_jobs SET state = 'queued', error = NULL, verdict = NULL, \
                     report = NULL, logs = NULL, holder = NULL, lease_until = NULL, \
                     attempts = 0, started = NULL, finished = NULL \
                     WHERE id = $1 AND state IN ('cancelled', 'failed')",
                    &[&id],
                )? == 1;
            if new {
                tx.execute("SELECT pg_notify($1, 'queued')", &[&CHANNEL])?;
            }
            tx.commit()?;
            Ok((id.clone(), new))
        })
    }

    pub fn add_batch(&self, id: &str, jobs: &[String]) -> Result<(), QueueError> {
        let positions: Vec<i32> = (0..jobs.len() as i32).collect();
        self.with(|c| {
            let mut tx = c.transaction()?;
            tx.execute(
                &format!(
                    "INSERT INTO swtbench_batches (id, created) VALUES ($1, {NOW_S}) \
                     ON CONFLICT DO NOTHING"
                ),
                &[&id],
            )?;
            tx.execute(
                "INSERT INTO swtbench_batch_jobs (batch, pos, job) \
                 SELECT $1, p, j FROM unnest($2::INTEGER[], $3::TEXT[]) AS t (p, j) \
                 ON CONFLICT DO NOTHING",
                &[&id, &positions, &jobs],
            )?;
            tx.commit()
        })
    }

    pub fn batch_ids(
        &self,
        limit: usize,
        before: Option<&str>,
    ) -> Result<Option<Vec<(String, i64)>>, QueueError> {
        let limit = limit as i64;
        self.with(|c| {
            let (created, id) = match before {
                None => (i64::MAX, String::new()),
                Some(b) => {
                    let row =
                        c.query_opt("SELECT created FROM swtbench_batches WHERE id = $1", &[&b])?;
                    match row {
                        Some(r) => (r.get::<_, i64>(0), b.to_string()),
                        None => return Ok(None),
                    }
                }
            };
            // Byte order for the ids, whatever the database's collation.
            let rows = c.query(
                "SELECT id, created FROM swtbench_batches \
                 WHERE created < $1 OR (created = $1 AND id COLLATE \"C\" < $2) \
                 ORDER BY created DESC, id COLLATE \"C\" DESC LIMIT $3",
                &[&created, &id, &limit],
            )?;
            Ok(Some(rows.iter().map(|r| (r.get(0), r.get(1))).collect()))
        })
    }

    pub fn batch(&self, id: &str) -> Result<Option<Vec<Job>>, QueueError> {
        let rows = self.with(|c| {
            let exists = c
                .query_opt("SELECT 1 FROM swtbench_batches WHERE id = $1", &[&id])?
                .is_some();
            if !exists {
                return Ok(None);
            }
            let columns: Vec<String> = JOB_COLUMNS
                .split(", ")
                .map(|col| format!("j.{col}"))
                .collect();
            c.query(
                &format!(
                    "SELECT {} FROM swtbench_batch_jobs b JOIN swtbench_jobs j ON j.id = b.job \
                     WHERE b.batch = $1 ORDER BY b.pos",
                    columns.join(", ")
                ),
                &[&id],
            )
            .map(Some)
        })?;
        rows.map(|rows| rows.iter().map(|r| self.row_job(r)).collect())
            .transpose()
    }

    pub fn get(&self, id: &str) -> Result<Option<Job>, QueueError> {
        let row = self.with(|c| {
            c.query_opt(
                &format!("SELECT {JOB_COLUMNS} FROM swtbench_jobs WHERE id = $1"),
                &[&id],
            )
        })?;
        row.map(|r| self.row_job(&r)).transpose()
    }

    pub fn report(&self, id: &str) -> Result<Option<String>, QueueError> {
        self.with(|c| {
            let row = c.query_opt("SELECT report FROM swtbench_jobs WHERE id = $1", &[&id])?;
            Ok(row.and_then(|r| r.get::<_, Option<String>>(0)))
        })
    }

    pub fn claim(&self, holder: &Holder, context: Option<&str>) -> Result<Option<Job>, QueueError> {
        let row = self.with(|c| {
            c.query_opt(
                &format!(
                    "UPDATE swtbench_jobs SET state = 'running', attempts = attempts + 1, \
                     started = {NOW_S}, holder = $1, logs = NULL, \
                     lease_until = now() + $2::BIGINT * INTERVAL '1 millisecond' \
                     WHERE id = (SELECT id FROM swtbench_jobs WHERE state = 'queued' \
                       AND ($3::TEXT IS NULL OR context IS NULL OR context = $3::TEXT) \
                       ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) \
                     RETURNING {JOB_COLUMNS}"
                ),
                &[&holder.id, &holder.lease_ms(), &context],
            )
        })?;
        row.map(|r| self.row_job(&r)).transpose()
    }

    pub fn record_logs(&self, id: &str, holder: &Holder, logs: &str) -> Result<(), QueueError> {
        self.with(|c| {
            c.execute(
                "UPDATE swtbench_jobs SET logs = $3 \
                 WHERE id = $1 AND holder = $2 AND state = 'running'",
                &[&id, &holder.id, &logs],
            )
            .map(drop)
        })
    }

    pub fn heartbeat(&self, id: &str, holder: &Holder) -> Result<bool, QueueError> {
        self.with(|c| {
            c.execute(
                "UPDATE swtbench_jobs \
                 SET lease_until = now() + $3::BIGINT * INTERVAL '1 millisecond' \
                 WHERE id = $1 AND holder = $2 AND state = 'running'",
                &[&id, &holder.id, &holder.lease_ms()],
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
        let uncount = i32::from(matches!(end, End::Interrupted));
        let payload = match state {
            "queued" => "queued".to_string(),
            _ => format!("done {id}"),
        };
        self.with(|c| {
            let mut tx = c.transaction()?;
            let n = tx.execute(
                &format!(
                    "UPDATE swtbench_jobs SET state = $3, verdict = $4, report = $5, error = $6, \
                     finished = CASE WHEN $3 = 'queued' THEN NULL ELSE {NOW_S} END, \
                     started = CASE WHEN $3 = 'queued' THEN NULL ELSE started END, \
                     lease_until = NULL, attempts = GREATEST(attempts - $7, 0) \
                     WHERE id = $1 AND holder = $2 AND state = 'running'"
                ),
                &[&id, &holder.id, &state, &verdict, &report, &error, &uncount],
            )?;
            if n == 1 {
                tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])?;
            }
            tx.commit()?;
            Ok(n == 1)
        })
    }

    pub fn expire(&self) -> Result<Vec<Expired>, QueueError> {
        self.with(|c| {
            let mut tx = c.transaction()?;
            let rows = tx.query(
                "SELECT id, holder, attempts FROM swtbench_jobs \
                 WHERE state = 'running' AND lease_until < now() FOR UPDATE SKIP LOCKED",
                &[],
            )?;
            let mut out = Vec::with_capacity(rows.len());
            for row in rows {
                let id: String = row.get(0);
                let holder: Option<String> = row.get(1);
                let attempts: i32 = row.get(2);
                let last = attempts >= MAX_ATTEMPTS as i32;
                let state = if last { State::Failed } else { State::Queued };
                let error = last
                    .then(|| expired_error(holder.as_deref().unwrap_or("?"), i64::from(attempts)));
                tx.execute(
                    &format!(
                        "UPDATE swtbench_jobs SET state = $2, error = $3, lease_until = NULL, \
                         started = CASE WHEN $2 = 'queued' THEN NULL ELSE started END, \
                         finished = CASE WHEN $2 = 'queued' THEN NULL ELSE {NOW_S} END \
                         WHERE id = $1"
                    ),
                    &[&id, &state.as_str(), &error],
                )?;
                let payload = match state {
                    State::Queued => "queued".to_string(),
                    _ => format!("done {id}"),
                };
                tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])?;
                out.push(Expired { id, state, holder });
            }
            tx.commit()?;
            Ok(out)
        })
    }

    pub fn cancel(&self, id: &str) -> Result<Option<State>, QueueError> {
        self.with(|c| {
            let mut tx = c.transaction()?;
            let n = tx.execute(
                &format!(
                    "UPDATE swtbench_jobs SET state = 'cancelled', finished = {NOW_S}, \
                     lease_until = NULL WHERE id = $1 AND state IN ('queued', 'running')"
                ),
                &[&id],
            )?;
            if n == 1 {
                let payload = format!("cancel {id}");
                tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])?;
            }
            let state = tx
                .query_opt("SELECT state FROM swtbench_jobs WHERE id = $1", &[&id])?
                .map(|r| State::parse(r.get::<_, &str>(0)));
            tx.commit()?;
            Ok(state)
        })
    }

    pub fn counts(&self) -> Result<Counts, QueueError> {
        self.with(|c| {
            let mut counts = Counts::default();
            for row in c.query(
                "SELECT state, COUNT(*) FROM swtbench_jobs GROUP BY state",
                &[],
            )? {
                counts.add(row.get::<_, &str>(0), row.get::<_, i64>(1) as u64);
            }
            Ok(counts)
        })
    }

    pub fn queued_elsewhere(&self, context: &str) -> Result<u64, QueueError> {
        self.with(|c| {
            c.query_one(
                "SELECT COUNT(*) FROM swtbench_jobs WHERE state = 'queued' \
                 AND context IS NOT NULL AND context <> $1",
                &[&context],
            )
            .map(|r| r.get::<_, i64>(0) as u64)
        })
    }

    fn row_job(&self, r: &Row) -> Result<Job, QueueError> {
        let spec: &str = r.get(1);
        let spec = Job::parse_spec(spec).map_err(|e| QueueError::Corrupt {
            queue: self.shown.clone(),
            what: format!("job {}: its spec is not readable: {e}", r.get::<_, &str>(0)),
        })?;
        let verdict: Option<&str> = r.get(4);
        Ok(Job {
            id: r.get(0),
            spec,
            state: State::parse(r.get(2)),
            attempts: r.get::<_, i32>(3).max(0) as u32,
            verdict: verdict.and_then(|v| serde_json::from_str(v).ok()),
            error: r.get(5),
            created: r.get(6),
            started: r.get(7),
            finished: r.get(8),
        })
    }
}

/// Creates or migrates the schema, one process at a time.
fn migrate(c: &mut Client) -> Result<(), postgres::Error> {
    let mut tx = c.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS swtbench_schema (version INTEGER NOT NULL)")?;
    let version: i32 = match tx.query_opt("SELECT version FROM swtbench_schema", &[])? {
        Some(r) => r.get(0),
        None => {
            tx.execute("INSERT INTO swtbench_schema (version) VALUES (0)", &[])?;
            0
        }
    };
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        tx.batch_execute(sql)?;
        tx.execute(
            "UPDATE swtbench_schema SET version = $1",
            &[&(i as i32 + 1)],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// The schema version of the database `c` is connected to, and the newest this swtbench knows.
pub fn schema_version(c: &mut Client) -> Result<(i32, i32), postgres::Error> {
    let v = c.query_one("SELECT version FROM swtbench_schema", &[])?;
    Ok((v.get(0), MIGRATIONS.len() as i32))
}

/// A connection that listens to the queue's notifications ([`CHANNEL`]).
pub struct PgListener {
    client: Option<Client>,
}

impl std::fmt::Debug for PgListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgListener").finish_non_exhaustive()
    }
}

impl Drop for PgListener {
    fn drop(&mut self) {
        let client = self.client.take();
        outside_runtime(move || drop(client));
    }
}

impl PgListener {
    /// The notifications that arrive within `timeout` (waits for the first, then takes what else
    /// is there); empty when none came. An error means the connection is gone.
    pub fn next(&mut self, timeout: Duration) -> Result<Vec<String>, postgres::Error> {
        let Some(client) = self.client.as_mut() else {
            return Ok(Vec::new());
        };
        use postgres::fallible_iterator::FallibleIterator;
        outside_runtime(|| {
            let mut out = Vec::new();
            let mut n = client.notifications();
            let first = n.timeout_iter(timeout).next()?;
            if let Some(first) = first {
                out.push(first.payload().to_string());
                let mut rest = n.iter();
                while let Some(more) = rest.next()? {
                    out.push(more.payload().to_string());
                }
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            without_password("postgres://sw:s3cret@db.lan:5433/queue?sslmode=disable"),
            "postgres://sw@db.lan:5433/queue?sslmode=disable"
        );
        assert_eq!(
            without_password("postgresql://db/q?password=x&application_name=a"),
            "postgresql://db/q?application_name=a"
        );
        assert_eq!(without_password("postgres://sw@db/q"), "postgres://sw@db/q");
    }

    #[test]
    fn a_url_asking_for_tls_is_refused_and_plain_ones_are_taken() {
        assert!(check_url("postgres://sw@db/q").is_ok());
        assert!(check_url("postgres://sw@db/q?sslmode=disable").is_ok());
        assert!(check_url("postgres://sw@db/q?sslmode=prefer").is_ok());
        let e = check_url("postgres://sw@db/q?sslmode=require")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("without TLS"), "{e}");
        assert!(check_url("postgres://sw@db/q?sslmode=bogus").is_err());
    }
}
