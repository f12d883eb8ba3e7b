//! Extraction throughput on large generated inputs: fuzzy placement (the edit-distance scan),
//! vanilla (minimal patch + `git apply` rules), section scanning of long answers and diff
//! rendering (also on lines of a million candidates). Run with `cargo bench -p swtbench-patch`.
#![allow(clippy::unwrap_used)]

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use swtbench_patch::gitdiff::{render, FileChange};
use swtbench_patch::sections::{file_header, file_sections, hunks};
use swtbench_patch::{extract, ExtractOptions, MemorySource, PatchType, VanillaStyle};

/// A Python test module of `n` functions (about 5 lines each).
fn module(n: usize) -> String {
    let mut s = String::from("import pytest\n\nfrom pkg import compute\n\n");
    for i in 0..n {
        s.push_str(&format!(
            "\ndef test_case_{i}():\n    value = compute({i}, {})\n    assert value == {}\n    assert isinstance(value, int)\n\n",
            i + 1,
            2 * i + 1
        ));
    }
    s
}

/// A model answer with `hunks` hunks spread over the module, each adding two lines, with the
/// usual three lines of context on both sides (the following context names the next test, so
/// that it is unique, as it is in real code).
fn answer(n: usize, hunk_count: usize) -> String {
    let mut out = String::from("--- a/tests/test_big.py\n+++ b/tests/test_big.py\n");
    for k in 0..hunk_count {
        let i = (k + 1) * n / (hunk_count + 1);
        let line = 6 + i * 6;
        out.push_str(&format!(
            "@@ -{line},6 +{line},8 @@\n def test_case_{i}():\n     value = compute({i}, {})\n     assert value == {}\n+    assert value > 0\n+    assert value % 2 == 1\n     assert isinstance(value, int)\n \n \n def test_case_{}():\n",
            i + 1,
            2 * i + 1,
            i + 1
        ));
    }
    out
}

fn benches(c: &mut Criterion) {
    let n = 600; // ~3600 lines
    let file = module(n);
    let source = MemorySource::new().with("tests/test_big.py", &file);
    let out = answer(n, 8);
    let opts = ExtractOptions {
        vanilla_style: VanillaStyle::Fixed,
        ..ExtractOptions::default()
    };
    for t in [PatchType::Fuzzy, PatchType::Vanilla] {
        let ex = extract(&out, &[t], &source, None, &opts);
        assert!(ex.succeeded(), "{t}: {}", ex.failure_summary());
        assert!(
            ex.files[0].new.len() < file.len() + 2000,
            "{t} duplicated lines"
        );
    }

    c.bench_function("fuzzy_3600_lines_8_hunks", |b| {
        b.iter(|| extract(black_box(&out), &[PatchType::Fuzzy], &source, None, &opts))
    });
    c.bench_function("vanilla_3600_lines_8_hunks", |b| {
        b.iter(|| extract(black_box(&out), &[PatchType::Vanilla], &source, None, &opts))
    });

    // Long lines (95 characters, beyond one 64-bit word) and a hunk with 50 lines of context on
    // each side: the edit-distance scan over 5 000 lines is the whole cost.
    let words = [
        "assert",
        "self",
        "value",
        "compute",
        "expected",
        "result",
        "np.testing",
        "response",
    ];
    let long_lines: Vec<String> = (0..5000usize)
        .map(|i| {
            let mut l = String::from("        ");
            for k in 0..12 {
                l.push_str(words[(i * 7 + k * 3 + i / 5) % words.len()]);
                l.push(' ');
            }
            l.push_str(&format!("# {i}"));
            l.truncate(95);
            l
        })
        .collect();
    let long_file = long_lines.join("\n") + "\n";
    let long_source = MemorySource::new().with("tests/test_long.py", &long_file);
    let mut long_answer = String::from(
        "--- a/tests/test_long.py\n+++ b/tests/test_long.py\n@@ -2401,100 +2401,101 @@\n",
    );
    for (k, l) in long_lines[2400..2500].iter().enumerate() {
        if k == 50 {
            long_answer.push_str("+        added_line = 1\n");
        }
        long_answer.push_str(&format!(" {l}\n"));
    }
    let ex = extract(&long_answer, &[PatchType::Fuzzy], &long_source, None, &opts);
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    c.bench_function("fuzzy_5000_lines_of_95_chars_100_context", |b| {
        b.iter(|| {
            extract(
                black_box(&long_answer),
                &[PatchType::Fuzzy],
                &long_source,
                None,
                &opts,
            )
        })
    });

    let long: String = (0..400)
        .map(|_| out.as_str())
        .collect::<Vec<_>>()
        .join("prose diff --stat\n");
    c.bench_function("sections_and_hunks_1mb", |b| {
        b.iter(|| {
            file_sections(black_box(&long), true)
                .iter()
                .map(|s| hunks(s.text).len())
                .sum::<usize>()
        })
    });

    // Pathological prose: one 2 MB line of `diff ` words (every word is a section candidate)
    // and one of header-like `---\ta/` words, each followed by a real file section.
    let words = format!("{}\n{out}", "diff ".repeat(400_000));
    let headers = format!("--- a/x {}\n{out}", "---\ta/x ".repeat(250_000));
    c.bench_function("sections_2mb_lines_of_candidates", |b| {
        b.iter(|| {
            [&words, &headers]
                .iter()
                .flat_map(|t| file_sections(black_box(t), true))
                .filter(|s| file_header(s.text, true).is_some())
                .count()
        })
    });

    let changed = file.replace("isinstance(value, int)", "isinstance(value, (int, bool))");
    let change = [FileChange {
        path: "tests/test_big.py".into(),
        old: Some(file.clone()),
        new: changed,
    }];
    c.bench_function("render_diff_3600_lines_600_changes", |b| {
        b.iter(|| render(black_box(&change)))
    });
}

criterion_group!(extraction, benches);
criterion_main!(extraction);
