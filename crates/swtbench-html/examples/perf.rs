//! Page weight and time to first render of the HTML report for a large generated run.
//!
//! ```text
//! cargo run --release -p swtbench-html --example perf -- [--instances 2294] [--out DIR] [--data DIR]
//! ```
//!
//! Generates a run tree in the original's layout with `--instances` instances (patches, test
//! names and outcomes taken from the SWE-bench datasets under `--data`, default
//! `$SWTBENCH_SHARED_DATA` or `../shared/data`; synthetic ones when absent), loads and renders it,
//! then, if Chromium is installed, loads the page headless several times and reads the timings
//! the page script records (`data-ready-ms`, `data-load-ms`, `data-fcp-ms` on `<html>`).
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

#[path = "../tests/common/chromium.rs"]
mod chromium;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use swtbench_core::directives::{directives_hash, test_directives, DEFAULT_NON_TEST_EXTS};
use swtbench_data::tree::FsTree;
use swtbench_html::{load_run, render_run, LoadOptions};

struct Row {
    id: String,
    repo: String,
    patch: String,
    test_patch: String,
    f2p: Vec<String>,
    p2p: Vec<String>,
}

fn list(v: &Value) -> Vec<String> {
    match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or_default(),
        Value::Array(a) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn dataset_rows(data: &Path) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut seen = BTreeSet::new();
    for f in ["swebench_lite_test.jsonl", "swebench_verified_test.jsonl"] {
        let Ok(text) = fs::read_to_string(data.join("datasets").join(f)) else {
            continue;
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let id = v["instance_id"].as_str().unwrap_or_default().to_string();
            if !seen.insert(id.clone()) {
                continue;
            }
            rows.push(Row {
                id,
                repo: v["repo"].as_str().unwrap_or_default().to_string(),
                patch: v["patch"].as_str().unwrap_or_default().to_string(),
                test_patch: v["test_patch"].as_str().unwrap_or_default().to_string(),
                f2p: list(&v["FAIL_TO_PASS"]),
                p2p: list(&v["PASS_TO_PASS"]),
            });
        }
    }
    if rows.is_empty() {
        eprintln!(
            "note: no SWE-bench datasets under {}; using synthetic instances",
            data.display()
        );
        for i in 0..50 {
            let body: String = (0..30)
                .map(|k| format!("+    assert f({k}) == {k}\n"))
                .collect();
            rows.push(Row {
                id: format!("synth__repo-{i}"),
                repo: "synth/repo".into(),
                patch: format!("diff --git a/src/m{i}.py b/src/m{i}.py\n--- a/src/m{i}.py\n+++ b/src/m{i}.py\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n"),
                test_patch: format!("diff --git a/tests/test_{i}.py b/tests/test_{i}.py\n--- a/tests/test_{i}.py\n+++ b/tests/test_{i}.py\n@@ -1,1 +1,31 @@\n x\n{body}"),
                f2p: vec![format!("tests/test_{i}.py::test_new")],
                p2p: (0..80).map(|k| format!("tests/test_{i}.py::test_old_{k}")).collect(),
            });
        }
    }
    rows
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A test log with a pytest `-rA` summary and a coverage dump of the changed lines.
fn test_output(
    applied: &[&str],
    results: &[(&str, &str)],
    cov: &[(String, Vec<(u32, u32)>)],
) -> String {
    let mut s = String::from("+ cd /testbed\n+ git apply -v - <<'EOF_114329324912'\n");
    for f in applied {
        let _ = writeln!(s, "Checking patch {f}...\nApplied patch {f} cleanly.");
    }
    s.push_str("+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(x)' -m pytest -rA\n");
    s.push_str(
        "=========================== short test summary info ============================\n",
    );
    for (name, st) in results {
        let _ = writeln!(s, "{st} {name}");
    }
    s.push_str("+ cat coverage.cover\n");
    for (path, lines) in cov {
        let body: Vec<String> = lines.iter().map(|(l, h)| format!("\"{l}\": {h}")).collect();
        let _ = writeln!(s, "{{\"/testbed/{path}\": {{{}}}}}", body.join(", "));
    }
    s.push_str("+ git checkout 0123abc\n");
    s
}

/// Changed line numbers of a patch, per file, with a few neighbours (what a tracer would list).
fn cov_lines(patch: &str, post: bool, seed: u32) -> Vec<(String, Vec<(u32, u32)>)> {
    let Ok(p) = swtbench_core::diff::parse(patch) else {
        return Vec::new();
    };
    let pick = if post {
        p.added_lines()
    } else {
        p.removed_lines()
    };
    let mut by_file: std::collections::BTreeMap<String, BTreeSet<u32>> = Default::default();
    for (f, l) in pick {
        let e = by_file.entry(f).or_default();
        for d in 0..3 {
            e.insert(l.saturating_sub(d).max(1));
        }
    }
    by_file
        .into_iter()
        .map(|(f, ls)| (f, ls.into_iter().map(|l| (l, (l + seed) % 3)).collect()))
        .collect()
}

fn generate(root: &Path, n: usize, data: &Path) -> usize {
    let rows = dataset_rows(data);
    let logs = root.join("run_instance_swt_logs");
    let (run_id, model) = ("perf-run", "perf__model");
    let mut ids = Vec::new();
    let mut resolved = Vec::new();
    for i in 0..n {
        let r = &rows[i % rows.len()];
        let cycle = i / rows.len();
        let id = if cycle == 0 {
            r.id.clone()
        } else {
            format!("{}{cycle:02}", r.id)
        };
        ids.push(id.clone());
        if generate_instance(&logs, (run_id, model), i, r, &id) {
            resolved.push(id.clone());
        }
    }
    write(
        &root.join("evaluation_results").join(format!("{model}.{run_id}.json")),
        &serde_json::to_string_pretty(&json!({"total_instances": n, "resolved_instances": resolved.len(), "dataset": "generated", "exec_mode": "unit_test", "completed_ids": ids, "resolved_ids": resolved})).unwrap(),
    );
    n
}

/// The test outcomes written for a generated instance.
struct Outcomes<'a> {
    /// Before the fix: the fail-to-pass tests fail.
    pre: Vec<(&'a str, &'a str)>,
    /// The model's tests after the fix: the fail-to-pass tests pass when it is resolved.
    post: Vec<(&'a str, &'a str)>,
    /// The gold tests after the fix: all pass.
    gold_post: Vec<(&'a str, &'a str)>,
    /// The base runs: the pass-to-pass tests pass.
    base: Vec<(&'a str, &'a str)>,
}

impl<'a> Outcomes<'a> {
    /// The outcomes of the fail-to-pass tests `f2p` and the pass-to-pass tests `p2p`, the
    /// instance resolved (`is_res`) or not.
    fn new(f2p: &[&'a str], p2p: &[&'a str], is_res: bool) -> Outcomes<'a> {
        let pre: Vec<(&str, &str)> = f2p
            .iter()
            .map(|t| (*t, "FAILED"))
            .chain(p2p.iter().map(|t| (*t, "PASSED")))
            .collect();
        let post: Vec<(&str, &str)> = f2p
            .iter()
            .map(|t| (*t, if is_res { "PASSED" } else { "FAILED" }))
            .chain(p2p.iter().map(|t| (*t, "PASSED")))
            .collect();
        let gold_post: Vec<(&str, &str)> = f2p
            .iter()
            .map(|t| (*t, "PASSED"))
            .chain(p2p.iter().map(|t| (*t, "PASSED")))
            .collect();
        let base: Vec<(&str, &str)> = p2p.iter().map(|t| (*t, "PASSED")).collect();
        Outcomes {
            pre,
            post,
            gold_post,
            base,
        }
    }
}

/// Writes the run directories of the `i`th generated instance `id` (from row `r`) under `logs`
/// for `(run_id, model)`; returns whether it is resolved.
fn generate_instance(
    logs: &Path,
    (run_id, model): (&str, &str),
    i: usize,
    r: &Row,
    id: &str,
) -> bool {
    // Outcome mix: 20 % resolved, 50 % unresolved, 15 % not applied, 5 % empty, 10 % error.
    let kind = (i * 7919) % 100;
    let model_patch = match kind {
        85..=89 => "\n".to_string(),
        70..=84 => r.test_patch.replace("@@ -", "@@ -9"),
        _ => r.test_patch.clone(),
    };
    let applied = kind < 70;
    let dirs_hash = directives_hash(&test_directives(
        &model_patch,
        &r.repo,
        DEFAULT_NON_TEST_EXTS,
    ));
    let gold_hash = directives_hash(&test_directives(
        &r.test_patch,
        &r.repo,
        DEFAULT_NON_TEST_EXTS,
    ));
    let pred = |k: &str| logs.join(run_id).join(format!("{k}__{model}")).join(id);
    let shared = |k: &str, h: &str| logs.join(k).join(id).join(h);
    let files: Vec<String> = test_directives(&model_patch, &r.repo, DEFAULT_NON_TEST_EXTS);
    let applied_files: Vec<&str> = if applied {
        files.iter().map(String::as_str).collect()
    } else {
        Vec::new()
    };
    let is_res = kind < 20;
    let f2p: Vec<&str> = r.f2p.iter().map(String::as_str).collect();
    let p2p: Vec<&str> = r.p2p.iter().map(String::as_str).collect();
    let Outcomes {
        pre,
        post,
        gold_post,
        base,
    } = Outcomes::new(&f2p, &p2p, is_res);
    let spec = |patches: Vec<&str>| {
        json!({"instance_id": id, "repo": r.repo, "patch_list": patches}).to_string()
    };

    write(&pred("pred_pre").join("model_patch.diff"), &model_patch);
    write(
        &pred("pred_pre").join("exec_spec.json"),
        &spec(vec![&model_patch]),
    );
    write(&pred("pred_pre").join("eval.sh"), "#!/bin/bash\n");
    if kind >= 90 {
        return false; // error: the pred_pre run left no output
    }
    write(
        &pred("pred_pre").join("test_output.txt"),
        &test_output(
            &applied_files,
            if applied { &pre } else { &[] },
            &cov_lines(&r.patch, false, 1),
        ),
    );
    write(
        &pred("pred_post").join("exec_spec.json"),
        &spec(vec![&r.patch, &model_patch]),
    );
    write(
        &pred("pred_post").join("test_output.txt"),
        &test_output(
            &applied_files,
            if applied { &post } else { &[] },
            &cov_lines(&r.patch, true, 1),
        ),
    );
    write(
        &shared("gold_pre", &gold_hash).join("test_output.txt"),
        &test_output(&["x"], &pre, &cov_lines(&r.patch, false, 0)),
    );
    write(
        &shared("gold_post", &gold_hash).join("test_output.txt"),
        &test_output(&["x"], &gold_post, &cov_lines(&r.patch, true, 0)),
    );
    write(
        &shared("base_pre", &dirs_hash).join("test_output.txt"),
        &test_output(&[], &base, &cov_lines(&r.patch, false, 2)),
    );
    write(
        &shared("base_post", &dirs_hash).join("test_output.txt"),
        &test_output(&[], &base, &cov_lines(&r.patch, true, 2)),
    );

    let rep = instance_report(i, applied, is_res, &f2p, &p2p);
    write(
        &logs.join(run_id).join(model).join(id).join("report.json"),
        &serde_json::to_string_pretty(&json!({ id: rep })).unwrap(),
    );
    is_res
}

/// The `report.json` entry of the `i`th generated instance.
fn instance_report(i: usize, applied: bool, is_res: bool, f2p: &[&str], p2p: &[&str]) -> Value {
    let tr = |f2p: &[&str], p2p: &[&str], f2f: &[&str]| json!({"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p, "FAIL_TO_FAIL": f2f, "PASS_TO_FAIL": [], "UNMATCHED": []});
    let mut rep = json!({"patch_is_None": false, "patch_exists": true, "patch_successfully_applied": applied, "resolved": is_res,
        "coverage_pred": null, "coverage_gold": null, "coverage_base": null, "coverage_delta_pred": null, "coverage_delta_gold": null});
    if applied {
        let c = (i % 10) as f64 / 10.0;
        rep["coverage_pred"] = json!(c);
        rep["coverage_gold"] = json!(1.0);
        rep["coverage_base"] = json!(0.3);
        rep["coverage_delta_pred"] = json!(c / 2.0);
        rep["coverage_delta_gold"] = json!(0.7);
        rep["added_f2p"] = json!(if is_res { f2p.len() } else { 0 });
        rep["tests_pred"] = if is_res {
            tr(f2p, p2p, &[])
        } else {
            tr(&[], p2p, f2p)
        };
        rep["tests_gold"] = tr(f2p, p2p, &[]);
        rep["tests_base"] = tr(&[], p2p, &[]);
    }
    rep
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn attr_ms(dom: &str, name: &str) -> Option<f64> {
    let key = format!("{name}=\"");
    let i = dom.find(&key)? + key.len();
    let j = dom[i..].find('"')? + i;
    dom[i..j].parse().ok()
}

fn main() {
    let (n, out, data) = parse_args();
    let tree = out.join("tree");
    let _ = fs::remove_dir_all(&tree);
    let t = Instant::now();
    generate(&tree, n, &data);
    println!(
        "generated {n} instances in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let model_dir = tree.join("run_instance_swt_logs/perf-run/perf__model");
    let opts = LoadOptions {
        out_dir: fs::canonicalize(&out).unwrap_or_else(|_| out.clone()),
        generator: "swtbench perf".into(),
        denominator: Some(n),
        ..LoadOptions::default()
    };
    let t = Instant::now();
    let view = load_run(&FsTree, &fs::canonicalize(&model_dir).unwrap(), &opts).unwrap();
    let load_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let page = render_run(&view);
    let render_s = t.elapsed().as_secs_f64();
    let page_path = out.join("report.html");
    fs::write(&page_path, &page).unwrap();
    let data_start = page.find("id=\"swt-data\">").unwrap_or(0);
    let data_len = page[data_start..].find("</script>").unwrap_or(0);
    println!("| measure | value |\n|---|---|");
    println!("| instances | {} |", view.instances.len());
    println!("| load run tree | {:.0} ms |", load_s * 1000.0);
    println!("| render HTML | {:.0} ms |", render_s * 1000.0);
    println!(
        "| page weight | {:.2} MB ({} bytes) |",
        page.len() as f64 / 1e6,
        page.len()
    );
    println!(
        "| of which embedded detail JSON | {:.2} MB |",
        data_len as f64 / 1e6
    );

    browser_timings(&out, &page_path, &view);
}

/// The `--instances`, `--out` and `--data` arguments, with their defaults.
fn parse_args() -> (usize, PathBuf, PathBuf) {
    let mut n = 2294usize;
    let mut out = std::env::temp_dir().join("swtbench-html-perf");
    let mut data = std::env::var_os("SWTBENCH_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--instances" => n = args[i + 1].parse().unwrap(),
            "--out" => out = PathBuf::from(&args[i + 1]),
            "--data" => data = PathBuf::from(&args[i + 1]),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    (n, out, data)
}

/// Loads the page at `page_path` (a blank page beside it in `out`) headless several times, when
/// Chromium is installed, and prints the timings the page script records.
fn browser_timings(out: &Path, page_path: &Path, view: &swtbench_html::RunView) {
    let Some(bin) = chromium::find() else {
        println!("(no chromium: browser timings skipped)");
        return;
    };
    let b = chromium::Browser { bin };
    let blank = out.join("blank.html");
    fs::write(&blank, "<!DOCTYPE html><html><body><p>x</p></body></html>").unwrap();
    let runs = 7;
    // Real-time loads: the page's own clock (performance.now(), from navigation start) and the
    // browser's wall time against a blank page.
    let wall = |url: &str| -> (f64, Vec<String>) {
        let mut v = Vec::new();
        let mut doms = Vec::new();
        for _ in 0..runs {
            let (d, t): (String, Duration) = b.dump_dom_realtime(url).unwrap();
            v.push(t.as_secs_f64() * 1000.0);
            doms.push(d);
        }
        (median(v), doms)
    };
    let (blank_ms, _) = wall(&chromium::file_url(&blank, ""));
    println!("| blank page, browser wall time (median of {runs}) | {blank_ms:.0} ms |");
    let measure = |label: &str, frag: &str| {
        let (ms, doms) = wall(&chromium::file_url(page_path, frag));
        let med = |name: &str| {
            let v: Vec<f64> = doms.iter().filter_map(|d| attr_ms(d, name)).collect();
            if v.is_empty() {
                "n/a".to_string()
            } else {
                format!("{:.0} ms", median(v))
            }
        };
        println!(
            "| {label} | first contentful paint {}, script ready {}, load event {}, page script {}, filter {}, browser wall {:.0} ms (+{:.0} ms over blank) |",
            med("data-fcp-ms"),
            med("data-ready-ms"),
            med("data-load-ms"),
            med("data-init-ms"),
            med("data-filter-ms"),
            ms,
            ms - blank_ms
        );
    };
    measure("open page", "");
    measure(
        "open filtered (#q=django&outcome=unresolved)",
        "q=django&outcome=unresolved",
    );
    measure("open sorted by coverage, descending", "sort=4&dir=desc");
    let first = view
        .instances
        .iter()
        .find(|i| i.detail.gold_fix.is_some())
        .map(|i| swtbench_html::escape::anchor(&i.id))
        .unwrap_or_default();
    // Details render after a chunk is unpacked (asynchronously), so give the page virtual time.
    let (dom, _) = b
        .dump_dom(&chromium::file_url(page_path, &format!("open={first}")))
        .unwrap();
    println!(
        "| open with one instance expanded (virtual time) | script ready {:.0} ms, details shown {:.0} ms |",
        attr_ms(&dom, "data-ready-ms").unwrap_or(f64::NAN),
        attr_ms(&dom, "data-details-ms").unwrap_or(f64::NAN)
    );
}
