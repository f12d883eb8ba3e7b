//! Unified diffs: a lenient parser for what git and language models produce, plus the few
//! text-level operations the original harness performs on patches.
//!
//! The parser accepts git diffs and plain `---`/`+++` diffs, CRLF line ends, a missing final
//! newline, prose before the first file, single-number hunk headers (`@@ -3 +3 @@`) and blank
//! context lines that lost their leading space. It never panics; text with no file section, a hunk
//! outside a file or a malformed hunk header is an error.

use std::fmt;

/// A parsed patch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Patch {
    /// Text before the first file header (LLM prose, commit message).
    pub preamble: String,
    pub files: Vec<FilePatch>,
}

/// What happens to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Modified,
    Added,
    Deleted,
    Renamed,
    Copied,
}

/// One file's section of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    /// Path before the change, without the `a/` prefix; `None` for a new file.
    pub old_path: Option<String>,
    /// Path after the change, without the `b/` prefix; `None` for a deleted file.
    pub new_path: Option<String>,
    pub change: ChangeKind,
    /// `Binary files … differ` or a `GIT binary patch` section.
    pub binary: bool,
    pub old_mode: Option<String>,
    pub new_mode: Option<String>,
    pub hunks: Vec<Hunk>,
}

impl FilePatch {
    /// The path that names this file: the new path, or the old one for a deletion.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }
}

/// One hunk, with a line number for every line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: u32,
    pub old_len: u32,
    pub new_start: u32,
    pub new_len: u32,
    /// Text after the closing `@@` (usually the enclosing function).
    pub section: String,
    pub lines: Vec<HunkLine>,
    /// The body ended before the header's counts were reached.
    pub truncated: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HunkLine {
    pub kind: LineKind,
    /// The line without its one-character prefix and without line terminator.
    pub text: String,
    /// Line number in the old file (context and removed lines).
    pub old_lineno: Option<u32>,
    /// Line number in the new file (context and added lines).
    pub new_lineno: Option<u32>,
    /// Followed by `\ No newline at end of file`.
    pub no_newline: bool,
}

/// Why a text is not a usable diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffError {
    /// No `diff --git` or `---`/`+++` file header anywhere.
    NoFiles,
    /// A `@@` hunk header before any file header (1-based line).
    HunkOutsideFile { line: usize },
    /// A line starting with `@@` that is not a valid hunk header.
    BadHunkHeader { line: usize, text: String },
}

impl fmt::Display for DiffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiffError::NoFiles => write!(f, "no file header (`diff --git` or `---`/`+++`) found"),
            DiffError::HunkOutsideFile { line } => {
                write!(f, "line {line}: hunk header before any file header")
            }
            DiffError::BadHunkHeader { line, text } => {
                let shown: String = text.chars().take(80).collect();
                write!(f, "line {line}: malformed hunk header {shown:?}")
            }
        }
    }
}

impl std::error::Error for DiffError {}

/// Splits on `\n`, dropping one trailing `\r` per line (CRLF input).
fn lines_of(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    if v.last() == Some(&"") {
        v.pop();
    }
    v
}

/// Parses a unified diff.
pub fn parse(text: &str) -> Result<Patch, DiffError> {
    let lines = lines_of(text);
    let mut patch = Patch::default();
    let mut preamble: Vec<&str> = Vec::new();
    let mut current: Option<FilePatch> = None;
    // Whether the current file already got its ---/+++ pair.
    let mut have_paths = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(rest) = line.strip_prefix("diff --git ") {
            if let Some(f) = current.take() {
                patch.files.push(f);
            }
            let (old, new) = split_git_header(rest);
            current = Some(FilePatch {
                old_path: Some(strip_prefix_dir(&old, "a/")),
                new_path: Some(strip_prefix_dir(&new, "b/")),
                change: ChangeKind::Modified,
                binary: false,
                old_mode: None,
                new_mode: None,
                hunks: Vec::new(),
            });
            have_paths = false;
            i += 1;
            continue;
        }
        if line.starts_with("--- ")
            && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))
            && (current.is_none()
                || have_paths
                || current.as_ref().is_some_and(|f| !f.hunks.is_empty()))
        {
            // A file without a git header (or the next file of a plain diff).
            if let Some(f) = current.take() {
                patch.files.push(f);
            }
            current = Some(FilePatch {
                old_path: None,
                new_path: None,
                change: ChangeKind::Modified,
                binary: false,
                old_mode: None,
                new_mode: None,
                hunks: Vec::new(),
            });
            have_paths = false;
        }
        let Some(file) = current.as_mut() else {
            if line.starts_with("@@ ") || line == "@@" {
                return Err(DiffError::HunkOutsideFile { line: i + 1 });
            }
            preamble.push(line);
            i += 1;
            continue;
        };
        if !have_paths
            && line.starts_with("--- ")
            && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))
        {
            let old = header_path(&line[4..]);
            let new = header_path(&lines[i + 1][4..]);
            match old {
                None => {
                    file.change = ChangeKind::Added;
                    file.old_path = None;
                }
                Some(p) => file.old_path = Some(strip_prefix_dir(&p, "a/")),
            }
            match new {
                None => {
                    file.change = ChangeKind::Deleted;
                    file.new_path = None;
                }
                Some(p) => file.new_path = Some(strip_prefix_dir(&p, "b/")),
            }
            have_paths = true;
            i += 2;
            continue;
        }
        if line.starts_with("@@") {
            let (hunk, next) = parse_hunk(&lines, i)?;
            file.hunks.push(hunk);
            i = next;
            continue;
        }
        if let Some(m) = line.strip_prefix("new file mode ") {
            file.change = ChangeKind::Added;
            file.old_path = None;
            file.new_mode = Some(m.trim().to_string());
        } else if let Some(m) = line.strip_prefix("deleted file mode ") {
            file.change = ChangeKind::Deleted;
            file.new_path = None;
            file.old_mode = Some(m.trim().to_string());
        } else if let Some(m) = line.strip_prefix("old mode ") {
            file.old_mode = Some(m.trim().to_string());
        } else if let Some(m) = line.strip_prefix("new mode ") {
            file.new_mode = Some(m.trim().to_string());
        } else if let Some(p) = line.strip_prefix("rename from ") {
            file.change = ChangeKind::Renamed;
            file.old_path = Some(unquote(p));
        } else if let Some(p) = line.strip_prefix("rename to ") {
            file.change = ChangeKind::Renamed;
            file.new_path = Some(unquote(p));
        } else if let Some(p) = line.strip_prefix("copy from ") {
            file.change = ChangeKind::Copied;
            file.old_path = Some(unquote(p));
        } else if let Some(p) = line.strip_prefix("copy to ") {
            file.change = ChangeKind::Copied;
            file.new_path = Some(unquote(p));
        } else if line.starts_with("GIT binary patch") {
            file.binary = true;
            // Skip the base85 payload up to the next file.
            i += 1;
            while i < lines.len() && !lines[i].starts_with("diff --git ") {
                i += 1;
            }
            continue;
        } else if line.starts_with("Binary files ") && line.ends_with(" differ") {
            file.binary = true;
        }
        // Anything else between sections (index lines, similarity, prose, fences) is ignored.
        i += 1;
    }
    if let Some(f) = current.take() {
        patch.files.push(f);
    }
    if patch.files.is_empty() {
        return Err(DiffError::NoFiles);
    }
    patch.preamble = preamble.join("\n");
    Ok(patch)
}

/// Parses the hunk whose header is `lines[start]`; returns it and the index after its body.
fn parse_hunk(lines: &[&str], start: usize) -> Result<(Hunk, usize), DiffError> {
    let header = lines[start];
    let bad = || DiffError::BadHunkHeader {
        line: start + 1,
        text: header.to_string(),
    };
    let (old_start, old_len, new_start, new_len, section) =
        parse_hunk_header(header).ok_or_else(bad)?;
    // Line numbers past u32::MAX cannot be counted; such a header is garbage, not a diff.
    if old_start.checked_add(old_len).is_none() || new_start.checked_add(new_len).is_none() {
        return Err(bad());
    }
    let mut hunk = Hunk {
        old_start,
        old_len,
        new_start,
        new_len,
        section,
        lines: Vec::new(),
        truncated: false,
    };
    let (mut old_left, mut new_left) = (old_len, new_len);
    let (mut old_no, mut new_no) = (old_start, new_start);
    let mut i = start + 1;
    while (old_left > 0 || new_left > 0) && i < lines.len() {
        let l = lines[i];
        let (kind, text) = match l.as_bytes().first() {
            Some(b' ') => (LineKind::Context, &l[1..]),
            None => (LineKind::Context, ""),
            Some(b'-') if old_left > 0 && !is_file_header(lines, i) => (LineKind::Removed, &l[1..]),
            Some(b'+') if new_left > 0 => (LineKind::Added, &l[1..]),
            Some(b'\\') => {
                if let Some(last) = hunk.lines.last_mut() {
                    last.no_newline = true;
                }
                i += 1;
                continue;
            }
            _ => break,
        };
        let (o, n) = match kind {
            LineKind::Context => {
                if old_left == 0 || new_left == 0 {
                    break;
                }
                old_left -= 1;
                new_left -= 1;
                old_no += 1;
                new_no += 1;
                (Some(old_no - 1), Some(new_no - 1))
            }
            LineKind::Removed => {
                old_left -= 1;
                old_no += 1;
                (Some(old_no - 1), None)
            }
            LineKind::Added => {
                new_left -= 1;
                new_no += 1;
                (None, Some(new_no - 1))
            }
        };
        hunk.lines.push(HunkLine {
            kind,
            text: text.to_string(),
            old_lineno: o,
            new_lineno: n,
            no_newline: false,
        });
        i += 1;
    }
    if old_left > 0 || new_left > 0 {
        hunk.truncated = true;
    }
    // A trailing "\ No newline at end of file" belongs to this hunk.
    if i < lines.len() && lines[i].starts_with('\\') {
        if let Some(last) = hunk.lines.last_mut() {
            last.no_newline = true;
        }
        i += 1;
    }
    Ok((hunk, i))
}

fn is_file_header(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("--- ")
        && lines.get(i + 1).is_some_and(|n| n.starts_with("+++ "))
        && lines.get(i + 2).is_some_and(|n| n.starts_with("@@"))
}

/// `@@ -a[,b] +c[,d] @@ section` → numbers and section.
pub fn parse_hunk_header(line: &str) -> Option<(u32, u32, u32, u32, String)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, section) = match rest.find(" @@") {
        Some(p) => (
            &rest[..p],
            rest[p + 3..].strip_prefix(' ').unwrap_or(&rest[p + 3..]),
        ),
        None => return None,
    };
    let (old, new) = ranges.split_once(" +")?;
    let range = |s: &str| -> Option<(u32, u32)> {
        match s.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    let (a, b) = range(old)?;
    let (c, d) = range(new)?;
    Some((a, b, c, d, section.to_string()))
}

/// Path from a `---`/`+++` line: unquoted, timestamp removed; `None` for `/dev/null`.
fn header_path(s: &str) -> Option<String> {
    let s = s.split('\t').next().unwrap_or(s);
    let p = unquote(s.trim_end());
    if p == "/dev/null" {
        None
    } else {
        Some(p)
    }
}

fn strip_prefix_dir(p: &str, prefix: &str) -> String {
    p.strip_prefix(prefix).unwrap_or(p).to_string()
}

/// Splits the part after `diff --git ` into the a/ and b/ paths (prefixes kept).
fn split_git_header(rest: &str) -> (String, String) {
    let rest = rest.trim_end();
    if rest.starts_with('"') {
        if let Some((a, tail)) = take_quoted(rest) {
            let tail = tail.trim_start();
            let b = if tail.starts_with('"') {
                take_quoted(tail)
                    .map(|(b, _)| b)
                    .unwrap_or_else(|| tail.to_string())
            } else {
                tail.to_string()
            };
            return (a, b);
        }
    }
    // Same path on both sides: split exactly in the middle (handles spaces in names).
    if rest.len() % 2 == 1 {
        let half = rest.len() / 2;
        if rest.is_char_boundary(half) && rest.is_char_boundary(half + 1) {
            let (a, b) = (&rest[..half], &rest[half + 1..]);
            if rest.as_bytes()[half] == b' '
                && a.strip_prefix("a/")
                    .is_some_and(|x| Some(x) == b.strip_prefix("b/"))
            {
                return (a.to_string(), b.to_string());
            }
        }
    }
    if let Some(p) = rest.rfind(" b/") {
        return (rest[..p].to_string(), rest[p + 1..].to_string());
    }
    if let Some(p) = rest.rfind(" \"b/") {
        let b = take_quoted(&rest[p + 1..])
            .map(|(b, _)| b)
            .unwrap_or_default();
        return (rest[..p].to_string(), b);
    }
    match rest.split_once(' ') {
        Some((a, b)) => (a.to_string(), b.to_string()),
        None => (rest.to_string(), rest.to_string()),
    }
}

/// Reads a C-style quoted string at the start of `s`; returns it and the rest.
fn take_quoted(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let mut out: Vec<u8> = Vec::new();
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                return Some((String::from_utf8_lossy(&out).into_owned(), &body[i + 1..]));
            }
            b'\\' if i + 1 < bytes.len() => {
                let c = bytes[i + 1];
                i += 2;
                match c {
                    b'n' => out.push(b'\n'),
                    b't' => out.push(b'\t'),
                    b'r' => out.push(b'\r'),
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'v' => out.push(11),
                    b'0'..=b'7' => {
                        let mut v: u32 = u32::from(c - b'0');
                        let mut k = 0;
                        while k < 2 && i < bytes.len() && (b'0'..=b'7').contains(&bytes[i]) {
                            v = v * 8 + u32::from(bytes[i] - b'0');
                            i += 1;
                            k += 1;
                        }
                        out.push((v & 0xff) as u8);
                    }
                    other => out.push(other),
                }
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

fn unquote(s: &str) -> String {
    if s.starts_with('"') {
        if let Some((q, _)) = take_quoted(s) {
            return q;
        }
    }
    s.to_string()
}

impl Patch {
    /// `(old path, old line number)` of every removed line, in patch order (§5.3).
    pub fn removed_lines(&self) -> Vec<(String, u32)> {
        let mut v = Vec::new();
        for f in &self.files {
            let Some(path) = f.old_path.as_deref() else {
                continue;
            };
            for h in &f.hunks {
                for l in &h.lines {
                    if let (LineKind::Removed, Some(n)) = (l.kind, l.old_lineno) {
                        v.push((path.to_string(), n));
                    }
                }
            }
        }
        v
    }

    /// `(new path, new line number)` of every added line, in patch order (§5.3).
    pub fn added_lines(&self) -> Vec<(String, u32)> {
        let mut v = Vec::new();
        for f in &self.files {
            let Some(path) = f.new_path.as_deref() else {
                continue;
            };
            for h in &f.hunks {
                for l in &h.lines {
                    if let (LineKind::Added, Some(n)) = (l.kind, l.new_lineno) {
                        v.push((path.to_string(), n));
                    }
                }
            }
        }
        v
    }

    /// Every path the patch touches (old and new sides), sorted and deduplicated.
    pub fn paths(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .files
            .iter()
            .flat_map(|f| f.old_path.iter().chain(f.new_path.iter()).cloned())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

/// The (a-side, b-side) paths of every `diff --git a/X b/Y` line, exactly as the original's regexes
/// `diff --git a/(.*) b/(.*)` read them: the split is at the *last* ` b/` of the line, paths are not
/// unquoted, and the text may appear anywhere in a line.
pub fn git_header_paths(text: &str) -> Vec<(String, String)> {
    const MARK: &str = "diff --git a/";
    let mut out = Vec::new();
    for line in text.split('\n') {
        let Some(start) = line.find(MARK) else {
            continue;
        };
        let rest = &line[start + MARK.len()..];
        if let Some(p) = rest.rfind(" b/") {
            out.push((rest[..p].to_string(), rest[p + 3..].to_string()));
        }
    }
    out
}

/// The b-side paths of every `diff --git` line (see [`git_header_paths`]), deduplicated, in order.
pub fn changed_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, b) in git_header_paths(text) {
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// How to split a patch into lines before removing binary sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineSplit {
    /// Python's `str.splitlines()`, as the original: also breaks on `\r`, `\x0b`, `\x0c`,
    /// `\x1c`–`\x1e`, `\x85`, U+2028 and U+2029 (and so normalises CRLF to LF).
    #[default]
    Python,
    /// Break on `\n` only; every other character is kept.
    Newline,
}

/// Python's `str.splitlines()` (without `keepends`).
pub fn python_splitlines(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let is_break = matches!(
            c,
            '\n' | '\r'
                | '\x0b'
                | '\x0c'
                | '\x1c'
                | '\x1d'
                | '\x1e'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        );
        if is_break {
            out.push(&s[start..i]);
            let mut end = i + c.len_utf8();
            if c == '\r' {
                if let Some(&(j, '\n')) = it.peek() {
                    it.next();
                    end = j + 1;
                }
            }
            start = end;
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// The original's `remove_binary_diffs` (§4.2): cut the text into chunks at lines starting with
/// `diff --git`, drop every chunk with a line containing `Binary files`, join the rest with `\n`
/// and add a final `\n`. The prelude before the first `diff --git` is a chunk too. An empty input
/// gives `"\n"`, exactly as the original.
pub fn remove_binary_diffs(patch: &str, split: LineSplit) -> String {
    let lines: Vec<&str> = match split {
        LineSplit::Python => python_splitlines(patch),
        LineSplit::Newline => {
            let mut v: Vec<&str> = patch.split('\n').collect();
            if v.last() == Some(&"") {
                v.pop();
            }
            v
        }
    };
    // The kept chunks are joined straight into the output (no copy per chunk: a patch can be
    // tens of megabytes).
    let mut out = String::with_capacity(patch.len() + 1);
    let mut any_kept = false;
    let mut chunk: Vec<&str> = Vec::new();
    let mut skip = false;
    for line in lines.iter().copied().chain(std::iter::once("diff --git")) {
        if line.starts_with("diff --git") {
            if !chunk.is_empty() && !skip {
                if any_kept {
                    out.push('\n');
                }
                any_kept = true;
                for (i, l) in chunk.iter().enumerate() {
                    if i > 0 {
                        out.push('\n');
                    }
                    out.push_str(l);
                }
            }
            chunk.clear();
            skip = false;
        }
        if line.contains("Binary files") {
            skip = true;
        }
        chunk.push(line);
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunk_ranges_past_u32_max_are_malformed_not_a_panic() {
        let text = "--- a/x\n+++ b/x\n@@ -4294967295,3 +1,3 @@\n a\n b\n c\n";
        assert!(matches!(
            parse(text),
            Err(DiffError::BadHunkHeader { line: 3, .. })
        ));
    }

    const SIMPLE: &str = "diff --git a/src/m.py b/src/m.py\nindex 1..2 100644\n--- a/src/m.py\n+++ b/src/m.py\n@@ -10,4 +10,5 @@ def f():\n ctx\n-old\n+new1\n+new2\n ctx2\n \n";

    #[test]
    fn parses_line_numbers() {
        let p = parse(SIMPLE).unwrap();
        assert_eq!(p.files.len(), 1);
        let f = &p.files[0];
        assert_eq!(f.old_path.as_deref(), Some("src/m.py"));
        assert_eq!(f.change, ChangeKind::Modified);
        let h = &f.hunks[0];
        assert_eq!(h.section, "def f():");
        assert!(!h.truncated);
        assert_eq!(p.removed_lines(), vec![("src/m.py".to_string(), 11)]);
        assert_eq!(
            p.added_lines(),
            vec![("src/m.py".to_string(), 11), ("src/m.py".to_string(), 12)]
        );
        assert_eq!(h.lines.last().unwrap().old_lineno, Some(13));
        assert_eq!(h.lines.last().unwrap().new_lineno, Some(14));
    }

    #[test]
    fn tolerates_crlf_prose_single_number_headers_and_blank_context() {
        let text =
            "Here is my fix:\r\n\r\n--- a/x.py\r\n+++ b/x.py\r\n@@ -3 +3,2 @@\r\n-a\r\n+b\r\n+c";
        let p = parse(text).unwrap();
        assert_eq!(p.preamble, "Here is my fix:\n");
        assert_eq!(p.files[0].path(), "x.py");
        assert_eq!(p.added_lines().len(), 2);
        let blank = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n";
        let p = parse(blank).unwrap();
        assert_eq!(p.removed_lines(), vec![("x.py".to_string(), 3)]);
    }

    #[test]
    fn new_deleted_renamed_binary_and_no_newline() {
        let text = "diff --git a/n.py b/n.py\nnew file mode 100644\n--- /dev/null\n+++ b/n.py\n@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n\
diff --git a/d.py b/d.py\ndeleted file mode 100644\n--- a/d.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-z\n\
diff --git a/o.py b/r.py\nsimilarity index 100%\nrename from o.py\nrename to r.py\n\
diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n";
        let p = parse(text).unwrap();
        assert_eq!(p.files.len(), 4);
        assert_eq!(p.files[0].change, ChangeKind::Added);
        assert_eq!(p.files[0].old_path, None);
        assert!(p.files[0].hunks[0].lines[1].no_newline);
        assert_eq!(p.files[1].change, ChangeKind::Deleted);
        assert_eq!(p.files[1].new_path, None);
        assert_eq!(p.files[2].change, ChangeKind::Renamed);
        assert_eq!(p.files[2].old_path.as_deref(), Some("o.py"));
        assert_eq!(p.files[2].new_path.as_deref(), Some("r.py"));
        assert!(p.files[3].binary);
        assert_eq!(p.removed_lines(), vec![("d.py".to_string(), 1)]);
    }

    #[test]
    fn paths_with_spaces_and_quotes() {
        let p = parse("diff --git a/my file.py b/my file.py\n--- a/my file.py\n+++ b/my file.py\n@@ -1 +1 @@\n-a\n+b\n").unwrap();
        assert_eq!(p.files[0].path(), "my file.py");
        let p = parse(
            "diff --git \"a/t\\303\\251st.py\" \"b/t\\303\\251st.py\"\nnew file mode 100644\n",
        )
        .unwrap();
        assert_eq!(p.files[0].path(), "tést.py");
    }

    #[test]
    fn garbage_is_an_error() {
        assert_eq!(parse("just some words\n"), Err(DiffError::NoFiles));
        assert_eq!(parse(""), Err(DiffError::NoFiles));
        assert_eq!(
            parse("@@ -1 +1 @@\n-a\n+b\n"),
            Err(DiffError::HunkOutsideFile { line: 1 })
        );
        assert!(matches!(
            parse("--- a/x\n+++ b/x\n@@ -x +1 @@\n"),
            Err(DiffError::BadHunkHeader { line: 3, .. })
        ));
    }

    #[test]
    fn truncated_hunk_is_flagged() {
        let p = parse("--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n a\n-b\n+c\n").unwrap();
        assert!(p.files[0].hunks[0].truncated);
    }

    #[test]
    fn git_header_paths_split_at_last_b() {
        let v = git_header_paths("x diff --git a/a b/c b/d\ndiff --git a/p.py b/p.py\r\n");
        assert_eq!(v[0], ("a b/c".to_string(), "d".to_string()));
        // Python's `.` matches `\r`, so the CR stays in the capture.
        assert_eq!(v[1], ("p.py".to_string(), "p.py\r".to_string()));
    }

    #[test]
    fn splitlines_matches_python() {
        assert_eq!(python_splitlines(""), Vec::<&str>::new());
        assert_eq!(python_splitlines("\n"), vec![""]);
        assert_eq!(
            python_splitlines("a\r\nb\rc\x0cd\u{2028}e\n"),
            vec!["a", "b", "c", "d", "e"]
        );
        assert_eq!(python_splitlines("a\n\nb"), vec!["a", "", "b"]);
    }

    #[test]
    fn remove_binary_diffs_like_the_original() {
        assert_eq!(remove_binary_diffs("", LineSplit::Python), "\n");
        let text = "prose\ndiff --git a/x.pyc b/x.pyc\nBinary files a/x.pyc and b/x.pyc differ\ndiff --git a/t.py b/t.py\n--- /dev/null\n+++ b/t.py\n@@ -0,0 +1 @@\n+a\n";
        assert_eq!(
            remove_binary_diffs(text, LineSplit::Python),
            "prose\ndiff --git a/t.py b/t.py\n--- /dev/null\n+++ b/t.py\n@@ -0,0 +1 @@\n+a\n"
        );
        // CRLF: Python splitting normalises, \n splitting keeps the \r.
        assert_eq!(remove_binary_diffs("a\r\nb", LineSplit::Python), "a\nb\n");
        assert_eq!(
            remove_binary_diffs("a\r\nb", LineSplit::Newline),
            "a\r\nb\n"
        );
    }
}
