//! The HTTP/JSON API, version 1 (docs/service.md; the OpenAPI document is [`crate::openapi`]).
//! Every error is JSON `{"error": {"code", "message", "field", "hint"}}` with a stable `code`;
//! bodies are bounded; ids in paths are checked against their exact form before anything is
//! looked up, and no name in a request reaches the file system as a path: job files are named by
//! the job's own id.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Extension;
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::queue::{Job, JobSpec, State as JobState};
use crate::quota::{Limits, Token};
use crate::worker::instance_dir;
use crate::Shared;

/// The longest `?wait=` a request may ask for, in seconds.
pub const MAX_WAIT_SECS: u64 = 600;
/// The longest model name.
pub const MAX_MODEL_NAME: usize = 128;

/// An error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub field: Option<String>,
    pub hint: Option<String>,
    /// Seconds a client should wait before it sends the request again (`Retry-After`).
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
            hint: None,
            retry_after: None,
        }
    }

    pub fn field(mut self, field: impl Into<String>) -> ApiError {
        self.field = Some(field.into());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> ApiError {
        self.hint = Some(hint.into());
        self
    }

    pub fn retry_after(mut self, seconds: u32) -> ApiError {
        self.retry_after = Some(seconds);
        self
    }

    /// The JSON body of the answer.
    pub fn body(&self) -> Value {
        json!({"error": {
            "code": self.code,
            "message": self.message,
            "field": self.field,
            "hint": self.hint,
        }})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status, Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        r
    }
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
        .hint("the service's log says more; the request can be sent again")
}

/// The API's routes over the service's state.
pub fn router(shared: Arc<Shared>) -> Router {
    let max_body = shared.config.max_body;
    let v1 = Router::new()
        .route("/v1/evaluations", post(submit))
        .route("/v1/evaluations/{id}", get(get_evaluation).delete(cancel))
        .route("/v1/evaluations/{id}/report", get(report))
        .route("/v1/evaluations/{id}/report.html", get(report_html))
        .route("/v1/evaluations/{id}/events", get(events))
        .route("/v1/evaluations/{id}/stream", get(stream))
        .route("/v1/batches", post(submit_batch).get(list_batches))
        .route("/v1/batches/{id}", get(get_batch))
        .route("/v1/batches/{id}/leaderboard", get(batch_leaderboard))
        .route("/v1/openapi.json", get(openapi))
        .route("/metrics", get(metrics))
        .route_layer(axum::middleware::from_fn_with_state(shared.clone(), guard));
    Router::new()
        .route("/healthz", get(healthz))
        .merge(crate::web::routes())
        .merge(v1)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(shared)
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
        .hint("the API is under /v1 (GET /v1/openapi.json lists it)")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this endpoint does not take that method",
    )
    .hint("GET /v1/openapi.json lists the endpoints and their methods")
}

/// Requests per second, per caller, in the current one-second window.
#[derive(Debug, Default)]
pub struct RateWindow {
    second: u64,
    counts: HashMap<String, u32>,
}

impl RateWindow {
    /// Counts a request of `caller` in second `now`; whether it is within `limit`.
    pub fn admit(&mut self, caller: &str, now: u64, limit: u32) -> bool {
        if now != self.second {
            self.second = now;
            self.counts.clear();
        }
        let n = self.counts.entry(caller.to_string()).or_default();
        *n += 1;
        *n <= limit
    }
}

/// Who sent a request: the first 16 hex digits of its token's digest ("anonymous" when the
/// service asks for no token) and that token's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub name: String,
    pub limits: Limits,
}

/// The caller of a request: its bearer token, checked against the service's tokens when it has
/// any; the anonymous caller (no limits of its own) otherwise.
pub fn caller(headers: &HeaderMap, tokens: Option<&[Token]>) -> Result<Caller, ApiError> {
    let Some(tokens) = tokens else {
        return Ok(Caller {
            name: "anonymous".into(),
            limits: Limits::default(),
        });
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let unauthorized = |m: &str| {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", m)
            .hint("send `Authorization: Bearer <token>` with a token of the service's --token-file")
    };
    let Some(token) = presented else {
        return Err(unauthorized("this service needs a bearer token"));
    };
    let digest = token_digest(token);
    // Compared in full, each of them, whatever matches, so the time says nothing of the tokens.
    let mut found: Option<&Token> = None;
    for t in tokens {
        let equal = t
            .digest
            .iter()
            .zip(digest.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
        if equal {
            found = Some(t);
        }
    }
    match found {
        Some(t) => Ok(Caller {
            name: hex::encode(&digest[..8]),
            limits: t.limits,
        }),
        None => Err(unauthorized(
            "the bearer token is not one of this service's",
        )),
    }
}

/// The SHA-256 digest of a token, as `--token-file` holds it.
pub fn token_digest(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

async fn guard(State(s): State<Arc<Shared>>, mut request: Request, next: Next) -> Response {
    let who = match caller(request.headers(), s.config.tokens.as_deref()) {
        Ok(w) => w,
        Err(e) => {
            s.metrics.rejected();
            return e.into_response();
        }
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let admitted =
        s.rate
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .admit(&who.name, now, s.config.rate_limit);
    if !admitted {
        s.metrics.rejected();
        return ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            format!("more than {} requests in one second", s.config.rate_limit),
        )
        .hint("wait a second; use ?wait= or a batch instead of polling fast")
        .retry_after(1)
        .into_response();
    }
    // A token's own bound on bodies: refused at once when the length is announced, and the body
    // cut at the bound when it is not (the handler then answers 413).
    if let Some(max) = who.limits.max_body.filter(|m| *m < s.config.max_body) {
        let announced = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if announced.is_some_and(|n| n > max as u64) {
            s.metrics.rejected();
            return token_body_too_large(max).into_response();
        }
        request =
            request.map(|body| axum::body::Body::new(http_body_util::Limited::new(body, max)));
    }
    request.extensions_mut().insert(who);
    let response = next.run(request).await;
    if response.status().is_client_error() || response.status().is_server_error() {
        s.metrics.rejected();
    }
    response
}

/// A body over its token's `max_body`.
fn token_body_too_large(max: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("the request body is larger than this token's limit of {max} bytes"),
    )
    .field("max_body")
    .hint("split a batch into smaller ones (the token's max_body in the service's token file sets the bound)")
}

/// `?wait=SECONDS` of a query string (0 without); any other parameter is refused.
pub fn wait_of(query: Option<&str>) -> Result<Duration, ApiError> {
    let mut wait = Duration::ZERO;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k != "wait" {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "unknown_parameter",
                format!("unknown query parameter {k:?}"),
            )
            .field(k.to_string())
            .hint("the one query parameter is wait=SECONDS"));
        }
        let secs: f64 = v.parse().map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_parameter",
                format!("wait={v:?} is not a number of seconds"),
            )
            .field("wait")
        })?;
        if !(0.0..=MAX_WAIT_SECS as f64).contains(&secs) {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_parameter",
                format!("wait={v} is outside 0 to {MAX_WAIT_SECS} seconds"),
            )
            .field("wait")
            .hint("poll the evaluation's location for longer waits"));
        }
        wait = Duration::from_secs_f64(secs);
    }
    Ok(wait)
}

/// Checks an id of a path against its exact form (`ev`/`run` and 24 hex digits).
pub fn check_id(id: &str, prefix: &str) -> Result<(), ApiError> {
    let hex = id.strip_prefix(prefix).unwrap_or("");
    let ok = hex.len() == 24
        && hex
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    match ok {
        true => Ok(()),
        false => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no such id {id:?}"),
        )
        .field("id")),
    }
}

/// A prediction of a request body, checked: what a job evaluates, or the error that names the
/// field (and, in a batch, where the prediction is: `line 3`, `item 2`, `key "…"`). A single
/// prediction with an empty patch is refused (`empty_patch`); in a batch (a predictions file) it
/// is evaluated as `run` evaluates it: graded as an empty patch without running anything.
pub fn prediction(
    value: &Value,
    shared_dataset: &dyn Fn(&str) -> bool,
    dataset_name: Option<&str>,
    location: Option<&str>,
) -> Result<JobSpec, ApiError> {
    let at = |f: &str| match location {
        Some(l) => format!("{l}: {f}"),
        None => f.to_string(),
    };
    let Some(obj) = value.as_object() else {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_prediction",
            at("a prediction is a JSON object"),
        )
        .hint("{\"instance_id\": …, \"model_patch\": …}"));
    };
    let text = |name: &str| -> Result<Option<&str>, ApiError> {
        match obj.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_field",
                at(&format!("{name} must be a string")),
            )
            .field(name)),
        }
    };
    if let Some(d) = text("dataset")? {
        if Some(d) != dataset_name {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_dataset",
                at(&format!(
                    "this service evaluates {}, not {d:?}",
                    dataset_name.unwrap_or("its own dataset")
                )),
            )
            .field("dataset")
            .hint("leave dataset out, or start a service with that dataset"));
        }
    }
    let instance_id = text("instance_id")?.ok_or_else(|| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing_field",
            at("instance_id is missing"),
        )
        .field("instance_id")
    })?;
    if !shared_dataset(instance_id) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_instance",
            at(&format!(
                "the service's dataset has no instance {instance_id:?}"
            )),
        )
        .field("instance_id")
        .hint("check the instance id and the dataset the service was started with"));
    }
    let patch = text("model_patch")?.ok_or_else(|| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "missing_field",
            at("model_patch is missing"),
        )
        .field("model_patch")
    })?;
    if patch.trim().is_empty() && location.is_none() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_patch",
            at("model_patch is empty"),
        )
        .field("model_patch")
        .hint("send the unified diff that adds the tests"));
    }
    let model = text("model_name_or_path")?.unwrap_or("service");
    let bad_model = model.is_empty()
        || model.len() > MAX_MODEL_NAME
        || model
            .split('/')
            .any(|p| p == ".." || p == "." || p.is_empty())
        || model.chars().any(|c| c.is_control() || c == '\\');
    if bad_model {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_field",
            at("model_name_or_path cannot name a directory"),
        )
        .field("model_name_or_path")
        .hint(format!(
            "letters, digits, dots, dashes, underscores and single slashes, at most {MAX_MODEL_NAME} bytes"
        )));
    }
    let no_coverage = match obj.get("no_coverage") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_field",
                at("no_coverage must be true or false"),
            )
            .field("no_coverage"))
        }
    };
    Ok(JobSpec {
        instance_id: instance_id.to_string(),
        model: model.to_string(),
        model_patch: patch.to_string(),
        no_coverage,
    })
}

fn body_error(e: BytesRejection) -> ApiError {
    match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            "the request body is larger than the service takes",
        )
        .hint("split a batch into smaller ones (the bound is the service's --max-body, or the token's max_body in its token file)"),
        status => ApiError::new(status, "unreadable_body", e.body_text()),
    }
}

fn parse_json(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not JSON: {e}"),
        )
        .hint("send one JSON object")
    })
}

/// A job as the API shows it.
pub fn job_json(job: &Job) -> Value {
    let base = format!("/v1/evaluations/{}", job.id);
    json!({
        "id": job.id,
        "state": job.state,
        "instance_id": job.spec.instance_id,
        "model_name_or_path": job.spec.model,
        "no_coverage": job.spec.no_coverage,
        "attempts": job.attempts,
        "created": job.created,
        "started": job.started,
        "finished": job.finished,
        "verdict": job.verdict,
        "error": job.error,
        "links": {
            "self": base,
            "report": format!("{base}/report"),
            "report_html": format!("{base}/report.html"),
            "events": format!("{base}/events"),
            "stream": format!("{base}/stream"),
        },
    })
}

/// Waits until job `id` is final or `wait` has passed; the job then.
async fn wait_job(s: &Arc<Shared>, id: &str, wait: Duration) -> Result<Job, ApiError> {
    let deadline = Instant::now() + wait;
    let mut changes = s.watch_jobs();
    loop {
        changes.borrow_and_update();
        let job = s.queue.get(id).map_err(internal)?.ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no evaluation {id}"),
            )
            .field("id")
        })?;
        let left = deadline.saturating_duration_since(Instant::now());
        if job.state.is_final() || left.is_zero() {
            return Ok(job);
        }
        let _ = tokio::time::timeout(left, changes.changed()).await;
    }
}

fn answer(job: &Job) -> Response {
    let status = match job.state.is_final() {
        true => StatusCode::OK,
        false => StatusCode::ACCEPTED,
    };
    let mut r = (status, Json(job_json(job))).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("/v1/evaluations/{}", job.id)) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// Queues `specs` for `who`, within its `max_running` when it has one: each one's id, in order,
/// and whether any was new (a worker must be woken).
fn enqueue(
    s: &Arc<Shared>,
    who: &Caller,
    specs: &[JobSpec],
) -> Result<(Vec<String>, bool), ApiError> {
    let context = s.template.context();
    let state_of = |id: &str| s.queue.get(id).ok().flatten().map(|j| j.state);
    // Held from the count to the record, so that two requests of one token cannot both pass.
    let mut running = match who.limits.max_running {
        Some(limit) => {
            let mut running = s.running.lock().unwrap_or_else(|e| e.into_inner());
            // A done evaluation submitted again is answered from the queue: it does not run.
            let adding: Vec<String> = specs
                .iter()
                .map(|spec| crate::queue::job_id(&spec.key(context)))
                .filter(|id| state_of(id) != Some(JobState::Done))
                .collect();
            let is_final = |id: &str| state_of(id).is_none_or(JobState::is_final);
            running
                .check(&who.name, limit, &adding, &is_final)
                .map_err(over_quota)?;
            Some(running)
        }
        None => None,
    };
    let mut ids = Vec::with_capacity(specs.len());
    let mut any_new = false;
    for spec in specs {
        let (id, new) = s.queue.submit(spec, &spec.key(context)).map_err(internal)?;
        any_new |= new;
        ids.push(id);
    }
    if let Some(running) = running.as_mut() {
        let unfinished = ids
            .iter()
            .filter(|id| state_of(id).is_some_and(|st| !st.is_final()))
            .cloned();
        running.add(&who.name, unfinished.collect::<Vec<_>>());
    }
    Ok((ids, any_new))
}

/// The answer to a submission over its token's `max_running`.
fn over_quota(o: crate::quota::OverQuota) -> ApiError {
    let e = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "quota_exceeded",
        format!(
            "this token may have {} evaluations queued or running at once; it has {} and the \
             request adds {}",
            o.limit, o.unfinished, o.adding
        ),
    )
    .field("max_running");
    if o.adding > o.limit {
        e.hint(format!(
            "send at most {} predictions at a time (max_running in the service's token file)",
            o.limit
        ))
    } else {
        e.hint("wait for the token's evaluations to finish (or cancel some), then send it again")
            .retry_after(10)
    }
}

async fn submit(
    State(s): State<Arc<Shared>>,
    Extension(who): Extension<Caller>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let wait = wait_of(query.as_deref())?;
    let body = body.map_err(body_error)?;
    let value = parse_json(&body)?;
    let t = s.template.clone();
    let spec = prediction(&value, &|i| t.has_instance(i), Some(t.dataset_name()), None)?;
    let (ids, new) = enqueue(&s, &who, std::slice::from_ref(&spec))?;
    if new {
        s.work_added();
    }
    let id = ids.into_iter().next().unwrap_or_default();
    let job = wait_job(&s, &id, wait).await?;
    Ok(answer(&job))
}

async fn get_evaluation(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    check_id(&id, "ev")?;
    let wait = wait_of(query.as_deref())?;
    let job = wait_job(&s, &id, wait).await?;
    Ok(answer(&job))
}

async fn cancel(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    check_id(&id, "ev")?;
    let state = s.queue.cancel(&id).map_err(internal)?;
    let Some(state) = state else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no evaluation {id}"),
        )
        .field("id"));
    };
    if state == JobState::Cancelled {
        if let Some(c) = s.cancels.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
            c.request(swtbench_runner::events::CancelReason::Interrupt);
        }
        s.job_changed();
    }
    let job = s.queue.get(&id).map_err(internal)?;
    Ok(match job {
        Some(j) => answer(&j),
        None => StatusCode::NO_CONTENT.into_response(),
    })
}

async fn job_of(s: &Arc<Shared>, id: &str) -> Result<Job, ApiError> {
    check_id(id, "ev")?;
    s.queue.get(id).map_err(internal)?.ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no evaluation {id}"),
        )
        .field("id")
    })
}

async fn report(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let job = job_of(&s, &id).await?;
    // Stored with the job by whichever host ran it; a job of an earlier version has it on disk.
    let stored = s
        .queue
        .report(&job.id)
        .map_err(internal)?
        .map(String::into_bytes);
    let path = instance_dir(&s.template.logs_root(), &job.id, &job.spec)
        .join(swtbench_core::layout::REPORT_FILE);
    match stored.map_or_else(|| std::fs::read(&path), Ok) {
        Ok(bytes) => Ok(([(header::CONTENT_TYPE, "application/json")], bytes).into_response()),
        Err(_) => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_report",
            format!(
                "evaluation {id} has no report.json ({})",
                job.state.as_str()
            ),
        )
        .hint("a report is written once the instance is graded; wait for the verdict")),
    }
}

/// The HTML page a job's run wrote beside its run report: `<output dir>/evaluation_results/
/// <model dir>.<run id>.html` (the results directory is the logs root's sibling, as `run` lays
/// them out).
pub fn report_page_path(
    logs: &std::path::Path,
    job_id: &str,
    spec: &JobSpec,
) -> std::path::PathBuf {
    let out = logs.parent().unwrap_or(logs);
    out.join(swtbench_core::layout::EVALUATION_RESULTS_DIR)
        .join(format!(
            "{}.{}.html",
            swtbench_core::layout::model_dir_name(&spec.model),
            crate::worker::run_id(job_id)
        ))
}

/// The policy a served report page runs under: the one its own `<meta>` states (the hashes of
/// its inline style and script, written by the renderer in the head, before any run data),
/// and no framing. A page without one is shown without scripts.
pub fn report_page_csp(page: &str) -> String {
    const META: &str = "<meta http-equiv=\"Content-Security-Policy\" content=\"";
    let head = &page[..page.find("</head>").unwrap_or(0)];
    let own = head.find(META).and_then(|i| {
        let rest = &head[i + META.len()..];
        let policy = &rest[..rest.find('"')?];
        let plain = policy
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b',' || b == b' ');
        (plain && policy.contains("default-src 'none'")).then_some(policy)
    });
    let policy = own.unwrap_or(
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'",
    );
    format!("{policy}; frame-ancestors 'none'")
}

/// An HTML page as the service serves it: with its Content-Security-Policy header, not sniffed,
/// not cached, no referrer.
pub fn html_page(page: String, csp: &str) -> Response {
    let mut r = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response();
    let h = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(csp) {
        h.insert(header::CONTENT_SECURITY_POLICY, v);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// The HTML report of a done evaluation: the page its run wrote (`swtbench run`'s page of the
/// run, with the instance's details), under its own Content-Security-Policy.
async fn report_html(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let job = job_of(&s, &id).await?;
    let path = report_page_path(&s.template.logs_root(), &job.id, &job.spec);
    let page = match job.state {
        JobState::Done => std::fs::read_to_string(&path).ok(),
        _ => None,
    };
    let Some(page) = page else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_report",
            format!(
                "evaluation {id} has no HTML report ({})",
                job.state.as_str()
            ),
        )
        .hint("the page is written once the evaluation is done; an empty patch, an evaluation in error, or a service started with --no-html has none"));
    };
    let csp = report_page_csp(&page);
    Ok(html_page(page, &csp))
}

async fn events(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let job = job_of(&s, &id).await?;
    let path = s.dir.join("events").join(format!("{}.jsonl", job.id));
    let bytes = std::fs::read(&path).unwrap_or_default();
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], bytes).into_response())
}

/// What a live stream has sent: the bytes of the events file, whether it ended.
struct Tail {
    shared: Arc<Shared>,
    id: String,
    path: std::path::PathBuf,
    offset: u64,
    pending: std::collections::VecDeque<axum::response::sse::Event>,
    ended: bool,
}

/// The complete lines of `path` after `offset`, and the offset after them.
fn new_lines(path: &std::path::Path, offset: u64) -> (Vec<String>, u64) {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return (Vec::new(), offset);
    };
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(offset)).is_err() || f.read_to_end(&mut buf).is_err() {
        return (Vec::new(), offset);
    }
    // Only whole lines: a line being written is sent when it is complete.
    let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
        return (Vec::new(), offset);
    };
    let text = String::from_utf8_lossy(&buf[..end]);
    let lines = text.lines().map(str::to_string).collect();
    (lines, offset + end as u64 + 1)
}

/// The live events of an evaluation (Server-Sent Events): each line of its events file as an
/// event `event` (the JSON Lines record of docs/events.md) as it is written, then one event
/// `verdict` with the evaluation once it is final, and the end of the stream.
async fn stream(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let job = job_of(&s, &id).await?;
    let tail = Tail {
        path: s.dir.join("events").join(format!("{}.jsonl", job.id)),
        shared: s,
        id: job.id,
        offset: 0,
        pending: Default::default(),
        ended: false,
    };
    let events = futures_util::stream::unfold(tail, |mut t| async move {
        loop {
            if let Some(e) = t.pending.pop_front() {
                return Some((Ok::<Event, std::convert::Infallible>(e), t));
            }
            if t.ended {
                return None;
            }
            let job = t.shared.queue.get(&t.id).ok().flatten();
            let (lines, offset) = new_lines(&t.path, t.offset);
            t.offset = offset;
            t.pending.extend(
                lines
                    .into_iter()
                    .map(|l| Event::default().event("event").data(l)),
            );
            match job {
                Some(j) if j.state.is_final() && t.pending.is_empty() => {
                    t.pending.push_back(
                        Event::default()
                            .event("verdict")
                            .data(job_json(&j).to_string()),
                    );
                    t.ended = true;
                }
                None => t.ended = true,
                _ if t.pending.is_empty() => {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                _ => {}
            }
        }
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// The predictions of a batch's body, each with where it is, in the shapes `swtbench run
/// --predictions` reads: JSON Lines (`line 3`), a JSON array (`item 2`), or an object keyed by
/// instance id (`key "…"`, whose records may leave `instance_id` out).
pub fn batch_records(text: &str) -> Result<Vec<(String, Value)>, ApiError> {
    let shapes = "a batch is JSON Lines (one prediction per line), a JSON array of predictions, \
                  or an object keyed by instance id";
    let start = text.trim_start();
    if start.starts_with('[') {
        let items: Vec<Value> = serde_json::from_str(text).map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                format!("the body is not a JSON array: {e}"),
            )
            .hint(shapes)
        })?;
        return Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("item {i}"), v))
            .collect());
    }
    if start.starts_with('{') {
        if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) {
            // Keyed by instance id: every value a record (one prediction's values are strings).
            if !map.is_empty() && map.values().all(Value::is_object) {
                let mut out = Vec::with_capacity(map.len());
                for (key, mut v) in map {
                    let at = format!("key {key:?}");
                    match v.get("instance_id") {
                        None | Some(Value::Null) => v["instance_id"] = Value::String(key.clone()),
                        Some(Value::String(id)) if *id == key => {}
                        Some(_) => {
                            return Err(ApiError::new(
                                StatusCode::UNPROCESSABLE_ENTITY,
                                "invalid_field",
                                format!("{at}: instance_id is not its key"),
                            )
                            .field("instance_id")
                            .hint("in an object keyed by instance id, leave instance_id out or give the key"))
                        }
                    }
                    out.push((at, v));
                }
                return Ok(out);
            }
        }
    }
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(line).map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_json",
                format!("line {}: not JSON: {e}", n + 1),
            )
            .hint(shapes)
        })?;
        out.push((format!("line {}", n + 1), value));
    }
    Ok(out)
}

async fn submit_batch(
    State(s): State<Arc<Shared>>,
    Extension(who): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(body_error)?;
    let text = std::str::from_utf8(&body).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not UTF-8: {e}"),
        )
    })?;
    let t = s.template.clone();
    let mut specs = Vec::new();
    for (at, value) in batch_records(text)? {
        specs.push(prediction(
            &value,
            &|i| t.has_instance(i),
            Some(t.dataset_name()),
            Some(&at),
        )?);
    }
    if specs.is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty_batch",
            "the batch has no prediction",
        )
        .hint("one JSON object per line"));
    }
    let (ids, _) = enqueue(&s, &who, &specs)?;
    let batch = s.queue.add_batch(&ids).map_err(internal)?;
    s.work_added();
    let mut r = (
        StatusCode::ACCEPTED,
        Json(json!({"id": batch, "evaluations": ids, "links": batch_links(&batch)})),
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("/v1/batches/{batch}")) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    Ok(r)
}

/// The links of batch `id`.
fn batch_links(id: &str) -> Value {
    let base = format!("/v1/batches/{id}");
    json!({
        "self": base,
        "leaderboard": format!("{base}/leaderboard"),
    })
}

/// The largest page of `GET /v1/batches`.
pub const MAX_PAGE: usize = 100;

/// `?limit=N&before=ID` of a listing: the page size (default 20, at most [`MAX_PAGE`]) and the
/// batch the page starts after; any other parameter is refused.
pub fn page_of(query: Option<&str>) -> Result<(usize, Option<String>), ApiError> {
    let (mut limit, mut before) = (20, None);
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "limit" => {
                limit = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=MAX_PAGE).contains(n))
                    .ok_or_else(|| {
                        ApiError::new(
                            StatusCode::BAD_REQUEST,
                            "invalid_parameter",
                            format!("limit={v:?} is not a number from 1 to {MAX_PAGE}"),
                        )
                        .field("limit")
                    })?;
            }
            "before" => {
                check_id(v, "run").map_err(|_| {
                    ApiError::new(
                        StatusCode::BAD_REQUEST,
                        "invalid_parameter",
                        format!("before={v:?} is not a batch id"),
                    )
                    .field("before")
                    .hint("use the `next` link of the previous page")
                })?;
                before = Some(v.to_string());
            }
            _ => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "unknown_parameter",
                    format!("unknown query parameter {k:?}"),
                )
                .field(k.to_string())
                .hint("the parameters are limit=N and before=BATCH_ID"))
            }
        }
    }
    Ok((limit, before))
}

/// A batch's state as a listing shows it: its size, counts per state, resolved count, whether
/// it is over.
fn batch_summary(id: &str, created: i64, jobs: &[Job]) -> Value {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for j in jobs {
        *counts.entry(j.state.as_str()).or_default() += 1;
    }
    json!({
        "id": id,
        "created": created,
        "size": jobs.len(),
        "done": jobs.iter().all(|j| j.state.is_final()),
        "counts": counts,
        "resolved": jobs.iter().filter(|j| resolved(j)).count(),
        "links": batch_links(id),
    })
}

/// Whether a job's verdict says resolved.
fn resolved(j: &Job) -> bool {
    j.verdict
        .as_ref()
        .and_then(|v| v.get("resolved"))
        .and_then(Value::as_bool)
        == Some(true)
}

async fn list_batches(
    State(s): State<Arc<Shared>>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (limit, before) = page_of(query.as_deref())?;
    let mut rows = s
        .queue
        .batch_ids(limit + 1, before.as_deref())
        .map_err(internal)?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("no batch {}", before.as_deref().unwrap_or_default()),
            )
            .field("before")
        })?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let mut batches = Vec::with_capacity(rows.len());
    for (id, created) in &rows {
        let jobs = s.queue.batch(id).map_err(internal)?.unwrap_or_default();
        batches.push(batch_summary(id, *created, &jobs));
    }
    let next = match (more, rows.last()) {
        (true, Some((last, _))) => json!(format!("/v1/batches?limit={limit}&before={last}")),
        _ => Value::Null,
    };
    Ok(Json(json!({"batches": batches, "next": next})).into_response())
}

/// The jobs of batch `id`, or the answer for a bad or unknown id.
fn batch_of(s: &Arc<Shared>, id: &str) -> Result<Vec<Job>, ApiError> {
    check_id(id, "run")?;
    s.queue.batch(id).map_err(internal)?.ok_or_else(|| {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", format!("no batch {id}")).field("id")
    })
}

async fn get_batch(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let jobs = batch_of(&s, &id)?;
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for j in &jobs {
        *counts.entry(j.state.as_str()).or_default() += 1;
    }
    let done = jobs.iter().all(|j| j.state.is_final());
    Ok(Json(json!({
        "id": id,
        "done": done,
        "counts": counts,
        "resolved": jobs.iter().filter(|j| resolved(j)).count(),
        "evaluations": jobs.iter().map(job_json).collect::<Vec<_>>(),
        "links": batch_links(&id),
    }))
    .into_response())
}

/// The `report.json` of each graded evaluation of `jobs`.
fn reports_of(jobs: &[Job]) -> Vec<swtbench_grade::InstanceReport> {
    jobs.iter()
        .filter_map(|j| {
            let report = j.verdict.as_ref()?.get("report")?;
            swtbench_grade::InstanceReport::from_report_json(
                &report.to_string(),
                Some(&j.spec.instance_id),
            )
            .ok()
        })
        .collect()
}

/// The leaderboard figures of a batch's graded evaluations, as `swtbench report` computes them,
/// over the batch's size (its predictions; an evaluation not done yet counts as not applied).
/// The coverage Δ rows need a gold run: `gold`, the evaluations of a batch of the gold test
/// patches (`swtbench report --gold-run-id`'s run); without it they are absent, and `coverage`
/// says why.
pub fn leaderboard(jobs: &[Job], gold: Option<&[Job]>) -> Value {
    let reports = reports_of(jobs);
    let gold_reports = gold.map(reports_of);
    let m = swtbench_grade::leaderboard::compute(&reports, gold_reports.as_deref(), jobs.len());
    let coverage = match &m.coverage {
        Ok(_) => Value::Null,
        Err(swtbench_grade::leaderboard::NoCoverage::NoGoldRun) => json!(
            "no coverage Δ rows: no gold run (give ?gold=BATCH_ID, a batch of the gold test patches of these instances)"
        ),
        Err(swtbench_grade::leaderboard::NoCoverage::NoGoldCoverage) => json!(
            "no coverage Δ rows: the gold batch's reports have no coverage_delta_gold (evaluated without coverage, or not graded yet)"
        ),
    };
    let figures: Value = serde_json::from_str(&swtbench_grade::leaderboard::render(
        &m,
        "batch",
        swtbench_grade::leaderboard::Format::Json,
        None,
    ))
    .unwrap_or(Value::Null);
    json!({
        "denominator": jobs.len(),
        "graded": reports.len(),
        "gold_graded": gold_reports.as_ref().map(Vec::len),
        "coverage": coverage,
        "figures": figures,
        "markdown": swtbench_grade::leaderboard::render(&m, "batch", swtbench_grade::leaderboard::Format::Github, None),
    })
}

/// `?gold=BATCH_ID` of a leaderboard request (none without); any other parameter is refused.
pub fn gold_of(query: Option<&str>) -> Result<Option<String>, ApiError> {
    let mut gold = None;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k != "gold" {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "unknown_parameter",
                format!("unknown query parameter {k:?}"),
            )
            .field(k.to_string())
            .hint("the one query parameter is gold=BATCH_ID"));
        }
        check_id(v, "run").map_err(|_| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_parameter",
                format!("gold={v:?} is not a batch id"),
            )
            .field("gold")
            .hint("the id of a batch of the gold test patches (POST /v1/batches answered it)")
        })?;
        gold = Some(v.to_string());
    }
    Ok(gold)
}

async fn batch_leaderboard(
    State(s): State<Arc<Shared>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let gold_id = gold_of(query.as_deref())?;
    let jobs = batch_of(&s, &id)?;
    let gold = match &gold_id {
        Some(g) => Some(batch_of(&s, g).map_err(|e| e.field("gold"))?),
        None => None,
    };
    let mut v = leaderboard(&jobs, gold.as_deref());
    v["id"] = json!(id);
    v["gold"] = json!(gold_id);
    v["done"] = json!(jobs.iter().all(|j| j.state.is_final()));
    Ok(Json(v).into_response())
}

async fn healthz(State(s): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let counts = s.queue.counts().map_err(internal)?;
    Ok(Json(json!({"status": "ok", "workers": s.config.workers, "queue": counts})).into_response())
}

async fn metrics(State(s): State<Arc<Shared>>) -> Result<Response, ApiError> {
    let counts = s.queue.counts().map_err(internal)?;
    let text = crate::metrics::render(&s.metrics.snapshot(counts, s.config.workers));
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}

async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi::DOCUMENT,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_parameter_is_checked() {
        assert_eq!(wait_of(None).unwrap(), Duration::ZERO);
        assert_eq!(
            wait_of(Some("wait=2.5")).unwrap(),
            Duration::from_millis(2500)
        );
        assert_eq!(
            wait_of(Some("wait=1&other=2")).unwrap_err().code,
            "unknown_parameter"
        );
        assert_eq!(
            wait_of(Some("wait=1&wait=x")).unwrap_err().code,
            "invalid_parameter"
        );
        assert_eq!(
            wait_of(Some("wait=601")).unwrap_err().code,
            "invalid_parameter"
        );
    }

    #[test]
    fn ids_must_have_their_exact_form() {
        assert!(check_id("ev0123456789abcdef01234567", "ev").is_ok());
        for bad in [
            "ev0123456789ABCDEF01234567",
            "ev0123",
            "run0123456789abcdef01234567",
            "ev../../x",
        ] {
            assert!(check_id(bad, "ev").is_err(), "{bad}");
        }
    }

    #[test]
    fn a_batchs_leaderboard_is_over_its_size_from_its_reports() {
        let report = |id: &str, resolved: bool, applied: bool| {
            let buckets = |f2p: &[&str]| json!({"FAIL_TO_PASS": f2p, "PASS_TO_PASS": [], "FAIL_TO_FAIL": [], "PASS_TO_FAIL": [], "UNMATCHED": []});
            json!({id: {
                "patch_is_None": false, "patch_exists": true,
                "patch_successfully_applied": applied, "resolved": resolved,
                "coverage_pred": null, "coverage_gold": null, "coverage_base": null,
                "coverage_delta_pred": null, "coverage_delta_gold": null,
                "added_f2p": if resolved { 1 } else { 0 },
                "tests_base": buckets(&[]),
                // A patch that did not apply has no prediction runs, so no tests_pred.
                "tests_pred": if applied { buckets(if resolved { &["t.py::a"] } else { &[] }) } else { Value::Null },
                "tests_gold": buckets(&["t.py::g"]),
            }})
        };
        let job = |id: &str, verdict: Option<Value>| Job {
            id: format!("ev{id}"),
            spec: JobSpec {
                instance_id: id.into(),
                model: "m".into(),
                model_patch: "d".into(),
                no_coverage: false,
            },
            state: if verdict.is_some() {
                JobState::Done
            } else {
                JobState::Queued
            },
            attempts: 1,
            verdict: verdict.map(|r| json!({"report": r})),
            error: None,
            created: 0,
            started: None,
            finished: None,
        };
        let jobs = [
            job("a__a-1", Some(report("a__a-1", true, true))),
            job("a__a-2", Some(report("a__a-2", false, true))),
            job("a__a-3", Some(report("a__a-3", false, false))),
            job("a__a-4", None),
        ];
        let v = leaderboard(&jobs, None);
        assert_eq!(
            (v["denominator"].as_u64(), v["graded"].as_u64()),
            (Some(4), Some(3)),
            "{v}"
        );
        // Applicable (its tests ran) 2 of 4, resolved 1 of 4; the queued one counts as not.
        assert_eq!(v["figures"]["applicability"].as_f64(), Some(50.0), "{v}");
        assert_eq!(v["figures"]["success_rate"].as_f64(), Some(25.0), "{v}");
        assert!(
            v["markdown"]
                .as_str()
                .unwrap()
                .contains("| Applicability (W) |"),
            "{v}"
        );
        assert!(v["figures"]["coverage_delta_all"].is_null(), "{v}");
        assert!(
            v["coverage"].as_str().unwrap().contains("?gold=BATCH_ID"),
            "{v}"
        );

        // With a gold batch: Δᵃˡˡ is the predictions' Δ summed over the gold reports that have
        // one (2 here), as `swtbench report --gold-run-id` computes it.
        let with_delta = |id: &str, resolved: bool, pred: f64, gold: f64| {
            let mut r = report(id, resolved, true);
            r[id]["coverage_delta_pred"] = json!(pred);
            r[id]["coverage_delta_gold"] = json!(gold);
            r
        };
        let jobs = [
            job("a__a-1", Some(with_delta("a__a-1", true, 0.5, 1.0))),
            job("a__a-2", Some(with_delta("a__a-2", false, 0.25, 1.0))),
        ];
        let gold = [
            job("a__a-1", Some(with_delta("a__a-1", true, 1.0, 1.0))),
            job("a__a-2", Some(with_delta("a__a-2", true, 0.8, 0.8))),
        ];
        let v = leaderboard(&jobs, Some(&gold));
        assert_eq!(v["gold_graded"].as_u64(), Some(2), "{v}");
        assert!(v["coverage"].is_null(), "{v}");
        assert_eq!(
            v["figures"]["coverage_delta_all"].as_f64(),
            Some(37.5),
            "{v}"
        );
        // A gold batch graded without coverage says so.
        let no_cov = [job("a__a-1", Some(report("a__a-1", true, true)))];
        let v = leaderboard(&jobs, Some(&no_cov));
        assert!(
            v["coverage"]
                .as_str()
                .unwrap()
                .contains("no coverage_delta_gold"),
            "{v}"
        );
    }

    #[test]
    fn a_leaderboards_one_parameter_is_a_gold_batch_id() {
        assert_eq!(gold_of(None).unwrap(), None);
        assert_eq!(
            gold_of(Some("gold=run0123456789abcdef01234567")).unwrap(),
            Some("run0123456789abcdef01234567".to_string())
        );
        let e = gold_of(Some("gold=../x")).unwrap_err();
        assert_eq!(
            (e.code, e.field.as_deref()),
            ("invalid_parameter", Some("gold"))
        );
        let e = gold_of(Some("wait=3")).unwrap_err();
        assert_eq!(e.code, "unknown_parameter");
    }
}
