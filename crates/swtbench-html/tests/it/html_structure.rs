//! Structure of the rendered pages on the fixture run tree: summary numbers, instance rows,
//! escaping of hostile patch text, offline-only resources and the comparison view.

use crate::common;

use scraper::{Html, Selector};
use swtbench_html::render::{csp_hash, metric_value, METRIC_ROWS};
use swtbench_html::{compare, render_compare, render_run, Outcome};

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap()
}

fn text(doc: &Html, s: &str) -> Vec<String> {
    doc.select(&sel(s))
        .map(|e| e.text().collect::<String>())
        .collect()
}

#[test]
fn summary_metrics_and_counts_match_the_view_model() {
    let out = tempfile::tempdir().unwrap();
    let view = common::load("run1", "modelA", out.path());
    let page = render_run(&view);
    let doc = Html::parse_document(&page);

    // Every metric row carries the exact value (as JSON prints it) and a rounded text.
    for (field, _) in METRIC_ROWS {
        let cell = doc
            .select(&sel(&format!("#metrics tr[data-metric={field}] td")))
            .next()
            .unwrap_or_else(|| panic!("metric row {field} missing"));
        let shown = cell.value().attr("data-value").unwrap();
        match metric_value(&view.metrics, field) {
            Some(v) => {
                assert_eq!(shown.parse::<f64>().unwrap(), v, "{field}");
                assert_eq!(cell.text().collect::<String>(), format!("{v:.1}"));
            }
            None => assert_eq!(shown, "null", "{field}"),
        }
    }
    // 1 resolved of denominator 6; W counts applied reports with tests (1001, 1002, 1003).
    assert!((view.metrics.success_rate - 100.0 / 6.0).abs() < 1e-9);
    assert!((view.metrics.applicability - 50.0).abs() < 1e-9);
    // Coverage rows: Δ pred sums to 0.4 (1001); the gold run has 4 non-null Δ gold (Δall = 10);
    // the one resolved report has a non-null Δ gold (Δresolved = 40); unresolved sum 0.
    assert_eq!(view.metrics.coverage_delta_all, Some(10.0));
    assert_eq!(view.metrics.coverage_delta_resolved, Some(40.0));
    assert_eq!(view.metrics.coverage_delta_unresolved, Some(0.0));

    let counts: Vec<(String, String)> = doc
        .select(&sel("#outcomes tr"))
        .map(|tr| {
            (
                tr.value().attr("data-outcome").unwrap().to_string(),
                tr.select(&sel("td")).next().unwrap().text().collect(),
            )
        })
        .collect();
    let expect = [
        ("resolved", "1"),
        ("unresolved", "2"),
        ("not_applied", "1"),
        ("empty_patch", "1"),
        ("error", "1"),
        ("all", "6"),
    ];
    assert_eq!(
        counts,
        expect
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    );
    // The error's reason is listed.
    assert_eq!(
        text(&doc, "#reasons th.why"),
        vec![swtbench_grade::ErrorReason::MissingPredPreOutput.to_string()]
    );
    // Chart: one labelled bar group per repository.
    let labels = text(&doc, "svg.chart text.label");
    assert_eq!(labels, vec!["pallets/flask", "psf/requests"]);
    // Parameters from the caller and from the run report.
    let params = text(&doc, "table.params th");
    assert!(params.contains(&"dataset".to_string()) && params.contains(&"run id".to_string()));
    assert!(params.contains(&"submitted_instances".to_string()));
    assert!(!params.contains(&"completed_ids".to_string()));
}

#[test]
fn instance_rows_are_sortable_filterable_and_carry_outcomes() {
    let out = tempfile::tempdir().unwrap();
    let view = common::load("run1", "modelA", out.path());
    let doc = Html::parse_document(&render_run(&view));
    let rows: Vec<(String, String, String)> = doc
        .select(&sel("#itable tbody tr"))
        .map(|tr| {
            (
                tr.select(&sel("td.id")).next().unwrap().text().collect(),
                tr.value().attr("data-o").unwrap().to_string(),
                tr.value().attr("data-r").unwrap().to_string(),
            )
        })
        .collect();
    let ids: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        ids,
        vec![
            "pallets__flask-2001",
            "pallets__flask-2002",
            "pallets__flask-2003",
            "psf__requests-1001",
            "psf__requests-1002",
            "psf__requests-1003"
        ]
    );
    let outcomes: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        outcomes,
        vec![
            "not_applied",
            "empty_patch",
            "error",
            "resolved",
            "unresolved",
            "unresolved"
        ]
    );
    // Sortable headers and filter controls exist; the controls stay hidden without script.
    assert_eq!(doc.select(&sel("#itable th[data-sort]")).count(), 6);
    let controls = doc.select(&sel("#controls")).next().unwrap();
    assert!(controls.value().attr("hidden").is_some());
    let repo_options = text(&doc, "#f-repo option");
    assert_eq!(repo_options, vec!["all", "pallets/flask", "psf/requests"]);
    // Coverage cells: 0.8 → 80.0 %, exact value kept for sorting.
    let r1001 = doc
        .select(&sel("#i-psf__requests-1001 td.num"))
        .map(|td| {
            (
                td.value().attr("data-v").unwrap().to_string(),
                td.text().collect::<String>(),
            )
        })
        .collect::<Vec<_>>();
    assert_eq!(
        r1001,
        vec![
            ("1".to_string(), "1".to_string()),
            ("0.8".to_string(), "80.0%".to_string()),
            ("0.4".to_string(), "40.0%".to_string())
        ]
    );
}

#[test]
fn instance_details_are_embedded_as_inert_json() {
    let out = tempfile::tempdir().unwrap();
    let view = common::load("run1", "modelA", out.path());
    let page = render_run(&view);
    // The hostile patch must not appear as markup anywhere.
    assert!(!page.contains("<script>document.body"));
    assert!(!page.contains("<script>alert(1)"));
    assert!(!page.contains("<img src=x"));
    assert!(!page.contains('\u{2028}'));
    assert_eq!(
        page.matches("</script>").count(),
        2,
        "only our two script elements close"
    );

    let doc = Html::parse_document(&page);
    let data = doc
        .select(&sel("script#swt-data[type='application/json']"))
        .next()
        .unwrap()
        .text()
        .collect::<String>();
    let v: serde_json::Value = serde_json::from_str(&data).unwrap();
    let xss = &v["d"]["psf__requests-1003"];
    let lines: Vec<&str> = xss["mp"]["f"][0]["h"][0]["l"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        lines[0],
        "# </script><script>document.body.setAttribute('data-pwned','1')</script>"
    );
    assert!(lines[1].contains('\u{2028}'));
    // The test name with markup is data too.
    assert!(xss["t"]["n"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!(
            "tests/test_xss.py::test_xss[<script>alert(1)</script>]"
        )));

    // Resolved instance: six runs found, test grid from the buckets, gold fix with coverage marks.
    let d = &v["d"]["psf__requests-1001"];
    let runs = d["r"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    assert!(runs.iter().all(|r| r["o"] == true && r["d"].is_string()));
    assert_eq!(
        runs[0]["d"].as_str().unwrap(),
        format!(
            "{}/run_instance_swt_logs/run1/pred_pre__modelA/psf__requests-1001/",
            relative_fixture(out.path())
        )
    );
    // Statuses parsed from the logs with the repository's parser (pytest_options for requests).
    assert_eq!(d["t"]["e"], true);
    assert_eq!(d["t"]["n"][0], "tests/test_new.py::test_bug");
    assert_eq!(d["t"]["c"][0], "FP----");
    assert_eq!(runs[0]["a"], true);
    assert_eq!(runs[0]["c"], serde_json::json!([1, 1, 0]));
    assert_eq!(d["gf"]["cov"], true);
    // Removed lines are old 11 and 12, added lines new 11, 12 and 13 (fixture coverage dumps):
    // old 11 hit by pred/gold/base pre (f); old 12 only by pred_pre, gold/base list it with 0 (9);
    // new 11 hit by all post runs (f); new 12 base_post 0 (b); new 13 all (f).
    assert_eq!(d["gf"]["f"][0]["h"][0]["k"], " --+++ ");
    assert_eq!(d["gf"]["f"][0]["h"][0]["m"], " f9fbf ");
    // Error instance: no report, reason shown, pred_pre dir linked.
    let e = view
        .instances
        .iter()
        .find(|i| i.id == "pallets__flask-2003")
        .unwrap();
    assert_eq!(e.outcome, Outcome::Error);
    assert!(e.detail.runs[0].dir.is_some() && !e.detail.runs[0].has_output);
}

fn relative_fixture(out: &std::path::Path) -> String {
    swtbench_html::load::relative_path(
        &std::fs::canonicalize(out).unwrap(),
        &std::fs::canonicalize(common::fixture_root()).unwrap(),
        false,
    )
}

#[test]
fn page_is_self_contained_and_locked_down() {
    let out = tempfile::tempdir().unwrap();
    let page = render_run(&common::load("run1", "modelA", out.path()));
    let doc = Html::parse_document(&page);
    // No external resources of any kind.
    for s in [
        "script[src]",
        "link",
        "img",
        "iframe",
        "object",
        "embed",
        "base",
    ] {
        assert_eq!(doc.select(&sel(s)).count(), 0, "{s}");
    }
    let http: Vec<&str> = page
        .match_indices("http")
        .map(|(i, _)| &page[i..i + 30])
        .collect();
    assert!(
        http.iter()
            .all(|h| h.starts_with("http://www.w3.org/2000/svg") || h.starts_with("http-equiv")),
        "{http:?}"
    );
    // The CSP allows exactly our inline style and script.
    let csp = doc
        .select(&sel("meta[http-equiv=Content-Security-Policy]"))
        .next()
        .unwrap()
        .value()
        .attr("content")
        .unwrap()
        .to_string();
    assert!(csp.starts_with("default-src 'none';"));
    let style = doc
        .select(&sel("style"))
        .next()
        .unwrap()
        .text()
        .collect::<String>();
    let script = doc
        .select(&sel("script:not([type])"))
        .next()
        .unwrap()
        .text()
        .collect::<String>();
    assert!(csp.contains(&format!("style-src '{}'", csp_hash(&style))));
    assert!(csp.contains(&format!("script-src '{}'", csp_hash(&script))));
    // Without JavaScript the filter controls (which only the script can drive) stay hidden: they
    // carry `hidden` and an author `display` rule, so the style must make `hidden` win.
    assert_eq!(doc.select(&sel("#controls[hidden]")).count(), 1);
    assert!(style.contains("[hidden]{display:none!important}"));
}

#[test]
fn comparison_lists_who_resolves_what() {
    let out = tempfile::tempdir().unwrap();
    let a = common::load("run1", "modelA", out.path());
    let b = common::load("run2", "modelB", out.path());
    let view = compare(&a, &b, "swtbench test");
    let doc = Html::parse_document(&render_compare(&view));
    let cats: Vec<(String, String)> = doc
        .select(&sel("#categories tr"))
        .map(|tr| {
            (
                tr.value().attr("data-cat").unwrap().to_string(),
                tr.select(&sel("td")).next().unwrap().text().collect(),
            )
        })
        .collect();
    assert_eq!(
        cats,
        vec![
            ("a_only".to_string(), "1".to_string()),
            ("b_only".to_string(), "1".to_string()),
            ("both".to_string(), "0".to_string()),
            ("neither".to_string(), "5".to_string())
        ]
    );
    let row = |id: &str| {
        let tr = doc.select(&sel(&format!("#i-{id}"))).next().unwrap();
        (
            tr.value().attr("data-o").unwrap().to_string(),
            tr.value().attr("data-ob").unwrap().to_string(),
            tr.value().attr("data-c").unwrap().to_string(),
        )
    };
    assert_eq!(
        row("psf__requests-1001"),
        ("resolved".into(), "unresolved".into(), "a_only".into())
    );
    assert_eq!(
        row("pallets__flask-2004"),
        ("missing".into(), "not_applied".into(), "neither".into())
    );
    // Metric deltas: B − A of the success rate is 0 (one resolved each).
    let d = doc
        .select(&sel("#metrics tr[data-metric=success_rate] td"))
        .map(|td| td.value().attr("data-value").unwrap_or("").to_string())
        .collect::<Vec<_>>();
    assert_eq!(d.len(), 3);
    assert_eq!(
        d[2].parse::<f64>().unwrap(),
        b.metrics.success_rate - a.metrics.success_rate
    );
}

/// A tree as `swtbench run` leaves it: an empty prediction gets a not-applied `report.json`, no
/// `model_patch.diff` and an `empty_patch` summary; a repository of a spec table is read with
/// the table's log parser; a timeout note follows the outcome.
#[test]
fn runner_summaries_and_spec_table_parsers_are_honoured() {
    let root = tempfile::tempdir().unwrap();
    let logs = root.path().join("run_instance_swt_logs");
    let model = logs.join("r1").join("m");
    let write = |p: std::path::PathBuf, text: &str| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let report = |id: &str, applied: bool| {
        format!(
            "{{\"{id}\": {{\"patch_is_None\": false, \"patch_exists\": true, \
             \"patch_successfully_applied\": {applied}, \"resolved\": false}}}}"
        )
    };
    write(
        model.join("acme__widget-1/report.json"),
        &report("acme__widget-1", false),
    );
    write(
        model.join("acme__widget-1/swtbench_instance.json"),
        r#"{"instance_id": "acme__widget-1", "outcome": {"kind": "empty_patch"},
            "reasons": ["the prediction has no usable patch; nothing was run"], "runs": []}"#,
    );
    write(
        model.join("acme__widget-2/report.json"),
        &report("acme__widget-2", true),
    );
    write(
        model.join("acme__widget-2/swtbench_instance.json"),
        r#"{"instance_id": "acme__widget-2", "outcome": {"kind": "unresolved", "applied": true},
            "reasons": ["pred_pre timed out after 60 s; its output up to then was graded"]}"#,
    );
    let pred_pre = logs.join("r1/pred_pre__m/acme__widget-2");
    write(
        pred_pre.join("model_patch.diff"),
        "diff --git a/tests/test_w.py b/tests/test_w.py\n--- a/tests/test_w.py\n+++ b/tests/test_w.py\n@@ -1,1 +1,2 @@\n x = 1\n+y = 2\n",
    );
    write(
        pred_pre.join("test_output.txt"),
        "+ git apply -v /root/pre_state.patch\nChecking patch tests/test_w.py...\nApplied patch tests/test_w.py cleanly.\nPASSED tests/test_w.py::test_a\nFAILED tests/test_w.py::test_b\n",
    );

    let load = |parsers| {
        let opts = swtbench_html::LoadOptions {
            out_dir: root.path().to_path_buf(),
            rules: swtbench_html::ReadRules {
                parsers,
                ..Default::default()
            },
            ..Default::default()
        };
        common::load_dir(&model, &opts)
    };
    let view = load(Default::default());
    assert_eq!(view.instances[0].outcome, Outcome::EmptyPatch);
    assert_eq!(view.instances[1].outcome, Outcome::Unresolved);
    assert_eq!(
        view.instances[1].reason.as_deref(),
        Some("pred_pre timed out after 60 s; its output up to then was graded")
    );
    // No parser for acme/widget in the original's map: no counts.
    assert_eq!(view.instances[1].detail.runs[0].counts, None);
    let page = render_run(&view);
    let doc = Html::parse_document(&page);
    assert_eq!(
        text(&doc, "#outcomes tr[data-outcome=empty_patch] td"),
        vec!["1".to_string()]
    );
    assert!(text(&doc, "#i-acme__widget-2 .why")[0].contains("timed out"));

    let with_table = load(
        [(
            "acme/widget".to_string(),
            swtbench_grade::parsers::Parser::Pytest,
        )]
        .into(),
    );
    let cell = &with_table.instances[1].detail.runs[0];
    assert_eq!(cell.counts, Some([1, 1, 0]));
    assert_eq!(cell.applied, Some(true));

    // A run in reproduction mode (its eval.sh echoes the script's exit code) is read with the
    // reproduction parser whatever the caller's default mode.
    write(
        pred_pre.join("eval.sh"),
        "#!/bin/bash\nset -uxo pipefail\npython3 /testbed/repro.py\necho $?\ngit checkout abc\n",
    );
    write(
        pred_pre.join("test_output.txt"),
        "+ git apply -v -\nApplied patch tests/test_w.py cleanly.\n+ python3 /testbed/repro.py\nPASSED tests/test_w.py::test_a\n+ echo 1\n1\n",
    );
    let repro = load(
        [(
            "acme/widget".to_string(),
            swtbench_grade::parsers::Parser::Pytest,
        )]
        .into(),
    );
    let cell = &repro.instances[1].detail.runs[0];
    assert_eq!(cell.counts, Some([0, 1, 0]), "{cell:?}");

    // The run parameters `swtbench run` wrote into its run report are listed on later pages.
    write(
        root.path().join("evaluation_results/m.r1.json"),
        r#"{"total_instances": 2, "run_parameters": {"exec mode": "reproduction_script", "time taken": "0:02:03"}}"#,
    );
    let view = load(Default::default());
    let param = |k: &str| {
        view.params
            .iter()
            .find(|(pk, _)| pk == k)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(param("exec mode").as_deref(), Some("reproduction_script"));
    assert_eq!(param("time taken").as_deref(), Some("0:02:03"));
}
