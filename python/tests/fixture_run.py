"""A small run tree in the original harness's layout, for grading without containers.

Three pytest-style instances of a made-up repository version, their six runs' outputs each (a
``set -x`` trace, ``git apply -v``, the traced test command, the tests' results, the coverage
dump), a model's predictions, and a gold run's reports. ``swtbench grade`` turns it into
per-instance ``report.json`` files and a run report:

- ``pytest-dev__pytest-91001``: the model's new test fails before the gold fix and passes after
  it; an old test passes throughout, in the base runs too → resolved, added F→P 1.
- ``pytest-dev__pytest-91002``: the model's new test passes before and after the fix → P→P only,
  not resolved.
- ``pytest-dev__pytest-91003``: the model's patch does not apply → not applied.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence

RUN_ID = "py-fixture-run"
MODEL = "org/fixture-model"
MODEL_DIR = "org__fixture-model"
GOLD_RUN_ID = "py-fixture-gold"
REPO = "pytest-dev/pytest"

CODE_FIX = (
    "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n"
    "@@ -1,5 +1,5 @@\n def f(x):\n-    y = x\n-    return y\n+    y = x + 1\n+    return y * 2\n \n def g():\n"
)


def new_file_patch(path: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1 @@\n+x = 1\n"
    )


MODEL_TESTS = "tests/test_new.py"
GOLD_TESTS = "tests/test_m.py"


def coverage(hits: Dict[int, int]) -> str:
    return json.dumps({"/testbed/src/m.py": {str(k): v for k, v in hits.items()}})


def _summary(results: Sequence[str]) -> str:
    """pytest's closing line: `1 failed, 1 passed`."""
    failed = sum(1 for r in results if r.startswith("FAILED"))
    passed = sum(1 for r in results if r.startswith("PASSED"))
    parts = [f"{n} {word}" for n, word in ((failed, "failed"), (passed, "passed")) if n]
    return ", ".join(parts) or "no tests ran"


def run_output(applied: bool, results: Sequence[str], covers: Sequence[str], tests: str) -> str:
    apply = (
        f"Checking patch {tests}...\nApplied patch {tests} cleanly.\n"
        if applied
        else f"error: patch failed: {tests}:1\nerror: {tests}: patch does not apply\n"
    )
    lines = [
        "+ source /opt/miniconda3/bin/activate",
        "+ cd /testbed",
        "+ git apply -v -",
        apply.rstrip("\n"),
        "+ python3 /root/trace.py --count -C coverage.cover --include-pattern "
        f"'/testbed/(src/m\\.py)' -m pytest --no-header -rA -p no:cacheprovider {tests}",
        "=========================== short test summary info ============================",
        *results,
        f"============================== {_summary(results)} in 0.01s ==============================",
        "+ cat coverage.cover",
        *covers,
        "+ git checkout 0123abcd",
        "+ git apply /root/pre_state.patch",
    ]
    return "\n".join(lines) + "\n"


def _outputs(kind: str) -> List[str]:
    """pred_pre, pred_post, gold_pre, gold_post, base_pre, base_post of one instance kind."""
    new, old, fix = (f"{MODEL_TESTS}::test_new", f"{MODEL_TESTS}::test_old", f"{GOLD_TESTS}::test_fix")
    gold = [
        run_output(True, [f"FAILED {fix} - assert 0"], [coverage({1: 1, 2: 1, 3: 1})], GOLD_TESTS),
        run_output(True, [f"PASSED {fix}"], [coverage({1: 1, 2: 2, 3: 2})], GOLD_TESTS),
    ]
    if kind == "resolved":
        pred = [
            run_output(True, [f"FAILED {new} - assert 0", f"PASSED {old}"], [coverage({2: 1, 3: 0})], MODEL_TESTS),
            run_output(True, [f"PASSED {new}", f"PASSED {old}"], [coverage({2: 1}), coverage({3: 1})], MODEL_TESTS),
        ]
        base = [
            run_output(False, [f"PASSED {old}"], [coverage({1: 1, 2: 0, 3: 0})], MODEL_TESTS),
            run_output(False, [f"PASSED {old}"], [coverage({1: 1, 2: 5, 3: 0})], MODEL_TESTS),
        ]
    elif kind == "pass-pass":
        pred = [
            run_output(True, [f"PASSED {new}"], [coverage({2: 1, 3: 1})], MODEL_TESTS),
            run_output(True, [f"PASSED {new}"], [coverage({2: 1, 3: 1})], MODEL_TESTS),
        ]
        base = [run_output(False, [], [], MODEL_TESTS), run_output(False, [], [], MODEL_TESTS)]
    else:  # not applied
        pred = [
            run_output(False, [f"PASSED {new}"], [coverage({2: 1})], MODEL_TESTS),
            run_output(False, [f"PASSED {new}"], [coverage({2: 1})], MODEL_TESTS),
        ]
        base = [run_output(False, [], [], MODEL_TESTS), run_output(False, [], [], MODEL_TESTS)]
    return pred + gold + base


INSTANCES = {
    "pytest-dev__pytest-91001": "resolved",
    "pytest-dev__pytest-91002": "pass-pass",
    "pytest-dev__pytest-91003": "not-applied",
}

#: The gold run's coverage_delta_gold per instance (only that matters to the table).
GOLD_DELTAS: Dict[str, Optional[float]] = {
    "pytest-dev__pytest-91001": 1.0,
    "pytest-dev__pytest-91002": 0.5,
    "pytest-dev__pytest-91003": None,
}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def build(root: Path) -> None:
    """Writes dataset.jsonl, predictions.jsonl and run_instance_swt_logs/ under ``root``."""
    logs = root / "run_instance_swt_logs"
    rows, preds = [], []
    for instance_id, kind in INSTANCES.items():
        rows.append(
            {
                "instance_id": instance_id,
                "repo": REPO,
                "version": "0.1",
                "base_commit": "0123abcd",
                "patch": CODE_FIX,
                "test_patch": new_file_patch(GOLD_TESTS),
                "problem_statement": "made up",
                "FAIL_TO_PASS": "[]",
                "PASS_TO_PASS": "[]",
            }
        )
        model_patch = new_file_patch(MODEL_TESTS)
        preds.append(
            {"instance_id": instance_id, "model_name_or_path": MODEL, "model_patch": model_patch}
        )
        # The shared gold/base runs are keyed by the SHA-256 of their joined test directives.
        gold_key, base_key = _sha256(GOLD_TESTS), _sha256(MODEL_TESTS)
        dirs = [
            logs / RUN_ID / f"pred_pre__{MODEL_DIR}" / instance_id,
            logs / RUN_ID / f"pred_post__{MODEL_DIR}" / instance_id,
            logs / "gold_pre" / instance_id / gold_key,
            logs / "gold_post" / instance_id / gold_key,
            logs / "base_pre" / instance_id / base_key,
            logs / "base_post" / instance_id / base_key,
        ]
        _write(dirs[0] / "model_patch.diff", model_patch)
        for directory, output in zip(dirs, _outputs(kind)):
            _write(directory / "test_output.txt", output)
        delta = GOLD_DELTAS[instance_id]
        gold_report = {
            instance_id: {
                "patch_is_None": False,
                "patch_exists": True,
                "patch_successfully_applied": True,
                "resolved": True,
                "coverage_pred": delta,
                "coverage_gold": delta,
                "coverage_base": 0.0,
                "coverage_delta_pred": delta,
                "coverage_delta_gold": delta,
            }
        }
        _write(logs / GOLD_RUN_ID / "gold" / instance_id / "report.json", json.dumps(gold_report, indent=4))
    _write(root / "dataset.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    _write(root / "predictions.jsonl", "".join(json.dumps(p) + "\n" for p in preds))


def grade_args() -> List[str]:
    """The ``swtbench`` arguments that grade the tree (run in ``root``)."""
    return [
        "grade",
        "--dataset",
        "dataset.jsonl",
        "--predictions",
        "predictions.jsonl",
        "--run-id",
        RUN_ID,
        "--offline",
    ]


if __name__ == "__main__":
    import sys

    build(Path(sys.argv[1]))
