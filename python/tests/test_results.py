"""The results API on a run graded by ``swtbench grade`` (fixture_run.py; no containers).

Expected numbers, by hand: 3 instances, denominator 3. Applied with tests: 91001 and 91002 (W 2/3);
resolved: 91001 (S 1/3); new F→P not in base: 91001 (F→X, F→P 1/3); new P→P not in base: 91002
(P→P 1/3). Coverage: 91001's report has Δpred 0.25 (see fixture_run), 91002's 1.0, 91003's null;
the gold run has two non-null Δgold (G 2) and the resolved 91001 has its own (Gr 1): Δᵃˡˡ
100·1.25/2, Δˢ 100·0.25/1, Δ¬ˢ 100·1.0/1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import fixture_run
import swtbench

A, B, C = sorted(fixture_run.INSTANCES)


def test_load_reports_gives_every_instance(model_dir: Path) -> None:
    reports = swtbench.load_reports(model_dir)
    assert list(reports) == [A, B, C]
    assert reports[A]["resolved"] is True
    assert reports[A]["added_f2p"] == 1
    assert reports[A]["tests_pred"]["FAIL_TO_PASS"] == ["tests/test_new.py::test_new"]
    assert reports[A]["coverage_delta_pred"] == 0.25
    assert reports[B]["resolved"] is False
    assert reports[B]["tests_pred"]["PASS_TO_PASS"] == ["tests/test_new.py::test_new"]
    assert reports[C]["patch_successfully_applied"] is False
    # Plain data: a str path works as well.
    assert swtbench.load_reports(str(model_dir)) == reports


def test_load_report_reads_one_instance(model_dir: Path) -> None:
    assert swtbench.load_report(model_dir, A)["coverage_pred"] == 0.75
    with pytest.raises(swtbench.SwtbenchError, match="no report for nope"):
        swtbench.load_report(model_dir, "nope")


def test_a_run_directory_is_refused_naming_the_model_directory(model_dir: Path) -> None:
    with pytest.raises(swtbench.SwtbenchError, match=fixture_run.MODEL_DIR):
        swtbench.load_reports(model_dir.parent)
    with pytest.raises(swtbench.SwtbenchError, match="not a directory"):
        swtbench.load_reports(model_dir / "missing")


def test_load_run_report(graded_run: Path) -> None:
    run = swtbench.load_run_report(
        fixture_run.RUN_ID, fixture_run.MODEL, graded_run / "evaluation_results"
    )
    assert run["resolved_ids"] == [A]
    assert run["unresolved_ids"] == [B, C]
    assert run["submitted_ids"] == [A, B, C]
    assert run["error_ids"] == []
    with pytest.raises(swtbench.SwtbenchError, match="no run report"):
        swtbench.load_run_report("other-run", fixture_run.MODEL, graded_run / "evaluation_results")


def test_find_runs(graded_run: Path) -> None:
    runs = swtbench.find_runs(graded_run / "run_instance_swt_logs")
    assert [(r["run_id"], r["model"]) for r in runs] == [
        (fixture_run.GOLD_RUN_ID, "gold"),
        (fixture_run.RUN_ID, fixture_run.MODEL_DIR),
    ]


def test_leaderboard_numbers(model_dir: Path) -> None:
    board = swtbench.leaderboard(model_dir, denominator=3)
    assert board["instances"] == 3 and board["denominator"] == 3
    assert board["applicability"] == pytest.approx(200 / 3)
    assert board["success_rate"] == pytest.approx(100 / 3)
    assert board["f_to_x"] == pytest.approx(100 / 3)
    assert board["f_to_p"] == pytest.approx(100 / 3)
    assert board["p_to_p"] == pytest.approx(100 / 3)
    assert board["coverage_delta_all"] == pytest.approx(62.5)
    assert board["coverage_delta_resolved"] == pytest.approx(25.0)
    assert board["coverage_delta_unresolved"] == pytest.approx(100.0)
    # Without a dataset, the run's own instances (its run report has the 3); a benchmark named,
    # its fixed denominator (Lite: 276).
    assert swtbench.leaderboard(model_dir)["denominator"] == 3
    lite = swtbench.leaderboard(model_dir, dataset="lite")
    assert lite["denominator"] == 276
    assert lite["success_rate"] == pytest.approx(100 / 276)


def test_leaderboard_without_a_gold_run_has_no_coverage(model_dir: Path, tmp_path: Path) -> None:
    import shutil

    alone = tmp_path / "logs" / "r" / "m"
    shutil.copytree(str(model_dir), str(alone))
    board = swtbench.leaderboard(alone, denominator=3)
    assert board["coverage_delta_all"] is None
    assert board["success_rate"] == pytest.approx(100 / 3)


def test_leaderboard_rows_are_the_table(model_dir: Path) -> None:
    rows = swtbench.leaderboard_rows(model_dir, denominator=3, name="mine", decimals=1)
    assert [r["label"] for r in rows][:5] == [
        "Applicability (W)",
        "Success Rate (S)",
        "F->X",
        "F->P",
        "P->P",
    ]
    assert {r["name"] for r in rows} == {"mine"}
    assert rows[0]["value"] == pytest.approx(66.7)
    assert rows[-1]["metric"] == "coverage_delta_unresolved"


def test_leaderboard_errors_carry_the_binarys_message(tmp_path: Path) -> None:
    with pytest.raises(swtbench.SwtbenchError) as err:
        swtbench.leaderboard(tmp_path / "nothing" / "here", denominator=3)
    assert err.value.returncode == 2
    assert "error:" in err.value.stderr
