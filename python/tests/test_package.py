"""The installed package: its binary, version, help, and typing marker."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from conftest import quiet_env, run_module

import swtbench
from swtbench._cli import SUBCOMMANDS


def test_the_binary_reports_the_package_version(binary: str) -> None:
    out = subprocess.run(
        [binary, "--version"], stdout=subprocess.PIPE, universal_newlines=True, check=True
    ).stdout
    assert re.fullmatch(r"swtbench \d+\.\d+\.\d+\S*\n", out), out
    if swtbench.__version__ != "unknown":
        assert out.split()[1] == swtbench.__version__


def test_python_m_swtbench_help_is_the_binarys(tmp_path: Path, binary: str) -> None:
    proc = run_module(["swtbench", "--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    direct = subprocess.run(
        [binary, "--help"], stdout=subprocess.PIPE, universal_newlines=True, env=quiet_env()
    ).stdout
    assert proc.stdout == direct
    assert "Evaluate LLM-written test patches on SWT-Bench" in proc.stdout


def test_subcommand_list_matches_the_binary(binary: str) -> None:
    out = subprocess.run(
        [binary, "--help"], stdout=subprocess.PIPE, universal_newlines=True, check=True
    ).stdout
    commands = out.split("Commands:", 1)[1].split("Options:", 1)[0]
    names = {m.group(1) for m in re.finditer(r"^  (\S+)", commands, re.MULTILINE)}
    assert names == set(SUBCOMMANDS)


def test_the_package_is_typed() -> None:
    assert (Path(swtbench.__file__).parent / "py.typed").is_file()


def test_installed_where_expected() -> None:
    # scripts/test-wheel sets this: the tests must exercise the wheel, not the checkout.
    expected = os.environ.get("SWTBENCH_EXPECT_INSTALLED")
    if expected:
        assert "site-packages" in swtbench.__file__, swtbench.__file__
        assert swtbench.binary_path().startswith(expected), swtbench.binary_path()
