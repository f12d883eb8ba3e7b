//! Which repository files are BM25 documents, what their text is, and the ranking of one
//! instance's files against its issue.
//!
//! The SWE-bench retrieval indexes every `*.py` file of the checkout at `base_commit` (test files
//! only when asked: SWT-Bench's datasets were built with them), as `<path>\n<content>` with the
//! content decoded as strict UTF-8 and Python's universal newlines. Files that are not valid UTF-8
//! made the original drop the whole instance; here the caller decides ([`Undecodable`]).
//!
//! Pure: file lists and contents come in, hits go out. Reading the repository is the caller's job.

use serde::{Deserialize, Serialize};

use crate::bm25::{adjust_ties, Bm25Params, Hit, Query, Ranker};
use crate::render::universal_newlines;

/// Default number of hits per instance.
pub const DEFAULT_TOP_K: usize = 20;

/// Whether a repository path names a Python file (`*.py`, matched on the last component,
/// case-sensitive, as Python's `Path.rglob("*.py")`).
pub fn is_python_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".py")
}

/// SWE-bench's test-file rule: the lowercased path, split on space, `_`, `/` and `.`, contains
/// the word `test`, `tests` or `testing`. Applied to the repository-relative path (the original
/// also saw its clone directory's path).
pub fn is_test_file(path: &str) -> bool {
    path.to_lowercase()
        .split([' ', '_', '/', '.'])
        .any(|w| matches!(w, "test" | "tests" | "testing"))
}

/// The files of a listing that become documents.
pub fn document_paths<'a>(
    files: impl IntoIterator<Item = &'a str>,
    include_tests: bool,
) -> Vec<&'a str> {
    files
        .into_iter()
        .filter(|p| is_python_file(p) && (include_tests || !is_test_file(p)))
        .collect()
}

/// A file whose bytes are not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: not valid UTF-8 (byte {offset})")]
pub struct Undecodable {
    pub path: String,
    pub offset: usize,
}

/// A source file as Python reads it in text mode: strict UTF-8 (a BOM is kept), `\r\n` and `\r`
/// turned into `\n`.
pub fn decode_source(path: &str, bytes: Vec<u8>) -> Result<String, Undecodable> {
    match String::from_utf8(bytes) {
        Ok(s) => Ok(universal_newlines(&s)),
        Err(e) => Err(Undecodable {
            path: path.to_string(),
            offset: e.utf8_error().valid_up_to(),
        }),
    }
}

/// A BM25 document: the path, a newline, the content.
pub fn document_text(path: &str, content: &str) -> String {
    let mut s = String::with_capacity(path.len() + 1 + content.len());
    s.push_str(path);
    s.push('\n');
    s.push_str(content);
    s
}

/// One line of a retrieval file, as SWE-bench writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HitsLine {
    pub instance_id: String,
    pub hits: Vec<ScoredDoc>,
}

/// A ranked file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredDoc {
    pub docid: String,
    pub score: f64,
}

/// The ranking of one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranking {
    /// Best first, with the scores as Anserini writes them (rounded, ties nudged apart).
    pub hits: Vec<ScoredDoc>,
    pub num_documents: usize,
    /// Characters of the issue text the query used (fewer than all when it had too many terms).
    pub query_chars: usize,
    pub issue_chars: usize,
}

/// Ranks documents (path, decoded content) against an issue text.
pub fn rank<'a>(
    problem_statement: &str,
    documents: impl IntoIterator<Item = (&'a str, &'a str)>,
    top_k: usize,
) -> Ranking {
    let query = Query::from_issue(problem_statement);
    let mut ranker = Ranker::new(&query, Bm25Params::default());
    let mut text = String::new();
    for (path, content) in documents {
        text.clear();
        text.push_str(path);
        text.push('\n');
        text.push_str(content);
        ranker.add_document(path, &text);
    }
    let mut hits: Vec<Hit> = ranker.top_k(top_k);
    adjust_ties(&mut hits);
    Ranking {
        hits: hits
            .into_iter()
            .map(|h| ScoredDoc {
                docid: h.docid,
                score: f64::from(h.score),
            })
            .collect(),
        num_documents: ranker.num_documents(),
        query_chars: query.used_chars,
        issue_chars: problem_statement.chars().count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_and_test_file_rules() {
        assert!(is_python_file("a/b/x.py"));
        assert!(is_python_file(".py"));
        assert!(!is_python_file("x.pyx"));
        assert!(!is_python_file("X.PY"));
        assert!(!is_python_file("x.py/README"));
        for p in [
            "tests/x.py",
            "pkg/test_foo.py",
            "django/test/utils.py",
            "a/Testing.py",
            "x/my test.py",
        ] {
            assert!(is_test_file(p), "{p}");
        }
        for p in [
            "conftest.py",
            "pytest/x.py",
            "testcases.py",
            "src/latest.py",
        ] {
            assert!(!is_test_file(p), "{p}");
        }
        let files = ["a.py", "tests/b.py", "c.txt", "d/test_e.py"];
        assert_eq!(document_paths(files, false), vec!["a.py"]);
        assert_eq!(
            document_paths(files, true),
            vec!["a.py", "tests/b.py", "d/test_e.py"]
        );
    }

    #[test]
    fn decoding_is_strict_and_normalises_newlines() {
        assert_eq!(
            decode_source("a.py", b"\xef\xbb\xbfx\r\ny\rz".to_vec()).unwrap(),
            "\u{feff}x\ny\nz"
        );
        assert_eq!(
            decode_source("b.py", b"ok\xe9".to_vec())
                .unwrap_err()
                .to_string(),
            "b.py: not valid UTF-8 (byte 2)"
        );
        assert_eq!(document_text("a/b.py", "x\n"), "a/b.py\nx\n");
    }
}
