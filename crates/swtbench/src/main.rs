//! The `swtbench` binary: command line, settings, error rendering and exit codes.
//!
//! All real work happens in the library crates; this crate parses arguments, resolves settings,
//! calls the libraries and renders their results and errors. stdout carries data, stderr people.

mod args;
mod cli;
mod cluster;
mod commands;
mod env_vars;
mod error;
mod evaluation;
mod printer;
mod settings;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let printer = printer::Printer::new(cli.global.quiet);
    let code = match cli::dispatch(cli, &printer) {
        Ok(code) => code,
        Err(err) => {
            printer.error(&err);
            err.code
        }
    };
    std::process::exit(code.as_i32());
}
