"""How ``python -m swtbench`` and ``python -m swtbench.report`` turn their arguments into the
binary's (no binary needed)."""

from swtbench._cli import SUBCOMMANDS, main_args, report_args

SMOKE = [
    "--dataset_name",
    "princeton-nlp/SWE-bench_Lite",
    "--predictions_path",
    "gold",
    "--max_workers",
    "1",
    "--instance_ids",
    "sympy__sympy-20590",
    "--run_id",
    "validate-gold",
]


def test_the_original_command_line_is_a_run() -> None:
    assert main_args(SMOKE) == ["run", *SMOKE]
    assert main_args(["--predictions_path=gold", "--run_id=x"]) == [
        "run",
        "--predictions_path=gold",
        "--run_id=x",
    ]


def test_global_quiet_stays_in_front() -> None:
    assert main_args(["-q", *SMOKE]) == ["-q", "run", *SMOKE]
    assert main_args(["--quiet", "report", "p"]) == ["--quiet", "report", "p"]


def test_subcommands_and_own_flags_pass_through() -> None:
    for sub in sorted(SUBCOMMANDS):
        assert main_args([sub, "--help"]) == [sub, "--help"]
    for flag in ["--help", "-h", "--version", "-V"]:
        assert main_args([flag]) == [flag]
    assert main_args([]) == []
    assert main_args(["-q"]) == ["-q"]
    # An unknown word is the binary's to refuse.
    assert main_args(["evaluate", "--x"]) == ["evaluate", "--x"]


def test_report_module_is_the_report_command() -> None:
    assert report_args(["run_instance_swt_logs/r/m", "--dataset", "lite"]) == [
        "report",
        "run_instance_swt_logs/r/m",
        "--dataset",
        "lite",
    ]
