//! The report pages in a real browser: headless Chromium loads the rendered fixture run, the
//! page's script runs, and the resulting DOM is checked: the summary numbers against the JSON
//! metrics, filtering and sorting driven by the URL fragment, instance details with hostile
//! patch text shown as text, and a screenshot saved under the target directory.
//!
//! Skips (with a note on stderr) when no Chromium is installed; CI installs Debian's `chromium`.

use crate::common;

use std::path::PathBuf;

use crate::common::chromium::{self, Browser};
use scraper::{Html, Selector};
use swtbench_html::{compare, render_compare, render_run};

fn browser() -> Option<Browser> {
    match chromium::find() {
        Some(bin) => Some(Browser { bin }),
        None => {
            eprintln!(
                "SKIPPED: no chromium found (install Debian's `chromium` package or set {})",
                chromium::CHROMIUM_ENV
            );
            None
        }
    }
}

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

/// Artifacts (pages, screenshots) live here so CI can keep them.
fn artifact_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-report");
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn visible_ids(doc: &Html) -> Vec<String> {
    doc.select(&sel("#itable tbody tr[id]"))
        .filter(|tr| tr.value().attr("hidden").is_none())
        .map(|tr| tr.select(&sel("td.id")).next().unwrap().text().collect())
        .collect()
}

#[test]
fn run_page_in_chromium() {
    let Some(b) = browser() else { return };
    let dir = artifact_dir();
    let view = common::load("run1", "modelA", &dir);
    let page_path = dir.join("run1-modelA.html");
    std::fs::write(&page_path, render_run(&view)).unwrap();

    // Plain load: the script ran, all rows shown, numbers equal the JSON metrics.
    let (dom, _) = b.dump_dom(&chromium::file_url(&page_path, "")).unwrap();
    let doc = Html::parse_document(&dom);
    let root = doc.root_element();
    assert!(
        root.value().attr("data-ready-ms").is_some(),
        "page script did not run"
    );
    assert_eq!(root.value().attr("data-shown"), Some("6"));
    // The JSON report, exactly as `swtbench report --format json` prints it.
    let json_text = swtbench_grade::leaderboard::render(
        &common::leaderboard("run1", "modelA"),
        "run1",
        swtbench_grade::leaderboard::Format::Json,
        None,
    );
    let json: serde_json::Value = serde_json::from_str(&json_text).unwrap();
    assert!(json["coverage_delta_all"].is_number());
    for (field, expected) in json.as_object().unwrap() {
        let cell = doc
            .select(&sel(&format!("#metrics tr[data-metric={field}] td")))
            .next()
            .unwrap_or_else(|| panic!("no DOM cell for JSON field {field}"));
        let shown_text = cell.value().attr("data-value").unwrap();
        let shown: serde_json::Value = serde_json::from_str(shown_text).unwrap();
        assert_eq!(&shown, expected, "metric {field}");
        // Digit for digit: the JSON line is `    "<field>": <number>,`.
        let line = json_text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("\"{field}\":")))
            .unwrap();
        let token = line.split_once(": ").unwrap().1.trim_end_matches(',');
        assert_eq!(shown_text, token, "metric {field}");
    }
    assert!(doc.select(&sel("#controls[hidden]")).next().is_none());
    assert_eq!(
        doc.select(&sel("#shown"))
            .next()
            .unwrap()
            .text()
            .collect::<String>(),
        "6 of 6 instances shown"
    );

    // Filter through the fragment: unresolved requests instances only.
    let (dom, _) = b
        .dump_dom(&chromium::file_url(
            &page_path,
            "outcome=unresolved&q=requests",
        ))
        .unwrap();
    let doc = Html::parse_document(&dom);
    assert_eq!(doc.root_element().value().attr("data-shown"), Some("2"));
    assert_eq!(
        visible_ids(&doc),
        vec!["psf__requests-1002", "psf__requests-1003"]
    );

    // Sort by coverage, descending: 1001 (80 %) before 1002 (20 %) before 1003 (0 %).
    let (dom, _) = b
        .dump_dom(&chromium::file_url(
            &page_path,
            "q=requests&sort=4&dir=desc",
        ))
        .unwrap();
    let doc = Html::parse_document(&dom);
    assert_eq!(
        visible_ids(&doc),
        vec![
            "psf__requests-1001",
            "psf__requests-1002",
            "psf__requests-1003"
        ]
    );

    // Details, opened through the fragment: hostile text stays text, marks are drawn.
    let (dom, _) = b
        .dump_dom(&chromium::file_url(
            &page_path,
            "open=psf__requests-1003,psf__requests-1001",
        ))
        .unwrap();
    let doc = Html::parse_document(&dom);
    assert!(
        doc.select(&sel("[data-pwned]")).next().is_none(),
        "injected script ran"
    );
    assert_ne!(
        doc.select(&sel("title"))
            .next()
            .unwrap()
            .text()
            .collect::<String>(),
        "PWNED"
    );
    assert!(doc.select(&sel("tr.detail img")).next().is_none());
    let xss = doc
        .select(&sel(
            "tr.detail td[data-instance='psf__requests-1003'] [data-diff=mp] td.code",
        ))
        .map(|td| td.text().collect::<String>())
        .collect::<Vec<_>>();
    assert_eq!(
        xss[0],
        "# </script><script>document.body.setAttribute('data-pwned','1')</script>"
    );
    let flags = doc
        .select(&sel(
            "tr.detail td[data-instance='psf__requests-1001'] [data-diff=gf] td.mk[data-flags]",
        ))
        .map(|td| td.value().attr("data-flags").unwrap().to_string())
        .collect::<Vec<_>>();
    assert_eq!(flags, vec!["15", "9", "15", "11", "15"]);
    let grid = doc
        .select(&sel(
            "tr.detail td[data-instance='psf__requests-1001'] table.grid tr",
        ))
        .count();
    assert_eq!(grid, 2 + 3, "two header rows and three tests");

    // Screenshot with one instance open, kept as a test artifact.
    let shot = dir.join("run1-modelA.png");
    let _ = std::fs::remove_file(&shot);
    b.screenshot(
        &chromium::file_url(&page_path, "open=psf__requests-1001"),
        &shot,
        (1280, 2400),
    )
    .unwrap();
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.len() > 10_000 && png.starts_with(b"\x89PNG"),
        "screenshot {shot:?}"
    );
    eprintln!("screenshot: {}", shot.display());
}

#[test]
fn compare_page_in_chromium() {
    let Some(b) = browser() else { return };
    let dir = artifact_dir();
    let a = common::load("run1", "modelA", &dir);
    let bv = common::load("run2", "modelB", &dir);
    let page_path = dir.join("compare.html");
    std::fs::write(
        &page_path,
        render_compare(&compare(&a, &bv, "swtbench test")),
    )
    .unwrap();
    let (dom, _) = b
        .dump_dom(&chromium::file_url(&page_path, "cmp=b_only"))
        .unwrap();
    let doc = Html::parse_document(&dom);
    assert_eq!(doc.root_element().value().attr("data-shown"), Some("1"));
    assert_eq!(visible_ids(&doc), vec!["psf__requests-1002"]);
    let shot = dir.join("compare.png");
    b.screenshot(&chromium::file_url(&page_path, ""), &shot, (1280, 1200))
        .unwrap();
    assert!(std::fs::read(&shot).unwrap().starts_with(b"\x89PNG"));
}

#[test]
fn compressed_details_open_in_chromium() {
    let Some(b) = browser() else { return };
    let dir = artifact_dir();
    let view = common::load("run1", "modelA", &dir);
    let page = swtbench_html::render_run_with(
        &view,
        swtbench_html::RenderOptions {
            details: swtbench_html::DetailEncoding::Compressed,
        },
    );
    assert!(page.contains("\"enc\":\"gzip+base64\""));
    assert!(!page.contains("document.body.setAttribute"));
    let page_path = dir.join("run1-modelA-compressed.html");
    std::fs::write(&page_path, page).unwrap();
    let (dom, _) = b
        .dump_dom(&chromium::file_url(
            &page_path,
            "open=psf__requests-1003,pallets__flask-2001",
        ))
        .unwrap();
    let doc = Html::parse_document(&dom);
    assert!(doc.select(&sel("[data-pwned]")).next().is_none());
    let xss = doc
        .select(&sel(
            "tr.detail td[data-instance='psf__requests-1003'] [data-diff=mp] td.code",
        ))
        .map(|td| td.text().collect::<String>())
        .collect::<Vec<_>>();
    assert_eq!(
        xss[0],
        "# </script><script>document.body.setAttribute('data-pwned','1')</script>"
    );
    assert_eq!(
        doc.select(&sel("tr.detail td[data-instance='pallets__flask-2001'] h4"))
            .count(),
        4
    );
}

/// Opening an instance from a link (`#open=…`) scrolls its row into view *below* the sticky
/// filter bar and column headers, not under them. Measured by a probe script in a test copy of
/// the page (the page's CSP would block it, so the copy drops the CSP).
#[test]
fn an_opened_row_is_not_hidden_under_the_sticky_headers() {
    let Some(b) = browser() else { return };
    let dir = artifact_dir();
    let mut view = common::load("run1", "modelA", &dir);
    // Enough rows to scroll: copies of the fixture's rows under new ids.
    let template = view.instances.clone();
    for k in 0..400 {
        let mut i = template[k % template.len()].clone();
        i.id = format!("copy__row-{k:04}");
        view.instances.push(i);
    }
    let page = render_run(&view);
    let csp_start = page
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .unwrap();
    let csp_end = csp_start + page[csp_start..].find('>').unwrap() + 1;
    let probe = "<script>setTimeout(function () {\
        var tr = document.getElementById('i-copy__row-0300');\
        var th = document.querySelector('#itable thead th');\
        document.documentElement.setAttribute('data-probe', \
          Math.round(tr.getBoundingClientRect().top) + ' ' + Math.round(th.getBoundingClientRect().bottom) + ' ' + Math.round(window.scrollY));\
        }, 500);</script></body>";
    let probed = format!("{}{}", &page[..csp_start], &page[csp_end..]).replace("</body>", probe);
    let path = dir.join("scroll-probe.html");
    std::fs::write(&path, probed).unwrap();
    let (dom, _) = b
        .dump_dom(&chromium::file_url(&path, "open=copy__row-0300"))
        .unwrap();
    let doc = Html::parse_document(&dom);
    let probe = doc
        .root_element()
        .value()
        .attr("data-probe")
        .unwrap()
        .to_string();
    let v: Vec<i64> = probe.split(' ').map(|x| x.parse().unwrap()).collect();
    let (row_top, headers_bottom, scrolled) = (v[0], v[1], v[2]);
    assert!(
        scrolled > 1000,
        "the page did not scroll to the row: {probe}"
    );
    assert!(
        row_top >= headers_bottom,
        "the opened row (top {row_top}) is under the sticky headers (bottom {headers_bottom})"
    );
}
