//! Where the original harness finds file sections, file headers and hunks in model output.
//!
//! The original uses three regular expressions with lazy quantifiers and look-aheads (which the
//! `regex` crate does not support). Their effect is reproduced here by hand, match for match, so
//! that odd output is cut up exactly as the original cuts it:
//!
//! * a **file section** starts at `---<ws>a/` (optionally preceded by a `diff…` line made only of
//!   word characters, `.`, space, `/` and `-`), needs a later `\n+++<ws>b/`, and ends right before
//!   the next `diff ` or `--- a/` *anywhere* in the text, even in the middle of a code line;
//! * the **file header** is the first `---<ws>a/X\n+++<ws>b/Y` pair (each path at least one
//!   character, up to the end of its line) inside a section;
//! * a **hunk** is `@@<ws>-N,N<ws>+N,N<ws>@@` (the single-number form is not recognised) followed
//!   by at least one character, up to the next `diff `, `--- a/` or `@@ -`.
//!
//! With `new_files` on (the fixed vanilla and fuzzy styles), `---<ws>/dev/null` starts a section and
//! `--- /dev/null` ends the previous one, so that diffs creating files are found instead of being
//! swallowed or skipped. Numbers are ASCII digits (Python's `\d` also accepts other scripts'
//! digits, which no model writes in a hunk header).
//!
//! Pure functions over `&str`; no I/O.

use std::cell::Cell;

use crate::pytext::{is_word, space_run};

/// One file section and its parts, as the original's regexes see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section<'a> {
    /// The whole matched section text.
    pub text: &'a str,
}

/// Bytes of `"\n+++<ws>b/"` match: (start of `\n`, end after `b/`).
fn plus_header_at(text: &str, k: usize) -> Option<usize> {
    let rest = &text[k..];
    let after = rest.strip_prefix("\n+++")?;
    let ws = space_run(after);
    if ws == 0 {
        return None;
    }
    after[ws..].strip_prefix("b/")?;
    Some(k + 4 + ws + 2)
}

fn is_section_stop(text: &str, e: usize, new_files: bool) -> bool {
    let rest = &text[e..];
    rest.starts_with("diff ")
        || rest.starts_with("--- a/")
        || (new_files && rest.starts_with("--- /dev/null"))
}

/// The section scanner: precomputes where `\n+++<ws>b/` and the stop look-aheads match so that
/// each candidate start is answered by a binary search.
struct SectionScanner<'a> {
    text: &'a str,
    new_files: bool,
    /// (position of `\n`, end of `b/`) for every `\n+++<ws>b/`.
    plus: Vec<(usize, usize)>,
    /// Every position where a section ends (look-ahead), ascending; `text.len()` last.
    stops: Vec<usize>,
    /// The last run of `diff`-line characters measured, `(start, end)`: every `diff` inside it
    /// ends its run at the same place, so a long line of them is measured once, not once per
    /// word (which made a line of a million `diff ` words take hours).
    diff_run: Cell<(usize, usize)>,
}

impl<'a> SectionScanner<'a> {
    fn new(text: &'a str, new_files: bool) -> Self {
        let bytes = text.as_bytes();
        let mut plus = Vec::new();
        let mut stops = Vec::new();
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' {
                if let Some(end) = plus_header_at(text, i) {
                    plus.push((i, end));
                }
            } else if (b == b'd' || b == b'-') && is_section_stop(text, i, new_files) {
                stops.push(i);
            }
        }
        stops.push(text.len());
        SectionScanner {
            text,
            new_files,
            plus,
            stops,
            diff_run: Cell::new((usize::MAX, 0)),
        }
    }

    /// The end of the run of `[\w_. /-]` characters starting at byte `q`.
    fn diff_run_end(&self, q: usize) -> usize {
        let (start, end) = self.diff_run.get();
        if start <= q && q <= end {
            return end;
        }
        let run: usize = self.text[q..]
            .chars()
            .take_while(|&c| is_word(c) || matches!(c, '.' | ' ' | '/' | '-'))
            .map(char::len_utf8)
            .sum();
        self.diff_run.set((q, q + run));
        q + run
    }

    /// `---\s+a/(.*?)\n+++\s+b/(.*?)(?=stop)` at `q`; the end of the match.
    fn rest_at(&self, q: usize) -> Option<usize> {
        let rest = self.text[q..].strip_prefix("---")?;
        let ws = space_run(rest);
        if ws == 0 {
            return None;
        }
        let after_ws = &rest[ws..];
        let r = if after_ws.starts_with("a/") {
            q + 3 + ws + 2
        } else if self.new_files && after_ws.starts_with("/dev/null") {
            q + 3 + ws + 9
        } else {
            return None;
        };
        let idx = self.plus.partition_point(|&(k, _)| k < r);
        let &(_, m) = self.plus.get(idx)?;
        let s = self.stops.partition_point(|&e| e < m);
        Some(self.stops[s])
    }

    /// A match starting exactly at `p`.
    fn match_at(&self, p: usize) -> Option<usize> {
        let rest = &self.text[p..];
        if rest.starts_with("diff") {
            // `(?:diff[\w_. /-]+\n)?`: the class excludes `\n`, so the run must end right at it;
            // when the group fails the match would have to start with `---` here, which it cannot.
            let end = self.diff_run_end(p + 4);
            if end == p + 4 || !self.text[end..].starts_with('\n') {
                return None;
            }
            return self.rest_at(end + 1);
        }
        self.rest_at(p)
    }
}

/// `PATCH_PATTERN.findall(text)`: every file section, in order.
pub fn file_sections(text: &str, new_files: bool) -> Vec<Section<'_>> {
    let scanner = SectionScanner::new(text, new_files);
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let mut found = None;
        for (p, &b) in bytes.iter().enumerate().skip(pos) {
            if (b == b'd' || b == b'-') && text.is_char_boundary(p) {
                if let Some(end) = scanner.match_at(p) {
                    found = Some((p, end));
                    break;
                }
            }
        }
        let Some((start, end)) = found else {
            break;
        };
        out.push(Section {
            text: &text[start..end],
        });
        pos = end;
    }
    out
}

/// The paths of a file header, as the original's `PATCH_FILE_PATTERN` finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader<'a> {
    /// The matched header text, from `---` to the end of the `+++` line.
    pub text: &'a str,
    /// The first header line is `---<ws>/dev/null` (only with `new_files`).
    pub new_file: bool,
}

/// `PATCH_FILE_PATTERN.findall(section)[0]`; `None` where the original raises `IndexError`.
pub fn file_header(section: &str, new_files: bool) -> Option<FileHeader<'_>> {
    let mut from = 0;
    // The first newline at or after the last path start looked at: candidates move forward, so
    // all candidates on one line share it (a long line of them is scanned once).
    let mut line_end: Option<(usize, Option<usize>)> = None;
    while let Some(off) = section[from..].find("---") {
        let p = from + off;
        from = p + 1;
        let rest = &section[p + 3..];
        let ws = space_run(rest);
        if ws == 0 {
            continue;
        }
        let after_ws = &rest[ws..];
        let (path_start, new_file, min_len) = if after_ws.starts_with("a/") {
            (p + 3 + ws + 2, false, 1)
        } else if new_files && after_ws.starts_with("/dev/null") {
            (p + 3 + ws + 9, true, 0)
        } else {
            continue;
        };
        // `.+` stops at a newline, which must follow; then `+++<ws>b/` and at least one character.
        let nl = match line_end {
            Some((start, found))
                if start <= path_start && found.is_none_or(|e| path_start <= e) =>
            {
                found
            }
            _ => {
                let found = section[path_start..].find('\n').map(|i| path_start + i);
                line_end = Some((path_start, found));
                found
            }
        };
        let Some(nl) = nl else {
            continue;
        };
        if nl - path_start < min_len {
            continue;
        }
        let Some(after_plus) = section[nl + 1..].strip_prefix("+++") else {
            continue;
        };
        let ws2 = space_run(after_plus);
        if ws2 == 0 || !after_plus[ws2..].starts_with("b/") {
            continue;
        }
        let b_start = nl + 1 + 3 + ws2 + 2;
        let b_end = section[b_start..]
            .find('\n')
            .map_or(section.len(), |i| b_start + i);
        if b_end == b_start {
            continue;
        }
        return Some(FileHeader {
            text: &section[p..b_end],
            new_file,
        });
    }
    None
}

/// One hunk as `PATCH_HUNK_PATTERN` captures it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawHunk<'a> {
    pub old_start: i64,
    pub old_len: i64,
    pub new_start: i64,
    pub new_len: i64,
    /// Everything after the closing `@@` up to the next stop (starts with the header's tail).
    pub content: &'a str,
}

fn digits(s: &str) -> Option<(i64, usize)> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    // Python's int() has no limit; a number this large cannot name a line anyway.
    let v = s[..n].parse::<i64>().unwrap_or(i64::MAX);
    Some((v, n))
}

/// `@@\s+-(\d+),(\d+)\s+\+(\d+),(\d+)\s+@@` at the start of `s`: the numbers and the length.
fn hunk_header(s: &str) -> Option<([i64; 4], usize)> {
    let mut i = 0;
    let mut nums = [0i64; 4];
    let expect = |s: &str, i: &mut usize, lit: &str| -> Option<()> {
        if s[*i..].starts_with(lit) {
            *i += lit.len();
            Some(())
        } else {
            None
        }
    };
    let ws = |s: &str, i: &mut usize| -> Option<()> {
        let n = space_run(&s[*i..]);
        if n == 0 {
            return None;
        }
        *i += n;
        Some(())
    };
    expect(s, &mut i, "@@")?;
    ws(s, &mut i)?;
    for (k, sign) in ["-", "+"].iter().enumerate() {
        expect(s, &mut i, sign)?;
        let (a, n) = digits(&s[i..])?;
        i += n;
        expect(s, &mut i, ",")?;
        let (b, n) = digits(&s[i..])?;
        i += n;
        ws(s, &mut i)?;
        nums[2 * k] = a;
        nums[2 * k + 1] = b;
    }
    expect(s, &mut i, "@@")?;
    Some((nums, i))
}

fn is_hunk_stop(rest: &str) -> bool {
    rest.starts_with("diff ") || rest.starts_with("--- a/") || rest.starts_with("@@ -")
}

/// `PATCH_HUNK_PATTERN.findall(section)`.
pub fn hunks(section: &str) -> Vec<RawHunk<'_>> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut search = pos;
    while let Some(off) = section[search..].find("@@") {
        let p = search + off;
        let Some((nums, hlen)) = hunk_header(&section[p..]) else {
            search = p + 1;
            continue;
        };
        let c = p + hlen;
        // `(.+?)`: at least one character, then the earliest stop (or the end).
        let Some(first) = section[c..].chars().next() else {
            search = p + 1;
            continue;
        };
        let mut e = c + first.len_utf8();
        while e < section.len() && !is_hunk_stop(&section[e..]) {
            e += 1;
            while !section.is_char_boundary(e) {
                e += 1;
            }
        }
        out.push(RawHunk {
            old_start: nums[0],
            old_len: nums[1],
            new_start: nums[2],
            new_len: nums[3],
            content: &section[c..e],
        });
        pos = e;
        search = pos;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_start_at_headers_and_stop_at_diff_anywhere() {
        let text = "prose\ndiff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,2 @@\n a\n+# the diff of it\n+b\n--- a/y.py\n+++ b/y.py\n@@ -1,1 +1,1 @@\n-c\n+d\n";
        let s = file_sections(text, false);
        assert_eq!(s.len(), 2);
        assert!(s[0].text.starts_with("diff --git a/x.py"));
        assert!(s[0].text.ends_with("+# the "), "{:?}", s[0].text);
        assert!(s[1].text.starts_with("--- a/y.py"));
        assert!(s[1].text.ends_with("+d\n"));
    }

    #[test]
    fn diff_line_with_other_characters_is_left_out_of_the_section() {
        let text =
            "diff --git a/x+y.py b/x+y.py\n--- a/x+y.py\n+++ b/x+y.py\n@@ -1,1 +1,1 @@\n-a\n+b\n";
        let s = file_sections(text, false);
        assert_eq!(s.len(), 1);
        assert!(s[0].text.starts_with("--- a/x+y.py"));
    }

    #[test]
    fn new_file_sections_only_with_the_deviation() {
        let text = "--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,1 @@\n-a\n+b\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,1 @@\n+n\n";
        let strict = file_sections(text, false);
        assert_eq!(strict.len(), 1);
        assert!(strict[0].text.ends_with("+n\n"));
        let lenient = file_sections(text, true);
        assert_eq!(lenient.len(), 2);
        let h = file_header(lenient[1].text, true).unwrap();
        assert!(h.new_file);
        assert_eq!(h.text, "--- /dev/null\n+++ b/n.py");
        assert!(file_header(lenient[1].text, false).is_none());
    }

    #[test]
    fn header_needs_adjacent_lines() {
        assert_eq!(
            file_header("--- a/x.py\n+++ b/x.py\n@@", false)
                .unwrap()
                .text,
            "--- a/x.py\n+++ b/x.py"
        );
        assert!(file_header("--- a/x.py\njunk\n+++ b/x.py\n", false).is_none());
        assert!(file_header("--- a/\n+++ b/x\n", false).is_none());
    }

    #[test]
    fn hunks_need_both_counts() {
        // Only `@@ -` with one space ends a hunk; the header itself allows any whitespace.
        let sec = "--- a/x\n+++ b/x\n@@ -3 +3 @@\n-a\n+b\n@@ -5,2 +5,2 @@ def f():\n-c\n+d\n@@ -9,1\t+9,1  @@x";
        let h = hunks(sec);
        assert_eq!(h.len(), 2, "{h:?}");
        assert_eq!(
            (h[0].old_start, h[0].old_len, h[0].new_start, h[0].new_len),
            (5, 2, 5, 2)
        );
        assert_eq!(h[0].content, " def f():\n-c\n+d\n");
        assert_eq!(h[1].content, "x");
    }

    #[test]
    fn long_lines_of_candidates_are_cut_as_the_original_cuts_them() {
        // Every `diff` word on the first line is a candidate whose `[\w. /-]+` run ends at the
        // same newline, where `---` does not follow; the `diff --git` line does join the section.
        let words = "diff ".repeat(100_000);
        let text = format!(
            "{words}\ndiff --git a/x b/x\n--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,1 @@\n-a\n+b\n"
        );
        let s = file_sections(&text, false);
        assert_eq!(s.len(), 1);
        assert!(s[0].text.starts_with("diff --git a/x b/x\n--- a/x.py"));
        // The words line itself ends in `\n`: it is a `diff …` line and starts the section.
        let text = format!("{words}\n--- a/x.py\n+++ b/x.py\n@@ -1,1 +1,1 @@\n-a\n+b\n");
        let s = file_sections(&text, false);
        assert_eq!(s.len(), 1);
        assert!(s[0].text.starts_with("diff diff"));
        assert!(s[0].text.ends_with("+b\n"));

        // Header candidates sharing one long line, none followed by `+++` on the next line.
        let cands = "---\ta/x ".repeat(100_000);
        let section = format!("{cands}\nprose\n+++ b/x.py\n");
        assert!(file_header(&section, false).is_none());
        let section = format!("{cands}\n+++ b/x.py\n");
        let h = file_header(&section, false).unwrap();
        assert_eq!(h.text.len(), section.len() - 1);
        let section = format!("--- a/x {cands}");
        assert!(file_header(&section, false).is_none());
    }

    #[test]
    fn hunk_content_stops_inside_a_line() {
        let sec = "--- a/x\n+++ b/x\n@@ -1,1 +1,2 @@\n a\n+s = '@@ -1'\n";
        let h = hunks(sec);
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].content, "\n a\n+s = '");
    }
}
