"""The source build's backend (build_backend/swtbench_build.py): a missing cargo stops the build at
once with a message instead of a toolchain download, and the compiled crates do not stay in the
checkout. maturin itself is replaced by a stand-in module that records how it was called."""

import importlib.util
import os
import sys
import types
from pathlib import Path

import pytest

BACKEND = Path(__file__).resolve().parents[2] / "build_backend" / "swtbench_build.py"


def load_backend():
    spec = importlib.util.spec_from_file_location("swtbench_build_under_test", BACKEND)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def backend(monkeypatch):
    for var in ("CARGO", "CARGO_TARGET_DIR", "SWTBENCH_INSTALL_RUST", "MATURIN_NO_INSTALL_RUST"):
        monkeypatch.delenv(var, raising=False)
    calls = []
    stand_in = types.ModuleType("maturin")

    def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
        target = os.environ.get("CARGO_TARGET_DIR")
        calls.append(("build_wheel", target, os.path.isdir(target or "")))
        return "swtbench-0-py3-none-any.whl"

    stand_in.build_wheel = build_wheel
    stand_in.get_requires_for_build_wheel = lambda cs=None: calls.append(("requires",)) or []
    monkeypatch.setitem(sys.modules, "maturin", stand_in)
    module = load_backend()
    module.calls = calls
    return module


def test_without_cargo_the_build_stops_with_what_to_do(backend, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(backend.MissingRust) as err:
        backend.get_requires_for_build_wheel()
    assert "needs Rust's cargo, which is not on PATH" in str(err.value)
    assert "rustup" in str(err.value)
    assert backend.calls == [], "maturin was asked for its requirements (it adds a toolchain download)"
    with pytest.raises(backend.MissingRust):
        backend.build_wheel("/tmp")
    # Asked for, the download is maturin's to make.
    monkeypatch.setenv("SWTBENCH_INSTALL_RUST", "1")
    assert backend.get_requires_for_build_wheel() == []
    assert backend.calls == [("requires",)]


def test_the_compiled_crates_go_to_a_temporary_directory_removed_after(backend, tmp_path, monkeypatch):
    cargo = tmp_path / "cargo"
    cargo.write_text("#!/bin/sh\n")
    cargo.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert backend.build_wheel(str(tmp_path)) == "swtbench-0-py3-none-any.whl"
    (_, target, existed) = backend.calls[-1]
    assert existed and "swtbench-build-" in target
    assert not os.path.exists(target), "the temporary target directory was left"
    assert "CARGO_TARGET_DIR" not in os.environ
    assert os.environ.get("MATURIN_NO_INSTALL_RUST") == "1"
    # A target directory the user names is used and kept.
    mine = tmp_path / "target"
    mine.mkdir()
    monkeypatch.setenv("CARGO_TARGET_DIR", str(mine))
    backend.build_wheel(str(tmp_path))
    assert backend.calls[-1][1] == str(mine) and mine.is_dir()
