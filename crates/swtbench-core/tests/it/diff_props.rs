//! Property tests for the unified-diff parser: it never panics on any input (arbitrary text,
//! diff-shaped line soup, mutated real patches), every real SWE-bench patch parses with
//! consistent line numbers, and generated well-formed diffs round-trip their paths, hunk ranges
//! and the line number of every line.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::Config;
use swtbench_core::diff::{self, LineKind, LineSplit, Patch};
use swtbench_core::directives;

/// The reference data directory, if present (`SWTBENCH_SHARED_DATA` or `../shared/data` beside
/// the workspace).
fn shared_data() -> Option<PathBuf> {
    let p = std::env::var_os("SWTBENCH_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"));
    p.join("datasets").is_dir().then_some(p)
}

/// Real patches: the trimmed fixture copy always, plus every `patch`/`test_patch` of the SWE-bench
/// Lite and Verified test splits when the reference data is present.
fn real_patches() -> Vec<(String, String)> {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real_patches.jsonl");
    let mut out: Vec<(String, String)> = std::fs::read_to_string(fixture)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                format!("{} {}", v["instance_id"].as_str().unwrap(), v["field"]),
                v["patch"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    if let Some(dir) = shared_data() {
        for f in ["swebench_lite_test.jsonl", "swebench_verified_test.jsonl"] {
            let Ok(text) = std::fs::read_to_string(dir.join("datasets").join(f)) else {
                continue;
            };
            for l in text.lines() {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                for field in ["patch", "test_patch"] {
                    if let Some(p) = v[field].as_str() {
                        out.push((
                            format!("{} {field}", v["instance_id"].as_str().unwrap()),
                            p.to_string(),
                        ));
                    }
                }
            }
        }
    } else {
        println!("skipped: reference data not found; using the trimmed fixture patches only");
    }
    out
}

/// Internal consistency of a parsed patch: every complete hunk has exactly the lines its header
/// announces, and line numbers count up from the header's starts.
fn check_consistent(p: &Patch) -> Result<(), String> {
    for f in &p.files {
        for h in &f.hunks {
            let old = h.lines.iter().filter(|l| l.kind != LineKind::Added).count() as u64;
            let new = h
                .lines
                .iter()
                .filter(|l| l.kind != LineKind::Removed)
                .count() as u64;
            if !h.truncated && (old != u64::from(h.old_len) || new != u64::from(h.new_len)) {
                return Err(format!(
                    "{}: hunk -{},{} +{},{} holds {old} old / {new} new lines",
                    f.path(),
                    h.old_start,
                    h.old_len,
                    h.new_start,
                    h.new_len
                ));
            }
            let mut o = u64::from(h.old_start);
            let mut n = u64::from(h.new_start);
            for l in &h.lines {
                match l.kind {
                    LineKind::Context => {
                        if l.old_lineno.map(u64::from) != Some(o)
                            || l.new_lineno.map(u64::from) != Some(n)
                        {
                            return Err(format!("{}: context line numbering", f.path()));
                        }
                        o += 1;
                        n += 1;
                    }
                    LineKind::Removed => {
                        if l.old_lineno.map(u64::from) != Some(o) || l.new_lineno.is_some() {
                            return Err(format!("{}: removed line numbering", f.path()));
                        }
                        o += 1;
                    }
                    LineKind::Added => {
                        if l.new_lineno.map(u64::from) != Some(n) || l.old_lineno.is_some() {
                            return Err(format!("{}: added line numbering", f.path()));
                        }
                        n += 1;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Runs every text-level function on `text`; none may panic.
fn exercise(text: &str) {
    if let Ok(p) = diff::parse(text) {
        let _ = p.added_lines();
        let _ = p.removed_lines();
        let _ = p.paths();
    }
    let _ = diff::git_header_paths(text);
    let _ = diff::changed_paths(text);
    let _ = diff::python_splitlines(text);
    let _ = diff::remove_binary_diffs(text, LineSplit::Python);
    let _ = directives::test_directives(text, "django/django", directives::DEFAULT_NON_TEST_EXTS);
    let _ = directives::test_directives(text, "sympy/sympy", directives::DEFAULT_NON_TEST_EXTS);
    let _ = directives::coverage_files(text);
}

#[test]
fn every_real_patch_parses_consistently() {
    let patches = real_patches();
    assert!(patches.len() >= 8);
    for (name, text) in &patches {
        let p = diff::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!p.files.is_empty(), "{name}");
        assert!(
            p.files.iter().all(|f| f.hunks.iter().all(|h| !h.truncated)),
            "{name}: truncated hunk"
        );
        check_consistent(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
        // What git reports as changed lines is exactly what the parser counts.
        let plus = text
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++ "))
            .count();
        let minus = text
            .lines()
            .filter(|l| l.starts_with('-') && !l.starts_with("--- "))
            .count();
        let added: usize = p
            .files
            .iter()
            .flat_map(|f| &f.hunks)
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == LineKind::Added)
            .count();
        let removed: usize = p
            .files
            .iter()
            .flat_map(|f| &f.hunks)
            .flat_map(|h| &h.lines)
            .filter(|l| l.kind == LineKind::Removed)
            .count();
        assert_eq!((added, removed), (plus, minus), "{name}");
    }
}

#[test]
fn known_hostile_inputs_do_not_panic() {
    for text in [
        "",
        "\n",
        "@@",
        "@@ -1 +1 @@",
        "--- a\n+++ b\n@@ -4294967295,3 +4294967295,3 @@\n a\n b\n c\n",
        "--- a\n+++ b\n@@ -0,4294967295 +0,4294967295 @@\n a\n",
        "--- a\n+++ b\n@@ -99999999999 +1 @@\n",
        "diff --git a/ b/\n@@ -4294967295,1 +0,0 @@ f()\n--- /dev/null",
        "--- a/x\n+++ b/x\n@@ -0 +4294967295 @@\n+a\n",
        "diff --git \"a/\\",
        "diff --git \"a/\\377\\377\" \"b/\\3",
        "diff --git a/é b/é\n--- a/é\n+++ b/é\n@@ -1 +1 @@\n-é\n+è",
        "--- \n+++ \n@@ -1,1 +1,1 @@\n\\\n\\\n",
        "diff --git a/x b/x\nGIT binary patch\nliteral 0\n",
        "\r\n\r\n--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-\r\n+\r",
    ] {
        exercise(text);
    }
}

/// Lines that look like parts of diffs, to build adversarial inputs.
fn diff_line() -> impl Strategy<Value = String> {
    let num = prop_oneof![
        Just(0u64),
        Just(1u64),
        0u64..50,
        Just(u64::from(u32::MAX) - 1),
        Just(u64::from(u32::MAX)),
        Just(u64::from(u32::MAX) + 1),
    ];
    prop_oneof![
        "[a-z/. ]{0,12}".prop_map(|p| format!("diff --git a/{p} b/{p}")),
        "[a-z/. \"\\\\]{0,12}".prop_map(|p| format!("diff --git {p}")),
        "[a-z/.]{0,8}".prop_map(|p| format!("--- a/{p}")),
        "[a-z/.]{0,8}".prop_map(|p| format!("+++ b/{p}")),
        Just("--- /dev/null".to_string()),
        Just("+++ /dev/null".to_string()),
        (num.clone(), num.clone(), num.clone(), num.clone())
            .prop_map(|(a, b, c, d)| format!("@@ -{a},{b} +{c},{d} @@ f()")),
        (num.clone(), num).prop_map(|(a, c)| format!("@@ -{a} +{c} @@")),
        "@@[ -+,0-9a-z]{0,12}".prop_map(|s| s),
        "[ +-][ -~]{0,10}".prop_map(|s| s),
        Just(String::new()),
        Just("\\ No newline at end of file".to_string()),
        Just("new file mode 100644".to_string()),
        Just("deleted file mode 100644".to_string()),
        Just("rename from x".to_string()),
        Just("rename to y".to_string()),
        Just("Binary files a/x.pyc and b/x.pyc differ".to_string()),
        Just("GIT binary patch".to_string()),
        "\\PC{0,12}",
    ]
}

/// One operation of a generated hunk.
#[derive(Debug, Clone)]
enum Op {
    Context(String),
    Add(String),
    Remove(String),
}

fn op() -> impl Strategy<Value = Op> {
    // Text never starts with '-' or '+', so a line never looks like a file header.
    let text = "([a-z0-9_().=:]([a-z0-9 _().=:+-]{0,20}))?";
    prop_oneof![
        text.prop_map(Op::Context),
        text.prop_map(Op::Add),
        text.prop_map(Op::Remove),
    ]
}

#[derive(Debug, Clone)]
struct GenFile {
    path: String,
    /// (lines skipped before the hunk, operations)
    hunks: Vec<(u32, Vec<Op>)>,
}

fn gen_file() -> impl Strategy<Value = GenFile> {
    (
        "[a-z]{1,8}(/[a-z_]{1,8}){0,2}\\.py",
        prop::collection::vec((0u32..30, prop::collection::vec(op(), 1..12)), 1..5),
    )
        .prop_map(|(path, hunks)| GenFile { path, hunks })
}

/// Expected numbering of one generated line: (kind, text, old, new).
type Expected = (LineKind, String, Option<u32>, Option<u32>);
/// Expected hunks of one file: (old_start, old_len, new_start, new_len) and the lines.
type ExpectedFile = Vec<((u32, u32, u32, u32), Vec<Expected>)>;

/// Renders the files as a git diff and returns the expected hunk headers and lines per file.
fn render(
    files: &[GenFile],
    crlf: bool,
    single_number_headers: bool,
    final_newline: bool,
    no_newline_marker: bool,
) -> (String, Vec<ExpectedFile>) {
    let mut out: Vec<String> = vec!["Some prose an LLM wrote first.".to_string(), String::new()];
    let mut expected = Vec::new();
    for f in files {
        out.push(format!("diff --git a/{0} b/{0}", f.path));
        out.push("index 1111111..2222222 100644".to_string());
        out.push(format!("--- a/{}", f.path));
        out.push(format!("+++ b/{}", f.path));
        let mut file_exp = Vec::new();
        let (mut old_next, mut new_next) = (1u32, 1u32);
        for (gap, ops) in &f.hunks {
            let old_start = old_next + gap;
            let new_start = new_next + gap;
            let old_len = ops.iter().filter(|o| !matches!(o, Op::Add(_))).count() as u32;
            let new_len = ops.iter().filter(|o| !matches!(o, Op::Remove(_))).count() as u32;
            let range = |start: u32, len: u32| {
                if len == 1 && single_number_headers {
                    format!("{start}")
                } else {
                    format!("{start},{len}")
                }
            };
            out.push(format!(
                "@@ -{} +{} @@ def f():",
                range(old_start, old_len),
                range(new_start, new_len)
            ));
            let (mut o, mut n) = (old_start, new_start);
            let mut lines = Vec::new();
            for op in ops {
                match op {
                    Op::Context(t) => {
                        out.push(format!(" {t}"));
                        lines.push((LineKind::Context, t.clone(), Some(o), Some(n)));
                        o += 1;
                        n += 1;
                    }
                    Op::Remove(t) => {
                        out.push(format!("-{t}"));
                        lines.push((LineKind::Removed, t.clone(), Some(o), None));
                        o += 1;
                    }
                    Op::Add(t) => {
                        out.push(format!("+{t}"));
                        lines.push((LineKind::Added, t.clone(), None, Some(n)));
                        n += 1;
                    }
                }
            }
            file_exp.push(((old_start, old_len, new_start, new_len), lines));
            old_next = o;
            new_next = n;
        }
        expected.push(file_exp);
    }
    if no_newline_marker {
        out.push("\\ No newline at end of file".to_string());
    }
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut text = out.join(eol);
    if final_newline {
        text.push_str(eol);
    }
    (text, expected)
}

/// Applies one small corruption to a real patch.
fn mutate(text: &str, kind: u8, at: usize, insert: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let i = at % lines.len().max(1);
    match kind % 7 {
        0 => {
            // Truncate at a character boundary.
            let mut cut = at % (text.len() + 1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text[..cut].to_string()
        }
        1 => {
            let mut l = lines.clone();
            l.remove(i);
            l.join("\n")
        }
        2 => {
            let mut l = lines.clone();
            l.insert(i, lines[i]);
            l.join("\n")
        }
        3 => {
            let mut l = lines.clone();
            l.insert(i, insert);
            l.join("\n")
        }
        4 => text.replace('\n', "\r\n"),
        5 => {
            // Change the numbers of one hunk header.
            let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
            if let Some(h) = l.iter_mut().filter(|s| s.starts_with("@@")).nth(i % 3) {
                *h = format!("@@ -{} +{},{} @@", at % 7, at % 5, at);
            }
            l.join("\n")
        }
        _ => {
            let mut l = lines.clone();
            l.swap(i, (i + 1) % lines.len().max(1));
            l.join("\n")
        }
    }
}

proptest! {
    #![proptest_config(Config {
        cases: 400,
        // Found failures are kept as cases of `known_hostile_inputs_do_not_panic`.
        failure_persistence: None,
        ..Config::default()
    })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,300}") {
        exercise(&text);
    }

    #[test]
    fn diff_shaped_line_soup_never_panics(
        lines in prop::collection::vec(diff_line(), 0..40),
        crlf in any::<bool>(),
    ) {
        let text = lines.join(if crlf { "\r\n" } else { "\n" });
        exercise(&text);
        if let Ok(p) = diff::parse(&text) {
            prop_assert!(!p.files.is_empty());
            // Numbering stays consistent even on garbage that happens to parse.
            check_consistent(&p).map_err(TestCaseError::fail)?;
        }
    }

    #[test]
    fn mutated_real_patches_never_panic(
        which in any::<prop::sample::Index>(),
        kind in any::<u8>(),
        at in any::<usize>(),
        insert in diff_line(),
    ) {
        let patches = fixture_patches();
        let (_, text) = &patches[which.index(patches.len())];
        let mutated = mutate(text, kind, at, &insert);
        exercise(&mutated);
        if let Ok(p) = diff::parse(&mutated) {
            check_consistent(&p).map_err(TestCaseError::fail)?;
        }
    }

    #[test]
    fn generated_diffs_round_trip_their_line_numbers(
        files in prop::collection::vec(gen_file(), 1..4),
        crlf in any::<bool>(),
        single in any::<bool>(),
        final_newline in any::<bool>(),
        marker in any::<bool>(),
    ) {
        // Paths must differ, or files would be indistinguishable.
        let mut paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        paths.sort_unstable();
        paths.dedup();
        prop_assume!(paths.len() == files.len());

        let (text, expected) = render(&files, crlf, single, final_newline, marker);
        let p = diff::parse(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(p.preamble.trim(), "Some prose an LLM wrote first.");
        prop_assert_eq!(p.files.len(), files.len());
        let mut added = Vec::new();
        let mut removed = Vec::new();
        for ((pf, gf), exp) in p.files.iter().zip(&files).zip(&expected) {
            prop_assert_eq!(pf.old_path.as_deref(), Some(gf.path.as_str()));
            prop_assert_eq!(pf.new_path.as_deref(), Some(gf.path.as_str()));
            prop_assert_eq!(pf.hunks.len(), exp.len());
            for (h, (range, lines)) in pf.hunks.iter().zip(exp) {
                prop_assert_eq!((h.old_start, h.old_len, h.new_start, h.new_len), *range);
                prop_assert!(!h.truncated);
                prop_assert_eq!(h.section.as_str(), "def f():");
                let got: Vec<Expected> = h
                    .lines
                    .iter()
                    .map(|l| (l.kind, l.text.clone(), l.old_lineno, l.new_lineno))
                    .collect();
                prop_assert_eq!(&got, lines);
                for (kind, _, o, n) in lines {
                    match kind {
                        LineKind::Added => added.push((gf.path.clone(), n.unwrap_or(0))),
                        LineKind::Removed => removed.push((gf.path.clone(), o.unwrap_or(0))),
                        LineKind::Context => {}
                    }
                }
            }
        }
        prop_assert_eq!(p.added_lines(), added);
        prop_assert_eq!(p.removed_lines(), removed);
        if marker {
            let last = p.files.last().and_then(|f| f.hunks.last()).and_then(|h| h.lines.last());
            prop_assert!(last.is_some_and(|l| l.no_newline));
        }
    }
}

/// The trimmed fixture patches (cheap to load in every proptest case).
fn fixture_patches() -> Vec<(String, String)> {
    use std::sync::OnceLock;
    static CACHE: OnceLock<Vec<(String, String)>> = OnceLock::new();
    CACHE
        .get_or_init(|| {
            let fixture =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real_patches.jsonl");
            std::fs::read_to_string(fixture)
                .unwrap()
                .lines()
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    (
                        v["instance_id"].as_str().unwrap().to_string(),
                        v["patch"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .clone()
}
