"""A client of the evaluation service, ``swtbench serve`` (docs/service.md): submit predictions,
get their verdicts. Standard library only (``urllib.request``, ``json``).

::

    from swtbench import Client

    client = Client("http://127.0.0.1:8787", token=None)  # `swtbench serve`'s default address
    verdict = client.evaluate("astropy__astropy-12907", patch, model="org/my-model")
    verdict.resolved  # True / False
    verdict.report  # the instance's report.json object (tests_pred, coverage_delta_pred, ...)

    for v in client.evaluate_many(predictions):  # one batch; verdicts as they finish
        print(v.instance_id, v.state, v.outcome)

:class:`AsyncClient` has the same methods as coroutines (``evaluate_many`` is an async iterator);
each call runs the blocking client in a thread.

Waiting: the service answers a request with ``?wait=SECONDS`` (at most 600) as soon as the
evaluation is final, or when the wait is over. :meth:`Client.evaluate` submits with the longest
wait and asks again with it until the evaluation is final (or its own ``wait`` is over), so a
verdict costs one request per 10 minutes of evaluation. No loop of this module sends requests
faster than ``poll_interval`` apart (0.5 s: 2 per second).

Errors: an error answer of the service raises :class:`ServiceError` with the service's ``code``,
``field`` and ``hint`` (docs/service.md, *Errors*) and the HTTP ``status``; the client's own codes
are ``connection_failed`` (no answer, after the retries; ``status`` is ``None``),
``invalid_response`` (an answer that is not the API's JSON) and ``http_error`` (an error status
without the service's JSON error, e.g. from a proxy). A 429 with a ``Retry-After`` (``rate_limited``,
or ``quota_exceeded`` while the token's evaluations fill its quota) is sent again after it, and a
request that got no answer (or 502/503/504) after a short back-off, up to ``retries`` times; a 429
without one (a batch larger than the token's whole quota) is not. Sending again is safe: identical submissions are one evaluation on the service
(a batch sent twice is two batches of the same evaluations).

An evaluation that could not be made is not an error answer: its :class:`Verdict` has ``state``
``failed`` (or ``cancelled``) and says why in ``error``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import email.utils
import functools
import http.client
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import (
    Any,
    AsyncIterator,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Tuple,
    TypeVar,
)

from swtbench._binary import SwtbenchError
from swtbench.results import Report

__all__ = [
    "DEFAULT_MODEL",
    "FINAL_STATES",
    "MAX_WAIT",
    "AsyncClient",
    "Client",
    "ServiceError",
    "Verdict",
]

#: The longest ``?wait=`` the service takes, in seconds.
MAX_WAIT = 600.0
#: The states after which an evaluation does not change any more.
FINAL_STATES = frozenset({"done", "failed", "cancelled"})
#: The model name the service gives a prediction without ``model_name_or_path``.
DEFAULT_MODEL = "service"

#: The longest pause between two polls of a batch that shows no change.
_MAX_BATCH_INTERVAL = 5.0
#: The longest pause before sending a request again.
_MAX_BACKOFF = 8.0
_MAX_RETRY_AFTER = 60.0
_USER_AGENT = "swtbench-python-client"

_T = TypeVar("_T")


class ServiceError(SwtbenchError):
    """The service answered with an error, or could not be reached.

    ``status`` is the HTTP status (``None`` when no answer came); ``code`` the service's stable
    error code (``unknown_instance``, ``rate_limited``, ...) or the client's own
    (``connection_failed``, ``invalid_response``, ``http_error``); ``field`` the request field
    at fault, ``hint`` what to do, ``message`` the service's message.
    """

    def __init__(
        self,
        message: str,
        status: Optional[int] = None,
        code: str = "http_error",
        field: Optional[str] = None,
        hint: Optional[str] = None,
    ) -> None:
        text = message
        if status is not None:
            text = f"{message} (HTTP {status} {code})"
        if hint:
            text = f"{text}; hint: {hint}"
        super().__init__(text)
        self.message = message
        self.status = status
        self.code = code
        self.field = field
        self.hint = hint


def _unwrap_report(report: Any, instance_id: str) -> Optional[Report]:
    """The object inside a ``report.json`` (``{"<instance id>": {...}}``), as
    :func:`swtbench.load_report` gives it."""
    if not isinstance(report, dict):
        return None
    inner = report.get(instance_id)
    if isinstance(inner, dict):
        return inner
    if len(report) == 1:
        (only,) = report.values()
        if isinstance(only, dict):
            return only
    return report


@dataclass(frozen=True)
class Verdict:
    """An evaluation of the service as the client last saw it.

    ``state`` is ``queued``, ``running``, ``done``, ``failed`` or ``cancelled`` (:attr:`final`
    once it is one of the last three). A done evaluation has ``outcome`` (``resolved``,
    ``unresolved``, ``empty_patch``, ``skipped``, ``error``, ...), ``resolved`` and ``report``:
    the object inside the instance's ``report.json`` (``resolved``, ``added_f2p``,
    ``tests_pred``, ``coverage_delta_pred``, ...; ``None`` when the instance was not graded).
    ``error`` says why there is no verdict: the service's reason for a failed evaluation,
    ``"cancelled"`` for a cancelled one, the reasons of an ``error`` or ``skipped`` outcome;
    ``None`` otherwise. ``raw`` is the evaluation object the service sent (``attempts``,
    ``created``, ``verdict.runs``, ``links``, ...).
    """

    id: str
    instance_id: str
    state: str
    resolved: bool
    outcome: Optional[str]
    report: Optional[Report] = field(hash=False)
    error: Optional[str]
    raw: Dict[str, Any] = field(hash=False, repr=False)

    @property
    def final(self) -> bool:
        """Whether the evaluation will not change any more (done, failed or cancelled)."""
        return self.state in FINAL_STATES

    @property
    def model(self) -> Optional[str]:
        """The evaluation's ``model_name_or_path``."""
        model = self.raw.get("model_name_or_path")
        return model if isinstance(model, str) else None

    @classmethod
    def from_evaluation(cls, evaluation: Mapping[str, Any]) -> "Verdict":
        """The verdict of an evaluation object of the API (``GET /v1/evaluations/{id}``)."""
        ev_id = evaluation.get("id")
        state = evaluation.get("state")
        if not isinstance(ev_id, str) or not isinstance(state, str):
            raise ServiceError(
                f"the service sent an evaluation without id or state: {_excerpt(evaluation)}",
                code="invalid_response",
            )
        instance_id = evaluation.get("instance_id")
        instance_id = instance_id if isinstance(instance_id, str) else ""
        verdict = evaluation.get("verdict")
        verdict = verdict if isinstance(verdict, dict) else {}
        outcome = verdict.get("outcome")
        outcome = outcome if isinstance(outcome, str) else None
        error = evaluation.get("error")
        error = error if isinstance(error, str) else None
        if error is None and state == "cancelled":
            error = "cancelled"
        if error is None and outcome in ("error", "skipped", "interrupted"):
            reasons = verdict.get("reasons")
            texts = [str(r) for r in reasons] if isinstance(reasons, list) else []
            error = "; ".join(texts) or outcome
        return cls(
            id=ev_id,
            instance_id=instance_id,
            state=state,
            resolved=verdict.get("resolved") is True,
            outcome=outcome,
            report=_unwrap_report(verdict.get("report"), instance_id),
            error=error,
            raw=dict(evaluation),
        )


def _excerpt(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def _wait_text(seconds: float) -> str:
    """``?wait=`` of a number of seconds: ``600``, ``0.5``."""
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


def _retry_after(value: Optional[str]) -> float:
    """The seconds a ``Retry-After`` header asks for (a number or an HTTP date); 1 without."""
    if not value:
        return 1.0
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return 1.0
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


def _remaining(deadline: Optional[float]) -> Optional[float]:
    return None if deadline is None else deadline - time.monotonic()


def _pace(last: float, interval: float) -> None:
    """Sleeps until ``interval`` seconds have passed since ``last`` (a monotonic time)."""
    gap = interval - (time.monotonic() - last)
    if gap > 0:
        time.sleep(gap)


class Client:
    """A client of one ``swtbench serve`` service at ``url`` (``http://host:port``, with a path
    prefix when a proxy adds one).

    ``token`` is sent as ``Authorization: Bearer <token>`` (a service beyond loopback asks for
    one). ``timeout`` bounds each request beyond the ``?wait`` it asks for, in seconds;
    ``retries`` how many times a request is sent again after a 429 or no answer;
    ``poll_interval`` the shortest time between two polls of one wait (and the first interval of
    :meth:`evaluate_many`'s polls); ``max_wait`` the ``?wait`` of one request (at most 600: lower
    it behind a proxy that cuts idle connections sooner). A client can be shared by threads.
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        timeout: float = 30.0,
        *,
        retries: int = 5,
        poll_interval: float = 0.5,
        max_wait: float = MAX_WAIT,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                f"the service's URL must be http://HOST:PORT or https://…, not {url!r} "
                f"(swtbench serve listens on http://127.0.0.1:8787 unless told otherwise)"
            )
        if not 0 < max_wait <= MAX_WAIT:
            raise ValueError(
                f"max_wait must be more than 0 and at most {MAX_WAIT:g} s, not {max_wait}"
            )
        if retries < 0 or poll_interval < 0 or timeout <= 0:
            raise ValueError(
                "retries and poll_interval cannot be negative, timeout must be positive"
            )
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.retries = retries
        self.poll_interval = poll_interval
        self.max_wait = max_wait
        self._token = token
        self._opener = urllib.request.build_opener()

    def __repr__(self) -> str:
        return f"Client({self.url!r}, token={'…' if self._token else None})"

    # --- requests ---------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        *,
        wait: float = 0.0,
        body: Optional[bytes] = None,
        content_type: str = "application/json",
    ) -> Tuple[int, bytes]:
        """Sends one request (again after a 429 or no answer, up to ``retries`` times): the
        status and body of a 2xx answer. Raises :class:`ServiceError` for the others."""
        url = self.url + path
        if wait > 0:
            url += "?wait=" + _wait_text(wait)
        headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        if body is not None:
            headers["Content-Type"] = content_type
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token}"
        attempt = 0
        while True:
            request = urllib.request.Request(url, data=body, headers=headers, method=method)
            try:
                with self._opener.open(request, timeout=wait + self.timeout) as answer:
                    return int(answer.status), answer.read()
            except urllib.error.HTTPError as e:
                try:
                    data = e.read()
                except (OSError, http.client.HTTPException):
                    data = b""
                if attempt < self.retries and e.code == 429 and e.headers.get("Retry-After"):
                    time.sleep(_retry_after(e.headers.get("Retry-After")))
                elif attempt < self.retries and e.code in (502, 503, 504):
                    retry_after = e.headers.get("Retry-After")
                    time.sleep(_retry_after(retry_after) if retry_after else self._backoff(attempt))
                else:
                    raise self._error(e.code, data) from None
            except (OSError, http.client.HTTPException) as e:
                if attempt >= self.retries:
                    reason = getattr(e, "reason", None) or e
                    raise ServiceError(
                        f"no answer from the service at {self.url} to {method} {path} "
                        f"({reason}; sent {attempt + 1} time(s))",
                        code="connection_failed",
                        hint="is `swtbench serve` running there? its address is in "
                        "<output dir>/service/address",
                    ) from e
                time.sleep(self._backoff(attempt))
            attempt += 1

    @staticmethod
    def _backoff(attempt: int) -> float:
        return float(min(0.5 * 2**attempt, _MAX_BACKOFF))

    @staticmethod
    def _error(status: int, data: bytes) -> ServiceError:
        text = data.decode("utf-8", "replace")
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = None
        err = parsed.get("error") if isinstance(parsed, dict) else None
        if isinstance(err, dict) and isinstance(err.get("code"), str):

            def opt(key: str) -> Optional[str]:
                value = err.get(key)
                return value if isinstance(value, str) else None

            return ServiceError(
                opt("message") or err["code"],
                status=status,
                code=err["code"],
                field=opt("field"),
                hint=opt("hint"),
            )
        return ServiceError(
            f"the service answered HTTP {status}: {_excerpt(text.strip()) or '(no body)'}",
            status=status,
            code="http_error",
        )

    def _json(
        self,
        method: str,
        path: str,
        *,
        wait: float = 0.0,
        body: Optional[bytes] = None,
        content_type: str = "application/json",
    ) -> Dict[str, Any]:
        """A request whose answer is a JSON object."""
        status, data = self._send(method, path, wait=wait, body=body, content_type=content_type)
        try:
            parsed: Any = json.loads(data.decode("utf-8"))
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise ServiceError(
                f"{method} {path} answered HTTP {status} without a JSON object: "
                f"{_excerpt(data.decode('utf-8', 'replace'))}",
                status=status,
                code="invalid_response",
            )
        return parsed

    @staticmethod
    def _id_path(kind: str, evaluation_id: str) -> str:
        return f"/v1/{kind}/{urllib.parse.quote(evaluation_id, safe='')}"

    def _wait_for(self, deadline: Optional[float]) -> float:
        """The ``?wait`` of the next request: the rest of ``deadline``, at most ``max_wait``."""
        left = _remaining(deadline)
        return self.max_wait if left is None else max(0.0, min(self.max_wait, left))

    def _follow(self, verdict: Verdict, deadline: Optional[float], last: float) -> Verdict:
        """Polls ``verdict``'s evaluation with ``?wait`` until it is final or ``deadline``
        (monotonic; ``None``: no end) has passed. ``last`` is when the previous request went."""
        while not verdict.final:
            left = _remaining(deadline)
            if left is not None and left <= 0:
                break
            _pace(last, self.poll_interval)
            last = time.monotonic()
            verdict = self._get_once(verdict.id, self._wait_for(deadline))
        return verdict

    def _get_once(self, evaluation_id: str, wait: float) -> Verdict:
        path = self._id_path("evaluations", evaluation_id)
        return Verdict.from_evaluation(self._json("GET", path, wait=wait))

    @staticmethod
    def _prediction(instance_id: str, patch: str, model: str, no_coverage: bool) -> Dict[str, Any]:
        return {
            "instance_id": instance_id,
            "model_patch": patch,
            "model_name_or_path": model,
            "no_coverage": no_coverage,
        }

    @staticmethod
    def _deadline(wait: Optional[float]) -> Optional[float]:
        if wait is None:
            return None
        if wait < 0:
            raise ValueError(f"wait cannot be negative ({wait})")
        return time.monotonic() + wait

    # --- the API ----------------------------------------------------------------------------

    def evaluate(
        self,
        instance_id: str,
        patch: str,
        *,
        model: str = DEFAULT_MODEL,
        no_coverage: bool = False,
        wait: Optional[float] = None,
    ) -> Verdict:
        """Evaluates ``patch`` (the unified diff that adds the tests) on ``instance_id`` and
        returns the verdict once the evaluation is final.

        ``model`` is the prediction's ``model_name_or_path``; ``no_coverage`` runs without the
        coverage tracer. ``wait`` bounds the whole wait in seconds (``None``: until final); when
        it is over, the evaluation as it is then is returned (``final`` is ``False``) and keeps
        going on the service: :meth:`get` finds it by its ``id``.
        """
        deadline = self._deadline(wait)
        body = json.dumps(self._prediction(instance_id, patch, model, no_coverage)).encode()
        started = time.monotonic()
        first = self._json("POST", "/v1/evaluations", wait=self._wait_for(deadline), body=body)
        return self._follow(Verdict.from_evaluation(first), deadline, started)

    def submit(
        self,
        instance_id: str,
        patch: str,
        *,
        model: str = DEFAULT_MODEL,
        no_coverage: bool = False,
    ) -> str:
        """Submits a prediction without waiting; its evaluation's id (for :meth:`get`). The same
        prediction submitted again has the same id."""
        body = json.dumps(self._prediction(instance_id, patch, model, no_coverage)).encode()
        return Verdict.from_evaluation(self._json("POST", "/v1/evaluations", body=body)).id

    def get(self, evaluation_id: str, wait: float = 0) -> Verdict:
        """The evaluation ``evaluation_id`` now, or once it is final if that is within ``wait``
        seconds (longer waits than the service's 600 s are several requests)."""
        deadline = self._deadline(wait)
        started = time.monotonic()
        verdict = self._get_once(evaluation_id, self._wait_for(deadline))
        return self._follow(verdict, deadline, started)

    def cancel(self, evaluation_id: str) -> Verdict:
        """Cancels the evaluation (a final one stays as it is); the evaluation afterwards.
        Identical submissions share an evaluation: this cancels it for all of them."""
        path = self._id_path("evaluations", evaluation_id)
        status, data = self._send("DELETE", path)
        if status == 204 or not data.strip():
            return self.get(evaluation_id)
        try:
            parsed: Any = json.loads(data.decode("utf-8"))
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            text = data.decode("utf-8", "replace")
            raise ServiceError(
                f"DELETE {path} answered without a JSON object: {_excerpt(text)}",
                status=status,
                code="invalid_response",
            )
        return Verdict.from_evaluation(parsed)

    def report(self, evaluation_id: str) -> Report:
        """The evaluation's ``report.json``: the object inside it, as
        :func:`swtbench.load_report` gives it (``ServiceError`` ``no_report`` until the instance
        is graded)."""
        data = self._json("GET", self._id_path("evaluations", evaluation_id) + "/report")
        report = _unwrap_report(data, "")
        return report if report is not None else data

    def health(self) -> Dict[str, Any]:
        """``GET /healthz``: ``{"status": "ok", "workers": N, "queue": {"queued": …, …}}``
        (no token needed)."""
        return self._json("GET", "/healthz")

    def evaluate_many(
        self,
        predictions: Iterable[Mapping[str, Any]],
        *,
        model: Optional[str] = None,
        wait: Optional[float] = None,
    ) -> Iterator[Verdict]:
        """Submits ``predictions`` as one batch (now, before the first verdict is asked for)
        and yields one :class:`Verdict` per prediction as the evaluations finish, in finishing
        order (those seen final by the same poll in the order they finished, then of the
        batch).

        A prediction is a mapping as a predictions file's line is: ``instance_id``,
        ``model_patch``, and optionally ``model_name_or_path`` (``model`` when it has none, else
        the service's ``"service"``) and ``no_coverage``. The batch is polled
        (``GET /v1/batches/{id}``) every ``poll_interval`` seconds while evaluations finish, less
        often (up to every 5 s) while none does. ``wait`` bounds the whole wait in seconds: when
        it is over, the evaluations not final yet are yielded as they are then. Evaluations go on
        on the service when the iteration is left early.
        """
        rows: List[Dict[str, Any]] = []
        for p in predictions:
            row = dict(p)
            if model is not None and row.get("model_name_or_path") is None:
                row["model_name_or_path"] = model
            rows.append(row)
        if not rows:
            return iter(())
        deadline = self._deadline(wait)
        body = "".join(json.dumps(row) + "\n" for row in rows).encode()
        started = time.monotonic()
        batch = self._json("POST", "/v1/batches", body=body, content_type="application/x-ndjson")
        batch_id = batch.get("id")
        ids = batch.get("evaluations")
        if (
            not isinstance(batch_id, str)
            or not isinstance(ids, list)
            or len(ids) != len(rows)
            or not all(isinstance(i, str) for i in ids)
        ):
            raise ServiceError(
                f"POST /v1/batches answered without a batch of {len(rows)} evaluations: "
                f"{_excerpt(batch)}",
                code="invalid_response",
            )
        return self._follow_batch(batch_id, [str(i) for i in ids], deadline, started)

    def _follow_batch(
        self, batch_id: str, ids: List[str], deadline: Optional[float], last: float
    ) -> Iterator[Verdict]:
        """Polls the batch; ``last`` is when the previous request went."""
        pending = set(range(len(ids)))
        latest: Dict[int, Verdict] = {}
        interval = self.poll_interval
        path = self._id_path("batches", batch_id)
        polled = False
        while pending:
            left = _remaining(deadline)
            if polled and left is not None and left <= 0:
                break
            gap = interval - (time.monotonic() - last)
            if left is not None and polled:
                gap = min(gap, left)
            if gap > 0:
                time.sleep(gap)
            last = time.monotonic()
            polled = True
            page = self._json("GET", path)
            evaluations = page.get("evaluations")
            if not isinstance(evaluations, list):
                raise ServiceError(
                    f"GET {path} answered without its evaluations: {_excerpt(page)}",
                    code="invalid_response",
                )
            by_id = {
                v.id: v
                for v in (Verdict.from_evaluation(e) for e in evaluations if isinstance(e, dict))
            }
            finished: List[Tuple[float, int, Verdict]] = []
            for pos in sorted(pending):
                v = by_id.get(ids[pos])
                if v is None:
                    continue
                latest[pos] = v
                if v.final:
                    when = v.raw.get("finished")
                    order = float(when) if isinstance(when, (int, float)) else float("inf")
                    finished.append((order, pos, v))
            finished.sort(key=lambda f: (f[0], f[1]))
            for _, pos, v in finished:
                pending.discard(pos)
                yield v
            if finished:
                interval = self.poll_interval
            else:
                slower = min(interval * 1.5, _MAX_BATCH_INTERVAL)
                interval = max(slower, self.poll_interval)
        for pos in sorted(pending):
            v = latest.get(pos)
            yield v if v is not None else self._get_once(ids[pos], 0.0)


class _ThreadPerCall(concurrent.futures.Executor):
    """Runs each call in a daemon thread of its own: a request waiting up to 600 s neither holds
    a pool's thread from the others nor keeps the interpreter from exiting."""

    def submit(  # type: ignore[override, unused-ignore]
        self, fn: Callable[..., _T], *args: Any, **kwargs: Any
    ) -> "concurrent.futures.Future[_T]":
        future: "concurrent.futures.Future[_T]" = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as e:  # handed to the awaiting coroutine
                future.set_exception(e)
            else:
                future.set_result(result)

        threading.Thread(target=run, name="swtbench-client", daemon=True).start()
        return future


_DONE = object()


class AsyncClient:
    """:class:`Client`'s methods as coroutines, for asyncio programs (same arguments).

    Each call runs the blocking client in a thread of its own (``loop.run_in_executor``), so
    many evaluations can wait at once: ``await asyncio.gather(*(client.evaluate(...) for ...))``.
    Cancelling a coroutine stops waiting for it, not the evaluation (:meth:`cancel` does that).
    ``client`` is the underlying :class:`Client`.
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        timeout: float = 30.0,
        *,
        retries: int = 5,
        poll_interval: float = 0.5,
        max_wait: float = MAX_WAIT,
    ) -> None:
        self.client = Client(
            url,
            token,
            timeout,
            retries=retries,
            poll_interval=poll_interval,
            max_wait=max_wait,
        )
        self._executor = _ThreadPerCall()

    def __repr__(self) -> str:
        return "Async" + repr(self.client)

    async def _call(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def evaluate(
        self,
        instance_id: str,
        patch: str,
        *,
        model: str = DEFAULT_MODEL,
        no_coverage: bool = False,
        wait: Optional[float] = None,
    ) -> Verdict:
        """:meth:`Client.evaluate`."""
        return await self._call(
            self.client.evaluate,
            instance_id,
            patch,
            model=model,
            no_coverage=no_coverage,
            wait=wait,
        )

    async def submit(
        self,
        instance_id: str,
        patch: str,
        *,
        model: str = DEFAULT_MODEL,
        no_coverage: bool = False,
    ) -> str:
        """:meth:`Client.submit`."""
        return await self._call(
            self.client.submit, instance_id, patch, model=model, no_coverage=no_coverage
        )

    async def get(self, evaluation_id: str, wait: float = 0) -> Verdict:
        """:meth:`Client.get`."""
        return await self._call(self.client.get, evaluation_id, wait)

    async def cancel(self, evaluation_id: str) -> Verdict:
        """:meth:`Client.cancel`."""
        return await self._call(self.client.cancel, evaluation_id)

    async def report(self, evaluation_id: str) -> Report:
        """:meth:`Client.report`."""
        return await self._call(self.client.report, evaluation_id)

    async def health(self) -> Dict[str, Any]:
        """:meth:`Client.health`."""
        return await self._call(self.client.health)

    async def evaluate_many(
        self,
        predictions: Iterable[Mapping[str, Any]],
        *,
        model: Optional[str] = None,
        wait: Optional[float] = None,
    ) -> AsyncIterator[Verdict]:
        """:meth:`Client.evaluate_many` as an async iterator: ``async for v in
        client.evaluate_many(predictions)``. The batch is submitted when the iteration starts."""
        rows = list(predictions)
        verdicts = await self._call(self.client.evaluate_many, rows, model=model, wait=wait)
        while True:
            item: object = await self._call(next, verdicts, _DONE)
            if item is _DONE:
                return
            assert isinstance(item, Verdict)
            yield item
