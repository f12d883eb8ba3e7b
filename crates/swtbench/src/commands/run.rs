//! `swtbench run`: evaluate predictions end to end. The flags are `crate::args::RunArgs`; the
//! front end of [`swtbench_app::evaluate`]'s pipeline that resolves them into its settings, shows
//! its plan (`--dry-run`) or follows it with a progress display and an optional JSON Lines event
//! file, then prints the leaderboard table and the summary, is `crate::evaluation` (shared with
//! `verify --reexecute`).
//!
//! Exit codes: 0 every instance was graded (whatever the scores; an empty patch is graded), 1 some
//! were not (the summary's errors and skips; with `--skip-eval`, an instance whose outputs are
//! missing is an error), 2 bad input, 3 the container engine is unreachable (checked before any
//! work) or the engine or disk failed during the run, 130 interrupted (Ctrl-C).

use crate::args::RunArgs;
use crate::error::CliResult;
use crate::printer::Printer;

pub fn run(args: RunArgs, printer: &Printer) -> CliResult {
    crate::evaluation::run(&args, printer)
}
