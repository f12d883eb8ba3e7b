"""``python -m swtbench`` in place of the original's ``python -m src.main``, and
``python -m swtbench.report`` in place of ``python -m src.report``: the original's flags are
taken (or refused naming what to use), and the commands do what ``swtbench`` does."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import quiet_env, run_module

import fixture_run

# The original README's installation check, with python -m swtbench in place of python -m src.main.
SMOKE = [
    "--dataset_name",
    "princeton-nlp/SWE-bench_Lite",
    "--predictions_path",
    "gold",
    "--max_workers",
    "1",
    "--instance_ids",
    "sympy__sympy-20590",
    "--run_id",
    "validate-gold",
]


def _ok(proc: "subprocess.CompletedProcess[str]") -> str:
    """stdout of a command that must succeed."""
    assert proc.returncode == 0, f"exit code {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def _plan(proc: "subprocess.CompletedProcess[str]") -> str:
    """The plan `--dry-run` prints for people (on stderr)."""
    _ok(proc)
    return proc.stderr


def test_the_smoke_test_line_plans_the_instance(tmp_path: Path) -> None:
    out = _plan(run_module(["swtbench", *SMOKE, "--dry-run"], tmp_path))
    assert "plan for run validate-gold of model gold" in out
    assert "sympy__sympy-20590:" in out
    assert "1 instance(s): 1 to evaluate" in out
    # A plan writes nothing.
    assert list(tmp_path.iterdir()) == []


def test_the_smoke_test_line_plans_what_swtbench_run_plans(tmp_path: Path, binary: str) -> None:
    dropin = json.loads(_ok(run_module(["swtbench", *SMOKE, "--dry-run", "--json"], tmp_path)))
    native = subprocess.run(
        [binary, "run", "--dataset", "lite", "--predictions", "gold", "--max-workers", "1",
         "--instance-ids", "sympy__sympy-20590", "--run-id", "validate-gold", "--dry-run", "--json"],
        cwd=str(tmp_path), env=quiet_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    assert dropin == json.loads(_ok(native))


def test_every_flag_of_the_original_main_is_taken(tmp_path: Path) -> None:
    args = [
        "--dataset_name", "princeton-nlp/SWE-bench_Lite", "--is_swt", "False", "--filter_swt",
        "--split", "test", "--instance_ids", "sympy__sympy-20590", "--predictions_path", "gold",
        "--max_workers", "1", "--open_file_limit", "4096", "--patch_types", "vanilla",
        "--compute_coverage", "True", "--build_mode", "api", "--timeout", "1800",
        "--force_rebuild", "False", "--cache_level", "env", "--clean", "False",
        "--run_id", "validate-gold", "--skip_eval", "False", "--exec_mode", "unit_test",
        "--dry-run",
    ]
    out = _plan(run_module(["swtbench", *args], tmp_path))
    assert "sympy__sympy-20590:" in out


def test_reproduction_script_mode_as_the_readme_writes_it(tmp_path: Path) -> None:
    out = _plan(run_module(
        ["swtbench", *SMOKE, "--exec_mode", "reproduction_script",
         "--reproduction_script_name", "reproduce_bug.py", "--compute_coverage", "False",
         "--dry-run"],
        tmp_path,
    ))
    assert "reproduction_script mode" in out or "reproduction" in out


def test_report_module_prints_the_table(model_dir: Path, graded_run: Path, binary: str) -> None:
    rel = str(model_dir.relative_to(graded_run))
    out = _ok(run_module(["swtbench.report", rel, "--dataset", "lite"], graded_run))
    native = subprocess.run(
        [binary, "report", rel, "--dataset", "lite"], cwd=str(graded_run), env=quiet_env(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
    )
    assert out == _ok(native)
    assert "| Method" in out and fixture_run.RUN_ID in out
    # Lite's fixed denominator: one resolved instance of 276.
    assert str(100 * 1 / 276) in out


def test_report_takes_the_originals_seed_lists(model_dir: Path, tmp_path: Path) -> None:
    # Two samples of the model: runs s-1 and s-2, the same reports.
    for seed in ("1", "2"):
        shutil.copytree(str(model_dir), str(tmp_path / "logs" / f"s-{seed}" / "m"))
    for seeds in (["1", "2"], ["1,2"], ["[1,2]"], ["(1, 2)"], ["(2,)"]):
        out = _ok(run_module(
            ["swtbench.report", "logs/s-{seed}/m", "--mode", "p@k", "--seeds", *seeds,
             "--format", "json", "--denominator", "3"],
            tmp_path,
        ))
        assert json.loads(out)["success_rate"] == pytest.approx(100 / 3), seeds


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--mode", "libro"], "--mode"),
        (["--libro_decision_file", "decisions.jsonl"], "--libro_decision_file"),
        (["--libro-decision-file", "decisions.jsonl"], "--libro_decision_file"),
        (["--format", "latex_booktabs"], "--format"),
    ],
)
def test_report_refuses_what_it_does_not_take(
    model_dir: Path, graded_run: Path, args: list, named: str
) -> None:
    proc = run_module(["swtbench.report", str(model_dir), *args], graded_run)
    assert proc.returncode == 2, proc.stderr
    assert named in proc.stderr
    # ... and says what to use instead.
    assert "p@k" in proc.stderr or "expected github, latex" in proc.stderr


def test_an_unknown_flag_is_refused_by_name(tmp_path: Path) -> None:
    proc = run_module(["swtbench", *SMOKE, "--no_such_flag", "1", "--dry-run"], tmp_path)
    assert proc.returncode == 2
    assert "--no_such_flag" in proc.stderr
