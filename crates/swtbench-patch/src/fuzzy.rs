//! The fuzzy format: unified-diff hunks placed by similarity instead of line numbers.
//!
//! Parsing follows the original: file sections and hunks are found as in [`crate::sections`]; the
//! file is the `a/` path (its first whitespace-separated token); hunk lines are context (` `),
//! removed (`-`) or added (`+`), a line starting with ```` ``` ```` or `<` ends the hunk, and any
//! other line (including an empty one) is ignored. Each hunk splits into sub-changes of (preceding
//! context, removed, added, following context); a context run between two changes is the
//! following context of one and the preceding context of the next.
//!
//! Placement ([`FuzzyStyle::Parity`]) scores every offset `i` of the file with
//! `Σ 1 − lev(a, b)/max(|a|, |b|)` over the aligned lines of (preceding + removed) and
//! `file[i..]` (two empty lines score 0); the change starts after the preceding context at the
//! first best offset (offset 0 when nothing scores), and ends at the first best offset of the
//! following context — **or at the end of the file when there is no following context**. The
//! file is split with Python's `splitlines()` and written back joined with `\n`, so it loses its
//! final newline. [`FuzzyStyle::Fixed`] instead ends a change without following context after
//! its removed lines, looks for following context only after the start, falls back to the
//! hunk's line number when nothing matches, splits on `\n` only and keeps the final newline.
//!
//! Pure: works on the in-memory view of the repository an attempt edits.

use swtbench_core::diff::python_splitlines;

use crate::error::AttemptError;
use crate::levenshtein;
use crate::paths::repo_path;
use crate::pytext::{skip_chars, split_whitespace};
use crate::sections::{file_header, file_sections, hunks};
use crate::workspace::Workspace;
use crate::FuzzyStyle;

/// One change inside a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubChange {
    /// The hunk's old start, moved along for later sub-changes (1-based, rough).
    pub rough_line: i64,
    pub preceding: Vec<String>,
    pub removed: Vec<String>,
    pub added: Vec<String>,
    pub following: Vec<String>,
}

/// The sub-changes for one file section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzyFile {
    /// The path as written (before normalisation).
    pub path: String,
    /// A `--- /dev/null` section (only read by the fixed style).
    pub new_file: bool,
    pub changes: Vec<SubChange>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Position {
    Preceding,
    InChange,
    Following,
}

fn parse_hunk(old_start: i64, content: &str, out: &mut Vec<SubChange>) {
    let mut cur = SubChange {
        rough_line: old_start,
        ..SubChange::default()
    };
    let mut pos = Position::Preceding;
    for (i, line) in content.split('\n').skip(1).enumerate() {
        if let Some(text) = line.strip_prefix(' ') {
            if pos == Position::InChange {
                pos = Position::Following;
            }
            match pos {
                Position::Preceding => cur.preceding.push(text.to_string()),
                Position::Following => cur.following.push(text.to_string()),
                Position::InChange => {}
            }
        }
        let change = if let Some(t) = line.strip_prefix('-') {
            Some((t, true))
        } else {
            line.strip_prefix('+').map(|t| (t, false))
        };
        if let Some((text, removed)) = change {
            if pos == Position::Following {
                let rough_line = old_start + i as i64 - cur.following.len() as i64;
                let next = SubChange {
                    rough_line,
                    preceding: cur.following.clone(),
                    ..SubChange::default()
                };
                out.push(std::mem::replace(&mut cur, next));
            }
            pos = Position::InChange;
            if removed {
                cur.removed.push(text.to_string());
            } else {
                cur.added.push(text.to_string());
            }
        }
        if line.starts_with("```") || line.starts_with('<') {
            break;
        }
    }
    out.push(cur);
}

/// `extract_fuzzy_patch`: the file sections of a model output and their sub-changes.
pub fn parse(model_output: &str, new_files: bool) -> Result<Vec<FuzzyFile>, AttemptError> {
    let text = model_output.trim_start_matches('\n');
    let mut files = Vec::new();
    for (index, section) in file_sections(text, new_files).iter().enumerate() {
        let header = file_header(section.text, new_files)
            .ok_or(AttemptError::MalformedHeader { index: index + 1 })?;
        let tokens = split_whitespace(header.text);
        let path = if header.new_file {
            // The original never sees these; take the `+++ b/…` token.
            let plus = tokens.iter().skip(2).position(|t| *t == "+++");
            plus.and_then(|k| tokens.get(k + 3))
                .map(|t| skip_chars(t, 2).to_string())
                .unwrap_or_default()
        } else {
            tokens
                .get(1)
                .map(|t| skip_chars(t, 2).to_string())
                .unwrap_or_default()
        };
        let mut changes = Vec::new();
        for hunk in hunks(section.text) {
            parse_hunk(hunk.old_start, hunk.content, &mut changes);
        }
        files.push(FuzzyFile {
            path,
            new_file: header.new_file,
            changes,
        });
    }
    Ok(files)
}

#[derive(Clone)]
struct Line {
    text: String,
    chars: Vec<char>,
}

impl Line {
    fn new(text: &str) -> Line {
        Line {
            text: text.to_string(),
            chars: text.chars().collect(),
        }
    }
}

/// `overlap_score(a, b)` with `b = file[offset..]`.
fn overlap(a: &[Vec<char>], file: &[Line], offset: usize) -> f64 {
    let mut score = 0.0f64;
    for (ctx, line) in a.iter().zip(&file[offset..]) {
        let (x, y) = (&line.chars, ctx);
        if x.is_empty() && y.is_empty() {
            continue;
        }
        let d = levenshtein::distance(x, y);
        let m = x.len().max(y.len());
        score += 1.0 - (d as f64 / m as f64);
    }
    score
}

fn char_lines(lines: &[String]) -> Vec<Vec<char>> {
    lines.iter().map(|l| l.chars().collect()).collect()
}

/// The first offset in `range` with the best positive score.
fn best_offset(a: &[Vec<char>], file: &[Line], range: std::ops::Range<usize>) -> Option<usize> {
    if a.is_empty() {
        return None;
    }
    let mut best = 0.0f64;
    let mut at = None;
    for i in range {
        let s = overlap(a, file, i);
        if s > best {
            best = s;
            at = Some(i);
        }
    }
    at
}

fn place(change: &SubChange, file: &mut Vec<Line>, style: FuzzyStyle) {
    let n = file.len();
    let mut anchor = change.preceding.clone();
    anchor.extend(change.removed.iter().cloned());
    let anchor = char_lines(&anchor);
    let following = char_lines(&change.following);
    let found = best_offset(&anchor, file, 0..n);
    let (start, end) = match style {
        FuzzyStyle::Parity => {
            let start = found.map_or(0, |i| (i + change.preceding.len()).min(n));
            let end = best_offset(&following, file, 0..n).unwrap_or(n);
            (start, end)
        }
        FuzzyStyle::Fixed => {
            let start = match found {
                Some(i) => (i + change.preceding.len()).min(n),
                None => {
                    let rough = change.rough_line - 1 + change.preceding.len() as i64;
                    rough.clamp(0, n as i64) as usize
                }
            };
            let after_removed = (start + change.removed.len()).min(n);
            let end = best_offset(&following, file, start..n).unwrap_or(after_removed);
            (start, end)
        }
    };
    // Python slicing: `file[:start] + added + file[end:]`; when end < start the lines in between
    // appear twice, as in the original.
    let old = std::mem::take(file);
    let mut next: Vec<Line> = Vec::with_capacity(n + change.added.len());
    next.extend(old[..start].iter().cloned());
    next.extend(change.added.iter().map(|t| Line::new(t)));
    next.extend(old[end.min(n)..].iter().cloned());
    *file = next;
}

/// Parity placement duplicates the lines between a later "end" and an earlier "start", so a few
/// hunks whose following context repeats can double a file again and again. The original keeps
/// going until memory runs out; here the attempt stops at this size.
pub const MAX_FILE_BYTES: usize = 64 << 20;

/// Applies every file's sub-changes in order; fails on the first missing file, as the original.
pub(crate) fn apply(
    files: &[FuzzyFile],
    ws: &mut Workspace<'_>,
    style: FuzzyStyle,
) -> Result<Vec<String>, AttemptError> {
    if files.is_empty() {
        return Err(AttemptError::NoFileSections);
    }
    let mut touched = Vec::new();
    for f in files {
        let path = repo_path(&f.path)?;
        let current = ws.read(&path)?;
        if f.new_file && f.changes.is_empty() {
            // `@@ @@` or another header the hunk pattern does not read: nothing to create.
            return Err(AttemptError::NewFileWithoutHunks { path });
        }
        let (mut lines, final_newline): (Vec<Line>, bool) = match (current, f.new_file) {
            // A file this extraction created (an answer repeated in the output creates it
            // again): the later section's lines replace it.
            (Some(_), true) if !ws.exists_at_base(&path)? => (Vec::new(), true),
            (Some(_), true) => return Err(AttemptError::FileExists { path }),
            (None, true) => (Vec::new(), true),
            (None, false) => return Err(AttemptError::FileNotFound { path }),
            (Some(c), false) => match style {
                FuzzyStyle::Parity => (
                    python_splitlines(&c).into_iter().map(Line::new).collect(),
                    false,
                ),
                FuzzyStyle::Fixed => {
                    let body = c.strip_suffix('\n');
                    let lines = match body {
                        Some(b) => b.split('\n').map(Line::new).collect(),
                        None if c.is_empty() => Vec::new(),
                        None => c.split('\n').map(Line::new).collect(),
                    };
                    (lines, body.is_some() || c.is_empty())
                }
            },
        };
        for change in &f.changes {
            place(change, &mut lines, style);
            let bytes: usize = lines.iter().map(|l| l.text.len() + 1).sum();
            if bytes > MAX_FILE_BYTES {
                return Err(AttemptError::TooLarge { path, bytes });
            }
        }
        let mut out = lines
            .iter()
            .map(|l| l.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if final_newline && !lines.is_empty() {
            out.push('\n');
        }
        ws.write(&path, out);
        if !touched.contains(&path) {
            touched.push(path);
        }
    }
    Ok(touched)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(pre: &[&str], rem: &[&str], add: &[&str], fol: &[&str]) -> SubChange {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        SubChange {
            rough_line: 0,
            preceding: v(pre),
            removed: v(rem),
            added: v(add),
            following: v(fol),
        }
    }

    #[test]
    fn a_hunk_splits_into_sub_changes() {
        let mut out = Vec::new();
        parse_hunk(
            10,
            " tail\n a\n-b\n+B\n c\n d\n+E\n\n junk-free\n```\n+ignored\n",
            &mut out,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0],
            SubChange {
                rough_line: 10,
                ..sub(&["a"], &["b"], &["B"], &["c", "d"])
            }
        );
        assert_eq!(
            out[1],
            SubChange {
                rough_line: 13,
                ..sub(&["c", "d"], &[], &["E"], &["junk-free"])
            }
        );
    }

    fn lines(s: &[&str]) -> Vec<Line> {
        s.iter().map(|t| Line::new(t)).collect()
    }

    fn texts(l: &[Line]) -> Vec<&str> {
        l.iter().map(|x| x.text.as_str()).collect()
    }

    #[test]
    fn no_following_context_truncates_in_parity_only() {
        let c = sub(&["b"], &[], &["X"], &[]);
        let mut f = lines(&["a", "b", "c", "d"]);
        place(&c, &mut f, FuzzyStyle::Parity);
        assert_eq!(texts(&f), ["a", "b", "X"]);
        let mut f = lines(&["a", "b", "c", "d"]);
        place(&c, &mut f, FuzzyStyle::Fixed);
        assert_eq!(texts(&f), ["a", "b", "X", "c", "d"]);
    }

    #[test]
    fn fuzzy_context_finds_the_closest_lines() {
        let c = sub(
            &["def test_a(self):", "    x = 1"],
            &["    assert x == 1"],
            &["    assert x == 2"],
            &["", "def test_b(self):"],
        );
        let mut f = lines(&[
            "import x",
            "",
            "def test_a(self) :",
            "    x = 1",
            "    assert x == 1",
            "",
            "def test_b(self):",
            "    pass",
        ]);
        place(&c, &mut f, FuzzyStyle::Parity);
        assert_eq!(
            texts(&f),
            [
                "import x",
                "",
                "def test_a(self) :",
                "    x = 1",
                "    assert x == 2",
                "",
                "def test_b(self):",
                "    pass"
            ]
        );
    }

    #[test]
    fn reversed_ranges_duplicate_lines_like_python_slicing() {
        // Following context found before the start: file[:start] + added + file[end:].
        let c = sub(&["c"], &[], &["X"], &["a"]);
        let mut f = lines(&["a", "b", "c", "d"]);
        place(&c, &mut f, FuzzyStyle::Parity);
        assert_eq!(texts(&f), ["a", "b", "c", "X", "a", "b", "c", "d"]);
    }
}
