//! The `swtbench` binary: parses the command line (defined in `swtbench_cli`), calls the library
//! pipelines, prints (stdout data, stderr people) and maps errors to exit codes.

mod cli;
mod cluster;
mod commands;
mod config_file;
mod error;
mod evaluation;
mod inputs;
mod printer;
mod service_jobs;

use clap::{CommandFactory, FromArgMatches, Parser};

fn main() {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let (cli, settings) = match parse(&argv) {
        Ok(parsed) => parsed,
        Err(err) => {
            let err = error::CliError::from(err);
            printer::Printer::new(false).error(&err);
            std::process::exit(err.code.as_i32());
        }
    };
    let printer = printer::Printer::new(cli.global.quiet);
    if let Some(text) = settings {
        printer.info(&text);
    }
    let code = match cli::dispatch(cli, &printer) {
        Ok(code) => code,
        Err(err) => {
            printer.error(&err);
            err.code
        }
    };
    std::process::exit(code.as_i32());
}

/// The command line, with the configuration file's values as the defaults of its flags, and a
/// line naming the file and what it set for the command that runs (none when it set nothing).
fn parse(argv: &[std::ffi::OsString]) -> swtbench_app::Result<(cli::Cli, Option<String>)> {
    let Some(config) = config_file::find(argv)? else {
        return Ok((cli::Cli::parse_from(argv), None));
    };
    config_file::remember(&config);
    let (matches, applied) = config_file::matches(cli::Cli::command(), &config, argv)?;
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let mut path = Vec::new();
    let mut m = &matches;
    while let Some((name, sub)) = m.subcommand() {
        path.push(name.to_string());
        m = sub;
    }
    // What the file set for the command that runs and the command line did not override.
    let used: Vec<String> = applied
        .iter()
        .filter(|a| a.command == path)
        .filter(|a| m.value_source(&a.id) == Some(clap::parser::ValueSource::DefaultValue))
        .map(|a| format!("--{} {}", a.long, a.values.join(" ")))
        .collect();
    let note = (!used.is_empty()).then(|| {
        format!(
            "settings from {}: {}",
            config.path.display(),
            used.join(", ")
        )
    });
    Ok((cli, note))
}
