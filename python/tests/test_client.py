"""The service client (``swtbench.Client``, ``AsyncClient``) against a fake of ``swtbench serve``'s
API: an ``http.server`` in a thread that keeps its evaluations in memory (no binary, no engine).

The fake evaluates nothing. A prediction's patch text says what becomes of it: ``after=N`` makes
the evaluation final at the N-th poll (of it, or of its batch; ``after=0``: at submission),
``resolved`` makes the verdict resolved, ``fail`` makes the evaluation fail. It answers ``?wait``
at once (it records it), and its errors are the service's JSON errors.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Iterator, List, Optional, Tuple
from urllib.parse import urlsplit

import pytest

import swtbench
from swtbench import AsyncClient, Client, ServiceError, Verdict

A = "astropy__astropy-12907"
D = "django__django-11099"
S = "sympy__sympy-20590"
INSTANCES = (A, D, S)
TOKEN = "s3cret-token"
FAST = 0.01  # poll_interval of the tests that do not test the pacing
ENGINE_FAULT = "the engine stopped the evaluation (after 3 attempts)"


def report_of(instance_id: str, resolved: bool) -> Dict[str, Any]:
    """The object inside the fake's report.json of an instance."""
    new = ["tests/test_new.py::test_fix"]
    return {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": True,
        "resolved": resolved,
        "added_f2p": 1 if resolved else 0,
        "tests_base": {
            "FAIL_TO_PASS": [],
            "PASS_TO_PASS": [],
            "FAIL_TO_FAIL": [],
            "PASS_TO_FAIL": [],
        },
        "tests_pred": {
            "FAIL_TO_PASS": new if resolved else [],
            "PASS_TO_PASS": [] if resolved else new,
            "FAIL_TO_FAIL": [],
            "PASS_TO_FAIL": [],
        },
    }


class Logged:
    """One request the fake received."""

    def __init__(
        self, at: float, method: str, path: str, query: str, auth: Optional[str], body: bytes
    ) -> None:
        self.at = at
        self.method = method
        self.path = path
        self.query = query
        self.auth = auth
        self.body = body
        self.status = 0

    def key(self) -> Tuple[str, str, str, int]:
        return (self.method, self.path, self.query, self.status)


class FakeService:
    """The fake's state: evaluations, batches, the requests it received, and what to do to the
    next requests (``throttle``: answer 429; ``drop``: close the connection without an answer)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.jobs: Dict[str, Dict[str, Any]] = {}
        self.batches: Dict[str, List[str]] = {}
        self.log: List[Logged] = []
        self.token: Optional[str] = None
        self.throttle = 0
        self.over_quota = False
        self.drop = 0
        self.clock = 1_700_000_000
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        setattr(self.server, "fake", self)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def requests(self, method: Optional[str] = None) -> List[Logged]:
        with self.lock:
            return [r for r in self.log if method is None or r.method == method]

    def keys(self) -> List[Tuple[str, str, str, int]]:
        return [r.key() for r in self.requests()]

    # --- evaluations ------------------------------------------------------------------------

    def submit(self, spec: Dict[str, Any]) -> str:
        key = json.dumps(spec, sort_keys=True).encode()
        job_id = "ev" + hashlib.sha256(key).hexdigest()[:24]
        if job_id not in self.jobs:
            after = re.search(r"after=(\d+)", spec["model_patch"])
            self.jobs[job_id] = {
                "id": job_id,
                "spec": spec,
                "state": "queued",
                "left": int(after.group(1)) if after else int(bool(spec["model_patch"].strip())),
                "attempts": 0,
                "created": self.clock,
                "started": None,
                "finished": None,
                "verdict": None,
                "error": None,
            }
            self.advance(job_id, polls=0)
        return job_id

    def advance(self, job_id: str, polls: int = 1) -> None:
        """A poll of the job: it runs, and is final once it was polled ``after`` times."""
        job = self.jobs[job_id]
        if job["state"] in ("done", "failed", "cancelled"):
            return
        job["left"] -= polls
        if job["left"] > 0:
            if polls:
                job["state"], job["started"], job["attempts"] = "running", self.clock, 1
            return
        self.clock += 1
        job["finished"] = self.clock
        spec = job["spec"]
        patch = spec["model_patch"]
        if "fail" in patch:
            job["state"], job["error"], job["attempts"] = "failed", ENGINE_FAULT, 3
            return
        resolved = "resolved" in patch
        outcome = "resolved" if resolved else "unresolved" if patch.strip() else "empty_patch"
        job["state"] = "done"
        job["verdict"] = {
            "instance_id": spec["instance_id"],
            "model": spec["model_name_or_path"],
            "run_id": "svc-" + job_id,
            "outcome": outcome,
            "resolved": resolved,
            "detail": {"kind": outcome} if resolved else {"kind": outcome, "applied": True},
            "reasons": [],
            "runs": {"executed": 2, "reused": 4, "copied": 0},
            "report": {spec["instance_id"]: report_of(spec["instance_id"], resolved)},
        }

    def job_json(self, job_id: str) -> Dict[str, Any]:
        job = self.jobs[job_id]
        base = "/v1/evaluations/" + job_id
        return {
            "id": job_id,
            "state": job["state"],
            "instance_id": job["spec"]["instance_id"],
            "model_name_or_path": job["spec"]["model_name_or_path"],
            "no_coverage": job["spec"]["no_coverage"],
            "attempts": job["attempts"],
            "created": job["created"],
            "started": job["started"],
            "finished": job["finished"],
            "verdict": job["verdict"],
            "error": job["error"],
            "links": {"self": base, "report": base + "/report", "events": base + "/events"},
        }

    def final(self, job_id: str) -> bool:
        return bool(self.jobs[job_id]["state"] in ("done", "failed", "cancelled"))


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: Optional[str] = None,
        hint: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field, self.hint = (
            status,
            code,
            message,
            field,
            hint,
        )


def prediction(value: Any, line: Optional[int] = None) -> Dict[str, Any]:
    """A prediction of a request body, checked as the service checks it."""
    at = (lambda m: m) if line is None else (lambda m: "line %d: %s" % (line, m))
    if not isinstance(value, dict):
        raise ApiError(422, "invalid_prediction", at("a prediction is a JSON object"))
    instance_id = value.get("instance_id")
    if instance_id is None:
        raise ApiError(422, "missing_field", at("instance_id is missing"), "instance_id")
    if instance_id not in INSTANCES:
        raise ApiError(
            422,
            "unknown_instance",
            at("the service's dataset has no instance %s" % json.dumps(instance_id)),
            "instance_id",
            "check the instance id and the dataset the service was started with",
        )
    patch = value.get("model_patch")
    if patch is None:
        raise ApiError(422, "missing_field", at("model_patch is missing"), "model_patch")
    if not patch.strip() and line is None:  # in a batch: graded as an empty patch
        raise ApiError(
            422,
            "empty_patch",
            at("model_patch is empty"),
            "model_patch",
            "send the unified diff that adds the tests",
        )
    return {
        "instance_id": instance_id,
        "model_patch": patch,
        "model_name_or_path": value.get("model_name_or_path") or "service",
        "no_coverage": bool(value.get("no_coverage") or False),
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self.handle_any("GET")

    def do_POST(self) -> None:
        self.handle_any("POST")

    def do_DELETE(self) -> None:
        self.handle_any("DELETE")

    def handle_any(self, method: str) -> None:
        fake: FakeService = getattr(self.server, "fake")
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        entry = Logged(
            time.monotonic(),
            method,
            parts.path,
            parts.query,
            self.headers.get("Authorization"),
            body,
        )
        with fake.lock:
            fake.log.append(entry)
            if fake.drop > 0:
                fake.drop -= 1
                self.close_connection = True
                return
            try:
                status, answer, headers = self.route(fake, method, parts.path, parts.query, body)
            except ApiError as e:
                status, headers = e.status, {}
                answer = {
                    "error": {
                        "code": e.code,
                        "message": e.message,
                        "field": e.field,
                        "hint": e.hint,
                    }
                }
                if e.code == "rate_limited":
                    headers["Retry-After"] = "1"
            entry.status = status
        data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        self.send_response(status)
        self.send_header(
            "Content-Type", "text/html" if isinstance(answer, bytes) else "application/json"
        )
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def route(
        self, fake: FakeService, method: str, path: str, query: str, body: bytes
    ) -> Tuple[int, Any, Dict[str, str]]:
        if path.startswith("/html/"):  # a proxy's error page
            return 500, b"<html>oops</html>", {}
        if path == "/healthz" and method == "GET":
            counts = {s: 0 for s in ("queued", "running", "done", "failed", "cancelled")}
            for job in fake.jobs.values():
                counts[job["state"]] += 1
            return 200, {"status": "ok", "workers": 1, "queue": counts}, {}
        if fake.token is not None:
            auth = self.headers.get("Authorization") or ""
            if not auth.startswith("Bearer "):
                raise ApiError(
                    401,
                    "unauthorized",
                    "this service needs a bearer token",
                    hint="send `Authorization: Bearer <token>`",
                )
            if auth[len("Bearer ") :].strip() != fake.token:
                raise ApiError(
                    401,
                    "unauthorized",
                    "the bearer token is not one of this service's",
                    hint="send `Authorization: Bearer <token>`",
                )
        if fake.throttle > 0:
            fake.throttle -= 1
            raise ApiError(
                429, "rate_limited", "more than 200 requests in one second", hint="wait a second"
            )
        if fake.over_quota and method == "POST":
            raise ApiError(
                429,
                "quota_exceeded",
                "this token may have 2 evaluations queued or running at once; it has 0 and the "
                "request adds 3",
                "max_running",
                hint="send at most 2 predictions at a time",
            )
        if query:
            k, _, v = query.partition("=")
            if k != "wait":
                raise ApiError(
                    400, "unknown_parameter", "unknown query parameter %s" % json.dumps(k), k
                )
            if not 0 <= float(v) <= 600:
                raise ApiError(
                    400, "invalid_parameter", "wait=%s is outside 0 to 600 seconds" % v, "wait"
                )
        m = re.fullmatch(r"/v1/evaluations/([^/]+)(/report)?", path)
        if path == "/v1/evaluations" and method == "POST":
            job_id = fake.submit(prediction(json.loads(body)))
            return self.answer(fake, job_id)
        if m and method in ("GET", "DELETE"):
            job_id = m.group(1)
            if not re.fullmatch(r"ev[0-9a-f]{24}", job_id) or job_id not in fake.jobs:
                raise ApiError(404, "not_found", "no evaluation %s" % job_id, "id")
            if m.group(2):
                verdict = fake.jobs[job_id]["verdict"]
                if verdict is None:
                    raise ApiError(
                        404,
                        "no_report",
                        "evaluation %s has no report.json (%s)"
                        % (job_id, fake.jobs[job_id]["state"]),
                    )
                return 200, verdict["report"], {}
            if method == "DELETE":
                if not fake.final(job_id):
                    fake.jobs[job_id]["state"] = "cancelled"
                return self.answer(fake, job_id)
            fake.advance(job_id)
            return self.answer(fake, job_id)
        if path == "/v1/batches" and method == "POST":
            lines = [line for line in body.decode().splitlines() if line.strip()]
            specs = [prediction(json.loads(line), n + 1) for n, line in enumerate(lines)]
            ids = [fake.submit(spec) for spec in specs]
            batch_id = "run" + hashlib.sha256(b"batch%d" % len(fake.batches)).hexdigest()[:24]
            fake.batches[batch_id] = ids
            return (
                202,
                {"id": batch_id, "evaluations": ids, "links": {"self": "/v1/batches/" + batch_id}},
                {"Location": "/v1/batches/" + batch_id},
            )
        m = re.fullmatch(r"/v1/batches/([^/]+)", path)
        if m and method == "GET":
            batch = fake.batches.get(m.group(1))
            if batch is None:
                raise ApiError(404, "not_found", "no batch %s" % m.group(1), "id")
            for job_id in dict.fromkeys(batch):
                fake.advance(job_id)
            states = [fake.jobs[j]["state"] for j in batch]
            return (
                200,
                {
                    "id": m.group(1),
                    "done": all(fake.final(j) for j in batch),
                    "counts": {s: states.count(s) for s in sorted(set(states))},
                    "resolved": sum(
                        1 for j in batch if (fake.jobs[j]["verdict"] or {}).get("resolved")
                    ),
                    "evaluations": [fake.job_json(j) for j in batch],
                },
                {},
            )
        raise ApiError(404, "not_found", "no such endpoint")

    @staticmethod
    def answer(fake: FakeService, job_id: str) -> Tuple[int, Any, Dict[str, str]]:
        status = 200 if fake.final(job_id) else 202
        return status, fake.job_json(job_id), {"Location": "/v1/evaluations/" + job_id}


@pytest.fixture()
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeService]:
    for name in (
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    fake = FakeService()
    fake.thread.start()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def ev_path(verdict_or_id: Any) -> str:
    return "/v1/evaluations/" + (
        verdict_or_id if isinstance(verdict_or_id, str) else verdict_or_id.id
    )


# --- evaluate ---------------------------------------------------------------------------------


def test_evaluate_follows_202s_to_the_verdict(service: FakeService) -> None:
    client = Client(service.url, poll_interval=FAST)
    v = client.evaluate(A, "diff resolved after=3", model="org/my-model")
    assert re.fullmatch(r"ev[0-9a-f]{24}", v.id)
    assert (v.id, v.instance_id, v.state, v.resolved, v.outcome, v.error) == (
        v.id,
        A,
        "done",
        True,
        "resolved",
        None,
    )
    assert v.final and v.model == "org/my-model"
    assert v.report == report_of(A, True)  # the object inside report.json
    assert v.raw["verdict"]["runs"] == {"executed": 2, "reused": 4, "copied": 0}
    assert service.keys() == [
        ("POST", "/v1/evaluations", "wait=600", 202),
        ("GET", ev_path(v), "wait=600", 202),
        ("GET", ev_path(v), "wait=600", 202),
        ("GET", ev_path(v), "wait=600", 200),
    ]
    assert json.loads(service.requests("POST")[0].body) == {
        "instance_id": A,
        "model_patch": "diff resolved after=3",
        "model_name_or_path": "org/my-model",
        "no_coverage": False,
    }
    assert service.requests()[0].auth is None


def test_a_verdict_at_submission_unresolved_and_failed_evaluations(service: FakeService) -> None:
    client = Client(service.url, poll_interval=FAST)
    v = client.evaluate(D, "diff after=0", no_coverage=True)
    assert (v.state, v.resolved, v.outcome, v.error, v.model) == (
        "done",
        False,
        "unresolved",
        None,
        "service",
    )
    assert v.report is not None and v.report["tests_pred"]["PASS_TO_PASS"] == [
        "tests/test_new.py::test_fix"
    ]
    assert service.keys() == [("POST", "/v1/evaluations", "wait=600", 200)]
    assert json.loads(service.requests()[0].body)["no_coverage"] is True

    failed = client.evaluate(S, "diff fail after=2")
    assert (failed.state, failed.resolved, failed.outcome, failed.report, failed.error) == (
        "failed",
        False,
        None,
        None,
        ENGINE_FAULT,
    )
    assert failed.raw["attempts"] == 3


def test_wait_bounds_the_whole_wait_and_get_cancel_report_health(service: FakeService) -> None:
    client = Client(service.url, poll_interval=FAST)
    v = client.evaluate(A, "diff resolved after=2", wait=0)
    assert (v.state, v.final, v.resolved, v.report) == ("queued", False, False, None)
    assert service.keys() == [("POST", "/v1/evaluations", "", 202)]  # wait=0: no ?wait

    running = client.get(v.id)
    assert (running.id, running.state, running.raw["attempts"]) == (v.id, "running", 1)
    done = client.get(v.id, wait=30)
    assert (done.state, done.resolved) == ("done", True)
    assert service.keys()[1:] == [("GET", ev_path(v), "", 202), ("GET", ev_path(v), "wait=30", 200)]
    assert client.report(v.id) == report_of(A, True)

    queued = client.submit(S, "diff after=5")
    assert queued == client.submit(S, "diff after=5")  # identical submissions: one evaluation
    cancelled = client.cancel(queued)
    assert (cancelled.id, cancelled.state, cancelled.final, cancelled.error) == (
        queued,
        "cancelled",
        True,
        "cancelled",
    )
    assert client.get(queued, wait=600).state == "cancelled"
    with pytest.raises(ServiceError) as e:
        client.report(queued)
    assert (e.value.status, e.value.code) == (404, "no_report")

    assert client.health() == {
        "status": "ok",
        "workers": 1,
        "queue": {"queued": 0, "running": 0, "done": 1, "failed": 0, "cancelled": 1},
    }


def test_waits_longer_than_600_s_are_sent_as_600(service: FakeService) -> None:
    client = Client(service.url, poll_interval=FAST)
    v = client.get(client.submit(A, "diff after=2"), wait=10_000)
    assert v.state == "done"
    assert [r.query for r in service.requests("GET")] == ["wait=600", "wait=600"]
    assert [r.query for r in service.requests()] == ["", "wait=600", "wait=600"]


# --- errors -----------------------------------------------------------------------------------


def test_error_answers_raise_service_error_with_code_and_field(service: FakeService) -> None:
    client = Client(service.url, poll_interval=FAST)
    with pytest.raises(ServiceError) as e:
        client.evaluate("nope__nope-1", "diff after=0")
    err = e.value
    assert isinstance(err, swtbench.SwtbenchError)
    assert (err.status, err.code, err.field) == (422, "unknown_instance", "instance_id")
    assert err.message == 'the service\'s dataset has no instance "nope__nope-1"'
    assert err.hint == "check the instance id and the dataset the service was started with"
    assert str(err) == (
        'the service\'s dataset has no instance "nope__nope-1" (HTTP 422 unknown_instance); '
        "hint: check the instance id and the dataset the service was started with"
    )
    assert err.returncode is None

    with pytest.raises(ServiceError) as e:
        client.submit(A, "  \n")
    assert (e.value.status, e.value.code, e.value.field) == (422, "empty_patch", "model_patch")

    with pytest.raises(ServiceError) as e:
        client.get("ev" + "0" * 24)
    assert (e.value.status, e.value.code, e.value.field, e.value.hint) == (
        404,
        "not_found",
        "id",
        None,
    )

    # An id is one path segment: no way to another endpoint.
    with pytest.raises(ServiceError) as e:
        client.get("../../healthz")
    assert (e.value.code, service.requests()[-1].path) == (
        "not_found",
        "/v1/evaluations/..%2F..%2Fhealthz",
    )

    with pytest.raises(ServiceError) as e:
        list(client.evaluate_many([{"instance_id": A, "model_patch": "diff"}, {"instance_id": D}]))
    assert (e.value.status, e.value.code, e.value.field, e.value.message) == (
        422,
        "missing_field",
        "model_patch",
        "line 2: model_patch is missing",
    )


def test_an_answer_that_is_not_the_apis_json(service: FakeService) -> None:
    with pytest.raises(ServiceError) as e:
        Client(service.url + "/html", retries=0).health()
    assert (e.value.status, e.value.code, e.value.field) == (500, "http_error", None)
    assert e.value.message == "the service answered HTTP 500: <html>oops</html>"


def test_429_is_sent_again_after_retry_after(service: FakeService) -> None:
    service.throttle = 1
    client = Client(service.url, poll_interval=FAST)
    v = client.evaluate(A, "diff resolved after=0")
    assert (v.state, v.resolved) == ("done", True)
    first, second = service.requests()
    assert (first.key(), second.key()) == (
        ("POST", "/v1/evaluations", "wait=600", 429),
        ("POST", "/v1/evaluations", "wait=600", 200),
    )
    assert first.body == second.body
    assert second.at - first.at >= 0.95  # Retry-After: 1

    service.throttle = 1
    with pytest.raises(ServiceError) as e:
        Client(service.url, retries=0).get(v.id)
    assert (e.value.status, e.value.code, e.value.hint) == (429, "rate_limited", "wait a second")


def test_a_batch_over_the_whole_quota_is_not_sent_again(service: FakeService) -> None:
    service.over_quota = True
    client = Client(service.url, poll_interval=FAST)
    with pytest.raises(ServiceError) as e:
        list(client.evaluate_many([{"instance_id": A, "model_patch": "diff"}] * 3))
    assert (e.value.status, e.value.code, e.value.field) == (429, "quota_exceeded", "max_running")
    assert [r.key() for r in service.requests()] == [("POST", "/v1/batches", "", 429)]


def test_a_request_without_an_answer_is_sent_again(service: FakeService) -> None:
    service.drop = 1
    client = Client(service.url, poll_interval=FAST)
    ev_id = client.submit(A, "diff after=1")
    assert [(r.method, r.path) for r in service.requests()] == [("POST", "/v1/evaluations")] * 2
    assert [r.status for r in service.requests()] == [0, 202]  # dropped, then answered
    assert service.jobs[ev_id]["state"] == "queued"

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = "http://127.0.0.1:%d" % s.getsockname()[1]
    with pytest.raises(ServiceError) as e:
        Client(closed, retries=1).health()
    assert (e.value.status, e.value.code) == (None, "connection_failed")
    assert "sent 2 time(s)" in e.value.message


def test_the_bearer_token_is_sent(service: FakeService) -> None:
    service.token = TOKEN
    with pytest.raises(ServiceError) as e:
        Client(service.url).submit(A, "diff after=0")
    assert (e.value.status, e.value.code, e.value.message) == (
        401,
        "unauthorized",
        "this service needs a bearer token",
    )
    with pytest.raises(ServiceError) as e:
        Client(service.url, token="wrong").submit(A, "diff after=0")
    assert (e.value.status, e.value.code) == (401, "unauthorized")
    assert service.jobs == {}

    client = Client(service.url, token=TOKEN, poll_interval=FAST)
    assert TOKEN not in repr(client)
    v = client.evaluate(A, "diff resolved after=1")
    assert (v.state, v.resolved) == ("done", True)
    assert [r.auth for r in service.requests()[2:]] == ["Bearer " + TOKEN] * 2
    assert Client(service.url).health()["status"] == "ok"  # /healthz needs no token


# --- batches ----------------------------------------------------------------------------------


def test_evaluate_many_yields_every_verdict_in_finishing_order(service: FakeService) -> None:
    client = Client(service.url, poll_interval=FAST)
    predictions = [
        {"instance_id": A, "model_patch": "diff resolved after=3"},
        {"instance_id": D, "model_patch": "diff after=1", "model_name_or_path": "org/other"},
        {"instance_id": S, "model_patch": "diff resolved after=2"},
        {"instance_id": D, "model_patch": "diff after=1", "model_name_or_path": "org/other"},
        {"instance_id": S, "model_patch": "diff fail after=2"},
        {"instance_id": A, "model_patch": ""},
    ]
    verdicts = client.evaluate_many(iter(predictions), model="org/m")
    # Submitted at the call, before the first verdict is asked for.
    assert service.keys() == [("POST", "/v1/batches", "", 202)]
    got = [(v.instance_id, v.model, v.state, v.outcome, v.error) for v in verdicts]
    assert got == [
        (A, "org/m", "done", "empty_patch", None),  # final at submission
        (D, "org/other", "done", "unresolved", None),
        (D, "org/other", "done", "unresolved", None),  # the same evaluation: one verdict each
        (S, "org/m", "done", "resolved", None),
        (S, "org/m", "failed", None, ENGINE_FAULT),
        (A, "org/m", "done", "resolved", None),
    ]
    lines = service.requests("POST")[0].body.decode().splitlines()
    assert [json.loads(line) for line in lines] == [
        dict(p, model_name_or_path=p.get("model_name_or_path", "org/m")) for p in predictions
    ]
    (batch_id,) = service.batches
    assert [r.key() for r in service.requests("GET")] == [
        ("GET", "/v1/batches/" + batch_id, "", 200)
    ] * 3
    assert list(client.evaluate_many([])) == []


def test_evaluate_many_with_a_wait_yields_the_unfinished_as_they_are(service: FakeService) -> None:
    client = Client(service.url, poll_interval=FAST)
    got = list(
        client.evaluate_many(
            [
                {"instance_id": A, "model_patch": "diff after=1"},
                {"instance_id": D, "model_patch": "diff after=100"},
            ],
            wait=0.2,
        )
    )
    assert [(v.instance_id, v.state, v.final) for v in got] == [
        (A, "done", True),
        (D, "running", False),
    ]


# --- pacing -----------------------------------------------------------------------------------


def test_polls_are_at_most_two_a_second(service: FakeService) -> None:
    # The fake answers ?wait at once: the client's own pacing is what spaces the polls.
    client = Client(service.url)
    assert client.poll_interval == 0.5
    assert client.evaluate(A, "diff after=2").state == "done"
    assert [
        v.state for v in client.evaluate_many([{"instance_id": D, "model_patch": "diff after=2"}])
    ] == ["done"]
    reqs = service.requests()
    assert [(r.method, re.sub(r"(ev|run)[0-9a-f]{24}", r"\1…", r.path)) for r in reqs] == [
        ("POST", "/v1/evaluations"),
        ("GET", "/v1/evaluations/ev…"),
        ("GET", "/v1/evaluations/ev…"),
        ("POST", "/v1/batches"),
        ("GET", "/v1/batches/run…"),
        ("GET", "/v1/batches/run…"),
    ]
    gaps = [b.at - a.at for a, b in zip(reqs, reqs[1:])]
    # POST, GET, GET of the evaluation; then the batch's POST, GET, GET (a new submission is not
    # a poll: it goes at once).
    assert min(gaps[:2] + gaps[3:]) >= 0.45, gaps


# --- Verdict ----------------------------------------------------------------------------------


def test_a_verdict_from_an_evaluation_object() -> None:
    evaluation = {
        "id": "ev" + "a" * 24,
        "state": "done",
        "instance_id": A,
        "model_name_or_path": "m",
        "verdict": {
            "outcome": "error",
            "resolved": False,
            "reasons": ["image build failed: exit 1"],
            "report": None,
        },
        "error": None,
    }
    v = Verdict.from_evaluation(evaluation)
    assert (v.state, v.outcome, v.resolved, v.report, v.error) == (
        "done",
        "error",
        False,
        None,
        "image build failed: exit 1",
    )
    assert hash(v) == hash(Verdict.from_evaluation(dict(evaluation)))
    assert v == Verdict.from_evaluation(dict(evaluation))
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.state = "queued"  # type: ignore[misc]
    with pytest.raises(ServiceError) as e:
        Verdict.from_evaluation({"state": "done"})
    assert e.value.code == "invalid_response"


# --- AsyncClient ------------------------------------------------------------------------------


def test_async_client(service: FakeService) -> None:
    service.token = TOKEN

    async def main() -> Tuple[List[Verdict], List[str], Dict[str, Any], str]:
        client = AsyncClient(service.url, token=TOKEN, poll_interval=FAST)
        both = await asyncio.gather(
            client.evaluate(A, "diff resolved after=2", model="org/a"),
            client.evaluate(D, "diff after=1", model="org/a"),
        )
        order = [
            v.instance_id
            async for v in client.evaluate_many(
                [
                    {"instance_id": A, "model_patch": "diff after=2"},
                    {"instance_id": S, "model_patch": "diff resolved after=1"},
                ]
            )
        ]
        report = await client.report(both[0].id)
        try:
            await client.submit("nope__nope-1", "diff")
        except ServiceError as e:
            code = e.code
        return list(both), order, report, code

    both, order, report, code = asyncio.run(main())
    assert [(v.instance_id, v.state, v.resolved, v.model) for v in both] == [
        (A, "done", True, "org/a"),
        (D, "done", False, "org/a"),
    ]
    assert order == [S, A]
    assert report == report_of(A, True)
    assert code == "unknown_instance"
    assert {r.auth for r in service.requests()} == {"Bearer " + TOKEN}
