//! The vanilla format: the original's "minimal patch" rewrite of a model's unified diff.
//!
//! Binary sections are dropped, then every hunk is cut down to the span from its first to its last
//! `+`/`-` line **plus one more line**, every line loses its trailing whitespace (so blank context
//! lines lose their leading space too), the old start moves forward past the dropped leading
//! context, and the lengths and the new start are recounted with a running delta. The lengths
//! ignore a blank line at the very end of the kept span, but the line stays in the text. The
//! result is then applied with `git apply` semantics (see [`crate::gitapply`]), whose rules for
//! hunks without trailing context (they must match at the end of the file) make this format fail
//! more often than it looks.
//!
//! [`minimal_patch`] reproduces the original's text byte for byte (its pinned unit test is one of
//! our fixtures). Pure; no I/O.

use swtbench_core::diff::{remove_binary_diffs, LineSplit};

use crate::pytext::rstrip;
use crate::sections::{file_header, file_sections, hunks};

/// The original writes the minimal patch with Python's buffered text I/O and runs `git apply` on
/// the file before flushing it: git only sees the patch when the text layer has already passed it
/// on, which happens once the encoded text reaches its 8192-byte chunk size.
pub const UNFLUSHED_THRESHOLD: usize = 8192;

/// Why no minimal patch can be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MinimalPatchError {
    /// A file section whose `---`/`+++` lines are not adjacent; the original crashes here.
    #[error("file section {index} has no adjacent `--- a/…` / `+++ b/…` header lines")]
    MalformedHeader { index: usize },
}

/// The patch used when `vanilla` is the only patch type (the original's default): no extraction,
/// the prediction as it is minus binary sections (`remove_binary_diffs`, split like Python's
/// `splitlines()`). `None` when the prediction is blank or only binary sections remain; such an
/// instance has no patch to run. `swtbench run` and `swtbench extract --patch-types vanilla`
/// both call this, so what one writes is what the other applies.
pub fn passthrough(model_output: &str) -> Option<String> {
    if model_output.trim().is_empty() {
        return None;
    }
    let patch = remove_binary_diffs(model_output, LineSplit::Python);
    (!patch.trim().is_empty()).then_some(patch)
}

/// `strip_content`: the kept span of a hunk body and how many leading lines were dropped
/// (minus one, because the first split element is the header's tail).
fn strip_content(content: &str) -> (String, i64) {
    let parts: Vec<&str> = content.split('\n').collect();
    let is_change = |p: &&str| p.starts_with('-') || p.starts_with('+');
    let first = parts.iter().position(is_change).unwrap_or(parts.len());
    // One past the last change, plus one: the original keeps the line after the last change.
    let last = match parts.iter().rposition(is_change) {
        Some(k) => k + 2,
        None => 1,
    };
    let end = last.min(parts.len());
    let kept: Vec<&str> = if first < end {
        parts[first..end].iter().map(|p| rstrip(p)).collect()
    } else {
        Vec::new()
    };
    let mut out = String::with_capacity(content.len() + 2);
    out.push('\n');
    out.push_str(&kept.join("\n"));
    out.push('\n');
    (out, first as i64 - 1)
}

/// `get_hunk_stats`: (old length, new start, new length, new running delta).
fn hunk_stats(pre_start: i64, body: &str, total_delta: i64) -> (i64, i64, i64, i64) {
    let after_first = body.split_once('\n').map_or(body, |(_, rest)| rest);
    let trimmed = after_first.trim_matches('\n');
    let (mut context, mut added, mut removed) = (0i64, 0i64, 0i64);
    for line in trimmed.split('\n') {
        if line.starts_with('-') {
            removed += 1;
        } else if line.starts_with('+') {
            added += 1;
        } else {
            context += 1;
        }
    }
    let pre_len = context + removed;
    let post_len = context + added;
    let post_start = pre_start + total_delta;
    (
        pre_len,
        post_start,
        post_len,
        total_delta + (post_len - pre_len),
    )
}

/// The original's `extract_minimal_patch(model_output)`, with `new_files` deciding whether
/// `--- /dev/null` sections are kept (deviation) or ignored (original).
pub fn minimal_patch(model_output: &str, new_files: bool) -> Result<String, MinimalPatchError> {
    let cleaned = remove_binary_diffs(model_output, LineSplit::Python);
    let text = cleaned.trim_start_matches('\n');
    let mut out = String::new();
    for (index, section) in file_sections(text, new_files).iter().enumerate() {
        let header = file_header(section.text, new_files)
            .ok_or(MinimalPatchError::MalformedHeader { index: index + 1 })?;
        out.push_str(header.text);
        out.push('\n');
        let mut total_delta = 0i64;
        for hunk in hunks(section.text) {
            let (body, adjust) = strip_content(hunk.content);
            let pre_start = hunk.old_start + adjust;
            let (pre_len, post_start, post_len, delta) = hunk_stats(pre_start, &body, total_delta);
            total_delta = delta;
            out.push_str(&format!(
                "@@ -{pre_start},{pre_len} +{post_start},{post_len} @@{body}"
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_one_line_after_the_last_change() {
        let (body, adjust) = strip_content(" tail\n ctx1\n-old  \n+new\n ctx2\n ctx3\n");
        assert_eq!(body, "\n-old\n+new\n ctx2\n");
        assert_eq!(adjust, 1);
    }

    #[test]
    fn hunk_without_changes_keeps_nothing() {
        let (body, adjust) = strip_content("\n a\n b\n");
        assert_eq!(body, "\n\n");
        assert_eq!(adjust, 3);
        // The original counts the empty remainder as one context line.
        assert_eq!(hunk_stats(5, &body, 0), (1, 5, 1, 0));
    }

    #[test]
    fn trailing_blank_line_is_not_counted() {
        let (body, _) = strip_content("\n+a\n \n x\n");
        assert_eq!(body, "\n+a\n\n");
        assert_eq!(hunk_stats(3, &body, 2), (0, 5, 1, 3));
    }

    #[test]
    fn passthrough_only_drops_binary_sections() {
        assert_eq!(passthrough(""), None);
        assert_eq!(passthrough(" \n\t\n"), None);
        let binary = "diff --git a/x.pyc b/x.pyc\nBinary files a/x.pyc and b/x.pyc differ\n";
        assert_eq!(passthrough(binary), None);
        let text = "diff --git a/t.py b/t.py\n--- a/t.py\n+++ b/t.py\n@@ -1 +1 @@\n-a\n+b";
        // No minimal-patch rewrite (the single-number header stays), a final newline added.
        assert_eq!(passthrough(text).unwrap(), format!("{text}\n"));
        assert_eq!(
            passthrough(&format!("{binary}{text}\n")).unwrap(),
            format!("{text}\n")
        );
        // Prose is passed through too: git apply decides later.
        assert_eq!(passthrough("I cannot.").unwrap(), "I cannot.\n");
    }

    #[test]
    fn single_number_headers_are_not_hunks() {
        let p = minimal_patch("--- a/x.py\n+++ b/x.py\n@@ -3 +3 @@\n-a\n+b\n", false).unwrap();
        assert_eq!(p, "--- a/x.py\n+++ b/x.py\n");
    }
}
