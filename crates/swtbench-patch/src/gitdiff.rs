//! Rendering old/new file contents as a `git diff` that `git apply` accepts.
//!
//! The original ends every extraction with `git add --all && git diff <base>`; this produces the
//! same kind of text from contents in memory: `diff --git` headers, `index` lines with real blob
//! ids, `new file mode 100644` for created files (an empty created file has no hunk), unified
//! hunks with three lines of context, `\ No newline at end of file` markers, and git's quoting of
//! unusual path characters. Hunk boundaries come from a Myers diff and may differ from git's in
//! ambiguous places (or, for pathological inputs that exceed [`DIFF_DEADLINE`], be less than
//! minimal); the patch applies to the same result either way.
//!
//! Pure (the deadline reads the clock).

use std::time::Duration;

use sha1::{Digest, Sha1};
use similar::{Algorithm, ChangeTag, TextDiff};

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

/// One file's section of the diff; empty when the contents are equal.
pub fn render_file(change: &FileChange) -> String {
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
    out.push_str(&format!("index {}..{}\n", &old_id[..7], &new_id[..7]));
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
    for group in diff.grouped_ops(3) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_start = first.old_range().start;
        let old_len = last.old_range().end - old_start;
        let new_start = first.new_range().start;
        let new_len = last.new_range().end - new_start;
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(old_start, old_len),
            range(new_start, new_len)
        ));
        for op in &group {
            for change in diff.iter_changes(op) {
                let tag = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                push_line(&mut out, tag, change.value());
            }
        }
    }
    out
}

/// The whole diff: every changed file, sorted by path as `git diff` lists them.
pub fn render(changes: &[FileChange]) -> String {
    let mut sorted: Vec<&FileChange> = changes.iter().collect();
    sorted.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    sorted.into_iter().map(render_file).collect()
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
            "diff --git a/x.py b/x.py\nindex {}..{}\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n",
            &blob_id("a\nb\n")[..7],
            &blob_id("a\nc")[..7]
        );
        assert_eq!(d, expected);
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
