//! The custom format of the ZeroShotPlus prompt: blocks of
//!
//! ```text
//! diff
//! <path>
//! rewrite | insert
//! <rough line number> | EOF | BOF
//! <code …>
//! end diff
//! ```
//!
//! The block grammar is read here, exactly as the original reads it: the output is split with
//! Python's `splitlines()` after dropping leading newlines; **every** line starting with `diff`
//! opens a block (even inside another block's code); the next three lines are taken as they are
//! (no trimming); the code runs to the first later line starting with `end diff` — or, when there
//! is none, to the line *before* the last one. A `diff` line with fewer than three lines after it
//! is skipped.
//!
//! Blocks are then ordered by their line field — as text, as the original does (`"10"` sorts
//! before `"9"`; [`BlockOrder::Text`], the parity style's order), or numerically (BOF, then
//! numbers, then EOF, then anything else; the preserve style) — and grouped per path as written,
//! in order of first appearance. The
//! actual rewriting is done by our Python script (`assets/extract/custom_patch.py`) through a
//! [`PythonRunner`]: `rewrite` replaces every function or class of that name anywhere in the
//! file, `insert` appends at the end of the file, other kinds are ignored.
//!
//! The request/response types are public so that the protocol is documented in one place.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::AttemptError;
use crate::paths::repo_path;
use crate::python::{PythonRunner, CUSTOM_PATCH_SCRIPT};
use crate::workspace::Workspace;
use crate::CustomStyle;
use swtbench_core::diff::python_splitlines;

/// Version of the script protocol; the script refuses requests of another version.
pub const PROTOCOL: u32 = 1;

/// One block as written by the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomBlock {
    /// The path line, untrimmed.
    pub path: String,
    /// The kind line (`rewrite`, `insert`, or anything else, which is ignored).
    pub kind: String,
    /// The rough line number line (`12`, `EOF`, `BOF`, …).
    pub line: String,
    /// The code lines, undedented.
    pub code: Vec<String>,
}

/// How blocks are ordered before they are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockOrder {
    /// BOF, line numbers ascending, EOF, then anything else (stable).
    #[default]
    Numeric,
    /// The original: the line fields compared as strings (stable).
    Text,
}

/// The code of all blocks together may not exceed this many bytes. Every `diff` line opens a
/// block whose code runs to the next `end diff`, so blocks overlap and an answer of many `diff`
/// lines without `end diff` asks for quadratic memory (the original would exhaust it).
pub const MAX_BLOCK_BYTES: usize = 64 << 20;

/// `extract_custom_patches`: every block of a model output, in order of appearance; an error
/// when their code together exceeds [`MAX_BLOCK_BYTES`].
pub fn parse_blocks(model_output: &str) -> Result<Vec<CustomBlock>, AttemptError> {
    let lines = python_splitlines(model_output.trim_start_matches('\n'));
    // For every index, the first `end diff` line at or after it (one backward pass instead of a
    // forward search per block), and the byte offsets of the lines to size blocks in O(1).
    let mut next_end = vec![None; lines.len() + 1];
    for j in (0..lines.len()).rev() {
        next_end[j] = if lines[j].starts_with("end diff") {
            Some(j)
        } else {
            next_end[j + 1]
        };
    }
    let mut offset = Vec::with_capacity(lines.len() + 1);
    offset.push(0usize);
    for l in &lines {
        offset.push(offset[offset.len() - 1] + l.len() + 1);
    }
    let mut spans = Vec::new();
    let mut total = 0usize;
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with("diff") || i + 3 >= lines.len() {
            continue;
        }
        let start = i + 4;
        let end = match next_end[start.min(lines.len())] {
            Some(j) => j,
            // The original's loop variable is left at the last index: that line is lost.
            None if start < lines.len() => lines.len() - 1,
            None => start,
        }
        .max(start);
        total = total.saturating_add(offset[end] - offset[start]);
        if total > MAX_BLOCK_BYTES {
            return Err(AttemptError::BlocksTooLarge {
                limit: MAX_BLOCK_BYTES,
            });
        }
        spans.push((i, start, end));
    }
    Ok(spans
        .into_iter()
        .map(|(i, start, end)| CustomBlock {
            path: lines[i + 1].to_string(),
            kind: lines[i + 2].to_string(),
            line: lines[i + 3].to_string(),
            code: lines[start..end].iter().map(|s| s.to_string()).collect(),
        })
        .collect())
}

fn numeric_key(line: &str) -> (u8, i64) {
    let t = line.trim();
    if t.eq_ignore_ascii_case("bof") {
        (0, 0)
    } else if let Ok(n) = t.parse::<i64>() {
        (1, n)
    } else if t.eq_ignore_ascii_case("eof") {
        (2, 0)
    } else {
        (3, 0)
    }
}

/// Sorts blocks (stably) by their line field.
pub fn order_blocks(blocks: &mut [CustomBlock], order: BlockOrder) {
    match order {
        BlockOrder::Numeric => blocks.sort_by_key(|b| numeric_key(&b.line)),
        BlockOrder::Text => blocks.sort_by(|a, b| a.line.cmp(&b.line)),
    }
}

/// A request to the script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptRequest {
    pub protocol: u32,
    pub style: CustomStyle,
    /// Use the tokenizer fallback for definition spans even where `end_lineno` exists (tests).
    #[serde(default)]
    pub force_tokenize: bool,
    pub files: Vec<ScriptFile>,
}

/// One file and the blocks for it, in application order. When a path repeats, the script starts
/// from the previous entry's result instead of `source`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptFile {
    pub path: String,
    /// Content at the base commit; `None` when the file does not exist.
    pub source: Option<String>,
    pub blocks: Vec<ScriptBlock>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptBlock {
    pub kind: String,
    /// The code lines joined with `\n` (the script dedents them).
    pub code: String,
}

/// The script's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptResponse {
    pub protocol: u32,
    /// `sys.version` of the interpreter that ran it (first word).
    pub python: String,
    pub files: Vec<ScriptResult>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptResult {
    pub path: String,
    pub ok: bool,
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    /// The original's script dies on this file (uncaught exception), so it writes no patch.
    #[serde(default)]
    pub crash: bool,
}

fn excerpt(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim();
    let tail: String = s
        .chars()
        .rev()
        .take(600)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    if tail.is_empty() {
        "(no output)".to_string()
    } else {
        tail
    }
}

/// Runs the script once with `request`.
pub fn run_script(
    python: &dyn PythonRunner,
    request: &ScriptRequest,
) -> Result<ScriptResponse, AttemptError> {
    let input = serde_json::to_vec(request).map_err(|e| AttemptError::Python {
        detail: format!("cannot encode the request: {e}"),
    })?;
    let out = python
        .run(CUSTOM_PATCH_SCRIPT, &input)
        .map_err(|e| AttemptError::Python { detail: e.0 })?;
    if out.status != Some(0) {
        return Err(AttemptError::Python {
            detail: format!(
                "the custom-patch script exited with {}: {}",
                out.status
                    .map_or("a signal".to_string(), |c| format!("status {c}")),
                excerpt(&out.stderr)
            ),
        });
    }
    let response: ScriptResponse =
        serde_json::from_slice(&out.stdout).map_err(|e| AttemptError::Python {
            detail: format!(
                "the custom-patch script printed no valid response ({e}): {}",
                excerpt(&out.stdout)
            ),
        })?;
    if response.protocol != PROTOCOL || response.files.len() != request.files.len() {
        return Err(AttemptError::Python {
            detail: format!(
                "the custom-patch script answered protocol {} with {} files (expected {PROTOCOL}, {})",
                response.protocol,
                response.files.len(),
                request.files.len()
            ),
        });
    }
    Ok(response)
}

/// Applies the blocks file by file, in group order; on the first file that fails, the files
/// before it stay written (as in the original) and the error is returned: the caller keeps or
/// drops those edits.
pub(crate) fn apply(
    model_output: &str,
    ws: &mut Workspace<'_>,
    python: Option<&dyn PythonRunner>,
    style: CustomStyle,
    order: BlockOrder,
) -> Result<Vec<String>, AttemptError> {
    let mut blocks = parse_blocks(model_output)?;
    if blocks.is_empty() {
        return Err(AttemptError::NoCustomBlocks);
    }
    order_blocks(&mut blocks, order);
    // Grouped by the path *as written*, like the original; two spellings of one file
    // (`./a.py`, `a.py`) are two groups applied one after the other.
    let mut groups: Vec<(&str, Vec<ScriptBlock>)> = Vec::new();
    let mut group_of: HashMap<&str, usize> = HashMap::new();
    for b in &blocks {
        let block = ScriptBlock {
            kind: b.kind.clone(),
            code: b.code.join("\n"),
        };
        match group_of.get(b.path.as_str()) {
            Some(&k) => groups[k].1.push(block),
            None => {
                group_of.insert(&b.path, groups.len());
                groups.push((&b.path, vec![block]));
            }
        }
    }
    let mut files: Vec<ScriptFile> = Vec::new();
    for (raw, blocks) in groups {
        let path = repo_path(raw)?;
        let source = ws.read(&path)?;
        files.push(ScriptFile {
            path,
            source,
            blocks,
        });
    }
    let python = python.ok_or_else(|| AttemptError::Python {
        detail: "no Python interpreter was provided".to_string(),
    })?;
    let request = ScriptRequest {
        protocol: PROTOCOL,
        style,
        force_tokenize: false,
        files,
    };
    let response = run_script(python, &request)?;
    let mut touched = Vec::new();
    for (file, result) in request.files.iter().zip(&response.files) {
        match (result.ok, &result.content) {
            (true, Some(content)) => {
                ws.write(&file.path, content.clone());
                touched.push(file.path.clone());
            }
            // A missing file that no block creates.
            (true, None) if file.source.is_none() => {}
            _ => {
                let path = file.path.clone();
                let reason = result
                    .error
                    .clone()
                    .unwrap_or_else(|| "no content returned".to_string());
                return Err(if result.crash {
                    AttemptError::CustomCrash { path, reason }
                } else {
                    AttemptError::Custom { path, reason }
                });
            }
        }
    }
    Ok(touched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_grammar_matches_the_original() {
        let out = "\n\nSome prose.\n```custom-diff\ndiff\ntests/test_a.py\nrewrite\n12\ndef test_a():\n    assert f() == 2\nend diff\ndiff\ntests/test_a.py\ninsert\nEOF\ndef test_b():\n    pass\nend diff\n```\ndiff\nx.py\n";
        let b = parse_blocks(out).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].path, "tests/test_a.py");
        assert_eq!(b[0].kind, "rewrite");
        assert_eq!(b[0].line, "12");
        assert_eq!(b[0].code, ["def test_a():", "    assert f() == 2"]);
        assert_eq!(b[1].code, ["def test_b():", "    pass"]);
    }

    #[test]
    fn unterminated_block_loses_its_last_line() {
        let b = parse_blocks("diff\na.py\ninsert\nEOF\nx = 1\ny = 2\nz = 3").unwrap();
        assert_eq!(b[0].code, ["x = 1", "y = 2"]);
        let b = parse_blocks("diff\na.py\ninsert\nEOF").unwrap();
        assert!(b[0].code.is_empty());
        // A code line starting with "diff" opens another block.
        let b = parse_blocks("diff\na.py\ninsert\nEOF\ndiff = 1\nend diff\nx\ny\n").unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].code, ["diff = 1"]);
        assert_eq!(b[1].path, "end diff");
    }

    #[test]
    fn many_unterminated_blocks_are_refused_not_materialised() {
        // 20 000 `diff` lines and no `end diff`: every block runs to the line before the last,
        // 200 million code lines in all; the limit stops it before anything is copied.
        let out = format!("{}{}", "diff\n".repeat(20_000), "x".repeat(1 << 16));
        assert_eq!(
            parse_blocks(&out),
            Err(AttemptError::BlocksTooLarge {
                limit: MAX_BLOCK_BYTES
            })
        );
        // Below the limit the overlapping blocks are all there.
        let b = parse_blocks(&"diff\n".repeat(2_000)).unwrap();
        assert_eq!(b.len(), 2_000 - 3);
        assert_eq!(b[0].code.len(), 2_000 - 5);
        assert!(b.last().unwrap().code.is_empty());
        let b = parse_blocks(&format!("{}end diff\n", "diff\n".repeat(2_000))).unwrap();
        assert_eq!(b[0].code.len(), 2_000 - 4);
        assert_eq!(b[1].code.len(), 2_000 - 5);
    }

    #[test]
    fn numeric_order_is_a_deviation() {
        let mk = |l: &str| CustomBlock {
            path: "a.py".into(),
            kind: "insert".into(),
            line: l.into(),
            code: vec![],
        };
        let mut v: Vec<_> = ["EOF", "10", "9", "BOF", "?"]
            .iter()
            .map(|l| mk(l))
            .collect();
        order_blocks(&mut v, BlockOrder::Numeric);
        let lines: Vec<&str> = v.iter().map(|b| b.line.as_str()).collect();
        assert_eq!(lines, ["BOF", "9", "10", "EOF", "?"]);
        order_blocks(&mut v, BlockOrder::Text);
        let lines: Vec<&str> = v.iter().map(|b| b.line.as_str()).collect();
        assert_eq!(lines, ["10", "9", "?", "BOF", "EOF"]);
    }
}
