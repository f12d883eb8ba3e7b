//! The service's counters and their Prometheus text rendering (`GET /metrics`). Counting is
//! atomic; rendering is a pure function of a snapshot.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use swtbench_runner::events::{ImageOutcome, RunOutcome};
use swtbench_runner::Event;

use crate::queue::Counts;

/// The upper bounds (seconds) of the verdict latency histogram's buckets.
pub const LATENCY_BUCKETS: [f64; 10] =
    [1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 1800.0];

/// What the service counts while it runs.
#[derive(Debug, Default)]
pub struct Metrics {
    runs_executed: AtomicU64,
    runs_reused: AtomicU64,
    images_built: AtomicU64,
    images_reused: AtomicU64,
    images_evicted: AtomicU64,
    requests_rejected: AtomicU64,
    latency: Mutex<Histogram>,
    failures: Mutex<BTreeMap<String, u64>>,
}

/// Counts per bucket (cumulative when rendered), their sum and count.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Histogram {
    pub buckets: [u64; LATENCY_BUCKETS.len()],
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    pub fn observe(&mut self, seconds: f64) {
        for (i, bound) in LATENCY_BUCKETS.iter().enumerate() {
            if seconds <= *bound {
                self.buckets[i] += 1;
                break;
            }
        }
        self.sum += seconds;
        self.count += 1;
    }
}

/// A failure's class for the metrics: the first words of its reason, before any detail.
pub fn failure_class(reason: &str) -> String {
    let lower = reason.to_ascii_lowercase();
    let class = if lower.contains("cancelled") {
        "cancelled"
    } else if lower.contains("engine") || lower.contains("docker") {
        "engine"
    } else if lower.contains("stopped early") {
        "aborted"
    } else if lower.contains("dataset") || lower.contains("prediction") {
        "input"
    } else {
        "other"
    };
    class.to_string()
}

impl Metrics {
    /// Counts what an evaluation event says.
    pub fn event(&self, event: &Event) {
        match event {
            Event::RunFinished { result, .. } => match result {
                RunOutcome::Executed { .. } => {
                    self.runs_executed.fetch_add(1, Ordering::Relaxed);
                }
                RunOutcome::Reused | RunOutcome::Copied { .. } => {
                    self.runs_reused.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            },
            Event::ImageReady { outcome, .. } => match outcome {
                ImageOutcome::Built { .. } => {
                    self.images_built.fetch_add(1, Ordering::Relaxed);
                }
                ImageOutcome::Reused => {
                    self.images_reused.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            },
            _ => {}
        }
    }

    /// A verdict was delivered `elapsed` after its worker took the job.
    pub fn verdict(&self, elapsed: Duration) {
        self.latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .observe(elapsed.as_secs_f64());
    }

    /// A job failed for `reason`.
    pub fn failed(&self, reason: &str) {
        *self
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(failure_class(reason))
            .or_default() += 1;
    }

    /// `n` instance images were removed to keep the image cache within its budget.
    pub fn evicted(&self, n: u64) {
        self.images_evicted.fetch_add(n, Ordering::Relaxed);
    }

    /// A request was answered with an error.
    pub fn rejected(&self) {
        self.requests_rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// What the metrics stand at, with the queue's counts and the number of workers.
    pub fn snapshot(&self, queue: Counts, workers: usize) -> Snapshot {
        Snapshot {
            queue,
            workers,
            runs_executed: self.runs_executed.load(Ordering::Relaxed),
            runs_reused: self.runs_reused.load(Ordering::Relaxed),
            images_built: self.images_built.load(Ordering::Relaxed),
            images_reused: self.images_reused.load(Ordering::Relaxed),
            images_evicted: self.images_evicted.load(Ordering::Relaxed),
            requests_rejected: self.requests_rejected.load(Ordering::Relaxed),
            latency: self
                .latency
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            failures: self
                .failures
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }
}

/// The metrics at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub queue: Counts,
    pub workers: usize,
    pub runs_executed: u64,
    pub runs_reused: u64,
    pub images_built: u64,
    pub images_reused: u64,
    /// Instance images removed to keep the cache within `--image-cache-size`.
    pub images_evicted: u64,
    pub requests_rejected: u64,
    pub latency: Histogram,
    pub failures: BTreeMap<String, u64>,
}

/// The Prometheus text exposition (format 0.0.4) of `s`.
pub fn render(s: &Snapshot) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, lines: Vec<(String, String)>| {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
        for (labels, value) in lines {
            out.push_str(&format!("{name}{labels} {value}\n"));
        }
    };
    let q = &s.queue;
    metric(
        "swtbench_jobs",
        "gauge",
        "Jobs in the queue by state.",
        [
            ("queued", q.queued),
            ("running", q.running),
            ("done", q.done),
            ("failed", q.failed),
            ("cancelled", q.cancelled),
        ]
        .iter()
        .map(|(k, v)| (format!("{{state=\"{k}\"}}"), v.to_string()))
        .collect(),
    );
    metric(
        "swtbench_workers",
        "gauge",
        "Worker threads of this service.",
        vec![(String::new(), s.workers.to_string())],
    );
    metric(
        "swtbench_runs_total",
        "counter",
        "Container runs of the evaluations, executed or reused from the content-keyed store.",
        vec![
            ("{result=\"executed\"}".into(), s.runs_executed.to_string()),
            ("{result=\"reused\"}".into(), s.runs_reused.to_string()),
        ],
    );
    metric(
        "swtbench_images_total",
        "counter",
        "Images the evaluations needed, built or found; instance images evicted from the cache.",
        vec![
            ("{result=\"built\"}".into(), s.images_built.to_string()),
            ("{result=\"reused\"}".into(), s.images_reused.to_string()),
            ("{result=\"evicted\"}".into(), s.images_evicted.to_string()),
        ],
    );
    metric(
        "swtbench_requests_rejected_total",
        "counter",
        "Requests answered with an error.",
        vec![(String::new(), s.requests_rejected.to_string())],
    );
    metric(
        "swtbench_failures_total",
        "counter",
        "Jobs that failed, by class.",
        s.failures
            .iter()
            .map(|(k, v)| (format!("{{class=\"{k}\"}}"), v.to_string()))
            .collect(),
    );
    let mut lines = Vec::new();
    let mut cumulative = 0;
    for (bound, n) in LATENCY_BUCKETS.iter().zip(s.latency.buckets) {
        cumulative += n;
        lines.push((format!("_bucket{{le=\"{bound}\"}}"), cumulative.to_string()));
    }
    lines.push(("_bucket{le=\"+Inf\"}".into(), s.latency.count.to_string()));
    lines.push(("_sum".into(), format!("{}", s.latency.sum)));
    lines.push(("_count".into(), s.latency.count.to_string()));
    metric(
        "swtbench_verdict_seconds",
        "histogram",
        "Seconds from a worker taking a job to its verdict.",
        lines,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_is_cumulative_and_every_family_is_typed() {
        let m = Metrics::default();
        m.verdict(Duration::from_millis(800));
        m.verdict(Duration::from_secs(20));
        m.verdict(Duration::from_secs(4000));
        m.failed("the engine is not reachable");
        m.failed("cancelled");
        m.failed("cancelled");
        m.evicted(2);
        let text = render(&m.snapshot(
            Counts {
                queued: 3,
                ..Counts::default()
            },
            2,
        ));
        assert!(
            text.contains("swtbench_jobs{state=\"queued\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("swtbench_verdict_seconds_bucket{le=\"1\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("swtbench_verdict_seconds_bucket{le=\"30\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("swtbench_verdict_seconds_bucket{le=\"1800\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("swtbench_verdict_seconds_bucket{le=\"+Inf\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("swtbench_verdict_seconds_count 3\n"),
            "{text}"
        );
        assert!(
            text.contains("swtbench_failures_total{class=\"cancelled\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("swtbench_failures_total{class=\"engine\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("swtbench_images_total{result=\"evicted\"} 2\n"),
            "{text}"
        );
        for family in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            let name = family.split_whitespace().nth(2).unwrap();
            assert!(text.contains(&format!("# HELP {name} ")), "{name}");
        }
    }
}
