//! The unified-diff parser against an independent implementation: for every gold code patch and
//! gold test patch of the embedded SWE-bench Lite and Verified copies (1600 patches), the files,
//! hunk counts and the line numbers of every removed and added line must equal what the Python
//! `unidiff` package computes (`tests/fixtures/unidiff_reference.jsonl.gz`, see the fixtures
//! README for how it was made).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde_json::Value;
use swtbench_core::diff::{self, LineKind};
use swtbench_data::embedded;

/// `[3, 4, 5, 9]` → `"3-5,9"`, the fixture's compact form.
fn runs(nums: &[u32]) -> String {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for &n in nums {
        match out.last_mut() {
            Some((_, end)) if end.checked_add(1) == Some(n) => *end = n,
            _ => out.push((n, n)),
        }
    }
    out.iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// What the parser says about one patch, in the fixture's shape.
fn ours(text: &str) -> Result<Value, String> {
    let p = diff::parse(text).map_err(|e| e.to_string())?;
    let files: Vec<Value> = p
        .files
        .iter()
        .map(|f| {
            let lines = |kind: LineKind| -> Vec<u32> {
                f.hunks
                    .iter()
                    .flat_map(|h| &h.lines)
                    .filter(|l| l.kind == kind)
                    .filter_map(|l| match kind {
                        LineKind::Removed => l.old_lineno,
                        _ => l.new_lineno,
                    })
                    .collect()
            };
            serde_json::json!({
                "old": f.old_path,
                "new": f.new_path,
                "hunks": f.hunks.len(),
                "removed": runs(&lines(LineKind::Removed)),
                "added": runs(&lines(LineKind::Added)),
            })
        })
        .collect();
    Ok(Value::Array(files))
}

fn reference() -> BTreeMap<(String, String), Value> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/unidiff_reference.jsonl.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                (
                    v["instance_id"].as_str().unwrap().to_string(),
                    v["field"].as_str().unwrap().to_string(),
                ),
                v["files"].clone(),
            )
        })
        .collect()
}

#[test]
fn every_embedded_gold_patch_matches_unidiff() {
    let reference = reference();
    let mut checked = 0;
    let mut lines = 0usize;
    let mut failures = Vec::new();
    for copy in embedded::all() {
        for row in copy.text().unwrap().lines() {
            let row: Value = serde_json::from_str(row).unwrap();
            let id = row["instance_id"].as_str().unwrap();
            for field in ["patch", "test_patch"] {
                let text = row[field].as_str().unwrap();
                let key = (id.to_string(), field.to_string());
                let Some(expected) = reference.get(&key) else {
                    failures.push(format!("{id} {field}: not in the reference fixture"));
                    continue;
                };
                match ours(text) {
                    Ok(got) if &got == expected => {}
                    Ok(got) => failures.push(format!(
                        "{id} {field}:\n  parser:  {got}\n  unidiff: {expected}"
                    )),
                    Err(e) => failures.push(format!("{id} {field}: does not parse: {e}")),
                }
                checked += 1;
                lines += text
                    .lines()
                    .filter(|l| {
                        (l.starts_with('+') && !l.starts_with("+++ "))
                            || (l.starts_with('-') && !l.starts_with("--- "))
                    })
                    .count();
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} patches differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // 300 Lite + 500 Verified rows, two patches each; a copy that shrank would pass vacuously.
    assert_eq!(checked, 1600);
    assert!(lines > 25_000, "only {lines} changed lines compared");
}

#[test]
fn runs_are_compact_and_exact() {
    assert_eq!(runs(&[]), "");
    assert_eq!(runs(&[7]), "7");
    assert_eq!(runs(&[3, 4, 5, 9, 11, 12]), "3-5,9,11-12");
    // Not merged when out of order (a second hunk restarting numbering would show up).
    assert_eq!(runs(&[5, 4]), "5,4");
}
