"""Shared fixtures of the Python package's tests.

They test the ``swtbench`` package that Python imports (the installed wheel in scripts/test-wheel;
from a checkout: ``PYTHONPATH=python SWTBENCH_BINARY=target/release/swtbench pytest python/tests``)
and the binary it finds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixture_run  # noqa: E402

import swtbench  # noqa: E402


def quiet_env(**extra: str) -> Dict[str, str]:
    """The environment of a test's ``swtbench``: offline (embedded datasets), no download cache
    or settings of the user's."""
    env = dict(os.environ)
    env["SWTBENCH_OFFLINE"] = "1"
    env.pop("SWTBENCH_NO_NETWORK", None)
    env.update(extra)
    return env


def run_module(args: List[str], cwd: Path, **env: str) -> "subprocess.CompletedProcess[str]":
    """``python -m ARGS`` with this interpreter."""
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=str(cwd),
        env=quiet_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
        timeout=300,
    )


@pytest.fixture(scope="session")
def binary() -> str:
    return swtbench.binary_path()


@pytest.fixture(scope="session")
def graded_run(tmp_path_factory: pytest.TempPathFactory, binary: str) -> Iterator[Path]:
    """The root of the fixture run tree, graded by ``swtbench grade`` (no containers)."""
    root = tmp_path_factory.mktemp("graded")
    fixture_run.build(root)
    proc = subprocess.run(
        [binary, *fixture_run.grade_args()],
        cwd=str(root),
        env=quiet_env(HOME=str(root), HF_HOME=str(root / "hf")),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    assert proc.returncode == 0, proc.stderr
    yield root


@pytest.fixture()
def model_dir(graded_run: Path) -> Path:
    return graded_run / "run_instance_swt_logs" / fixture_run.RUN_ID / fixture_run.MODEL_DIR
