//! The `swtbench` binary: parses the command line, calls the library pipelines, prints (stdout data,
//! stderr people) and maps errors to exit codes.

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
