//! `swtbench help-markdown` (hidden): every command's long `--help` as Markdown, docs/commands.md
//! (checked by the `cli_docs` test).

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

/// The width the help text is wrapped at, whatever the terminal: the reference is the same on
/// every machine.
const WIDTH: usize = 100;

#[derive(Debug, clap::Args)]
pub struct HelpMarkdownArgs {}

/// Prints the reference of `cli`, the whole command line's definition.
pub fn run(_args: HelpMarkdownArgs, cli: clap::Command, printer: &Printer) -> CliResult {
    printer.data(&reference(cli));
    Ok(ExitCode::Success)
}

/// The Markdown reference of `cli`, hidden commands and environment variables' values left out.
pub fn reference(cli: clap::Command) -> String {
    let mut cmd = cli.term_width(WIDTH).max_term_width(WIDTH);
    cmd.build();
    let mut sections = Vec::new();
    collect(&mut cmd, &mut sections);
    swtbench_app::command_reference::markdown(&sections)
}

fn collect(cmd: &mut clap::Command, sections: &mut Vec<(String, String)>) {
    let name = cmd
        .get_bin_name()
        .map(str::to_string)
        .unwrap_or_else(|| cmd.get_name().to_string());
    let mut shown = cmd.clone().mut_args(|a| a.hide_env_values(true));
    sections.push((name, shown.render_long_help().to_string()));
    for sub in cmd.get_subcommands_mut() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        collect(sub, sections);
    }
}
