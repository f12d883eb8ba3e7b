#![allow(clippy::unwrap_used)]
//! The API in process (no engine, no worker): every bad request gets a 4xx JSON error with its
//! stable code and leaves the queue as it was; accepted predictions are on disk at once.

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use swtbench_app::evaluate::Engine;
use swtbench_service::quota::{Limits, Token};
use swtbench_service::{api, Config, JobSpec, Queue, Shared, Template};
use tower::ServiceExt;

struct Fake(PathBuf);

impl Template for Fake {
    fn has_instance(&self, id: &str) -> bool {
        id == "swtfix__calc-1" || id == "swtfix__calc-2"
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
        unreachable!("no worker runs in these tests")
    }
    fn logs_root(&self) -> PathBuf {
        self.0.clone()
    }
}

struct Service {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    shared: Arc<Shared>,
}

fn service(tokens: Option<Vec<Token>>, rate_limit: u32) -> Service {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("service");
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        workers: 0,
        dir: path.clone(),
        tokens,
        max_body: 16 * 1024 * 1024,
        rate_limit,
        image_cache: None,
    };
    let queue = Queue::open(&path).unwrap();
    let logs = dir.path().join("run_instance_swt_logs");
    let shared = Arc::new(Shared::new(
        queue,
        Arc::new(Fake(logs)),
        config,
        Box::new(|_| {}),
    ));
    Service {
        _dir: dir,
        dir: path,
        shared,
    }
}

async fn call(s: &Service, req: Request<Body>) -> (StatusCode, Value) {
    let r = api::router(s.shared.clone()).oneshot(req).await.unwrap();
    let status = r.status();
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, value)
}

fn post(path: &str, body: impl Into<Body>) -> Request<Body> {
    Request::post(path).body(body.into()).unwrap()
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

fn prediction() -> Value {
    json!({"instance_id": "swtfix__calc-1", "model_patch": "diff --git a/t.py b/t.py\n", "model_name_or_path": "m"})
}

#[tokio::test]
async fn bad_requests_get_json_errors_and_leave_the_queue_alone() {
    let s = service(None, 1000);
    let cases: Vec<(Request<Body>, StatusCode, &str, Option<&str>)> = vec![
        (post("/v1/evaluations", "{not json"), StatusCode::BAD_REQUEST, "invalid_json", None),
        (
            post("/v1/evaluations", json!({"instance_id": "nope__x-1", "model_patch": "d"}).to_string()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_instance",
            Some("instance_id"),
        ),
        (
            post("/v1/evaluations", json!({"instance_id": "swtfix__calc-1", "model_patch": "d", "dataset": "lite"}).to_string()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_dataset",
            Some("dataset"),
        ),
        (
            post("/v1/evaluations", json!({"instance_id": "swtfix__calc-1", "model_patch": "  \n"}).to_string()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_patch",
            Some("model_patch"),
        ),
        (
            post("/v1/evaluations", json!({"model_patch": "d"}).to_string()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing_field",
            Some("instance_id"),
        ),
        (
            post("/v1/evaluations", json!({"instance_id": "swtfix__calc-1", "model_patch": "d", "model_name_or_path": "../../etc"}).to_string()),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            Some("model_name_or_path"),
        ),
        (
            post("/v1/evaluations?wait=9999", prediction().to_string()),
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            Some("wait"),
        ),
        (
            Request::get("/v1/evaluations/..%2F..%2Fqueue.sqlite").body(Body::empty()).unwrap(),
            StatusCode::NOT_FOUND,
            "not_found",
            Some("id"),
        ),
        (
            Request::get("/v1/evaluations/ev0000000000000000000000../report").body(Body::empty()).unwrap(),
            StatusCode::NOT_FOUND,
            "not_found",
            Some("id"),
        ),
        (
            Request::get("/v1/batches/run000000000000000000000000").body(Body::empty()).unwrap(),
            StatusCode::NOT_FOUND,
            "not_found",
            Some("id"),
        ),
        (
            post("/v1/batches", format!("{}\n{{\"instance_id\": 3}}\n", prediction())),
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            Some("instance_id"),
        ),
        (Request::put("/v1/evaluations").body(Body::empty()).unwrap(), StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", None),
        (Request::get("/v2/anything").body(Body::empty()).unwrap(), StatusCode::NOT_FOUND, "not_found", None),
    ];
    for (req, status, want, field) in cases {
        let what = format!("{} {}", req.method(), req.uri());
        let (got, body) = call(&s, req).await;
        assert_eq!((got, code(&body)), (status, want), "{what}: {body}");
        assert_eq!(body["error"]["field"].as_str(), field, "{what}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{what}"
        );
    }
    let counts = s.shared.queue.counts().unwrap();
    assert_eq!(
        counts,
        Default::default(),
        "nothing was queued by a bad request"
    );
    // The batch's error names its line.
    let (_, body) = call(
        &s,
        post(
            "/v1/batches",
            format!("{}\n{{\"instance_id\": 3}}\n", prediction()),
        ),
    )
    .await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("line 2: "),
        "{body}"
    );
}

#[tokio::test]
async fn a_body_of_200_mb_is_refused_and_a_good_request_after_it_is_taken() {
    let s = service(None, 1000);
    let big = vec![b' '; 200 * 1024 * 1024];
    let (status, body) = call(&s, post("/v1/evaluations", big)).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large")
    );
    let (status, body) = call(&s, post("/v1/evaluations", prediction().to_string())).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["state"], "queued");
}

#[tokio::test]
async fn an_accepted_prediction_is_on_disk_and_the_same_one_is_the_same_job() {
    let s = service(None, 1000);
    let (status, a) = call(&s, post("/v1/evaluations", prediction().to_string())).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let id = a["id"].as_str().unwrap().to_string();
    assert_eq!(a["links"]["self"], format!("/v1/evaluations/{id}"));
    let (_, b) = call(&s, post("/v1/evaluations", prediction().to_string())).await;
    assert_eq!(b["id"], a["id"]);
    // Another process reading the database (the service killed now) finds the job.
    let db = rusqlite_free_copy(&s.dir);
    assert!(db.contains(&id), "the job is in the database file");
    let (status, got) = call(
        &s,
        Request::get(format!("/v1/evaluations/{id}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, got["state"].as_str()),
        (StatusCode::ACCEPTED, Some("queued"))
    );
    let (status, c) = call(
        &s,
        Request::delete(format!("/v1/evaluations/{id}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, c["state"].as_str()),
        (StatusCode::OK, Some("cancelled"))
    );
    let (status, batch) = call(
        &s,
        post(
            "/v1/batches",
            format!(
                "{}\n\n{}\n",
                prediction(),
                json!({"instance_id": "swtfix__calc-2", "model_patch": ""})
            ),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{batch}");
    assert_eq!(batch["evaluations"].as_array().unwrap().len(), 2);
    assert_eq!(
        batch["evaluations"][0], a["id"],
        "a cancelled job submitted again is queued again"
    );
    let bid = batch["id"].as_str().unwrap();
    let (status, got) = call(
        &s,
        Request::get(format!("/v1/batches/{bid}"))
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (got["done"].as_bool(), got["counts"]["queued"].as_u64()),
        (Some(false), Some(2))
    );
}

/// The database's bytes with the WAL folded in, as text (the ids are ASCII).
fn rusqlite_free_copy(dir: &std::path::Path) -> String {
    let mut bytes = std::fs::read(dir.join("queue.sqlite")).unwrap_or_default();
    bytes.extend(std::fs::read(dir.join("queue.sqlite-wal")).unwrap_or_default());
    String::from_utf8_lossy(&bytes).into_owned()
}

#[tokio::test]
async fn a_wrong_token_is_refused_and_a_right_one_taken() {
    let s = service(Some(vec![Token::new(api::token_digest("right"))]), 1000);
    let with = |t: &str| {
        Request::post("/v1/evaluations")
            .header("authorization", format!("Bearer {t}"))
            .body(Body::from(prediction().to_string()))
            .unwrap()
    };
    let (status, body) = call(&s, with("wrong")).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    let (status, body) = call(&s, post("/v1/evaluations", prediction().to_string())).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    assert_eq!(s.shared.queue.counts().unwrap().queued, 0);
    let (status, _) = call(&s, with("right")).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    // Health needs no token; metrics do.
    let (status, _) = call(&s, Request::get("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(&s, Request::get("/metrics").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_thousand_requests_in_a_second_are_limited_and_the_service_stays_up() {
    let s = service(None, 100);
    let mut limited = 0;
    let mut ok = 0;
    for _ in 0..1000 {
        let (status, body) = call(
            &s,
            Request::get("/v1/openapi.json")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        match status {
            StatusCode::OK => ok += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                assert_eq!(code(&body), "rate_limited");
                limited += 1
            }
            other => panic!("unexpected {other}"),
        }
    }
    // Within one second at most 100 pass; the loop may straddle a second boundary or two.
    assert!((100..=300).contains(&ok), "{ok} admitted");
    assert_eq!(ok + limited, 1000);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (status, _) = call(&s, Request::get("/healthz").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn the_served_openapi_document_is_the_one_in_docs() {
    let s = service(None, 1000);
    let (status, served) = call(
        &s,
        Request::get("/v1/openapi.json")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/service-openapi.json"
    ))
    .unwrap();
    assert_eq!(
        served,
        serde_json::from_str::<Value>(&docs).unwrap(),
        "docs/service-openapi.json differs from src/openapi.json"
    );
    for path in [
        "/v1/evaluations",
        "/v1/evaluations/{id}",
        "/v1/batches",
        "/v1/batches/{id}",
        "/healthz",
        "/metrics",
        "/v1/evaluations/{id}/report.html",
        "/",
    ] {
        assert!(served["paths"].get(path).is_some(), "{path}");
    }
    // Every route the service answers is in the document, with its methods.
    for (path, method) in [
        ("/v1/batches", "get"),
        ("/v1/batches", "post"),
        ("/v1/evaluations/{id}", "delete"),
        ("/v1/evaluations/{id}/stream", "get"),
        ("/v1/batches/{id}/leaderboard", "get"),
    ] {
        assert!(
            served["paths"][path].get(method).is_some(),
            "{method} {path}"
        );
    }
    for (path, code) in [
        ("/v1/evaluations", "429"),
        ("/v1/batches", "429"),
        ("/v1/batches", "413"),
    ] {
        let text = served["paths"][path]["post"]["responses"][code].to_string();
        let want = if code == "429" {
            "quota_exceeded"
        } else {
            "max_body"
        };
        assert!(text.contains(want), "{path} {code}: {text}");
    }
}

#[tokio::test]
async fn the_live_stream_sends_each_event_then_the_verdict_and_ends() {
    let s = service(None, 1000);
    let (_, a) = call(&s, post("/v1/evaluations", prediction().to_string())).await;
    let id = a["id"].as_str().unwrap().to_string();
    let events = s.dir.join("events");
    std::fs::create_dir_all(&events).unwrap();
    // Two whole lines and one being written: the third is not sent.
    std::fs::write(
        events.join(format!("{id}.jsonl")),
        "{\"event\":\"evaluation_started\"}\n{\"event\":\"instance_finished\"}\n{\"event\":\"hal",
    )
    .unwrap();
    let holder = swtbench_service::queue::Holder::of_this_process(0, s.shared.lease);
    let job = s.shared.queue.claim(&holder).unwrap().unwrap();
    s.shared
        .queue
        .finish(
            &job.id,
            &holder,
            &swtbench_service::queue::End::Done {
                verdict: json!({"resolved": true}),
                report: None,
            },
        )
        .unwrap();
    let r = api::router(s.shared.clone())
        .oneshot(
            Request::get(format!("/v1/evaluations/{id}/stream"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let body =
        String::from_utf8(r.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    let kinds: Vec<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(kinds, ["event", "event", "verdict"], "{body}");
    assert!(
        body.contains("data: {\"event\":\"instance_finished\"}"),
        "{body}"
    );
    assert!(!body.contains("hal"), "{body}");
    assert!(body.contains("\"resolved\":true"), "{body}");
}

/// The answer's status, headers and body (JSON when it is).
async fn call_full(s: &Service, req: Request<Body>) -> (StatusCode, axum::http::HeaderMap, String) {
    let r = api::router(s.shared.clone()).oneshot(req).await.unwrap();
    let (parts, body) = r.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (
        parts.status,
        parts.headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

fn with_token(req: axum::http::request::Builder, token: &str) -> axum::http::request::Builder {
    req.header("authorization", format!("Bearer {token}"))
}

fn limited(token: &str, max_running: Option<usize>, max_body: Option<usize>) -> Token {
    Token {
        digest: api::token_digest(token),
        limits: Limits {
            max_running,
            max_body,
        },
    }
}

fn patch_prediction(instance: &str, patch: &str) -> Value {
    json!({"instance_id": instance, "model_patch": patch, "model_name_or_path": "m"})
}

/// Marks the oldest queued job done, as a worker would.
fn finish_oldest(s: &Service) -> String {
    let holder = swtbench_service::queue::Holder::of_this_process(0, s.shared.lease);
    let job = s.shared.queue.claim(&holder).unwrap().unwrap();
    let done = swtbench_service::queue::End::Done {
        verdict: json!({"resolved": false}),
        report: None,
    };
    assert!(s.shared.queue.finish(&job.id, &holder, &done).unwrap());
    job.id
}

#[tokio::test]
async fn a_token_over_its_running_quota_gets_429_until_its_evaluations_finish() {
    let s = service(
        Some(vec![
            limited("small", Some(2), None),
            limited("free", None, None),
        ]),
        1000,
    );
    let submit = |token: &str, patch: &str| {
        with_token(Request::post("/v1/evaluations"), token)
            .body(Body::from(
                patch_prediction("swtfix__calc-1", patch).to_string(),
            ))
            .unwrap()
    };
    for p in ["p1", "p2"] {
        let (status, _, body) = call_full(&s, submit("small", p)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    // The same prediction again is the same evaluation: it adds nothing.
    let (status, _, body) = call_full(&s, submit("small", "p2")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, headers, body) = call_full(&s, submit("small", "p3")).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (status, code(&v), v["error"]["field"].as_str()),
        (
            StatusCode::TOO_MANY_REQUESTS,
            "quota_exceeded",
            Some("max_running")
        ),
        "{body}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("may have 2 evaluations queued or running at once; it has 2"),
        "{body}"
    );
    assert!(v["error"]["hint"].as_str().is_some_and(|h| !h.is_empty()));
    assert_eq!(headers["retry-after"], "10");
    // A batch larger than the quota can never pass: no Retry-After, a hint to split it.
    let batch = format!(
        "{}\n{}\n{}\n",
        patch_prediction("swtfix__calc-1", "b1"),
        patch_prediction("swtfix__calc-1", "b2"),
        patch_prediction("swtfix__calc-2", "b3")
    );
    let (status, headers, body) = call_full(
        &s,
        with_token(Request::post("/v1/batches"), "small")
            .body(Body::from(batch.clone()))
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(
        body.contains("send at most 2 predictions at a time"),
        "{body}"
    );
    assert!(headers.get("retry-after").is_none());
    assert_eq!(
        s.shared.queue.counts().unwrap().queued,
        2,
        "a refused request queued nothing"
    );
    // Another token has its own count (none here).
    let (status, _, body) = call_full(
        &s,
        with_token(Request::post("/v1/batches"), "free")
            .body(Body::from(batch))
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    // One of the small token's evaluations ends: room for one more.
    finish_oldest(&s);
    let (status, _, body) = call_full(&s, submit("small", "p3")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let (status, _, _) = call_full(&s, submit("small", "p4")).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    // A cancelled one frees its place too.
    let (_, _, body) = call_full(&s, submit("small", "p3")).await;
    let id = serde_json::from_str::<Value>(&body).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _, _) = call_full(
        &s,
        with_token(Request::delete(format!("/v1/evaluations/{id}")), "small")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _, body) = call_full(&s, submit("small", "p4")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}

#[tokio::test]
async fn a_body_over_its_tokens_max_body_gets_413_whether_its_length_is_told_or_not() {
    let s = service(
        Some(vec![
            limited("small", None, Some(1000)),
            limited("free", None, None),
        ]),
        1000,
    );
    let big = patch_prediction("swtfix__calc-1", &"+x\n".repeat(500)).to_string();
    assert!(big.len() > 1000);
    let told = |token: &str| {
        with_token(Request::post("/v1/evaluations"), token)
            .header("content-length", big.len())
            .body(Body::from(big.clone()))
            .unwrap()
    };
    let (status, _, body) = call_full(&s, told("small")).await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (status, code(&v), v["error"]["field"].as_str()),
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            Some("max_body")
        ),
        "{body}"
    );
    // Streamed without a length: cut at the bound.
    let chunks: Vec<Result<axum::body::Bytes, std::io::Error>> = big
        .as_bytes()
        .chunks(300)
        .map(|c| Ok(axum::body::Bytes::copy_from_slice(c)))
        .collect();
    let (status, _, body) = call_full(
        &s,
        with_token(Request::post("/v1/evaluations"), "small")
            .body(Body::from_stream(futures_util::stream::iter(chunks)))
            .unwrap(),
    )
    .await;
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (status, code(&v)),
        (StatusCode::PAYLOAD_TOO_LARGE, "body_too_large"),
        "{body}"
    );
    assert_eq!(s.shared.queue.counts().unwrap().queued, 0);
    // The same body under a token without a bound of its own is taken.
    let (status, _, body) = call_full(&s, told("free")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    // A small one under the small token too.
    let (status, _, body) = call_full(
        &s,
        with_token(Request::post("/v1/evaluations"), "small")
            .body(Body::from(prediction().to_string()))
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}

fn get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

#[tokio::test]
async fn batches_are_listed_newest_first_page_by_page() {
    let s = service(None, 1000);
    let (status, list) = call(&s, get("/v1/batches")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list, json!({"batches": [], "next": null}));
    let mut made = std::collections::BTreeSet::new();
    for n in 0..5 {
        let body = format!(
            "{}\n{}\n",
            patch_prediction("swtfix__calc-1", &format!("a{n}")),
            patch_prediction("swtfix__calc-2", &format!("b{n}"))
        );
        let (status, b) = call(&s, post("/v1/batches", body)).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        made.insert(b["id"].as_str().unwrap().to_string());
    }
    finish_oldest(&s);
    let mut seen = Vec::new();
    let mut path = "/v1/batches?limit=2".to_string();
    let mut pages = 0;
    loop {
        let (status, page) = call(&s, get(&path)).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        pages += 1;
        for b in page["batches"].as_array().unwrap() {
            assert_eq!(b["size"], 2, "{b}");
            let queued = b["counts"]["queued"].as_u64().unwrap_or(0);
            let done = b["counts"]["done"].as_u64().unwrap_or(0);
            assert_eq!(queued + done, 2, "{b}");
            assert_eq!(b["done"], false, "{b}");
            assert_eq!(
                b["links"]["self"],
                format!("/v1/batches/{}", b["id"].as_str().unwrap())
            );
            seen.push(b["id"].as_str().unwrap().to_string());
        }
        match page["next"].as_str() {
            Some(next) => path = next.to_string(),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 5, "{seen:?}");
    assert_eq!(
        seen.iter()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>(),
        made
    );
    let bad = [
        (
            "/v1/batches?limit=0",
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            "limit",
        ),
        (
            "/v1/batches?limit=101",
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            "limit",
        ),
        (
            "/v1/batches?before=../x",
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            "before",
        ),
        (
            "/v1/batches?page=2",
            StatusCode::BAD_REQUEST,
            "unknown_parameter",
            "page",
        ),
        (
            "/v1/batches?before=run000000000000000000000000",
            StatusCode::NOT_FOUND,
            "not_found",
            "before",
        ),
    ];
    for (path, status, want, field) in bad {
        let (got, body) = call(&s, get(path)).await;
        assert_eq!((got, code(&body)), (status, want), "{path}: {body}");
        assert_eq!(body["error"]["field"], field, "{path}");
    }
}

#[tokio::test]
async fn a_batch_may_be_a_json_array_or_an_object_keyed_by_instance_id() {
    let s = service(None, 1000);
    let a = patch_prediction("swtfix__calc-1", "A");
    let b = patch_prediction("swtfix__calc-2", "B");
    let (_, lines) = call(&s, post("/v1/batches", format!("{a}\n{b}\n"))).await;
    let (status, array) = call(&s, post("/v1/batches", json!([a, b]).to_string())).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{array}");
    assert_eq!(array["evaluations"], lines["evaluations"]);
    assert_eq!(
        array["id"], lines["id"],
        "the same predictions are the same batch"
    );
    let keyed = json!({
        "swtfix__calc-1": {"model_patch": "A", "model_name_or_path": "m"},
        "swtfix__calc-2": {"instance_id": "swtfix__calc-2", "model_patch": "B", "model_name_or_path": "m"},
    });
    let (status, by_key) = call(&s, post("/v1/batches", keyed.to_string())).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{by_key}");
    assert_eq!(by_key["evaluations"], lines["evaluations"]);
    // Errors say where: the item of the array, the key of the object.
    let (status, err) = call(
        &s,
        post(
            "/v1/batches",
            json!([a, {"instance_id": "nope__x-1", "model_patch": "d"}]).to_string(),
        ),
    )
    .await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_instance")
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("item 1: "),
        "{err}"
    );
    let (status, err) = call(
        &s,
        post(
            "/v1/batches",
            json!({"swtfix__calc-1": {"instance_id": "swtfix__calc-2", "model_patch": "d"}})
                .to_string(),
        ),
    )
    .await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field")
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("key \"swtfix__calc-1\": "),
        "{err}"
    );
    let (status, err) = call(&s, post("/v1/batches", "[{\"instance_id\": ")).await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::BAD_REQUEST, "invalid_json"),
        "{err}"
    );
}

/// A done evaluation with the page its run would have written (the real renderer's page).
fn done_with_page(s: &Service, dir_of_logs: &std::path::Path) -> (String, String) {
    let (id, _) = s
        .shared
        .queue
        .submit(
            &JobSpec {
                instance_id: "swtfix__calc-1".into(),
                model: "org/m".into(),
                model_patch: "d".into(),
                no_coverage: false,
            },
            "0123456789abcdef".repeat(4).as_str(),
        )
        .unwrap();
    finish_oldest(s);
    let job = s.shared.queue.get(&id).unwrap().unwrap();
    let path = api::report_page_path(dir_of_logs, &id, &job.spec);
    assert!(
        path.ends_with(format!("evaluation_results/org__m.svc-{id}.html")),
        "{}",
        path.display()
    );
    let page = swtbench_html::render_run(&swtbench_html::RunView {
        title: "svc / org/m".into(),
        ..Default::default()
    });
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &page).unwrap();
    (id, page)
}

#[tokio::test]
async fn a_done_evaluations_html_report_is_served_under_its_own_policy() {
    let s = service(None, 1000);
    let logs = s._dir.path().join("run_instance_swt_logs");
    let (id, page) = done_with_page(&s, &logs);
    let (status, headers, body) =
        call_full(&s, get(&format!("/v1/evaluations/{id}/report.html"))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, page);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let csp = headers["content-security-policy"].to_str().unwrap();
    let (style, script) = swtbench_html::render::inline_hashes();
    assert!(csp.starts_with("default-src 'none'"), "{csp}");
    assert!(csp.contains(&format!("script-src '{script}'")), "{csp}");
    assert!(csp.contains(&format!("style-src '{style}'")), "{csp}");
    assert!(csp.ends_with("; frame-ancestors 'none'"), "{csp}");
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    // A page without its policy is shown without scripts.
    assert_eq!(
        api::report_page_csp("<html><head><title>x</title></head><body><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src *\"></body>"),
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    // An evaluation not done has none; nor has an unknown one.
    let (_, queued) = call(&s, post("/v1/evaluations", prediction().to_string())).await;
    let (status, body) = call(
        &s,
        get(&format!(
            "/v1/evaluations/{}/report.html",
            queued["id"].as_str().unwrap()
        )),
    )
    .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::NOT_FOUND, "no_report"),
        "{body}"
    );
    assert_eq!(
        queued["links"]["report_html"],
        format!(
            "/v1/evaluations/{}/report.html",
            queued["id"].as_str().unwrap()
        )
    );
    let (status, body) = call(
        &s,
        get("/v1/evaluations/ev000000000000000000000000/report.html"),
    )
    .await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
}

#[tokio::test]
async fn the_web_page_and_its_assets_load_without_a_token_and_fetch_nothing_from_elsewhere() {
    let s = service(Some(vec![Token::new(api::token_digest("t"))]), 1000);
    let (status, headers, page) = call_full(&s, get("/")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let csp = headers["content-security-policy"].to_str().unwrap();
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    let (status, headers, js) = call_full(&s, get("/ui/app.js")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/javascript; charset=utf-8");
    let (status, headers, css) = call_full(&s, get("/ui/app.css")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/css; charset=utf-8");
    // The data still needs the token.
    let (status, _) = call(&s, get("/v1/batches")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    // Nothing from another host, no inline script or style, no HTML parsing of data.
    for (name, text) in [("index.html", &page), ("app.js", &js), ("app.css", &css)] {
        for banned in [
            "http://",
            "https://",
            "//cdn",
            "@import",
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "onclick=",
            "style=\"",
        ] {
            assert!(!text.contains(banned), "{name} has {banned:?}");
        }
    }
    assert_eq!(page.matches("<script").count(), 1, "one script, from /ui/");
    assert!(page.contains("<script src=\"/ui/app.js\" defer></script>"));
    assert!(page.contains("<link rel=\"stylesheet\" href=\"/ui/app.css\">"));
}
