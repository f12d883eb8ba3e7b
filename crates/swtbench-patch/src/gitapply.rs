//! `git apply` (default options) for the patches the vanilla format produces, over file contents
//! in memory, so that model output is never applied on the host's file system.
//!
//! The original applies its minimal patch with `git apply -v` in the container. What decides
//! success there is reproduced here:
//!
//! * headers: a `--- ` line directly followed by `+++ ` and then `@@ -`; a valid `@@ -` line seen
//!   before any header is fatal ("patch fragment without header"), which is what happens to every
//!   hunk after the first when a blank line separates them; names are taken with `-p1`, end at a
//!   tab, and the shorter name wins when the other one extends it;
//! * hunk bodies: lines start with ` `, `-`, `+`, `\` or are empty (an empty context line); the
//!   body ends when both counts are used up; anything else, or counts that do not add up, is a
//!   corrupt patch; a hunk with no `+`/`-` line is corrupt;
//! * placement: exact line matches only, starting at the hunk's new-side line and searching
//!   alternately forwards and backwards; a hunk whose old start is 0 or 1 must match at the
//!   beginning, a hunk **without trailing context must match at the end of the file**; lines
//!   written by an earlier hunk cannot be matched again;
//! * files: a missing file is an error unless the patch is a creation (`--- /dev/null`, or a single
//!   hunk with no old lines); a creation of an existing file is an error; several patches for one
//!   path apply one after the other; nothing is written unless every patch applies.
//!
//! Not needed for minimal patches and not supported: `diff --git` extended headers, renames, mode
//! changes, binary patches, timestamps after names, `--unidiff-zero`, whitespace options.
//! Pure: works on the in-memory view of the repository an attempt edits; no I/O.

use std::fmt;

use crate::error::AttemptError;
use crate::paths::repo_path;
use crate::workspace::Workspace;

/// Why `git apply` would refuse the patch (messages follow git's own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitApplyError {
    FragmentWithoutHeader {
        line: usize,
        text: String,
    },
    /// `line` counts the lines of the patch being applied (for a non-vanilla type, the patch
    /// built from the model output); `hunk` is the header of the hunk it belongs to.
    Corrupt {
        line: usize,
        hunk: String,
    },
    NoValidPatches,
    NoFilename {
        line: usize,
    },
    NewFileDependsOnOld {
        path: String,
    },
    NoSuchFile {
        path: String,
    },
    AlreadyExists {
        path: String,
    },
    HunkFailed {
        path: String,
        old_start: i64,
    },
    InvalidPath {
        path: String,
    },
}

impl fmt::Display for GitApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GitApplyError::FragmentWithoutHeader { line, text } => {
                write!(f, "patch fragment without header at line {line}: {text}")
            }
            GitApplyError::Corrupt { line, hunk } => {
                write!(f, "corrupt patch at line {line} (in the hunk `{hunk}`)")
            }
            GitApplyError::NoValidPatches => write!(f, "no valid patches in input"),
            GitApplyError::NoFilename { line } => {
                write!(f, "unable to find filename in patch at line {line}")
            }
            GitApplyError::NewFileDependsOnOld { path } => {
                write!(f, "new file {path} depends on old contents")
            }
            GitApplyError::NoSuchFile { path } => write!(f, "{path}: No such file or directory"),
            GitApplyError::AlreadyExists { path } => {
                write!(f, "{path}: already exists in working directory")
            }
            GitApplyError::InvalidPath { path } => write!(f, "invalid path '{path}'"),
            GitApplyError::HunkFailed { path, old_start } => {
                write!(f, "patch failed: {path}:{old_start}")
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyKind {
    Context,
    Removed,
    Added,
}

#[derive(Debug, Clone)]
struct BodyLine {
    kind: BodyKind,
    /// The line without its prefix, with its `\n` unless a `\ No newline` line follows.
    text: String,
}

#[derive(Debug, Clone)]
struct Fragment {
    old_start: i64,
    old_lines: i64,
    new_start: i64,
    trailing: usize,
    body: Vec<BodyLine>,
}

/// -1 unknown, 0 no, 1 yes, as git keeps it.
type Tristate = i8;

#[derive(Debug, Clone)]
struct FilePatch {
    name: String,
    is_new: Tristate,
    fragments: Vec<Fragment>,
}

/// `@@ -a[,b] +c[,d] @@` (git's `parse_fragment_header`); the line must end with `\n`.
fn fragment_header(line: &str) -> Option<(i64, i64, i64, i64)> {
    if !line.ends_with('\n') {
        return None;
    }
    let rest = line.strip_prefix("@@ -")?;
    let (a, b, rest) = range(rest)?;
    let rest = rest.strip_prefix(" +")?;
    let (c, d, rest) = range(rest)?;
    rest.strip_prefix(" @@")?;
    Some((a, b, c, d))
}

fn number(s: &str) -> Option<(i64, &str)> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return None;
    }
    Some((s[..n].parse().unwrap_or(i64::MAX), &s[n..]))
}

fn range(s: &str) -> Option<(i64, i64, &str)> {
    let (start, rest) = number(s)?;
    match rest.strip_prefix(',') {
        Some(r) => {
            let (len, rest) = number(r)?;
            Some((start, len, rest))
        }
        None => Some((start, 1, rest)),
    }
}

fn git_isspace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_dev_null(s: &str) -> bool {
    s.strip_prefix("/dev/null")
        .and_then(|r| r.bytes().next())
        .is_some_and(git_isspace)
}

fn squash_slash(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_slash = false;
    for c in s.chars() {
        if c == '/' && prev_slash {
            continue;
        }
        prev_slash = c == '/';
        out.push(c);
    }
    out
}

/// git's `find_name_traditional` with `-p1`: the name ends at a newline, a tab or a carriage
/// return (not at a space); the part up to the first `/` is dropped; a shorter `def` that the
/// name starts with is preferred.
fn traditional_name(line: &str, def: Option<&str>) -> Option<String> {
    let mut p_value = 1i32;
    let mut start = None;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if git_isspace(c) && c != b' ' {
            break;
        }
        i += 1;
        if c == b'/' {
            p_value -= 1;
            if p_value == 0 {
                start = Some(i);
            }
        }
    }
    let Some(start) = start else {
        return def.map(squash_slash);
    };
    let name = &line[start..i];
    if name.is_empty() {
        return def.map(squash_slash);
    }
    if let Some(d) = def {
        if d.len() < name.len() && name.starts_with(d) {
            return Some(squash_slash(d));
        }
    }
    Some(squash_slash(name))
}

struct Parser<'a> {
    lines: Vec<&'a str>,
    /// Byte offset of each line's start; one extra entry for the end.
    offsets: Vec<usize>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut offsets = Vec::with_capacity(lines.len() + 1);
        let mut o = 0;
        for l in &lines {
            offsets.push(o);
            o += l.len();
        }
        offsets.push(o);
        Parser { lines, offsets }
    }

    /// Bytes from the start of line `i` to the end of the text.
    fn size_from(&self, i: usize) -> usize {
        self.offsets[self.lines.len()] - self.offsets[i]
    }

    /// git's `find_header` for traditional patches: the index of the `---` line.
    fn find_header(&self, from: usize) -> Result<Option<usize>, GitApplyError> {
        for i in from..self.lines.len() {
            let line = self.lines[i];
            let len = line.len();
            if len < 6 {
                continue;
            }
            if line.starts_with("@@ -") {
                if fragment_header(line).is_none() {
                    continue;
                }
                return Err(GitApplyError::FragmentWithoutHeader {
                    line: i + 1,
                    text: line.trim_end_matches('\n').to_string(),
                });
            }
            let size = self.size_from(i);
            if size < len + 6 {
                return Ok(None);
            }
            let Some(next) = self.lines.get(i + 1) else {
                continue;
            };
            if !line.starts_with("--- ") || !next.starts_with("+++ ") {
                continue;
            }
            // git compares the remaining size of the *first* line with the second line's length.
            if size < next.len() + 14 {
                continue;
            }
            if !self.lines.get(i + 2).is_some_and(|l| l.starts_with("@@ -")) {
                continue;
            }
            return Ok(Some(i));
        }
        Ok(None)
    }

    /// git's `parse_fragment`: the fragment starting at line `i` and the index after it.
    fn fragment(&self, i: usize) -> Result<(Fragment, usize), GitApplyError> {
        let corrupt = GitApplyError::Corrupt {
            line: i + 1,
            hunk: self.lines[i].trim_end().chars().take(80).collect(),
        };
        let (old_start, old_lines, new_start, new_lines) =
            fragment_header(self.lines[i]).ok_or(corrupt.clone())?;
        let (mut old, mut new) = (old_lines, new_lines);
        let mut trailing = 0usize;
        let (mut added, mut removed) = (0usize, 0usize);
        let mut body: Vec<BodyLine> = Vec::new();
        let mut j = i + 1;
        while j < self.lines.len() {
            if old == 0 && new == 0 {
                break;
            }
            let line = self.lines[j];
            if !line.ends_with('\n') {
                return Err(corrupt);
            }
            match line.as_bytes()[0] {
                b'\n' | b' ' => {
                    old -= 1;
                    new -= 1;
                    trailing += 1;
                    let text = if line == "\n" { "\n" } else { &line[1..] };
                    body.push(BodyLine {
                        kind: BodyKind::Context,
                        text: text.to_string(),
                    });
                }
                b'-' => {
                    removed += 1;
                    old -= 1;
                    trailing = 0;
                    body.push(BodyLine {
                        kind: BodyKind::Removed,
                        text: line[1..].to_string(),
                    });
                }
                b'+' => {
                    added += 1;
                    new -= 1;
                    trailing = 0;
                    body.push(BodyLine {
                        kind: BodyKind::Added,
                        text: line[1..].to_string(),
                    });
                }
                b'\\' => {
                    if line.len() < 12 || !line.starts_with("\\ ") {
                        return Err(corrupt);
                    }
                    no_newline(&mut body);
                }
                _ => return Err(corrupt),
            }
            if old < 0 || new < 0 {
                // git counts in unsigned arithmetic: an overrun can never get back to zero.
                return Err(corrupt);
            }
            j += 1;
        }
        if old != 0 || new != 0 || (added == 0 && removed == 0) {
            return Err(corrupt);
        }
        if j < self.lines.len() && self.size_from(j) > 12 && self.lines[j].starts_with("\\ ") {
            no_newline(&mut body);
            j += 1;
        }
        Ok((
            Fragment {
                old_start,
                old_lines,
                new_start,
                trailing,
                body,
            },
            j,
        ))
    }

    fn parse(&self) -> Result<Vec<FilePatch>, GitApplyError> {
        let mut patches = Vec::new();
        let mut at = 0;
        while let Some(h) = self.find_header(at)? {
            let first = &self.lines[h][4..];
            let second = &self.lines[h + 1][4..];
            let (name, mut is_new) = if is_dev_null(first) {
                (traditional_name(second, None), 1)
            } else {
                let first_name = traditional_name(first, None);
                (traditional_name(second, first_name.as_deref()), -1)
            };
            let name = name.ok_or(GitApplyError::NoFilename { line: h + 1 })?;
            let mut fragments = Vec::new();
            let mut j = h + 2;
            while j < self.lines.len() && self.size_from(j) > 4 && self.lines[j].starts_with("@@ -")
            {
                let (frag, next) = self.fragment(j)?;
                fragments.push(frag);
                j = next;
            }
            let old_total: i64 = fragments.iter().map(|f| f.old_lines).sum();
            if is_new < 0 && (old_total > 0 || fragments.len() > 1) {
                is_new = 0;
            }
            if is_new > 0 && old_total > 0 {
                return Err(GitApplyError::NewFileDependsOnOld { path: name });
            }
            patches.push(FilePatch {
                name,
                is_new,
                fragments,
            });
            at = j;
        }
        if patches.is_empty() {
            return Err(GitApplyError::NoValidPatches);
        }
        Ok(patches)
    }
}

fn no_newline(body: &mut [BodyLine]) {
    if let Some(last) = body.last_mut() {
        if last.text.ends_with('\n') {
            last.text.pop();
        }
    }
}

#[derive(Debug, Clone)]
struct ImageLine {
    text: String,
    patched: bool,
}

/// git's `match_fragment` without whitespace options.
fn matches_at(
    img: &[ImageLine],
    pre: &[&str],
    lno: usize,
    match_beginning: bool,
    match_end: bool,
) -> bool {
    if pre.len() + lno > img.len() {
        return false;
    }
    if match_end && pre.len() + lno != img.len() {
        return false;
    }
    if match_beginning && lno != 0 {
        return false;
    }
    pre.iter()
        .zip(&img[lno..])
        .all(|(p, l)| !l.patched && l.text == *p)
}

/// git's `find_pos`: try `line`, then alternately one further forwards and one further backwards.
fn find_pos(
    img: &[ImageLine],
    pre: &[&str],
    line: i64,
    match_beginning: bool,
    match_end: bool,
) -> Option<usize> {
    let nr = img.len();
    let mut line = if match_beginning {
        0
    } else if match_end {
        nr as i64 - pre.len() as i64
    } else {
        line
    };
    if line < 0 || line as usize > nr {
        line = nr as i64;
    }
    let line = line as usize;
    let (mut backwards, mut forwards, mut current) = (line, line, line);
    let mut i: u64 = 0;
    loop {
        if matches_at(img, pre, current, match_beginning, match_end) {
            return Some(current);
        }
        loop {
            if backwards == 0 && forwards == nr {
                return None;
            }
            if i & 1 == 1 {
                if backwards == 0 {
                    i += 1;
                    continue;
                }
                backwards -= 1;
                current = backwards;
            } else {
                if forwards == nr {
                    i += 1;
                    continue;
                }
                forwards += 1;
                current = forwards;
            }
            break;
        }
        i += 1;
    }
}

fn apply_fragments(path: &str, content: &str, frags: &[Fragment]) -> Result<String, GitApplyError> {
    let mut img: Vec<ImageLine> = content
        .split_inclusive('\n')
        .map(|l| ImageLine {
            text: l.to_string(),
            patched: false,
        })
        .collect();
    for frag in frags {
        let pre: Vec<&str> = frag
            .body
            .iter()
            .filter(|l| l.kind != BodyKind::Added)
            .map(|l| l.text.as_str())
            .collect();
        let post: Vec<&str> = frag
            .body
            .iter()
            .filter(|l| l.kind != BodyKind::Removed)
            .map(|l| l.text.as_str())
            .collect();
        let match_beginning = frag.old_start == 0 || frag.old_start == 1;
        let match_end = frag.trailing == 0;
        let pos = if frag.new_start > 0 {
            frag.new_start - 1
        } else {
            0
        };
        let at = find_pos(&img, &pre, pos, match_beginning, match_end).ok_or_else(|| {
            GitApplyError::HunkFailed {
                path: path.to_string(),
                old_start: frag.old_start,
            }
        })?;
        let replacement = post.iter().map(|t| ImageLine {
            text: (*t).to_string(),
            patched: true,
        });
        img.splice(at..at + pre.len(), replacement);
    }
    Ok(img.into_iter().map(|l| l.text).collect())
}

/// Applies `patch` to the workspace as `git apply` would, all or nothing. Returns the paths
/// written, in patch order.
pub(crate) fn apply(patch: &str, ws: &mut Workspace<'_>) -> Result<Vec<String>, AttemptError> {
    let parsed = Parser::new(patch).parse().map_err(git_error)?;
    // Stage every result first: git checks the whole patch before writing anything.
    let mut staged = ws.clone();
    let mut touched = Vec::new();
    for fp in &parsed {
        if !git_verify_path(&fp.name) {
            return Err(git_error(GitApplyError::InvalidPath {
                path: fp.name.clone(),
            }));
        }
        let path = repo_path(&fp.name)?;
        let current = staged.read(&path)?;
        let image = match (fp.is_new, current) {
            (1, Some(_)) => return Err(git_error(GitApplyError::AlreadyExists { path })),
            (1, None) => String::new(),
            (_, Some(c)) => c,
            (_, None) if fp.is_new < 0 => String::new(),
            (_, None) => return Err(git_error(GitApplyError::NoSuchFile { path })),
        };
        let result = apply_fragments(&path, &image, &fp.fragments).map_err(git_error)?;
        staged.write(&path, result);
        if !touched.contains(&path) {
            touched.push(path);
        }
    }
    *ws = staged;
    Ok(touched)
}

/// git's `verify_path` for a patch's (slash-squashed) file name: no absolute path, no `.` or
/// `..` component, nothing inside `.git` (any case), no trailing slash. `git apply` refuses
/// anything else with "invalid path", so `./x.py` and `/testbed/x.py` fail the vanilla format
/// even though fuzzy and custom resolve them.
fn git_verify_path(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && !name.ends_with('/')
        && name
            .split('/')
            .all(|seg| !matches!(seg, "" | "." | "..") && !seg.eq_ignore_ascii_case(".git"))
}

fn git_error(e: GitApplyError) -> AttemptError {
    AttemptError::GitApply {
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_git_apply_refuses() {
        for ok in ["x.py", "tests/x.py", "a.b/.hidden", ".github/x"] {
            assert!(git_verify_path(ok), "{ok}");
        }
        for bad in [
            "/testbed/x.py",
            "./x.py",
            "a/./x",
            "../x",
            "a/../x",
            ".git/config",
            "a/.GIT/x",
            "d/",
            "",
        ] {
            assert!(!git_verify_path(bad), "{bad}");
        }
    }

    #[test]
    fn names_follow_git() {
        assert_eq!(traditional_name("a/x.py\n", None).as_deref(), Some("x.py"));
        assert_eq!(
            traditional_name("a/x y.py\tdate\n", None).as_deref(),
            Some("x y.py")
        );
        assert_eq!(
            traditional_name("a/x.py\r\n", None).as_deref(),
            Some("x.py")
        );
        assert_eq!(
            traditional_name("b/x.py.orig\n", Some("x.py")).as_deref(),
            Some("x.py")
        );
        assert_eq!(traditional_name("nodir\n", Some("d")).as_deref(), Some("d"));
        assert_eq!(traditional_name("a//b//c\n", None).as_deref(), Some("/b/c"));
        assert!(is_dev_null("/dev/null\n"));
        assert!(!is_dev_null("/dev/nullx\n"));
    }

    #[test]
    fn fragment_headers() {
        assert_eq!(fragment_header("@@ -3 +4,0 @@\n"), Some((3, 1, 4, 0)));
        assert_eq!(
            fragment_header("@@ -3,2 +4,2 @@ def f\n"),
            Some((3, 2, 4, 2))
        );
        assert_eq!(fragment_header("@@ --1,2 +4,2 @@\n"), None);
        assert_eq!(fragment_header("@@ -1,2 +4,2 @@"), None);
    }

    fn img(s: &str) -> Vec<ImageLine> {
        s.split_inclusive('\n')
            .map(|l| ImageLine {
                text: l.to_string(),
                patched: false,
            })
            .collect()
    }

    #[test]
    fn a_corrupt_hunk_is_named_in_the_error() {
        // The hunk promises two new lines; the closing fence of a Markdown answer is not one.
        let patch = "--- a/t.py\n+++ b/t.py\n@@ -1,1 +1,2 @@ def f\n x = 1\n```\n";
        let err = Parser::new(patch).parse().expect_err("corrupt");
        assert_eq!(
            err.to_string(),
            "corrupt patch at line 3 (in the hunk `@@ -1,1 +1,2 @@ def f`)"
        );
    }

    #[test]
    fn search_alternates_from_the_given_line() {
        let image = img("x\na\nx\nb\nx\n");
        assert_eq!(find_pos(&image, &["x\n"], 3, false, false), Some(4));
        assert_eq!(find_pos(&image, &["x\n"], 1, false, false), Some(2));
        assert_eq!(find_pos(&image, &["a\n"], 4, false, false), Some(1));
        assert_eq!(find_pos(&image, &["a\n"], 4, false, true), None);
        assert_eq!(find_pos(&image, &["x\n"], 1, false, true), Some(4));
        assert_eq!(find_pos(&image, &[], 2, false, true), Some(5));
        assert_eq!(find_pos(&image, &["a\n"], 3, true, false), None);
    }
}
