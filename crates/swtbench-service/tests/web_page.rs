#![allow(clippy::unwrap_used, clippy::print_stderr)]
//! The web page in a real headless Chromium against the service's API on a loopback port (no
//! engine: this test plays the worker, ending each job with a verdict and the page its run would
//! have written). The service asks for a token: the page asks for it, keeps it in the tab's
//! session storage only, and sends it. Through the page: a predictions file uploaded makes a
//! batch, each evaluation's state and verdict appear as they change, the progress bar and the
//! leaderboard follow, an evaluation's events stream in, its report opens (fetched with the
//! token), and the batch is in the list of batches. Instance ids, model names, errors and events
//! that hold HTML are shown as text, never run.
//!
//! Needs Chromium (Debian's `chromium`); without it the test skips, unless
//! SWTBENCH_REQUIRE_ENGINE=1 (then it fails).

#[path = "support/cdp.rs"]
mod cdp;
#[path = "../../swtbench/tests/support/layer.rs"]
mod layer;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use swtbench_app::evaluate::Engine;
use swtbench_service::queue::End;
use swtbench_service::quota::Token;
use swtbench_service::{api, Config, JobSpec, Queue, Shared, Template};

const HOSTILE_ID: &str = "x<img src=y onerror=\"window.pwned=1\">__z-1";
const HOSTILE_MODEL: &str = "m<script>window.pwned=2</script>";
const HOSTILE_ERROR: &str = "<img src=q onerror=\"window.pwned=3\">boom";
const TOKEN: &str = "secret-token-for-the-page";

struct Fake(PathBuf);

impl Template for Fake {
    fn has_instance(&self, id: &str) -> bool {
        ["swtfix__calc-1", "swtfix__calc-2", HOSTILE_ID].contains(&id)
    }
    fn dataset_name(&self) -> &str {
        "fixture"
    }
    fn context(&self) -> &str {
        "ctx"
    }
    fn request(
        &self,
        _: &Engine,
        _: &JobSpec,
        _: &str,
    ) -> swtbench_app::Result<swtbench_app::evaluate::Request> {
        unreachable!("no worker runs in this test")
    }
    fn logs_root(&self) -> PathBuf {
        self.0.clone()
    }
}

/// The API on a loopback port, served from a thread of its own.
fn serve(shared: Arc<Shared>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            axum::serve(listener, api::router(shared)).await.unwrap();
        });
    });
    format!("http://{addr}")
}

/// Ends the oldest queued job as a worker would: done with `verdict`, its events written, and
/// the page of its run; or failed with `error`.
fn work_one(shared: &Shared, logs: &std::path::Path, outcome: Result<&str, &str>) -> String {
    let holder = swtbench_service::queue::Holder::of_this_process(0, shared.lease);
    let job = shared.queue.claim(&holder).unwrap().unwrap();
    let events = shared.dir.join("events");
    std::fs::create_dir_all(&events).unwrap();
    std::fs::write(
        events.join(format!("{}.jsonl", job.id)),
        format!(
            "{}\n{}\n",
            json!({"event": "instance_started", "instance_id": job.spec.instance_id}),
            json!({"event": "run_finished", "note": "<b>bold?</b>"}),
        ),
    )
    .unwrap();
    let end = match outcome {
        Ok(kind) => {
            let path = api::report_page_path(logs, &job.id, &job.spec);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let page = swtbench_html::render_run(&swtbench_html::RunView {
                title: format!("svc-{} / {}", job.id, job.spec.model),
                ..Default::default()
            });
            std::fs::write(&path, page).unwrap();
            End::Done {
                verdict: json!({
                    "instance_id": job.spec.instance_id,
                    "outcome": kind,
                    "resolved": kind == "resolved",
                    "runs": {"executed": 2, "reused": 4, "copied": 0},
                    "report": null,
                }),
                report: None,
            }
        }
        Err(e) => End::Failed(e.to_string()),
    };
    assert!(shared.queue.finish(&job.id, &holder, &end).unwrap());
    shared.job_changed();
    job.id
}

#[test]
fn the_page_uploads_a_batch_follows_it_to_the_end_and_opens_its_reports() {
    let Some(bin) = cdp::find() else {
        layer::skip("no chromium found (install Debian's `chromium` package)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("service");
    let logs = tmp.path().join("run_instance_swt_logs");
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        workers: 0,
        dir: dir.clone(),
        tokens: Some(vec![Token::new(api::token_digest(TOKEN))]),
        max_body: 16 * 1024 * 1024,
        rate_limit: 1000,
        image_cache: None,
    };
    let shared = Arc::new(Shared::new(
        Queue::open(&dir).unwrap(),
        Arc::new(Fake(logs.clone())),
        config,
        Box::new(|_| {}),
    ));
    let url = serve(shared.clone());
    let predictions = tmp.path().join("preds.jsonl");
    let lines = [
        json!({"instance_id": "swtfix__calc-1", "model_patch": "diff --git a/t b/t\n", "model_name_or_path": HOSTILE_MODEL}),
        json!({"instance_id": HOSTILE_ID, "model_patch": "diff --git a/u b/u\n", "model_name_or_path": "m"}),
        json!({"instance_id": "swtfix__calc-2", "model_patch": "diff --git a/v b/v\n", "model_name_or_path": "m"}),
    ];
    std::fs::write(
        &predictions,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();

    let started = Instant::now();
    let mut b = cdp::Browser::start(&bin);
    let page = b.open(&format!("{url}/"));
    let t = Duration::from_secs(30);
    // The list of batches needs the token: the page asks for it.
    b.wait_for(&page, "!document.getElementById('token-section').hidden", t);
    let loaded = started.elapsed();
    // Typed and sent with the keyboard.
    b.eval(&page, "document.getElementById('token-input').focus()")
        .unwrap();
    b.type_text(&page, TOKEN);
    b.press(&page, "Enter", 13);
    b.wait_for(
        &page,
        "document.getElementById('upload-status').textContent.includes('Token set')",
        t,
    );
    assert_eq!(
        b.eval(
            &page,
            "[sessionStorage.getItem('swtbench-token'), localStorage.length, document.cookie]"
        )
        .unwrap(),
        json!([TOKEN, 0, ""])
    );
    assert_eq!(
        b.eval(&page, "document.getElementById('token-input').value")
            .unwrap(),
        json!("")
    );

    // The upload: a file chosen, the form sent.
    b.set_files(&page, "#predictions-file", &[&predictions]);
    b.eval(&page, "document.getElementById('upload-button').click()")
        .unwrap();
    let status = b.wait_for(
        &page,
        "(function(){var t=document.getElementById('upload-status').textContent;return t.includes('accepted')&&t;})()",
        t,
    );
    assert!(
        status.as_str().unwrap().contains(": 3 evaluation(s)."),
        "{status}"
    );
    let accepted = shared.queue.counts().unwrap().queued;
    assert_eq!(
        accepted, 3,
        "the page's upload queued the file's predictions"
    );
    let batch_id = b
        .wait_for(
            &page,
            "/^#batch=run[0-9a-f]{24}$/.test(location.hash) && location.hash.slice(7)",
            t,
        )
        .as_str()
        .unwrap()
        .to_string();
    b.wait_for(
        &page,
        "document.querySelectorAll('#batch-table tbody tr[data-state=queued]').length === 3",
        t,
    );
    let rows = "Array.from(document.querySelectorAll('#batch-table tbody tr')).map(function(r){return [r.cells[1].textContent, r.cells[2].textContent, r.getAttribute('data-state'), r.cells[4].textContent];})";
    assert_eq!(
        b.eval(&page, rows).unwrap(),
        json!([
            ["swtfix__calc-1", HOSTILE_MODEL, "queued", ""],
            [HOSTILE_ID, "m", "queued", ""],
            ["swtfix__calc-2", "m", "queued", ""],
        ])
    );
    assert_eq!(
        b.eval(&page, "document.getElementById('batch-progress').value")
            .unwrap(),
        json!(0)
    );

    // The evaluations end one by one; the page follows.
    let first = work_one(&shared, &logs, Ok("resolved"));
    b.wait_for(
        &page,
        "document.getElementById('batch-progress').value === 1",
        t,
    );
    assert!(b
        .eval(
            &page,
            "document.getElementById('batch-progress-text').textContent"
        )
        .unwrap()
        .as_str()
        .unwrap()
        .starts_with("1 of 3 finished"));
    work_one(&shared, &logs, Err(HOSTILE_ERROR));
    work_one(&shared, &logs, Ok("unresolved"));
    b.wait_for(
        &page,
        "document.getElementById('batch-section').getAttribute('data-done') === 'true'",
        t,
    );
    assert_eq!(
        b.eval(&page, rows).unwrap(),
        json!([
            ["swtfix__calc-1", HOSTILE_MODEL, "done", "resolved"],
            [
                HOSTILE_ID,
                "m",
                "failed",
                format!("failed: {HOSTILE_ERROR}")
            ],
            ["swtfix__calc-2", "m", "done", "unresolved"],
        ])
    );
    let summary = b
        .eval(
            &page,
            "document.getElementById('batch-summary').textContent",
        )
        .unwrap();
    assert_eq!(summary, json!("Done: 2 done, 1 failed; 1 resolved."));
    // The leaderboard: W, S, F→X, F→P, P→P (no coverage rows).
    b.wait_for(&page, "!document.getElementById('leaderboard').hidden", t);
    assert_eq!(
        b.eval(&page, "Array.from(document.querySelectorAll('#leaderboard-table tbody tr')).map(function(r){return r.getAttribute('data-metric');})").unwrap(),
        json!(["applicability", "success_rate", "f_to_x", "f_to_p", "p_to_p"])
    );
    // Report links for the done evaluations only.
    let links = b
        .eval(&page, "Array.from(document.querySelectorAll('#batch-table tbody tr')).map(function(r){var a=r.querySelector('a.report-link');return a&&a.getAttribute('href');})")
        .unwrap();
    let report_href = format!("/v1/evaluations/{first}/report.html");
    assert_eq!(links[0], json!(report_href));
    assert_eq!(links[1], Value::Null);
    assert!(links[2].as_str().is_some());

    // Nothing of the hostile texts became markup or ran.
    assert_eq!(
        b.eval(&page, "[document.querySelectorAll('main img, main script, main b').length, typeof window.pwned]").unwrap(),
        json!([0, "undefined"])
    );

    // An evaluation's events, streamed with the token.
    b.eval(
        &page,
        "document.querySelector('#batch-table tbody tr button').click()",
    )
    .unwrap();
    let events = b.wait_for(
        &page,
        "(function(){var l=document.querySelectorAll('#events-list li');return l.length>=3&&Array.from(l).map(function(x){return x.textContent;});})()",
        t,
    );
    let events: Vec<String> = serde_json::from_value(events).unwrap();
    assert!(events[0].starts_with("instance_started "), "{events:?}");
    assert!(
        events[1].starts_with("run_finished ") && events[1].contains("<b>bold?</b>"),
        "{events:?}"
    );
    assert_eq!(events[2], "verdict done: resolved", "{events:?}");

    // The report opens in a new page, fetched with the token; its own script runs there.
    let before: Vec<String> = b.pages().into_iter().map(|(id, _)| id).collect();
    b.eval(&page, "document.querySelector('a.report-link').click()")
        .unwrap();
    let deadline = Instant::now() + t;
    let report_target = loop {
        let found = b
            .pages()
            .into_iter()
            .find(|(id, url)| !before.contains(id) && url.starts_with("blob:"));
        if let Some((id, _)) = found {
            break id;
        }
        assert!(
            Instant::now() < deadline,
            "no report page opened: {:?}",
            b.pages()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let report = b.attach(&report_target);
    let shown = b.wait_for(
        &report,
        "document.readyState === 'complete' && document.documentElement.getAttribute('data-shown')",
        t,
    );
    assert_eq!(shown, json!("0"), "the report's script ran");
    let title = b.eval(&report, "document.title").unwrap();
    assert_eq!(
        title,
        json!(format!("SWT-Bench: svc-{first} / {HOSTILE_MODEL}"))
    );

    // The list of batches has this one, linked.
    b.wait_for(
        &page,
        &format!("document.querySelector('#batches-table tbody tr[data-id={batch_id}] a[href=\"#batch={batch_id}\"]') !== null"),
        t,
    );
    // The one error: the list asked for before the token was given.
    let errors = b.page_errors();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("401 (Unauthorized)") && errors[0].contains("/v1/batches?limit=20"),
        "{errors:#?}"
    );
    eprintln!(
        "web page: loaded in {:.2} s, the whole scenario in {:.2} s",
        loaded.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}
