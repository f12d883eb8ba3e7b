//! The `swtbench` binary: command line, settings, error rendering and exit codes.
//! All work happens in the library crates; this crate wires them to the terminal.

fn main() {
    std::process::exit(0);
}
