//! [`RunScanner`]: one run's output graded piece by piece, so that grading a log of hundreds of
//! megabytes does not need it in memory. Fed the bytes in any pieces, it gives exactly the
//! [`ParsedRun`] that [`crate::logs::parse_run`] gives for the whole output, or says that it
//! cannot and the whole output must be parsed instead.
//!
//! It can for the parsers whose result is a fold over lines (every pytest-style parser and
//! seaborn's: a line's entry depends on that line alone, and a later entry replaces an earlier
//! one), when the output holds no output-cap marker (whose removal looks at the lines around it;
//! a capped output is small anyway). The rest of [`crate::logs::parse_text`]'s pre-processing is
//! followed line by line: the failure markers and `applied patch` anywhere (none spans a line
//! end), the test section between the echoed trace command and the next one or the
//! `+ cat coverage.cover` line, with and without the trace marker at once (whether it appears
//! anywhere is known only at the end). Bytes are decoded piece by piece at line ends, where
//! UTF-8 decoding, replacement of invalid bytes and universal newlines give what they give on the
//! whole text.
//!
//! Pure: the caller reads the file.

use swtbench_core::StatusMap;

use crate::coverage::DumpScanner;
use crate::logs::{
    contains_applied_patch, LogNote, ParsedLog, ParsedRun, FAILURE_MARKERS, TRACE_MARKER,
};
use crate::parsers::Parser;
use crate::py;

/// Section text collected before it is handed to the parser.
const BATCH: usize = 1 << 20;

/// See the module documentation.
#[derive(Debug)]
pub struct RunScanner {
    parser: Parser,
    /// Bytes after the last line end seen.
    pending: Vec<u8>,
    lossy: bool,
    applied: bool,
    failure: bool,
    cut_marker: bool,
    trace_marker: bool,
    /// Lines seen so far (the first line can never be the echoed trace command: its pattern
    /// starts with a line end).
    lines: u64,
    /// The test section if the trace marker turns out not to appear.
    plain: Section,
    /// The test section if it does.
    traced: Section,
    dump: DumpScanner,
}

impl RunScanner {
    /// `None` when `parser`'s result is not a fold over lines (Django's, sympy's, the
    /// reproduction script's): parse the whole output then.
    pub fn new(parser: Parser) -> Option<RunScanner> {
        let line_local = matches!(
            parser,
            Parser::Pytest
                | Parser::PytestOptions
                | Parser::PytestV2
                | Parser::Seaborn
                | Parser::Matplotlib
        );
        line_local.then(|| RunScanner {
            parser,
            pending: Vec::new(),
            lossy: false,
            applied: false,
            failure: false,
            cut_marker: false,
            trace_marker: false,
            lines: 0,
            plain: Section::new(parser, SectionState::In { first: true }),
            traced: Section::new(parser, SectionState::Before),
            dump: DumpScanner::default(),
        })
    }

    /// Feeds the next bytes of the output.
    pub fn push(&mut self, bytes: &[u8]) {
        match memchr::memrchr(b'\n', bytes) {
            None => self.pending.extend_from_slice(bytes),
            Some(i) => {
                if self.pending.is_empty() {
                    self.piece(&bytes[..=i]);
                } else {
                    let mut piece = std::mem::take(&mut self.pending);
                    piece.extend_from_slice(&bytes[..=i]);
                    self.piece(&piece);
                }
                self.pending.extend_from_slice(&bytes[i + 1..]);
            }
        }
    }

    /// A piece of the output ending at a line end (or the output's end).
    fn piece(&mut self, bytes: &[u8]) {
        let (text, lossy) = py::read_text(bytes);
        self.lossy |= lossy;
        let found = |needle: &str| memchr::memmem::find(text.as_bytes(), needle.as_bytes());
        self.applied = self.applied || contains_applied_patch(&text);
        self.failure = self.failure || FAILURE_MARKERS.iter().any(|m| found(m).is_some());
        self.cut_marker = self.cut_marker || found(" bytes of output omitted]").is_some();
        self.trace_marker = self.trace_marker || found(TRACE_MARKER).is_some();
        for line in text.split_inclusive('\n') {
            self.dump.line(line);
            let (body, ended) = match line.strip_suffix('\n') {
                Some(b) => (b, true),
                None => (line, false),
            };
            let first = self.lines == 0;
            self.plain.line(body, first, ended);
            self.traced.line(body, first, ended);
            self.lines += 1;
        }
    }

    /// What the whole output parses to; `None` when it holds an output-cap marker and must be
    /// parsed whole ([`crate::logs::parse_run`]).
    pub fn finish(mut self) -> Option<ParsedRun> {
        if !self.pending.is_empty() {
            let rest = std::mem::take(&mut self.pending);
            self.piece(&rest);
        }
        if self.cut_marker {
            return None;
        }
        let mut log = if self.failure {
            ParsedLog {
                present: true,
                applied: false,
                tests: StatusMap::new(),
                notes: vec![LogNote::FailureMarker],
            }
        } else {
            let section = if self.trace_marker {
                self.traced
            } else {
                self.plain
            };
            let mut notes = Vec::new();
            let tests = match section.finish() {
                Some(tests) => tests,
                None => {
                    notes.push(LogNote::TraceSplitFailed);
                    self.parser.parse("")
                }
            };
            ParsedLog {
                present: true,
                applied: self.applied,
                tests,
                notes,
            }
        };
        if self.lossy {
            log.notes.insert(0, LogNote::InvalidUtf8);
        }
        Some(ParsedRun {
            log,
            coverage: self.dump.finish(),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectionState {
    /// Before the echoed trace command.
    Before,
    /// In the section; `first`: the next line is its first.
    In {
        first: bool,
    },
    Done,
}

/// One hypothesis about where the test section is, and the parse of what it held so far.
#[derive(Debug)]
struct Section {
    parser: Parser,
    state: SectionState,
    batch: String,
    tests: StatusMap,
}

impl Section {
    fn new(parser: Parser, state: SectionState) -> Section {
        Section {
            parser,
            state,
            batch: String::new(),
            tests: StatusMap::new(),
        }
    }

    /// A line of the output (without its line end; `ended`: it had one); `first_of_text`: it is
    /// the output's first line.
    fn line(&mut self, line: &str, first_of_text: bool, ended: bool) {
        match self.state {
            SectionState::Before => {
                if !first_of_text && ended && is_trace_line(line) {
                    self.state = SectionState::In { first: true };
                }
            }
            SectionState::In { first } => {
                // The next echoed trace command ends the section, and so does the coverage
                // dump's `cat`; neither can be the section's first line (the line end before
                // it belongs to the command that starts the section, or there is none).
                let ends = !first
                    && ((ended && is_trace_line(line)) || line.starts_with("+ cat coverage.cover"));
                if ends {
                    self.state = SectionState::Done;
                    self.flush();
                    return;
                }
                self.state = SectionState::In { first: false };
                self.batch.push_str(line);
                self.batch.push('\n');
                if self.batch.len() >= BATCH {
                    self.flush();
                }
            }
            SectionState::Done => {}
        }
    }

    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        // A later entry replaces an earlier one, as in one pass over the whole section.
        self.tests.extend(self.parser.parse(&self.batch));
        self.batch.clear();
    }

    /// The section's tests; `None` when it never started (no echoed trace command).
    fn finish(mut self) -> Option<StatusMap> {
        if self.state == SectionState::Before {
            return None;
        }
        self.flush();
        Some(self.tests)
    }
}

/// Whether `line` (without its line end) is the echoed trace command that
/// [`crate::logs::test_section`] looks for between two line ends.
fn is_trace_line(line: &str) -> bool {
    line.starts_with("+ python3 ") && crate::logs::is_trace_command_line(line)
}
