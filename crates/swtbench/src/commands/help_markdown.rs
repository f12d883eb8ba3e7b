//! `swtbench help-markdown` (hidden): the command reference as Markdown, every command's and
//! subcommand's long `--help` in order, rendered from the same clap definitions `--help` prints.
//! `docs/commands.md` is this output; the `cli_docs` test fails when the two differ.

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

/// The Markdown reference: a contents list, then one section per (sub)command with its long help
/// in a text block. Hidden commands and environment variables' current values are left out.
pub fn reference(cli: clap::Command) -> String {
    let mut cmd = cli.term_width(WIDTH).max_term_width(WIDTH);
    cmd.build();
    let mut sections = Vec::new();
    collect(&mut cmd, &mut sections);

    let mut out = String::new();
    out.push_str("# Command reference\n\n");
    out.push_str(
        "<!-- Generated from the command-line definitions by `swtbench help-markdown`; do not edit.\n     \
         Regenerate: SWTBENCH_BLESS=1 cargo test -p swtbench --test it cli_docs -->\n\n",
    );
    out.push_str(
        "Every command's `--help`, as the binary prints it. How the commands behave and fit \
         together,\nwith worked examples, is in [usage.md](usage.md).\n\n",
    );
    for (name, _) in &sections {
        out.push_str(&format!("- [`{name}`](#{})\n", anchor(name)));
    }
    for (name, help) in &sections {
        out.push_str(&format!(
            "\n## {name}\n\n```text\n{}\n```\n",
            help.trim_end()
        ));
    }
    out
}

fn collect(cmd: &mut clap::Command, sections: &mut Vec<(String, String)>) {
    let name = cmd
        .get_bin_name()
        .map(str::to_string)
        .unwrap_or_else(|| cmd.get_name().to_string());
    let mut shown = cmd.clone().mut_args(|a| a.hide_env_values(true));
    let help = shown.render_long_help().to_string();
    let help = help
        .lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n");
    sections.push((name, help));
    for sub in cmd.get_subcommands_mut() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        collect(sub, sections);
    }
}

/// GitHub's heading anchor: lower case, spaces to dashes, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}
