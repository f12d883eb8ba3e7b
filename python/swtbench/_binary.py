"""Finding and starting the ``swtbench`` binary that the wheel installs into its scripts directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import List, NoReturn, Optional, Sequence

#: Names the binary's path explicitly (a cargo-built binary, or a wheel installed elsewhere).
BINARY_ENV = "SWTBENCH_BINARY"

_EXE = "swtbench.exe" if os.name == "nt" else "swtbench"


class SwtbenchError(RuntimeError):
    """A ``swtbench`` command or a run's files could not give what was asked.

    ``returncode`` is the binary's exit code when it ran (2 bad input, 3 unusable environment;
    see the README's exit codes), else ``None``; ``stderr`` is what it printed there.
    """

    def __init__(self, message: str, returncode: Optional[int] = None, stderr: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


def _user_scripts_dir() -> Optional[str]:
    if sys.version_info >= (3, 10):
        scheme = sysconfig.get_preferred_scheme("user")
    elif os.name == "nt":
        scheme = "nt_user"
    elif sys.platform == "darwin" and getattr(sys, "_framework", ""):
        scheme = "osx_framework_user"
    else:
        scheme = "posix_user"
    try:
        return sysconfig.get_path("scripts", scheme)
    except KeyError:
        return None


def _candidates() -> List[Path]:
    """Where an installation of the wheel puts the binary, most likely first."""
    dirs: List[Optional[str]] = [
        sysconfig.get_path("scripts"),  # a virtual environment, or the interpreter's own prefix
        _user_scripts_dir(),  # pip install --user
    ]
    found = [Path(d) / _EXE for d in dirs if d]
    # pip install --target DIR: the package is DIR/swtbench/, the binary DIR/bin/swtbench.
    here = Path(__file__).resolve().parent
    found.append(here.parent / ("Scripts" if os.name == "nt" else "bin") / _EXE)
    return found


def binary_path() -> str:
    """The path of the ``swtbench`` binary this package runs.

    ``$SWTBENCH_BINARY`` when set; else the binary the wheel installed beside this package (the
    environment's scripts directory, the user scheme's, or ``bin/`` next to a ``--target``
    installation); else ``swtbench`` on ``PATH``.
    """
    explicit = os.environ.get(BINARY_ENV)
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise SwtbenchError(
            f"${BINARY_ENV} is {explicit!r}, which is not an executable file; "
            f"point it at a swtbench binary, or unset it to use the one the wheel installed"
        )
    for candidate in _candidates():
        if candidate.is_file() and os.access(str(candidate), os.X_OK):
            return str(candidate)
    on_path = shutil.which(_EXE)
    if on_path:
        return on_path
    looked = ", ".join(str(c) for c in _candidates())
    raise SwtbenchError(
        f"the swtbench binary was not found (looked in {looked} and on PATH); reinstall the "
        f"package (pip install --force-reinstall swtbench, or pip install . in a checkout, which "
        f"needs a Rust toolchain), or set ${BINARY_ENV} to a swtbench binary"
    )


def exec_binary(args: Sequence[str]) -> NoReturn:
    """Replaces this process by ``swtbench ARGS`` (its output, signals and exit code are the
    binary's own); where exec is not available, runs it and exits with its code."""
    try:
        path = binary_path()
    except SwtbenchError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(3)
    argv = [path, *args]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if os.name == "nt":
            sys.exit(subprocess.call(argv))
        os.execv(path, argv)
    except OSError as e:
        print(
            f"error: could not start {path}: {e}\n"
            f"hint: the wheel carries a binary for one platform (linux x86_64 here); install the "
            f"wheel built for this machine, or build from source (pip install . in a checkout "
            f"with a Rust toolchain)",
            file=sys.stderr,
        )
        sys.exit(3)
    raise AssertionError("unreachable")  # pragma: no cover
