//! The one place that writes to the terminal. stdout is for data (JSON, tables) and stderr for
//! people (progress, warnings, errors). `NO_COLOR` is honoured by the progress displays.
#![expect(
    clippy::print_stderr,
    reason = "this module is where the binary prints its messages on stderr"
)]

use std::io::Write;

use swtbench_app::lines::Line;

use crate::error::CliError;

#[derive(Debug, Clone, Copy)]
pub struct Printer {
    quiet: bool,
}

impl Printer {
    pub fn new(quiet: bool) -> Self {
        Printer { quiet }
    }

    /// Data for machines and pipes.
    pub fn data(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = out.write_all(b"\n");
        }
        let _ = out.flush();
    }

    /// A line for people (suppressed by --quiet).
    pub fn info(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }

    /// A warning (always shown).
    pub fn warn(&self, text: &str) {
        eprintln!("warning: {text}");
    }

    pub fn error(&self, err: &CliError) {
        eprintln!("{err}");
    }

    /// What a library call says (lines, or remarks), in order.
    pub fn lines<L: Clone + Into<Line>>(&self, lines: &[L]) {
        for l in lines {
            match l.clone().into() {
                Line::Data(d) => self.data(&d),
                Line::Info(i) => self.info(&i),
                Line::Warn(w) => self.warn(&w),
            }
        }
    }

    /// The progress display of `total` instances on stderr (bars on a terminal, in colour unless
    /// `NO_COLOR` says otherwise).
    pub fn progress(&self, total: usize) -> swtbench_reporter::Progress {
        use std::io::IsTerminal;
        let no_color = swtbench_app::env_vars::var_os(swtbench_app::env_vars::NO_COLOR);
        swtbench_reporter::Progress::new(
            self.quiet,
            std::io::stderr().is_terminal(),
            swtbench_reporter::progress::colors_allowed(no_color.as_deref()),
            total,
        )
    }

    pub fn is_quiet(&self) -> bool {
        self.quiet
    }
}
