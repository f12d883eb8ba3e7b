//! The `swtbench` binary: parses the command line (defined in `swtbench_cli`), calls the library
//! pipelines, prints (stdout data, stderr people) and maps errors to exit codes.

mod cli;
mod cluster;
mod commands;
mod error;
mod evaluation;
mod inputs;
mod printer;

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
