"""The original harness's command lines, as ``swtbench`` takes them.

``python -m src.main --dataset_name … --predictions_path … --run_id …`` has no subcommand: its
flags are those of ``swtbench run``, which accepts the original's snake_case spellings. So a
command line whose first word (after the global ``-q/--quiet``) is a flag, and not one of the
binary's own (``--help``, ``--version``), is a ``run`` command line.
"""

from __future__ import annotations

from typing import List, Sequence

#: The binary's subcommands (python/tests checks this against ``swtbench --help``).
SUBCOMMANDS = frozenset(
    {
        "validate",
        "datasets",
        "parse-log",
        "grade",
        "verify",
        "report",
        "spec",
        "dataset",
        "run",
        "serve",
        "worker",
        "images",
        "envs",
        "clean",
        "slurm",
        "extract",
        "k8s",
        "help",
    }
)

_GLOBAL_FLAGS = frozenset({"-q", "--quiet"})
_OWN_FLAGS = frozenset({"-h", "--help", "-V", "--version"})


def main_args(argv: Sequence[str]) -> List[str]:
    """The ``swtbench`` arguments for ``python -m swtbench ARGV``: ARGV itself, with ``run``
    put in front of a command line in the original's form (flags only)."""
    args = list(argv)
    i = 0
    while i < len(args) and args[i] in _GLOBAL_FLAGS:
        i += 1
    if i == len(args):
        return args
    first = args[i]
    if first in SUBCOMMANDS or first in _OWN_FLAGS or not first.startswith("-"):
        return args
    return args[:i] + ["run"] + args[i:]


def report_args(argv: Sequence[str]) -> List[str]:
    """The ``swtbench`` arguments for ``python -m swtbench.report ARGV``."""
    return ["report", *argv]
