"""``python -m swtbench.report PATH [--dataset lite] …``: ``swtbench report``, in place of the
original harness's ``python -m src.report``.

To read a run's numbers from Python, use :func:`swtbench.leaderboard` instead.
"""

import sys

from swtbench._binary import exec_binary
from swtbench._cli import report_args


def main() -> None:
    exec_binary(report_args(sys.argv[1:]))


if __name__ == "__main__":
    main()
