//! Pure helpers for the bytes coming out of the engine: a capped collector for command output that
//! keeps the head and the tail, and a line splitter for build logs that strips terminal escapes.
//!
//! No engine calls and no I/O here; the engine implementations and the fake feed these.

use std::collections::VecDeque;
use std::sync::OnceLock;

use regex::Regex;

/// The line inserted between head and tail when output was cut, e.g.
/// `\n[swtbench: 1234 bytes of output omitted]\n`.
pub fn truncation_marker(omitted: u64) -> String {
    format!("\n[swtbench: {omitted} bytes of output omitted]\n")
}

/// Collects a byte stream, keeping at most `limit` bytes: the first half and the last half, each
/// cut back to whole lines when something was dropped.
#[derive(Debug, Clone)]
pub struct OutputCollector {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

/// Where a command's output goes as it arrives ([`crate::ContainerBackend::exec_to`]): a sink
/// decides what to keep (an [`OutputCollector`] keeps head and tail in memory; the runner's output
/// file writes to disk). It cannot fail the command: a sink that cannot store a chunk remembers why
/// and says so when it is finished.
pub trait OutputSink: Send {
    fn push(&mut self, bytes: &[u8]);
}

impl OutputSink for OutputCollector {
    fn push(&mut self, bytes: &[u8]) {
        OutputCollector::push(self, bytes);
    }
}

/// What a collector ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectedOutput {
    /// Head, then the truncation marker if anything was dropped, then tail.
    pub bytes: Vec<u8>,
    /// How many bytes were dropped from the middle (0 when nothing was cut).
    pub omitted: u64,
    /// How many bytes the stream had in total.
    pub total: u64,
}

/// Keeps the last `cap` bytes of everything pushed into `tail`, with `bytes` appended (the tail
/// half of a capped output; shared by the collector and the streamed output file).
pub fn keep_tail(tail: &mut VecDeque<u8>, cap: usize, bytes: &[u8]) {
    if bytes.is_empty() || cap == 0 {
        return;
    }
    if bytes.len() >= cap {
        tail.clear();
        tail.extend(&bytes[bytes.len() - cap..]);
        return;
    }
    let overflow = (tail.len() + bytes.len()).saturating_sub(cap);
    tail.drain(..overflow);
    tail.extend(bytes);
}

impl OutputCollector {
    /// `limit: None` keeps everything.
    pub fn new(limit: Option<usize>) -> Self {
        let (head_cap, tail_cap) = match limit {
            Some(l) => (l - l / 2, l / 2),
            None => (usize::MAX, 0),
        };
        OutputCollector {
            head_cap,
            tail_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_cap {
            let take = (self.head_cap - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        keep_tail(&mut self.tail, self.tail_cap, bytes);
    }

    /// Bytes seen so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn finish(self) -> CollectedOutput {
        let mut head = self.head;
        let mut tail: Vec<u8> = self.tail.into();
        if self.total > (head.len() + tail.len()) as u64 {
            // Cut at line ends: a line sliced in the middle could read as another line to a log
            // parser (`…SSED tests/x.py::t`, a test name cut short). Only whole lines are kept.
            if let Some(end) = head.iter().rposition(|&b| b == b'\n') {
                head.truncate(end + 1);
            }
            if let Some(start) = tail.iter().position(|&b| b == b'\n') {
                tail.drain(..=start);
            }
        }
        let kept = (head.len() + tail.len()) as u64;
        let omitted = self.total - kept;
        let mut bytes = head;
        if omitted > 0 {
            bytes.extend_from_slice(truncation_marker(omitted).as_bytes());
        }
        bytes.extend(tail);
        CollectedOutput {
            bytes,
            omitted,
            total: self.total,
        }
    }
}

fn ansi_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // CSI sequences (colours, cursor moves) and OSC sequences (titles, links).
        Regex::new(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
            .expect("static regex")
    })
}

/// Removes terminal escape sequences from a build log chunk.
pub fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    ansi_regex().replace_all(text, "")
}

/// Turns arbitrary text chunks into complete lines (without the newline).
#[derive(Debug, Default, Clone)]
pub struct LineSplitter {
    partial: String,
}

impl LineSplitter {
    /// Feeds a chunk; returns the lines it completed.
    pub fn push(&mut self, chunk: &str) -> Vec<String> {
        self.partial.push_str(chunk);
        let mut lines = Vec::new();
        while let Some(pos) = self.partial.find('\n') {
            let mut line: String = self.partial.drain(..=pos).collect();
            line.pop();
            if line.ends_with('\r') {
                line.pop();
            }
            lines.push(line);
        }
        lines
    }

    /// The unterminated last line, if any.
    pub fn finish(self) -> Option<String> {
        (!self.partial.is_empty()).then_some(self.partial)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collector_without_limit_keeps_everything() {
        let mut c = OutputCollector::new(None);
        c.push(b"hello ");
        c.push(b"world");
        let out = c.finish();
        assert_eq!(out.bytes, b"hello world");
        assert_eq!(out.omitted, 0);
        assert_eq!(out.total, 11);
    }

    #[test]
    fn collector_under_limit_is_untouched() {
        let mut c = OutputCollector::new(Some(10));
        c.push(b"0123456789");
        let out = c.finish();
        assert_eq!(out.bytes, b"0123456789");
        assert_eq!(out.omitted, 0);
    }

    #[test]
    fn collector_keeps_head_and_tail_across_chunk_boundaries() {
        let data: Vec<u8> = (0..100u8).collect();
        for chunk in [1usize, 3, 7, 50, 100] {
            let mut c = OutputCollector::new(Some(11));
            for piece in data.chunks(chunk) {
                c.push(piece);
            }
            let out = c.finish();
            let mut expected: Vec<u8> = (0..6u8).collect();
            expected.extend_from_slice(truncation_marker(89).as_bytes());
            expected.extend(95..100u8);
            assert_eq!(out.bytes, expected, "chunk size {chunk}");
            assert_eq!(out.omitted, 89);
            assert_eq!(out.total, 100);
        }
    }

    #[test]
    fn a_cut_output_keeps_whole_lines_only() {
        let text: String = (0..100)
            .map(|i| format!("PASSED tests/t.py::test_{i}\n"))
            .collect();
        let mut c = OutputCollector::new(Some(200));
        for piece in text.as_bytes().chunks(7) {
            c.push(piece);
        }
        let out = c.finish();
        let got = String::from_utf8(out.bytes.clone()).expect("utf-8");
        let (head, rest) = got.split_once("\n[swtbench: ").expect("marker");
        let (_, tail) = rest.split_once("omitted]\n").expect("marker end");
        for line in head.lines().chain(tail.lines()) {
            assert!(text.lines().any(|l| l == line), "a cut line: {line:?}");
        }
        assert!(head.starts_with("PASSED tests/t.py::test_0\n"));
        assert!(tail.ends_with("PASSED tests/t.py::test_99\n"));
        assert_eq!(
            out.omitted as usize,
            text.len() - head.len() - tail.len(),
            "the marker counts what was really dropped"
        );
        assert!(out.bytes.len() <= 200 + truncation_marker(out.omitted).len());
    }

    #[test]
    fn collector_with_zero_limit_drops_everything_but_counts() {
        let mut c = OutputCollector::new(Some(0));
        c.push(b"abc");
        let out = c.finish();
        assert_eq!(out.omitted, 3);
        assert_eq!(out.bytes, truncation_marker(3).as_bytes());
    }

    #[test]
    fn splitter_joins_chunks_and_strips_crlf() {
        let mut s = LineSplitter::default();
        assert!(s.push("Step 1/2 : FR").is_empty());
        assert_eq!(
            s.push("OM x\r\n ---> abc\nrest"),
            vec!["Step 1/2 : FROM x", " ---> abc"]
        );
        assert_eq!(s.finish().as_deref(), Some("rest"));
    }

    #[test]
    fn ansi_sequences_are_removed() {
        assert_eq!(
            strip_ansi("\x1b[31mred\x1b[0m plain \x1b]0;title\x07x"),
            "red plain x"
        );
    }
}
