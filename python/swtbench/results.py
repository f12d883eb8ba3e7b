"""Reading a run's results as plain Python data, without containers.

A run's files are in the original harness's layout (see docs/usage.md, *Output layout*):
``<logs root>/<run_id>/<model>/<instance>/report.json`` per instance, and
``evaluation_results/<model>.<run_id>.json`` for the run. The leaderboard numbers come from the
``swtbench`` binary (``swtbench report --format json|csv``), so they are the ones the command line
prints.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from swtbench._binary import SwtbenchError, binary_path

#: A path given as a string or a :class:`os.PathLike`.
PathArg = Union[str, "os.PathLike[str]"]

#: One instance's report: the object inside its ``report.json`` (``resolved``,
#: ``patch_successfully_applied``, ``tests_pred``, ``tests_base``, ``coverage_*``, ...).
Report = Dict[str, Any]

__all__ = [
    "PathArg",
    "Report",
    "find_runs",
    "leaderboard",
    "leaderboard_rows",
    "load_report",
    "load_reports",
    "load_run_report",
    "model_dir_name",
]


def model_dir_name(model: str) -> str:
    """The directory (and file name part) of ``model_name_or_path``: ``/`` becomes ``__``."""
    return model.replace("/", "__")


def _read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise SwtbenchError(f"cannot read {path}: {e.strerror or e}") from e
    except ValueError as e:
        raise SwtbenchError(f"{path} is not valid JSON ({e}); was the run interrupted while writing it?") from e


def _unwrap(path: Path, data: Any) -> Tuple[str, Report]:
    if isinstance(data, dict) and len(data) == 1:
        ((instance_id, report),) = data.items()
        if isinstance(report, dict):
            return str(instance_id), report
    raise SwtbenchError(
        f"{path} is not a per-instance report (expected {{\"<instance id>\": {{...}}}}); pass a "
        f"model's report directory, <logs root>/<run_id>/<model>"
    )


def _model_dirs_hint(path: Path) -> str:
    """When PATH is a run directory, the model directories under it to pass instead."""
    models = sorted(
        p.name[len("pred_pre__"):]
        for p in path.glob("pred_pre__*")
        if p.is_dir()
    )
    if not models:
        return ""
    return "; it looks like a run directory: pass " + " or ".join(str(path / m) for m in models)


def load_reports(path: PathArg) -> Dict[str, Report]:
    """Every instance report of one model's run, by instance id, sorted by id.

    ``path`` is ``<logs root>/<run_id>/<model>`` (e.g.
    ``run_instance_swt_logs/my-run/org__my-model``), as for ``swtbench report``. Instances
    without a ``report.json`` (not graded yet, or errors) are absent.
    """
    root = Path(path)
    if not root.is_dir():
        raise SwtbenchError(
            f"{root} is not a directory; pass a model's report directory, "
            f"<logs root>/<run_id>/<model> (e.g. run_instance_swt_logs/my-run/org__my-model)"
        )
    reports: Dict[str, Report] = {}
    for file in sorted(root.glob("*/report.json")):
        instance_id, report = _unwrap(file, _read_json(file))
        reports[instance_id] = report
    if not reports:
        hint = _model_dirs_hint(root)
        if hint:
            raise SwtbenchError(f"{root} holds no instance reports{hint}")
    return dict(sorted(reports.items()))


def load_report(path: PathArg, instance_id: str) -> Report:
    """One instance's report from the model's report directory ``path`` (see
    :func:`load_reports`)."""
    file = Path(path) / instance_id / "report.json"
    if not file.is_file():
        raise SwtbenchError(
            f"no report for {instance_id} ({file} does not exist): the instance was not graded "
            f"in this run, or errored (see the run report's error_reasons)"
        )
    found_id, report = _unwrap(file, _read_json(file))
    if found_id != instance_id:
        raise SwtbenchError(f"{file} is the report of {found_id}, not of {instance_id}")
    return report


def load_run_report(
    run_id: str, model: str, results_dir: PathArg = "evaluation_results"
) -> Dict[str, Any]:
    """The run report ``<results_dir>/<model>.<run_id>.json`` (``resolved_ids``,
    ``error_ids``, ``error_reasons``, ...). ``model`` is ``model_name_or_path`` (``/`` or
    ``__``)."""
    file = Path(results_dir) / f"{model_dir_name(model)}.{run_id}.json"
    if not file.is_file():
        raise SwtbenchError(
            f"no run report {file}; the run writes it at its end (or `swtbench grade` does), "
            f"into --output-dir/evaluation_results"
        )
    data = _read_json(file)
    if not isinstance(data, dict):
        raise SwtbenchError(f"{file} is not a run report (not a JSON object)")
    return data


def find_runs(logs_root: PathArg = "run_instance_swt_logs") -> List[Dict[str, str]]:
    """The graded runs under ``logs_root``: ``{"run_id", "model", "path"}`` for every
    ``<run_id>/<model>`` directory holding at least one ``report.json``, sorted."""
    root = Path(logs_root)
    if not root.is_dir():
        raise SwtbenchError(f"{root} is not a directory (the logs root, run_instance_swt_logs)")
    found = []
    for model_dir in sorted(root.glob("*/*")):
        if model_dir.is_dir() and any(model_dir.glob("*/report.json")):
            found.append(
                {"run_id": model_dir.parent.name, "model": model_dir.name, "path": str(model_dir)}
            )
    return found


def _report_command(
    path: PathArg,
    fmt: str,
    dataset: Optional[str],
    denominator: Optional[int],
    gold_run_id: Optional[str],
    name: Optional[str],
    seeds: Optional[Sequence[Union[str, int]]],
    decimals: Optional[int],
    spec_table: Optional[PathArg],
) -> str:
    args = [binary_path(), "--quiet", "report", os.fspath(path), "--format", fmt]
    if dataset is not None:
        args += ["--dataset", dataset]
    if denominator is not None:
        args += ["--denominator", str(denominator)]
    if gold_run_id is not None:
        args += ["--gold-run-id", gold_run_id]
    if name is not None:
        args += ["--name", name]
    if seeds:
        args += ["--mode", "p@k", "--seeds", *(str(s) for s in seeds)]
    if decimals is not None:
        args += ["--decimals", str(decimals)]
    if spec_table is not None:
        args += ["--spec-table", os.fspath(spec_table)]
    proc = subprocess.run(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True
    )
    if proc.returncode != 0:
        message = proc.stderr.strip() or f"exit code {proc.returncode}"
        raise SwtbenchError(
            f"swtbench report {os.fspath(path)} failed: {message}", proc.returncode, proc.stderr
        )
    return proc.stdout


def leaderboard(
    path: PathArg,
    *,
    dataset: Optional[str] = None,
    denominator: Optional[int] = None,
    gold_run_id: Optional[str] = None,
    seeds: Optional[Sequence[Union[str, int]]] = None,
    spec_table: Optional[PathArg] = None,
) -> Dict[str, Any]:
    """The leaderboard numbers of one model's run, as ``swtbench report PATH --format json``
    prints them.

    Keys: ``applicability``, ``success_rate``, ``f_to_x``, ``f_to_p``, ``p_to_p`` and
    ``coverage_delta_all``, ``coverage_delta_resolved``, ``coverage_delta_unresolved`` (percent
    of the denominator; the coverage ones ``None`` without a gold run under the same logs root),
    ``instances`` and ``denominator`` (what the percentages are of). ``dataset`` is ``lite``
    (276 instances), ``verified`` (433), ``full`` (1983) or a dataset file (its instances);
    without it the denominator is the run's own number of instances, from its run report
    ``evaluation_results/<model>.<run_id>.json`` beside the logs root (Lite's 276, with a warning
    on stderr, when there is none); ``denominator`` overrides both; ``seeds`` selects p@k over
    the runs ``path`` names with ``{seed}``.
    """
    out = _report_command(
        path, "json", dataset, denominator, gold_run_id, None, seeds, None, spec_table
    )
    try:
        data = json.loads(out)
    except ValueError as e:
        raise SwtbenchError(f"swtbench report printed no JSON ({e}): {out[:200]!r}") from e
    if not isinstance(data, dict):
        raise SwtbenchError(f"swtbench report printed {type(data).__name__}, not an object")
    return data


def leaderboard_rows(
    path: PathArg,
    *,
    dataset: Optional[str] = None,
    denominator: Optional[int] = None,
    gold_run_id: Optional[str] = None,
    name: Optional[str] = None,
    seeds: Optional[Sequence[Union[str, int]]] = None,
    decimals: Optional[int] = None,
    spec_table: Optional[PathArg] = None,
) -> List[Dict[str, Any]]:
    """The leaderboard table's rows in order, as ``swtbench report --format csv`` prints them:
    ``{"name", "metric", "label", "value"}`` with ``value`` a float (``None`` for a coverage row
    without a gold run) and ``label`` the table's row label (``Applicability (W)``, ...)."""
    out = _report_command(
        path, "csv", dataset, denominator, gold_run_id, name, seeds, decimals, spec_table
    )
    rows: List[Dict[str, Any]] = []
    for row in csv.DictReader(io.StringIO(out)):
        value = row.get("value") or ""
        rows.append(
            {
                "name": row.get("name"),
                "metric": row.get("metric"),
                "label": row.get("label"),
                "value": float(value) if value else None,
            }
        )
    return rows
