"""``python -m swtbench ARGS``: the ``swtbench`` binary, with the original harness's command line
(``python -m src.main --predictions_path … --run_id …``) read as ``swtbench run …``."""

import sys

from swtbench._binary import exec_binary
from swtbench._cli import main_args


def main() -> None:
    exec_binary(main_args(sys.argv[1:]))


if __name__ == "__main__":
    main()
