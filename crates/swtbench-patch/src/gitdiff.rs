//! Rendering old/new file contents as a `git diff` that `git apply` accepts.
//!
//! The original ends every extraction with `git add --all && git diff <base>`; this produces the
//! same text from contents in memory, as git writes it: `diff --git` headers, `index
//! <old>..<new> 100644` lines with real blob ids abbreviated as git abbreviates them
//! ([`abbrev_len`]; [`crate::extract`] takes the count from [`crate::FileSource::object_count`],
//! 7 hex digits when the source does not know it),
//! `new file mode 100644` for created files (an empty created file has no hunk), unified hunks
//! with three lines of context and git's default function context after `@@ … @@`
//! ([`function_context`]), `\ No newline at end of file` markers, and git's quoting of unusual
//! path characters. The line diff breaks ties as git's xdiff does (`crate::xmyers`), and its
//! runs of changed lines are then slid where git slides them (its compaction and indent
//! heuristic, `crate::compact`). Differences from git's bytes that remain: edits that git only
//! diffs with its cost heuristics (more than 256 edits between two common lines, or files of more
//! than 50 000 lines) use a general Myers diff (past [`DIFF_DEADLINE`], for pathological inputs,
//! not even a minimal one), whose hunks can differ from git's; files are assumed to have mode
//! 100644; and the text ends with a newline as `git diff` writes it (the original's GitPython
//! strips it, which leaves a file that `git apply` refuses as corrupt). The patch applies to the
//! same result either way.
//!
//! Pure (the deadline reads the clock).

use std::time::Duration;

use sha1::{Digest, Sha1};
use similar::{Algorithm, ChangeTag, TextDiff};

use crate::{compact, xmyers};

/// How long the line diff may search for a minimal edit script before settling for a correct,
/// larger one.
pub const DIFF_DEADLINE: Duration = Duration::from_secs(5);

/// One changed file: repository-relative path, content at the base commit (`None`: created),
/// new content.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileChange {
    pub path: String,
    pub old: Option<String>,
    pub new: String,
}

/// The length git abbreviates object ids to by default (`core.abbrev` unset) in a repository of
/// about `object_count` objects: enough hex digits for `2^(bits/2)` objects, at least 7.
pub fn abbrev_len(object_count: u64) -> usize {
    if object_count == 0 {
        return DEFAULT_ABBREV;
    }
    // msb(count) + 1 bits, halved (rounded up), in hex digits.
    let bits = 64 - object_count.leading_zeros() as usize;
    bits.div_ceil(2).max(DEFAULT_ABBREV)
}

/// git's fallback abbreviation length.
pub const DEFAULT_ABBREV: usize = 7;

/// git's default function context (no diff driver): the nearest line before `first_line`
/// (0-based, the hunk's first old line) that starts with an ASCII letter, `_` or `$`, cut to 80
/// bytes (at a character boundary here) with trailing whitespace removed.
pub fn function_context(old_lines: &[&str], first_line: usize) -> Option<String> {
    const FUNC_BYTES: usize = 80;
    old_lines[..first_line.min(old_lines.len())]
        .iter()
        .rev()
        .find(|l| {
            l.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b == b'$')
        })
        .map(|l| {
            let mut end = l.len().min(FUNC_BYTES);
            while !l.is_char_boundary(end) {
                end -= 1;
            }
            l[..end]
                .trim_end_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r'])
                .to_string()
        })
}

/// git's object id of a blob with this content.
pub fn blob_id(content: &str) -> String {
    let mut h = Sha1::new();
    h.update(format!("blob {}\0", content.len()).as_bytes());
    h.update(content.as_bytes());
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

/// git's `quote_c_style` for a path that needs it (`"`, `\`, control characters, non-ASCII);
/// `None` when the path can be written as it is.
fn quote_path(path: &str) -> Option<String> {
    let needs = path
        .bytes()
        .any(|b| b == b'"' || b == b'\\' || !(0x20..0x7f).contains(&b));
    if !needs {
        return None;
    }
    let mut out = String::from("\"");
    for b in path.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x0b => out.push_str("\\v"),
            0x0c => out.push_str("\\f"),
            b if !(0x20..0x7f).contains(&b) => out.push_str(&format!("\\{b:03o}")),
            b => out.push(b as char),
        }
    }
    out.push('"');
    Some(out)
}

/// `prefix` + `path`, quoted as a whole when the path needs quoting.
fn side(prefix: &str, path: &str) -> String {
    let joined = format!("{prefix}{path}");
    quote_path(&joined).unwrap_or(joined)
}

/// The `---`/`+++` name: git adds a tab after names that contain a space.
fn marker_name(prefix: &str, path: &str) -> String {
    let name = side(prefix, path);
    if name.contains(' ') && !name.starts_with('"') {
        format!("{name}\t")
    } else {
        name
    }
}

fn range(start: usize, len: usize) -> String {
    // 1-based start; an empty range names the line before it (git's and diff's convention).
    let first = if len == 0 { start } else { start + 1 };
    if len == 1 {
        format!("{first}")
    } else {
        format!("{first},{len}")
    }
}

fn push_line(out: &mut String, tag: char, line: &str) {
    out.push(tag);
    out.push_str(line);
    if !line.ends_with('\n') {
        out.push_str("\n\\ No newline at end of file\n");
    }
}

/// One file's section of the diff, ids abbreviated to [`DEFAULT_ABBREV`]; empty when the contents
/// are equal.
pub fn render_file(change: &FileChange) -> String {
    render_file_abbrev(change, DEFAULT_ABBREV)
}

/// [`render_file`] with ids abbreviated to `abbrev` hex digits (see [`abbrev_len`]).
pub fn render_file_abbrev(change: &FileChange, abbrev: usize) -> String {
    let abbrev = abbrev.clamp(4, 40);
    let old = change.old.as_deref().unwrap_or("");
    if change.old.is_some() && old == change.new {
        return String::new();
    }
    let mut out = format!(
        "diff --git {} {}\n",
        side("a/", &change.path),
        side("b/", &change.path)
    );
    let old_id = match change.old {
        Some(_) => blob_id(old),
        None => "0".repeat(40),
    };
    let new_id = blob_id(&change.new);
    if change.old.is_none() {
        out.push_str("new file mode 100644\n");
    }
    let mode = if change.old.is_some() { " 100644" } else { "" };
    out.push_str(&format!(
        "index {}..{}{mode}\n",
        &old_id[..abbrev],
        &new_id[..abbrev]
    ));
    if change.old.is_none() && change.new.is_empty() {
        return out;
    }
    let old_name = match change.old {
        Some(_) => marker_name("a/", &change.path),
        None => "/dev/null".to_string(),
    };
    out.push_str(&format!(
        "--- {old_name}\n+++ {}\n",
        marker_name("b/", &change.path)
    ));
    // The deadline only matters for pathological inputs (fuzzy placement can duplicate large
    // parts of a file): past it the diff is still correct, just not minimal.
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DIFF_DEADLINE)
        .diff_lines(old, change.new.as_str());
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = change.new.split_inclusive('\n').collect();
    let mut old_changed = vec![false; old_lines.len()];
    let mut new_changed = vec![false; new_lines.len()];
    for c in diff.iter_all_changes() {
        match c.tag() {
            ChangeTag::Delete => old_changed[c.old_index().unwrap_or_default()] = true,
            ChangeTag::Insert => new_changed[c.new_index().unwrap_or_default()] = true,
            ChangeTag::Equal => {}
        }
    }
    // git's own tie-breaking where it is cheap enough to follow exactly; the general diff
    // otherwise (or if the result were ever inconsistent).
    let (old_changed, new_changed) = match xmyers::diff(&old_lines, &new_lines) {
        Some((a, b)) if xmyers::consistent(&old_lines, &new_lines, &a, &b) => (a, b),
        _ => (old_changed, new_changed),
    };
    let (old_changed, new_changed) =
        compact::compact(&old_lines, &new_lines, &old_changed, &new_changed);
    for hunk in hunks(&changes_of(&old_changed, &new_changed), old_lines.len(), 3) {
        let (o0, o1, n0, n1) = hunk.ranges;
        out.push_str(&format!(
            "@@ -{} +{} @@",
            range(o0, o1 - o0),
            range(n0, n1 - n0)
        ));
        if let Some(func) = function_context(&old_lines, o0) {
            out.push(' ');
            out.push_str(&func);
        }
        out.push('\n');
        let mut i = o0;
        for &(ci, cj, del, ins) in &hunk.changes {
            for line in &old_lines[i..ci] {
                push_line(&mut out, ' ', line);
            }
            for line in &old_lines[ci..ci + del] {
                push_line(&mut out, '-', line);
            }
            for line in &new_lines[cj..cj + ins] {
                push_line(&mut out, '+', line);
            }
            i = ci + del;
        }
        for line in &old_lines[i..o1] {
            push_line(&mut out, ' ', line);
        }
    }
    out
}

/// The runs of changes as (old start, new start, lines deleted, lines inserted), in order; the
/// unchanged lines of both sides pair up in order between them.
fn changes_of(old_changed: &[bool], new_changed: &[bool]) -> Vec<(usize, usize, usize, usize)> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < old_changed.len() || j < new_changed.len() {
        let (ci, cj) = (i, j);
        while i < old_changed.len() && old_changed[i] {
            i += 1;
        }
        while j < new_changed.len() && new_changed[j] {
            j += 1;
        }
        if i > ci || j > cj {
            out.push((ci, cj, i - ci, j - cj));
        } else {
            i += 1;
            j += 1;
        }
    }
    out
}

struct Hunk {
    /// Old start and end, new start and end (0-based, end exclusive).
    ranges: (usize, usize, usize, usize),
    changes: Vec<(usize, usize, usize, usize)>,
}

/// git's hunks: `context` lines around each change, changes at most `2 * context` unchanged lines
/// apart share a hunk.
fn hunks(changes: &[(usize, usize, usize, usize)], old_len: usize, context: usize) -> Vec<Hunk> {
    let mut out: Vec<Hunk> = Vec::new();
    for &c in changes {
        let (ci, cj, _, _) = c;
        if let Some(last) = out.last_mut() {
            let &(pi, _, pdel, _) = last.changes.last().unwrap_or(&c);
            if ci - (pi + pdel) <= 2 * context {
                last.changes.push(c);
                continue;
            }
        }
        let lead = ci.min(context);
        out.push(Hunk {
            ranges: (ci - lead, 0, cj - lead, 0),
            changes: vec![c],
        });
    }
    for h in &mut out {
        let &(li, lj, ldel, lins) = h.changes.last().unwrap_or(&(0, 0, 0, 0));
        let trail = (old_len - (li + ldel)).min(context);
        h.ranges.1 = li + ldel + trail;
        h.ranges.3 = lj + lins + trail;
    }
    out
}

/// The whole diff: every changed file, sorted by path as `git diff` lists them.
pub fn render(changes: &[FileChange]) -> String {
    render_abbrev(changes, DEFAULT_ABBREV)
}

/// [`render`] with ids abbreviated to `abbrev` hex digits (see [`abbrev_len`]).
pub fn render_abbrev(changes: &[FileChange], abbrev: usize) -> String {
    let mut sorted: Vec<&FileChange> = changes.iter().collect();
    sorted.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    sorted
        .into_iter()
        .map(|c| render_file_abbrev(c, abbrev))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_ids_match_git() {
        assert_eq!(blob_id(""), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
        assert_eq!(
            blob_id("hello\n"),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }

    #[test]
    fn modification_with_missing_final_newline() {
        let d = render_file(&FileChange {
            path: "x.py".into(),
            old: Some("a\nb\n".into()),
            new: "a\nc".into(),
        });
        let expected = format!(
            "diff --git a/x.py b/x.py\nindex {}..{} 100644\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n",
            &blob_id("a\nb\n")[..7],
            &blob_id("a\nc")[..7]
        );
        assert_eq!(d, expected);
    }

    #[test]
    fn abbreviation_follows_the_object_count() {
        assert_eq!(abbrev_len(0), 7);
        assert_eq!(abbrev_len(1), 7);
        assert_eq!(abbrev_len((1 << 14) - 1), 7);
        assert_eq!(abbrev_len(1 << 14), 8);
        assert_eq!(abbrev_len(1 << 16), 9);
        assert_eq!(abbrev_len(500_000), 10);
    }

    #[test]
    fn function_context_is_the_last_identifier_line_before_the_hunk() {
        let lines = [
            "import x\n",
            "\n",
            "def f():\n",
            "    a = 1\n",
            "    b = 2\n",
        ];
        assert_eq!(function_context(&lines, 4).as_deref(), Some("def f():"));
        assert_eq!(function_context(&lines, 2).as_deref(), Some("import x"));
        assert_eq!(function_context(&lines, 0), None);
        let long = format!("class {}:  \n", "A".repeat(100));
        assert_eq!(function_context(&[&long, "x\n"], 1).unwrap().len(), 80);
        assert_eq!(
            function_context(&["def g():   \n", "  x\n"], 1).as_deref(),
            Some("def g():")
        );
    }

    #[test]
    fn new_files_and_quoting() {
        let d = render_file(&FileChange {
            path: "t/new file.py".into(),
            old: None,
            new: "x\n".into(),
        });
        assert!(d.starts_with(
            "diff --git a/t/new file.py b/t/new file.py\nnew file mode 100644\nindex 0000000.."
        ));
        assert!(d.ends_with("--- /dev/null\n+++ b/t/new file.py\t\n@@ -0,0 +1 @@\n+x\n"));
        let empty = render_file(&FileChange {
            path: "é.py".into(),
            old: None,
            new: String::new(),
        });
        assert_eq!(
            empty,
            "diff --git \"a/\\303\\251.py\" \"b/\\303\\251.py\"\nnew file mode 100644\nindex 0000000..e69de29\n"
        );
    }
}
