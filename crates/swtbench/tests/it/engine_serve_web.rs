//! The service's web page on the full path: a real `swtbench serve` on the fixture benchmark and
//! the real engine, driven by a real headless Chromium. A predictions file uploaded through the
//! page becomes a batch; the page shows each evaluation reaching its final state with the verdict
//! the API gives, the batch's leaderboard as the API computes it, and a link to each evaluated
//! instance's HTML report, which opens the page the run wrote (its own script running under the
//! service's Content-Security-Policy).
//!
//! Needs what engine_serve.rs needs (Docker, the fixture base image) and Chromium (Debian's
//! `chromium`); without them it skips, unless SWTBENCH_REQUIRE_ENGINE=1 (then it fails).

#[path = "../../../swtbench-service/tests/support/cdp.rs"]
mod cdp;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::engine_fixture::{self, containers_of, Fixture};

fn get_json(url: &str) -> Value {
    let mut r = ureq::get(url).call().unwrap();
    serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
}

#[test]
fn engine_serve_web_page_uploads_a_batch_and_opens_its_reports() {
    require_engine!();
    let Some(bin) = cdp::find() else {
        engine_fixture::skip("no chromium found (install Debian's `chromium` package)");
        return;
    };
    let fx = Fixture::new();
    let out = fx.root.join("served-web");
    // A resolved prediction, an unresolved one, an empty patch.
    let wanted = ["swtfix__calc-1", "swtfix__calc-2", "swtfix__calc-5"];
    let predictions: Vec<Value> = std::fs::read_to_string(fx.data.join("predictions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|p| wanted.contains(&p["instance_id"].as_str().unwrap()))
        .collect();
    assert_eq!(predictions.len(), wanted.len());
    let file = fx.root.join("web-predictions.jsonl");
    std::fs::write(
        &file,
        predictions
            .iter()
            .map(|p| format!("{p}\n"))
            .collect::<String>(),
    )
    .unwrap();

    let serve = crate::engine_serve::start(&fx, &out, 1);
    let mut b = cdp::Browser::start(&bin);
    let page = b.open(&format!("{}/", serve.url));
    let t = Duration::from_secs(30);
    b.wait_for(
        &page,
        "document.querySelector('#batches-table tbody td') !== null",
        t,
    );
    b.set_files(&page, "#predictions-file", &[&file]);
    let started = Instant::now();
    b.eval(&page, "document.getElementById('upload-button').click()")
        .unwrap();
    let batch = b
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
        "document.getElementById('batch-section').getAttribute('data-done') === 'true'",
        Duration::from_secs(900),
    );
    let took = started.elapsed();

    // The page shows what the API says, row by row.
    let api = get_json(&format!("{}/v1/batches/{batch}", serve.url));
    assert_eq!(api["done"], true, "{api}");
    let rows = b
        .eval(
            &page,
            "Array.from(document.querySelectorAll('#batch-table tbody tr')).map(function(r){var a=r.querySelector('a.report-link');return [r.cells[1].textContent, r.getAttribute('data-state'), r.cells[4].textContent, a&&a.getAttribute('href')];})",
        )
        .unwrap();
    let evaluations = api["evaluations"].as_array().unwrap();
    assert_eq!(rows.as_array().unwrap().len(), evaluations.len());
    for (row, ev) in rows.as_array().unwrap().iter().zip(evaluations) {
        let outcome = ev["verdict"]["outcome"].as_str().unwrap_or("");
        let link = match outcome {
            "resolved" | "unresolved" => json!(format!(
                "/v1/evaluations/{}/report.html",
                ev["id"].as_str().unwrap()
            )),
            _ => Value::Null,
        };
        assert_eq!(
            row,
            &json!([ev["instance_id"], "done", outcome.replace('_', " "), link]),
            "{ev}"
        );
    }
    let outcomes: Vec<&str> = evaluations
        .iter()
        .map(|e| e["verdict"]["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["resolved", "unresolved", "empty_patch"]);
    assert_eq!(
        b.eval(&page, "[document.getElementById('batch-progress').value, document.getElementById('batch-progress').max]").unwrap(),
        json!([3, 3])
    );

    // The leaderboard's figures are the API's.
    let board = get_json(&format!("{}/v1/batches/{batch}/leaderboard", serve.url));
    b.wait_for(&page, "!document.getElementById('leaderboard').hidden", t);
    let shown = b
        .eval(&page, "Array.from(document.querySelectorAll('#leaderboard-table tbody tr')).map(function(r){return [r.getAttribute('data-metric'), r.cells[1].textContent];})")
        .unwrap();
    let expected: Vec<Value> = [
        "applicability",
        "success_rate",
        "f_to_x",
        "f_to_p",
        "p_to_p",
    ]
    .iter()
    .map(|k| json!([k, format!("{:.2}", board["figures"][k].as_f64().unwrap())]))
    .collect();
    assert_eq!(shown, json!(expected), "{board}");

    // The resolved instance's report opens in a new page: the run's own page, its script ran.
    let before: Vec<String> = b.pages().into_iter().map(|(id, _)| id).collect();
    b.eval(&page, "document.querySelector('a.report-link').click()")
        .unwrap();
    let href = format!(
        "{}/v1/evaluations/{}/report.html",
        serve.url,
        evaluations[0]["id"].as_str().unwrap()
    );
    let deadline = Instant::now() + t;
    let target = loop {
        if let Some((id, _)) = b
            .pages()
            .into_iter()
            .find(|(id, url)| !before.contains(id) && *url == href)
        {
            break id;
        }
        assert!(
            Instant::now() < deadline,
            "the report did not open: {:?}",
            b.pages()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let report = b.attach(&target);
    let shown = b.wait_for(
        &report,
        "document.readyState === 'complete' && document.documentElement.getAttribute('data-shown')",
        t,
    );
    assert_eq!(
        shown,
        json!("1"),
        "one instance shown by the report's script"
    );
    let table = b
        .eval(
            &report,
            "document.getElementById('itable').tBodies[0].textContent",
        )
        .unwrap();
    assert!(
        table.as_str().unwrap().contains("swtfix__calc-1"),
        "{table}"
    );
    let errors = b.page_errors();
    assert!(errors.is_empty(), "{errors:#?}");
    for ev in evaluations {
        let run = format!("svc-{}", ev["id"].as_str().unwrap());
        assert!(containers_of(&run).is_empty(), "containers of {run} left");
    }
    eprintln!(
        "engine_serve_web: 3 predictions uploaded through the page, all final in {:.1} s",
        took.as_secs_f64()
    );
}
