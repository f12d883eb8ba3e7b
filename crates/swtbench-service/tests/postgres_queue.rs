#![allow(clippy::unwrap_used)]
//! The PostgreSQL queue against a real server (started by each test, `support/postgres.rs`):
//! claimers never get the same job and never wait for each other (`SKIP LOCKED`), a lease that
//! runs out puts the job back until its attempts are spent, a heartbeat keeps it, identical
//! submissions from several processes are one job, a cancellation reaches the worker of another
//! process, a verdict and its report.json come back byte for byte, and the schema is versioned.

use std::collections::BTreeSet;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::json;
use swtbench_service::queue::{End, Expired, Holder, QueueLocation, MAX_ATTEMPTS};
use swtbench_service::{JobSpec, Queue, QueueError, State};

// The engine layer's skip rule, which the server's helper follows.
#[path = "../../swtbench/tests/support/layer.rs"]
mod layer;
#[path = "support/postgres.rs"]
mod postgres_server;
use postgres_server::Postgres;

fn spec(patch: &str) -> JobSpec {
    JobSpec {
        instance_id: "swtfix__calc-1".into(),
        model: "m".into(),
        model_patch: patch.into(),
        no_coverage: false,
    }
}

/// A process's own queue (its own connections), as the service or a worker opens it.
fn open(pg: &Postgres) -> Queue {
    Queue::connect(&QueueLocation::Postgres {
        url: pg.url.clone(),
    })
    .unwrap()
}

fn holder(name: &str, lease: Duration) -> Holder {
    Holder {
        id: format!("test-host/1/1#{name}"),
        lease,
    }
}

fn submit(q: &Queue, patch: &str) -> String {
    q.submit(&spec(patch), &spec(patch).key("ctx")).unwrap().0
}

/// Polls `f` until it gives `Some` (10 s at most).
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "{what} did not happen in 10 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn claimers_never_get_the_same_job_nor_wait_for_a_locked_one() {
    let Some(pg) = Postgres::start_or_skip() else {
        return;
    };
    let service = open(&pg);
    let ids: Vec<String> = (0..40)
        .map(|i| submit(&service, &format!("P{i}")))
        .collect();

    // A job locked by another transaction is skipped at once, not waited for.
    let mut locker = postgres::Client::connect(&pg.url, postgres::NoTls).unwrap();
    let mut tx = locker.transaction().unwrap();
    let locked: String = tx
        .query_one(
            "SELECT id FROM swtbench_jobs WHERE state = 'queued' ORDER BY seq LIMIT 1 \
             FOR UPDATE",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(locked, ids[0]);
    let first = open(&pg)
        .claim(&holder("early", Duration::from_secs(60)))
        .unwrap()
        .unwrap();
    assert_eq!(first.id, ids[1], "the locked oldest job is skipped");
    tx.rollback().unwrap();

    // Four processes claim together until the queue is empty.
    let start = Arc::new(Barrier::new(4));
    let claimers: Vec<_> = (0..4)
        .map(|w| {
            let (url, start) = (pg.url.clone(), start.clone());
            std::thread::spawn(move || {
                let q = Queue::connect(&QueueLocation::Postgres { url }).unwrap();
                let h = holder(&format!("w{w}"), Duration::from_secs(60));
                start.wait();
                let mut got = Vec::new();
                while let Some(job) = q.claim(&h).unwrap() {
                    assert_eq!((job.state, job.attempts), (State::Running, 1));
                    got.push(job.id);
                }
                got
            })
        })
        .collect();
    let mut all: Vec<String> = vec![first.id];
    let mut per_worker = Vec::new();
    for c in claimers {
        let got = c.join().unwrap();
        per_worker.push(got.len());
        all.extend(got);
    }
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!(all.len(), 40, "every job claimed once: {per_worker:?}");
    assert_eq!(distinct.len(), 40, "no job claimed twice");
    assert_eq!(service.counts().unwrap().running, 40);
}

#[test]
fn a_lease_that_runs_out_puts_the_job_back_and_a_heartbeat_keeps_it() {
    let Some(pg) = Postgres::start_or_skip() else {
        return;
    };
    let service = open(&pg);
    let other = open(&pg);
    let a = submit(&service, "A");

    // Renewed every 100 ms, a 400 ms lease outlives 1.2 s: no one else gets the job.
    let w1 = holder("w1", Duration::from_millis(400));
    assert_eq!(service.claim(&w1).unwrap().unwrap().attempts, 1);
    let until = Instant::now() + Duration::from_millis(1200);
    while Instant::now() < until {
        assert!(service.heartbeat(&a, &w1).unwrap());
        assert_eq!(other.expire().unwrap(), []);
        assert!(other
            .claim(&holder("x", Duration::from_secs(60)))
            .unwrap()
            .is_none());
        std::thread::sleep(Duration::from_millis(100));
    }
    // Not renewed, it runs out: put back, taken by another worker (take 2), and the first
    // worker's late heartbeat and result change nothing.
    let w2 = holder("w2", Duration::from_millis(300));
    let job = eventually("the lease running out", || other.claim(&w2).unwrap());
    assert_eq!((job.id.as_str(), job.attempts), (a.as_str(), 2));
    assert!(!service.heartbeat(&a, &w1).unwrap());
    assert!(!service
        .finish(&a, &w1, &End::Failed("late".into()))
        .unwrap());

    // Take 3 runs out too: the job has had its attempts and fails, naming its last worker.
    let expired = eventually("take 2 running out", || {
        Some(other.expire().unwrap()).filter(|e| !e.is_empty())
    });
    assert_eq!(
        expired,
        [Expired {
            id: a.clone(),
            state: State::Queued,
            holder: Some(w2.id.clone())
        }]
    );
    let w3 = holder("w3", Duration::from_millis(300));
    assert_eq!(service.claim(&w3).unwrap().unwrap().attempts, MAX_ATTEMPTS);
    let expired = eventually("take 3 running out", || {
        Some(other.expire().unwrap()).filter(|e| !e.is_empty())
    });
    assert_eq!(expired[0].state, State::Failed);
    let job = service.get(&a).unwrap().unwrap();
    assert_eq!(job.state, State::Failed);
    let error = job.error.unwrap();
    assert!(
        error.contains(&w3.id) && error.contains("take 3 of 3"),
        "{error}"
    );
    assert!(other.claim(&w3).unwrap().is_none());

    // A stopped worker's take does not count; an infrastructure fault's does.
    let b = submit(&service, "B");
    let w = holder("w", Duration::from_secs(60));
    service.claim(&w).unwrap().unwrap();
    assert!(service.finish(&b, &w, &End::Interrupted).unwrap());
    assert_eq!(service.get(&b).unwrap().unwrap().attempts, 0);
    service.claim(&w).unwrap().unwrap();
    assert!(service.finish(&b, &w, &End::Requeue).unwrap());
    let job = service.get(&b).unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (State::Queued, 1));
}

#[test]
fn identical_submissions_are_one_job_across_processes_and_cancellation_reaches_the_worker() {
    let Some(pg) = Postgres::start_or_skip() else {
        return;
    };
    // Eight processes submit the same prediction at once: one job, new for exactly one.
    let start = Arc::new(Barrier::new(8));
    let submitters: Vec<_> = (0..8)
        .map(|_| {
            let (url, start) = (pg.url.clone(), start.clone());
            std::thread::spawn(move || {
                let q = Queue::connect(&QueueLocation::Postgres { url }).unwrap();
                start.wait();
                q.submit(&spec("A"), &spec("A").key("ctx")).unwrap()
            })
        })
        .collect();
    let results: Vec<(String, bool)> = submitters.into_iter().map(|s| s.join().unwrap()).collect();
    let ids: BTreeSet<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids.len(), 1, "{results:?}");
    assert_eq!(results.iter().filter(|(_, new)| *new).count(), 1);
    let a = results[0].0.clone();
    // Other settings: another job.
    let service = open(&pg);
    let (c, _) = service.submit(&spec("A"), &spec("A").key("other")).unwrap();
    assert_ne!(a, c);
    assert_eq!(service.cancel(&c).unwrap(), Some(State::Cancelled));

    // A worker in another process holds `a` and listens; the service cancels it.
    let worker = open(&pg);
    let mut listener = worker.postgres().unwrap().listen().unwrap();
    let w = holder("w", Duration::from_secs(60));
    assert_eq!(worker.claim(&w).unwrap().unwrap().id, a);
    assert_eq!(service.cancel(&a).unwrap(), Some(State::Cancelled));
    // Notifications of the earlier submissions and cancellation may still be on their way:
    // listen until this one is among what was heard.
    let mut heard = Vec::new();
    eventually("the cancellation's notification", || {
        heard.extend(listener.next(Duration::from_millis(200)).unwrap());
        heard.contains(&format!("cancel {a}")).then_some(())
    });
    assert!(heard.contains(&format!("cancel {a}")), "{heard:?}");
    assert!(!worker.heartbeat(&a, &w).unwrap(), "the lease is gone");
    let verdict = End::Done {
        verdict: json!({}),
        report: None,
    };
    assert!(!worker.finish(&a, &w, &verdict).unwrap());
    assert_eq!(service.get(&a).unwrap().unwrap().state, State::Cancelled);
    assert_eq!(service.cancel("evnope").unwrap(), None);

    // Submitted again, it is queued again from zero attempts, and a new job is announced.
    let (again, new) = service.submit(&spec("A"), &spec("A").key("ctx")).unwrap();
    assert!(new && again == a);
    let job = service.get(&a).unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (State::Queued, 0));
    let mut heard = Vec::new();
    eventually("the new job's notification", || {
        heard.extend(listener.next(Duration::from_millis(200)).unwrap());
        heard.contains(&"queued".to_string()).then_some(())
    });
    assert!(heard.contains(&"queued".to_string()), "{heard:?}");
}

#[test]
fn a_verdict_and_its_report_come_back_byte_for_byte_and_the_schema_is_versioned() {
    let Some(pg) = Postgres::start_or_skip() else {
        return;
    };
    let service = open(&pg).with_context("settings-1");
    let b = service
        .submit(&spec("B"), &spec("B").key("settings-1"))
        .unwrap()
        .0;
    let a = service
        .submit(&spec("A"), &spec("A").key("settings-1"))
        .unwrap()
        .0;
    let batch = service.add_batch(&[b.clone(), a.clone()]).unwrap();
    assert_eq!(service.add_batch(&[b.clone(), a.clone()]).unwrap(), batch);

    // A worker of other settings takes none of them, and says so.
    let stranger = open(&pg).with_context("settings-2");
    assert_eq!(stranger.queued_elsewhere().unwrap(), 2);
    assert!(stranger
        .claim(&holder("s", Duration::from_secs(60)))
        .unwrap()
        .is_none());

    let worker = open(&pg).with_context("settings-1");
    let w = holder("w", Duration::from_secs(60));
    let job = worker.claim(&w).unwrap().unwrap();
    assert_eq!(job.id, b);
    worker
        .record_logs(&b, &w, "test-host:/srv/out/run_instance_swt_logs/x")
        .unwrap();
    let report = "{\n  \"swtfix__calc-1\": {\n    \"resolved\": true\n  }\n}\n";
    let verdict = json!({"resolved": true, "outcome": "resolved"});
    assert!(worker
        .finish(
            &b,
            &w,
            &End::Done {
                verdict: verdict.clone(),
                report: Some(report.into()),
            },
        )
        .unwrap());
    assert_eq!(service.report(&b).unwrap().as_deref(), Some(report));
    assert_eq!(service.report(&a).unwrap(), None);
    let jobs = service.batch(&batch).unwrap().unwrap();
    let states: Vec<(&str, State)> = jobs.iter().map(|j| (j.id.as_str(), j.state)).collect();
    assert_eq!(
        states,
        [(b.as_str(), State::Done), (a.as_str(), State::Queued)]
    );
    assert_eq!(jobs[0].verdict, Some(verdict));
    assert!(service.batch("runnope").unwrap().is_none());
    assert_eq!(
        pg.psql(&format!(
            "SELECT holder, logs FROM swtbench_jobs WHERE id = '{b}'"
        )),
        format!("{}|test-host:/srv/out/run_instance_swt_logs/x", w.id)
    );
    let counts = service.counts().unwrap();
    assert_eq!((counts.done, counts.queued), (1, 1));

    // Connecting again migrates nothing; a newer schema is refused.
    assert_eq!(pg.psql("SELECT version FROM swtbench_schema"), "1");
    drop(open(&pg));
    assert_eq!(pg.psql("SELECT version FROM swtbench_schema"), "1");
    pg.psql("UPDATE swtbench_schema SET version = 7");
    let refused = Queue::connect(&QueueLocation::Postgres {
        url: pg.url.clone(),
    });
    assert!(
        matches!(
            refused,
            Err(QueueError::NewerSchema {
                found: 7,
                known: 1,
                ..
            })
        ),
        "{refused:?}"
    );
}

#[test]
fn the_queue_answers_again_after_the_server_restarts() {
    let Some(mut pg) = Postgres::start_or_skip() else {
        return;
    };
    let service = open(&pg);
    let a = submit(&service, "A");
    pg.restart();
    // The pooled connection is gone; the next call makes a new one.
    assert_eq!(service.get(&a).unwrap().unwrap().state, State::Queued);
    pg.stop();
    let down = service.get(&a);
    assert!(matches!(down, Err(QueueError::Postgres { .. })), "{down:?}");
}

#[test]
fn batches_are_listed_newest_first_page_by_page() {
    let Some(pg) = Postgres::start_or_skip() else {
        return;
    };
    let q = open(&pg);
    let mut made = BTreeSet::new();
    for n in 0..5 {
        let a = submit(&q, &format!("B{n}a"));
        let b = submit(&q, &format!("B{n}b"));
        made.insert(q.add_batch(&[a, b]).unwrap());
    }
    let mut seen: Vec<(String, i64)> = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let page = q.batch_ids(2, before.as_deref()).unwrap().unwrap();
        assert!(page.len() <= 2, "{page:?}");
        let Some(last) = page.last() else { break };
        before = Some(last.0.clone());
        seen.extend(page);
    }
    assert_eq!(
        seen.iter()
            .map(|(id, _)| id.clone())
            .collect::<BTreeSet<_>>(),
        made
    );
    assert_eq!(seen.len(), 5, "{seen:?}");
    // Newest first; in the same second, by id (bytes), descending.
    for w in seen.windows(2) {
        assert!((w[0].1, &w[0].0) > (w[1].1, &w[1].0), "{seen:?}");
    }
    assert!(q
        .batch_ids(2, Some("run000000000000000000000000"))
        .unwrap()
        .is_none());
}
