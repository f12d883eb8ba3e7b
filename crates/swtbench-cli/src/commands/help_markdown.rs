//! `swtbench help-markdown` (hidden): every command's long `--help` as Markdown, docs/commands.md
//! (checked by the `cli_docs` test).

/// The width the help text is wrapped at, whatever the terminal: the reference is the same on
/// every machine.
const WIDTH: usize = 100;

#[derive(Debug, clap::Args)]
pub struct HelpMarkdownArgs {}

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
