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
"""

from swtbench._binary import BINARY_ENV, SwtbenchError, binary_path
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
    "BINARY_ENV",
    "PathArg",
    "Report",
    "SwtbenchError",
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
