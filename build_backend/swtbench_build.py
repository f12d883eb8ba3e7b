"""The build backend of `pip install .` (PEP 517): maturin's, with what a source install needs.

- No silent toolchain download. maturin fetches a Rust toolchain (about 1.2 GB) when `cargo` is
  not on PATH; here the build stops at once with a message saying what is missing and what to do.
  Set SWTBENCH_INSTALL_RUST=1 to let maturin download the toolchain anyway.
- No build output left in the checkout. The compiled crates (hundreds of MB) go to a temporary
  directory that is removed after the build, unless CARGO_TARGET_DIR names one (then it is used
  and kept, which makes a second build fast).

Everything else is maturin's own hook. maturin is imported only when a hook runs, so that this
module can be imported (and tested) without it.
"""

import os
import shutil
import tempfile

RUST_HINT = (
    "swtbench: building from source needs Rust's cargo, which is not on PATH.\n"
    "  Install Rust with rustup (https://rustup.rs), open a new shell, and run pip again;\n"
    "  or set SWTBENCH_INSTALL_RUST=1 to let the build download a toolchain (about 1.2 GB).\n"
    "  The build compiles for 10 to 20 minutes on 2 cores; `pip install -v .` shows its progress."
)


class MissingRust(SystemExit):
    """cargo is not on PATH and the user did not ask for a downloaded toolchain (a SystemExit:
    the hook's process prints the message, without a traceback, and exits with status 1)."""


def _require_cargo():
    if os.environ.get("SWTBENCH_INSTALL_RUST") == "1":
        return
    cargo = os.environ.get("CARGO")
    if cargo and os.path.isfile(cargo):
        return
    if shutil.which("cargo") is None:
        raise MissingRust(RUST_HINT)
    # Found: maturin must not fetch one either way.
    os.environ.setdefault("MATURIN_NO_INSTALL_RUST", "1")


def _maturin():
    import maturin  # noqa: PLC0415 (imported when a hook runs)

    return maturin


def _in_temporary_target(build):
    """Runs `build()` with CARGO_TARGET_DIR in a temporary directory removed afterwards, unless the
    user set CARGO_TARGET_DIR."""
    if os.environ.get("CARGO_TARGET_DIR"):
        return build()
    target = tempfile.mkdtemp(prefix="swtbench-build-")
    os.environ["CARGO_TARGET_DIR"] = target
    try:
        return build()
    finally:
        del os.environ["CARGO_TARGET_DIR"]
        shutil.rmtree(target, ignore_errors=True)


def get_requires_for_build_wheel(config_settings=None):
    _require_cargo()
    return _maturin().get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings=None):
    _require_cargo()
    m = _maturin()
    hook = getattr(m, "get_requires_for_build_editable", m.get_requires_for_build_wheel)
    return hook(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    # A source distribution compiles nothing: no cargo needed beyond what maturin asks.
    os.environ.setdefault("MATURIN_NO_INSTALL_RUST", "1")
    return _maturin().get_requires_for_build_sdist(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _require_cargo()
    return _maturin().prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _require_cargo()
    m = _maturin()
    return _in_temporary_target(
        lambda: m.build_wheel(wheel_directory, config_settings, metadata_directory)
    )


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _require_cargo()
    m = _maturin()
    return _in_temporary_target(
        lambda: m.build_editable(wheel_directory, config_settings, metadata_directory)
    )


def build_sdist(sdist_directory, config_settings=None):
    os.environ.setdefault("MATURIN_NO_INSTALL_RUST", "1")
    return _maturin().build_sdist(sdist_directory, config_settings)
