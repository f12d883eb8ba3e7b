//! `swtbench report --format html` and `--compare`, run as the built binary on the HTML crate's
//! fixture run tree (copied to a temporary directory): the page carries the same numbers as
//! `--format json`, links the logs relatively, renders hostile patch text inert, and opens in
//! headless Chromium (when installed) with the page script honouring a filter in the fragment.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../swtbench-html/tests/fixtures/run_tree")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

fn swtbench(args: &[&str], cwd: &Path) -> Output {
    crate::support::binary::command()
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// The `data-value` of a metric row of the page (first cell).
fn page_metric(html: &str, field: &str) -> String {
    let row = html
        .find(&format!("<tr data-metric=\"{field}\">"))
        .unwrap_or_else(|| panic!("no row for {field}"));
    let rest = &html[row..];
    let v = rest.find("data-value=\"").unwrap() + "data-value=\"".len();
    let end = rest[v..].find('"').unwrap();
    rest[v..v + end].to_string()
}

fn json_token(json_text: &str, field: &str) -> String {
    let line = json_text
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("\"{field}\":")))
        .unwrap();
    line.split_once(": ")
        .unwrap()
        .1
        .trim_end_matches(',')
        .to_string()
}

const FIELDS: [&str; 10] = [
    "applicability",
    "success_rate",
    "f_to_x",
    "f_to_p",
    "p_to_p",
    "coverage_delta_all",
    "coverage_delta_resolved",
    "coverage_delta_unresolved",
    "instances",
    "denominator",
];

#[test]
fn html_page_has_the_json_numbers_and_relative_log_links() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), tmp.path());
    let run = "run_instance_swt_logs/run1/modelA";
    let json = swtbench(
        &["report", run, "--denominator", "6", "--format", "json"],
        tmp.path(),
    );
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let json_text = String::from_utf8(json.stdout).unwrap();
    let parsed: Value = serde_json::from_str(&json_text).unwrap();
    assert_eq!(parsed["coverage_delta_all"], 10.0);

    std::fs::create_dir_all(tmp.path().join("pages")).unwrap();
    let out = swtbench(
        &[
            "report",
            run,
            "--denominator",
            "6",
            "--format",
            "html",
            "--out",
            "pages/run1.html",
        ],
        tmp.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "the page goes to --out, not stdout");
    let html = std::fs::read_to_string(tmp.path().join("pages/run1.html")).unwrap();
    for f in FIELDS {
        assert_eq!(page_metric(&html, f), json_token(&json_text, f), "{f}");
    }
    // Links are relative to the page's directory.
    assert!(html.contains("href=\"../evaluation_results/modelA.run1.json\""));
    assert!(html.contains("\"../run_instance_swt_logs/run1/pred_pre__modelA/psf__requests-1001/\""));
    // Hostile patch text is data, never markup.
    assert!(!html.contains("<script>document.body"));
    assert!(html.contains("\\u003c/script\\u003e\\u003cscript\\u003edocument.body"));

    // Without --out the page is the command's data on stdout.
    let stdout = swtbench(
        &["report", run, "--denominator", "6", "--format", "html"],
        tmp.path(),
    );
    assert!(stdout.status.success());
    assert!(String::from_utf8(stdout.stdout)
        .unwrap()
        .starts_with("<!DOCTYPE html>"));

    // --out with a table format is a usage error.
    let bad = swtbench(&["report", run, "--out", "x.html"], tmp.path());
    assert_eq!(bad.status.code(), Some(2));

    if let Some(dom) = chromium_dom(&tmp.path().join("pages/run1.html"), "outcome=unresolved") {
        assert!(
            dom.contains("data-shown=\"2\""),
            "filter applied by the page script"
        );
        for f in FIELDS {
            assert_eq!(
                page_metric(&dom, f),
                json_token(&json_text, f),
                "{f} in the DOM"
            );
        }
    }
}

#[test]
fn compare_page_lists_who_resolves_what() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture(), tmp.path());
    let out = swtbench(
        &[
            "report",
            "--compare",
            "run_instance_swt_logs/run1/modelA",
            "run_instance_swt_logs/run2/modelB",
            "--denominator",
            "6",
            "--out",
            "compare.html",
        ],
        tmp.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(tmp.path().join("compare.html")).unwrap();
    let count = |cat: &str| {
        let i = html.find(&format!("<tr data-cat=\"{cat}\">")).unwrap();
        let a = html[i..].find("\">").unwrap() + i;
        let rest = &html[a..];
        let open = rest.find("<a href=\"#cmp=").unwrap();
        let gt = rest[open..].find('>').unwrap() + open + 1;
        let lt = rest[gt..].find('<').unwrap() + gt;
        rest[gt..lt].to_string()
    };
    assert_eq!(count("a_only"), "1");
    assert_eq!(count("b_only"), "1");
    assert_eq!(count("both"), "0");
    assert_eq!(count("neither"), "5");
    // Both runs resolve one of six: the success-rate delta is exactly zero.
    let i = html.find("<tr data-metric=\"success_rate\">").unwrap();
    let row = &html[i..i + html[i..].find("</tr>").unwrap()];
    assert!(row.contains("data-value=\"0.0\""), "{row}");
}

/// The DOM of `page` after its script ran in headless Chromium, or `None` (with a note) when no
/// Chromium is installed.
fn chromium_dom(page: &Path, fragment: &str) -> Option<String> {
    let bin = std::env::var_os("SWTBENCH_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .flat_map(|d| ["chromium", "chromium-browser", "google-chrome"].map(|n| d.join(n)))
                .find(|p| p.is_file())
        });
    let Some(bin) = bin else {
        eprintln!("SKIPPED: no chromium found (install Debian's `chromium` package)");
        return None;
    };
    let profile = tempfile::tempdir().unwrap();
    let url = format!(
        "file://{}#{fragment}",
        page.canonicalize().unwrap().display()
    );
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--virtual-time-budget=10000",
            &format!("--user-data-dir={}", profile.path().display()),
            "--dump-dom",
            &url,
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).unwrap())
}
