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
use swtbench_service::{api, Config, JobSpec, Queue, Shared, Template};
use tower::ServiceExt;

struct Fake;

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
        PathBuf::from("/nonexistent")
    }
}

struct Service {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    shared: Arc<Shared>,
}

fn service(tokens: Option<Vec<[u8; 32]>>, rate_limit: u32) -> Service {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    let config = Config {
        listen: "127.0.0.1:0".parse().unwrap(),
        workers: 0,
        dir: path.clone(),
        tokens,
        max_body: 16 * 1024 * 1024,
        rate_limit,
    };
    let queue = Queue::open(&path).unwrap();
    let shared = Arc::new(Shared::new(queue, Arc::new(Fake), config, Box::new(|_| {})));
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
    let s = service(Some(vec![api::token_digest("right")]), 1000);
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
    ] {
        assert!(served["paths"].get(path).is_some(), "{path}");
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
