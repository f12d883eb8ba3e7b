"""swtbench: evaluate LLM-written test patches on SWT-Bench.

The evaluation itself is the ``swtbench`` binary that this package installs (``swtbench --help``);
``python -m swtbench`` runs it and also takes the original harness's command line
(``python -m swtbench --predictions_path gold --run_id validate-gold`` is
``swtbench run --predictions gold --run-id validate-gold``), and ``python -m swtbench.report`` is
``swtbench report``.

This module reads the results of runs as plain Python data, starting no container::

    import swtbench
    path = "run_instance_swt_logs/my-run/org__my-model"
    reports = swtbench.load_reports(path)  # {instance id: the object in its report.json}
    resolved = [i for i, r in reports.items() if r["resolved"]]
    board = swtbench.leaderboard(path, dataset="lite")  # {"success_rate": 15.9, ...}
    rows = swtbench.leaderboard_rows(path)  # the table: [{"label": "Applicability (W)", ...}, ...]
    run = swtbench.load_run_report("my-run", "org/my-model")  # evaluation_results/<model>.<run>.json
    runs = swtbench.find_runs()  # every graded <run_id>/<model> under run_instance_swt_logs

Errors are :class:`SwtbenchError`, with the binary's exit code and stderr when it ran.

:class:`Client` (and :class:`AsyncClient`, its coroutines) talks to the evaluation service,
``swtbench serve`` (docs/service.md), and gives a :class:`Verdict` per prediction; an error answer
is a :class:`ServiceError` (a :class:`SwtbenchError`) with the service's ``code``, ``field`` and
``hint``::

    client = swtbench.Client("http://127.0.0.1:8787", token=None)
    verdict = client.evaluate("astropy__astropy-12907", patch, model="org/my-model")
    verdict.resolved, verdict.outcome, verdict.report  # report: the report.json object
    for v in client.evaluate_many(predictions):  # one batch, verdicts in finishing order
        ...
"""

from swtbench._binary import BINARY_ENV, SwtbenchError, binary_path
from swtbench.client import AsyncClient, Client, ServiceError, Verdict
from swtbench.results import (
    PathArg,
    Report,
    find_runs,
    leaderboard,
    leaderboard_rows,
    load_report,
    load_reports,
    load_run_report,
    model_dir_name,
)


def _version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover (Python < 3.8)
        return "unknown"
    try:
        return version("swtbench")
    except PackageNotFoundError:
        return "unknown"


__version__: str = _version()

__all__ = [
    "AsyncClient",
    "BINARY_ENV",
    "Client",
    "PathArg",
    "Report",
    "ServiceError",
    "SwtbenchError",
    "Verdict",
    "__version__",
    "binary_path",
    "find_runs",
    "leaderboard",
    "leaderboard_rows",
    "load_report",
    "load_reports",
    "load_run_report",
    "model_dir_name",
]
