//! Coverage: reading the tracer's dump out of a run's output (§5.2) and the coverage numbers of one
//! instance (§5.3).
//!
//! The dump is the `cat coverage.cover` section of `test_output.txt`: one JSON object per line,
//! `{"/testbed/<path>": {"<line>": <hits>, …}}`, one line per traced process and file. Hits of the
//! same file and line are summed across lines.
//!
//! The formulas count, over the gold code patch's changed lines that the gold or base runs show as
//! executable, the share the model's tests executed (`coverage_pred`), and the share they executed
//! more often than the base run did (`coverage_delta_pred`). The default reproduces the original,
//! including its bug: removed (pre-fix) line numbers are looked up in the *base_post* (post-fix)
//! map for `coverage_base` and for the delta baseline. [`CoverageFormula::Corrected`] looks them up
//! in base_pre instead.
//!
//! Pure: text and maps in, numbers out.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::py;

/// Per file (path relative to the repository root), per line number: hit count.
pub type CoverageMap = BTreeMap<String, BTreeMap<i64, i64>>;

/// `(path, line number)` of changed lines.
pub type LineList = Vec<(String, i64)>;

/// Which base map removed lines are compared against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CoverageFormula {
    /// The original: removed lines are looked up in base_post (§5.3, §12.1).
    #[default]
    Original,
    /// Removed lines are looked up in base_pre, where their line numbers belong.
    Corrected,
}

impl CoverageFormula {
    pub fn as_str(self) -> &'static str {
        match self {
            CoverageFormula::Original => "original",
            CoverageFormula::Corrected => "corrected",
        }
    }
}

impl std::str::FromStr for CoverageFormula {
    type Err = crate::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "original" => Ok(CoverageFormula::Original),
            "corrected" => Ok(CoverageFormula::Corrected),
            other => Err(crate::UnknownName::new(
                "coverage formula",
                other,
                Some("original or corrected"),
            )),
        }
    }
}

/// Reads the coverage dump of one run's output; a missing file (`None`) or an output without a
/// dump gives an empty map.
///
/// Like the original: the section starts after the first line that is `+ cat coverage.cover`
/// once surrounding whitespace is stripped, ends at the first line starting with
/// `+ git checkout`, and only lines starting with `{"/testbed/` are read; lines that are not valid
/// JSON are skipped, and every `/testbed/` in a path is removed. Where the original crashes (an
/// empty file, a value that is not an integer), the file or line is skipped instead.
pub fn parse_dump(output: Option<&[u8]>) -> CoverageMap {
    let Some(bytes) = output else {
        return CoverageMap::new();
    };
    let (text, _) = py::read_text(bytes);
    parse_dump_text(&text)
}

/// [`parse_dump`] of an already decoded output (universal newlines applied).
pub fn parse_dump_text(text: &str) -> CoverageMap {
    let mut scanner = DumpScanner::default();
    for line in text.split_inclusive('\n') {
        scanner.line(line);
    }
    scanner.finish()
}

/// [`parse_dump_text`] fed line by line (each line with its `\n`, as `split_inclusive` cuts
/// them), for outputs read piece by piece.
#[derive(Debug, Clone, Default)]
pub struct DumpScanner {
    state: DumpState,
    map: CoverageMap,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum DumpState {
    /// Before the `+ cat coverage.cover` line.
    #[default]
    Before,
    /// In the dump.
    In,
    /// After the `+ git checkout` line that ends it.
    Done,
}

impl DumpScanner {
    pub fn line(&mut self, line: &str) {
        match self.state {
            DumpState::Before => {
                if line.trim_matches(py::is_space) == "+ cat coverage.cover" {
                    self.state = DumpState::In;
                }
            }
            DumpState::In => {
                if line.starts_with("+ git checkout") {
                    self.state = DumpState::Done;
                } else {
                    add_dump_line(&mut self.map, line);
                }
            }
            DumpState::Done => {}
        }
    }

    pub fn finish(self) -> CoverageMap {
        self.map
    }
}

fn add_dump_line(map: &mut CoverageMap, line: &str) {
    if !line.starts_with("{\"/testbed/") {
        return;
    }
    let Ok(Value::Object(files)) = serde_json::from_str::<Value>(line.trim_matches(py::is_space))
    else {
        return;
    };
    let mut decoded: Vec<(String, BTreeMap<i64, i64>)> = Vec::with_capacity(files.len());
    for (path, hits) in &files {
        match file_hits(hits) {
            Some(h) => decoded.push((path.replace("/testbed/", ""), h)),
            None => return,
        }
    }
    for (path, hits) in decoded {
        let file = map.entry(path).or_default();
        for (line_no, n) in hits {
            *file.entry(line_no).or_insert(0) += n;
        }
    }
}

/// `{int(k): int(v)}` of one file's object; `None` where Python's `int()` would raise.
fn file_hits(v: &Value) -> Option<BTreeMap<i64, i64>> {
    let obj = v.as_object()?;
    let mut out = BTreeMap::new();
    for (k, v) in obj {
        let line = py_int_str(k)?;
        let hits = match v {
            Value::Number(n) => n.as_i64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.is_finite())
                    .map(|f| f.trunc() as i64)
            })?,
            Value::Bool(b) => i64::from(*b),
            Value::String(s) => py_int_str(s)?,
            _ => return None,
        };
        out.insert(line, hits);
    }
    Some(out)
}

/// Python's `int(str)`: surrounding whitespace allowed, optional sign, digits with single
/// underscores between them.
fn py_int_str(s: &str) -> Option<i64> {
    let t = s.trim_matches(py::is_space);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    if !clean.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: i64 = clean.parse().ok()?;
    Some(if neg { -v } else { v })
}

/// The six coverage maps of one instance.
#[derive(Debug, Clone, Copy)]
pub struct CoverageInputs<'a> {
    pub pred_pre: &'a CoverageMap,
    pub pred_post: &'a CoverageMap,
    pub gold_pre: &'a CoverageMap,
    pub gold_post: &'a CoverageMap,
    pub base_pre: &'a CoverageMap,
    pub base_post: &'a CoverageMap,
}

/// The five coverage fields of `report.json`; all `None` when no changed line is executable.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct CoverageResult {
    pub coverage_pred: Option<f64>,
    pub coverage_gold: Option<f64>,
    pub coverage_base: Option<f64>,
    pub coverage_delta_pred: Option<f64>,
    pub coverage_delta_gold: Option<f64>,
}

/// Line-level view of the same computation, for reports that mark each changed line.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChangedLines {
    /// `(old path, old line)` of every removed line that the gold or base pre runs show as executable.
    pub removed: LineList,
    /// `(new path, new line)` of every added line that the gold or base post runs show as executable.
    pub added: LineList,
}

/// The gold code patch's changed lines, as the original reads them with `unidiff`: removed lines
/// with their old path and number, added lines with their new path and number. A patch with no
/// file section has no changed lines.
pub fn patch_changed_lines(
    gold_code_patch: &str,
) -> Result<(LineList, LineList), swtbench_core::diff::DiffError> {
    match swtbench_core::diff::parse(gold_code_patch) {
        Ok(p) => Ok((
            p.removed_lines()
                .into_iter()
                .map(|(f, n)| (f, i64::from(n)))
                .collect(),
            p.added_lines()
                .into_iter()
                .map(|(f, n)| (f, i64::from(n)))
                .collect(),
        )),
        Err(swtbench_core::diff::DiffError::NoFiles) => Ok((Vec::new(), Vec::new())),
        Err(e) => Err(e),
    }
}

/// Lines of `lines` that are keys (hit or not) of any of `maps` for their file; order and
/// duplicates kept, as the original's list.
fn executable(lines: &[(String, i64)], maps: &[&CoverageMap]) -> Vec<(String, i64)> {
    lines
        .iter()
        .filter(|(f, n)| {
            maps.iter()
                .any(|m| m.get(f).is_some_and(|h| h.contains_key(n)))
        })
        .cloned()
        .collect()
}

fn hits(map: &CoverageMap, file: &str, line: i64) -> i64 {
    map.get(file)
        .and_then(|h| h.get(&line))
        .copied()
        .unwrap_or(0)
}

/// Number of distinct lines of `lines` for which `pred(line)` holds (the original counts over
/// dicts, so a line listed twice counts once, while the denominator counts it twice).
fn count_distinct(lines: &[(String, i64)], pred: impl Fn(&str, i64) -> bool) -> usize {
    let mut seen: HashSet<(&str, i64)> = HashSet::with_capacity(lines.len());
    lines
        .iter()
        .filter(|(f, n)| seen.insert((f.as_str(), *n)) && pred(f, *n))
        .count()
}

/// The coverage fields of one instance (§5.3).
pub fn compute(
    removed: &[(String, i64)],
    added: &[(String, i64)],
    maps: CoverageInputs<'_>,
    formula: CoverageFormula,
) -> (CoverageResult, ChangedLines) {
    let exec_removed = executable(removed, &[maps.gold_pre, maps.base_pre]);
    let exec_added = executable(added, &[maps.gold_post, maps.base_post]);
    let n = exec_removed.len() + exec_added.len();
    let lines = ChangedLines {
        removed: exec_removed,
        added: exec_added,
    };
    if n == 0 {
        return (CoverageResult::default(), lines);
    }
    let base_removed = match formula {
        CoverageFormula::Original => maps.base_post,
        CoverageFormula::Corrected => maps.base_pre,
    };
    let covered = |pre: &CoverageMap, post: &CoverageMap| {
        count_distinct(&lines.removed, |f, l| hits(pre, f, l) > 0)
            + count_distinct(&lines.added, |f, l| hits(post, f, l) > 0)
    };
    let beyond_base = |pre: &CoverageMap, post: &CoverageMap| {
        count_distinct(&lines.removed, |f, l| {
            hits(pre, f, l) - hits(base_removed, f, l) > 0
        }) + count_distinct(&lines.added, |f, l| {
            hits(post, f, l) - hits(maps.base_post, f, l) > 0
        })
    };
    let ratio = |k: usize| Some(k as f64 / n as f64);
    let result = CoverageResult {
        coverage_pred: ratio(covered(maps.pred_pre, maps.pred_post)),
        coverage_gold: ratio(covered(maps.gold_pre, maps.gold_post)),
        coverage_base: ratio(covered(base_removed, maps.base_post)),
        coverage_delta_pred: ratio(beyond_base(maps.pred_pre, maps.pred_post)),
        coverage_delta_gold: ratio(beyond_base(maps.gold_pre, maps.gold_post)),
    };
    (result, lines)
}

/// Per-line hit counts of one run restricted to the given lines (for line-level displays).
pub fn hits_of(map: &CoverageMap, lines: &[(String, i64)]) -> HashMap<(String, i64), i64> {
    lines
        .iter()
        .map(|(f, l)| ((f.clone(), *l), hits(map, f, *l)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cov(entries: &[(&str, &[(i64, i64)])]) -> CoverageMap {
        entries
            .iter()
            .map(|(f, h)| (f.to_string(), h.iter().copied().collect()))
            .collect()
    }

    #[test]
    fn dump_section_is_summed_and_bounded() {
        let out = b"+ cat coverage.cover\n\
{\"/testbed/src/a.py\": {\"1\": 2, \"2\": 0}}\n\
not json {\n\
{\"/testbed/src/a.py\": {\"1\": 3, \"5\": 1}, \"/testbed/pkg/testbed/m.py\": {\"7\": 1}}\n\
{\"/testbed/bad.py\": {\"x\": 1}}\n\
{\"/testbed/broken\n\
+ git checkout deadbeef\n\
{\"/testbed/src/a.py\": {\"1\": 100}}\n";
        let m = parse_dump(Some(out));
        assert_eq!(
            m,
            cov(&[
                ("src/a.py", &[(1, 5), (2, 0), (5, 1)]),
                ("pkgm.py", &[(7, 1)])
            ])
        );
        assert!(parse_dump(None).is_empty());
        assert!(parse_dump(Some(b"")).is_empty());
        assert!(parse_dump(Some(b"{\"/testbed/a.py\": {\"1\": 1}}\n")).is_empty());
        // The start line may carry surrounding whitespace; CRLF output reads the same.
        let m = parse_dump(Some(
            b"  + cat coverage.cover \r\n{\"/testbed/a.py\": {\" 3 \": 2.9, \"1_0\": \"4\"}}\r\n",
        ));
        assert_eq!(m, cov(&[("a.py", &[(3, 2), (10, 4)])]));
    }

    const PATCH: &str = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -10,3 +10,3 @@\n ctx\n-old\n+new\n ctx\n@@ -20,2 +20,3 @@\n c\n+added1\n c\n";

    #[test]
    fn formulas_with_the_base_post_quirk() {
        let (removed, added) = patch_changed_lines(PATCH).unwrap();
        assert_eq!(removed, vec![("m.py".to_string(), 11)]);
        assert_eq!(
            added,
            vec![("m.py".to_string(), 11), ("m.py".to_string(), 21)]
        );
        // gold_pre marks old line 11 executable; base_post marks new 11 and 21.
        let gold_pre = cov(&[("m.py", &[(11, 1)])]);
        let gold_post = cov(&[("m.py", &[(11, 2), (21, 0)])]);
        let base_pre = cov(&[("m.py", &[(11, 0)])]);
        let base_post = cov(&[("m.py", &[(11, 1), (21, 0)])]);
        let pred_pre = cov(&[("m.py", &[(11, 1)])]);
        let pred_post = cov(&[("m.py", &[(11, 1), (21, 3)])]);
        let maps = CoverageInputs {
            pred_pre: &pred_pre,
            pred_post: &pred_post,
            gold_pre: &gold_pre,
            gold_post: &gold_post,
            base_pre: &base_pre,
            base_post: &base_post,
        };
        let (r, lines) = compute(&removed, &added, maps, CoverageFormula::Original);
        assert_eq!(lines.removed.len() + lines.added.len(), 3);
        // pred: removed 11 hit (1), added 11 hit, added 21 hit → 3/3.
        assert_eq!(r.coverage_pred, Some(1.0));
        // gold: removed 11 (1), added 11 (2), added 21 (0) → 2/3.
        assert_eq!(r.coverage_gold, Some(2.0 / 3.0));
        // base (quirk): both halves read base_post: old 11 → base_post[11] = 1, new 11 = 1, 21 = 0.
        assert_eq!(r.coverage_base, Some(2.0 / 3.0));
        // delta pred: removed 1 − base_post[11]=1 → 0; added 11: 1−1 → 0; 21: 3−0 → 1 → 1/3.
        assert_eq!(r.coverage_delta_pred, Some(1.0 / 3.0));
        // delta gold: removed 1−1 → 0; added 11: 2−1 → 1; 21: 0 → 0 → 1/3.
        assert_eq!(r.coverage_delta_gold, Some(1.0 / 3.0));

        let (c, _) = compute(&removed, &added, maps, CoverageFormula::Corrected);
        // base_pre[11] = 0 for the removed line.
        assert_eq!(c.coverage_base, Some(1.0 / 3.0));
        assert_eq!(c.coverage_delta_pred, Some(2.0 / 3.0));
        assert_eq!(c.coverage_delta_gold, Some(2.0 / 3.0));
    }

    #[test]
    fn nothing_executable_means_null() {
        let (removed, added) = patch_changed_lines(PATCH).unwrap();
        let empty = CoverageMap::new();
        let maps = CoverageInputs {
            pred_pre: &empty,
            pred_post: &empty,
            gold_pre: &empty,
            gold_post: &empty,
            base_pre: &empty,
            base_post: &empty,
        };
        let (r, _) = compute(&removed, &added, maps, CoverageFormula::Original);
        assert_eq!(r, CoverageResult::default());
        assert_eq!(patch_changed_lines(""), Ok((vec![], vec![])));
    }

    #[test]
    fn duplicate_lines_count_once_above_and_twice_below() {
        let lines = vec![("a.py".to_string(), 1), ("a.py".to_string(), 1)];
        let m = cov(&[("a.py", &[(1, 1)])]);
        let empty = CoverageMap::new();
        let maps = CoverageInputs {
            pred_pre: &empty,
            pred_post: &m,
            gold_pre: &empty,
            gold_post: &m,
            base_pre: &empty,
            base_post: &empty,
        };
        let (r, _) = compute(&[], &lines, maps, CoverageFormula::Original);
        assert_eq!(r.coverage_pred, Some(0.5));
    }
}
