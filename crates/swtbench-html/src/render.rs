//! The page renderer: a view model in, one self-contained HTML document out.
//!
//! The document carries its own CSS and JavaScript (from `assets/`), draws its charts as inline
//! SVG and embeds instance details as JSON for the script to render on demand. A Content Security
//! Policy allows only those two inline blocks (by hash) and no network at all, so even a mistake
//! in escaping could not run injected script or fetch anything. The summary and the instance
//! table are plain HTML and readable without JavaScript.
//!
//! Pure: no file system, no clock. Everything shown comes from the view model.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::escape::{self, html};
use crate::model::{CompareRow, CompareView, InstanceView, Metrics, Outcome, RunView};
use crate::svg::{self, RepoCounts};

const CSS: &str = include_str!("assets/report.css");
const JS: &str = include_str!("assets/report.js");

/// The metric rows of the summary table: (JSON field, label).
pub const METRIC_ROWS: [(&str, &str); 8] = [
    ("applicability", "Applicability (W)"),
    ("success_rate", "Success rate (S)"),
    ("f_to_x", "F→X"),
    ("f_to_p", "F→P"),
    ("p_to_p", "P→P"),
    ("coverage_delta_all", "Δ coverage, all"),
    ("coverage_delta_resolved", "Δ coverage, resolved"),
    ("coverage_delta_unresolved", "Δ coverage, unresolved"),
];

/// The value of a metric by its JSON field name.
pub fn metric_value(m: &Metrics, field: &str) -> Option<f64> {
    match field {
        "applicability" => Some(m.applicability),
        "success_rate" => Some(m.success_rate),
        "f_to_x" => Some(m.f_to_x),
        "f_to_p" => Some(m.f_to_p),
        "p_to_p" => Some(m.p_to_p),
        "coverage_delta_all" => m.coverage_delta_all,
        "coverage_delta_resolved" => m.coverage_delta_resolved,
        "coverage_delta_unresolved" => m.coverage_delta_unresolved,
        _ => None,
    }
}

/// Renders the page of one run.
pub fn render_run(view: &RunView) -> String {
    render_run_with(view, RenderOptions::default())
}

/// Renders the page of one run with explicit options.
pub fn render_run_with(view: &RunView, opts: RenderOptions) -> String {
    let mut body = String::with_capacity(512 * view.instances.len() + 16_384);
    let _ = write!(
        body,
        "<header><h1>{}</h1><p class=\"sub\">SWT-Bench run report · {} instances · {}</p></header><main>",
        html(&view.title),
        view.instances.len(),
        html(&view.generator)
    );
    for w in &view.warnings {
        let _ = write!(body, "<p class=\"warn\">{}</p>", html(w));
    }

    body.push_str("<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">");
    metrics_table(&mut body, &view.metrics);
    outcome_table(&mut body, &view.instances);
    reason_table(&mut body, &view.instances);
    body.push_str("</div>");
    let _ = write!(
        body,
        "<figure class=\"chart-box\">{}<figcaption>Outcomes per repository (click an outcome count \
         above to filter the table).</figcaption></figure>",
        svg::outcome_bars(&repo_counts(&view.instances))
    );
    body.push_str("<div class=\"cards\">");
    params_table(&mut body, "Run parameters", &view.params);
    params_table(&mut body, "Run report", &view.report_fields);
    body.push_str("</div>");
    if !view.links.is_empty() {
        body.push_str("<p class=\"links\">");
        for (label, href) in &view.links {
            let _ = write!(
                body,
                "<a href=\"{}\">{}</a> ",
                html(&escape::href_path(href)),
                html(label)
            );
        }
        body.push_str("</p>");
    }
    body.push_str("</section>");

    instance_table(&mut body, &view.instances);
    body.push_str("</main>");
    legend(&mut body);

    let data = details_json(&view.instances, opts.details);
    page(&format!("SWT-Bench: {}", view.title), &body, &data)
}

/// Renders the comparison of two runs.
pub fn render_compare(view: &CompareView) -> String {
    let mut body = String::with_capacity(400 * view.rows.len() + 16_384);
    let _ = write!(
        body,
        "<header><h1>{}</h1><p class=\"sub\">SWT-Bench comparison · A = {} · B = {} · {}</p></header><main>",
        html(&view.title),
        html(&view.name_a),
        html(&view.name_b),
        html(&view.generator)
    );
    body.push_str("<section id=\"summary\"><h2>Summary</h2><div class=\"cards\">");

    compare_metrics(&mut body, view);
    compare_categories(&mut body, view);
    outcome_matrix(&mut body, view);
    body.push_str("</tbody></table></div><div class=\"cards\">");
    params_table(&mut body, "Run A parameters", &view.params_a);
    params_table(&mut body, "Run B parameters", &view.params_b);
    body.push_str("</div></section>");

    compare_instances(&mut body, view);
    body.push_str("</tbody></table></section></main>");
    legend(&mut body);
    page(
        &format!("SWT-Bench: {}", view.title),
        &body,
        "{\"kind\":\"compare\",\"d\":{}}",
    )
}

/// Writes the table of the two runs' metrics and their differences.
fn compare_metrics(body: &mut String, view: &CompareView) {
    body.push_str(
        "<table class=\"metrics\" id=\"metrics\"><caption>Metrics (% of the denominator)</caption>\
         <thead><tr><th></th><th>A</th><th>B</th><th>B − A</th></tr></thead><tbody>",
    );
    for (field, label) in METRIC_ROWS {
        let a = metric_value(&view.metrics_a, field);
        let b = metric_value(&view.metrics_b, field);
        let d = a.zip(b).map(|(a, b)| b - a);
        let _ = write!(
            body,
            "<tr data-metric=\"{field}\"><th>{label}</th>{}{}{}</tr>",
            num_cell(a, "a"),
            num_cell(b, "b"),
            delta_cell(d)
        );
    }
    let _ = write!(
        body,
        "<tr><th>Instances</th><td class=\"num\">{}</td><td class=\"num\">{}</td><td></td></tr>\
         <tr><th>Denominator</th><td class=\"num\">{}</td><td class=\"num\">{}</td><td></td></tr></tbody></table>",
        view.metrics_a.instances,
        view.metrics_b.instances,
        view.metrics_a.denominator,
        view.metrics_b.denominator
    );
}

/// Writes the counts of the instances resolved by A only, B only, both and neither.
fn compare_categories(body: &mut String, view: &CompareView) {
    let mut cat: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &view.rows {
        *cat.entry(compare_category(r)).or_default() += 1;
    }
    body.push_str(
        "<table class=\"counts\" id=\"categories\"><caption>Resolved instances</caption><tbody>",
    );
    for (key, label) in COMPARE_CATEGORIES {
        let n = cat.get(key).copied().unwrap_or(0);
        let _ = write!(
            body,
            "<tr data-cat=\"{key}\"><th>{label}</th><td class=\"num\"><a href=\"#cmp={key}\">{n}</a></td></tr>"
        );
    }
    body.push_str("</tbody></table>");
}

/// Writes the matrix of the instances' outcomes in A (rows) and in B (columns), up to its last
/// row (the caller closes the table).
fn outcome_matrix(body: &mut String, view: &CompareView) {
    body.push_str("<table class=\"matrix\" id=\"matrix\"><caption>Outcome in A (rows) × outcome in B (columns)</caption><thead><tr><th></th>");
    let outs: Vec<Option<Outcome>> = Outcome::ALL
        .iter()
        .copied()
        .map(Some)
        .chain([None])
        .collect();
    for o in &outs {
        let _ = write!(body, "<th>{}</th>", outcome_label(*o));
    }
    body.push_str("</tr></thead><tbody>");
    for oa in &outs {
        let _ = write!(body, "<tr><th>{}</th>", outcome_label(*oa));
        for ob in &outs {
            let n = view
                .rows
                .iter()
                .filter(|r| r.outcome_a == *oa && r.outcome_b == *ob)
                .count();
            let cls = if oa == ob { " class=\"diag\"" } else { "" };
            let _ = write!(
                body,
                "<td{cls}>{}</td>",
                if n == 0 { String::new() } else { n.to_string() }
            );
        }
        body.push_str("</tr>");
    }
}

/// Writes the controls and the rows of the table of the instances of the comparison (the caller
/// closes the table).
fn compare_instances(body: &mut String, view: &CompareView) {
    body.push_str("<section id=\"instances\"><h2>Instances</h2>");
    controls(
        body,
        &view
            .rows
            .iter()
            .map(|r| r.repo.as_str())
            .collect::<Vec<_>>(),
        true,
    );
    body.push_str(
        "<table id=\"itable\" class=\"itable cmp\"><colgroup><col class=\"c-id\"><col class=\"c-repo\">\
         <col class=\"c-out\"><col class=\"c-out\"><col class=\"c-num\"><col class=\"c-num\"><col class=\"c-num\"><col class=\"c-num\">\
         </colgroup><thead><tr>\
         <th data-sort=\"text\">Instance</th><th data-sort=\"text\">Repository</th>\
         <th data-sort=\"text\">Outcome A</th><th data-sort=\"text\">Outcome B</th>\
         <th data-sort=\"num\" class=\"num\">Added F→P A</th><th data-sort=\"num\" class=\"num\">Added F→P B</th>\
         <th data-sort=\"num\" class=\"num\">Δ coverage A</th><th data-sort=\"num\" class=\"num\">Δ coverage B</th>\
         </tr></thead><tbody>",
    );
    for r in &view.rows {
        let _ = write!(
            body,
            "<tr id=\"i-{}\" data-o=\"{}\" data-ob=\"{}\" data-r=\"{}\" data-c=\"{}\"><td class=\"id\">{}</td><td>{}</td>\
             <td>{}</td><td>{}</td>{}{}{}{}</tr>",
            escape::anchor(&r.id),
            r.outcome_a.map_or("missing", Outcome::as_str),
            r.outcome_b.map_or("missing", Outcome::as_str),
            html(&r.repo),
            compare_category(r),
            html(&r.id),
            html(&r.repo),
            outcome_badge(r.outcome_a),
            outcome_badge(r.outcome_b),
            int_cell(r.added_f2p_a),
            int_cell(r.added_f2p_b),
            pct_cell(r.coverage_delta_a),
            pct_cell(r.coverage_delta_b),
        );
    }
}

const COMPARE_CATEGORIES: [(&str, &str); 4] = [
    ("a_only", "resolved by A only"),
    ("b_only", "resolved by B only"),
    ("both", "resolved by both"),
    ("neither", "resolved by neither"),
];

/// Which of the comparison categories (`a_only`, `b_only`, `both`, `neither`) a row falls in.
pub fn compare_category(r: &CompareRow) -> &'static str {
    let a = r.outcome_a == Some(Outcome::Resolved);
    let b = r.outcome_b == Some(Outcome::Resolved);
    match (a, b) {
        (true, true) => "both",
        (true, false) => "a_only",
        (false, true) => "b_only",
        (false, false) => "neither",
    }
}

fn outcome_label(o: Option<Outcome>) -> &'static str {
    o.map_or("missing", Outcome::label)
}

fn outcome_badge(o: Option<Outcome>) -> String {
    format!(
        "<span class=\"o o-{}\">{}</span>",
        o.map_or("missing", Outcome::as_str),
        outcome_label(o)
    )
}

/// Assembles the document around `body`, with the CSP hashes of the inline style and script.
fn page(title: &str, body: &str, data_json: &str) -> String {
    let csp = format!(
        "default-src 'none'; style-src '{}'; script-src '{}'; img-src data:; base-uri 'none'; form-action 'none'",
        csp_hash(CSS),
        csp_hash(JS)
    );
    let mut out = String::with_capacity(body.len() + data_json.len() + CSS.len() + JS.len() + 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>{}</title><style>{CSS}</style></head><body>",
        html(title)
    );
    out.push_str(body);
    out.push_str("<script type=\"application/json\" id=\"swt-data\">");
    out.push_str(data_json);
    out.push_str("</script><script>");
    out.push_str(JS);
    out.push_str("</script></body></html>\n");
    out
}

/// The `sha256-<base64>` sources of the inline style and script every page carries, as its
/// Content Security Policy lists them: (style, script).
pub fn inline_hashes() -> (String, String) {
    (csp_hash(CSS), csp_hash(JS))
}

/// `sha256-<base64>` of an inline block, as the page's Content Security Policy lists it.
pub fn csp_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    format!("sha256-{}", base64(&digest))
}

fn base64(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(T[((n >> shift) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn fmt_pct(v: f64) -> String {
    format!("{v:.1}")
}

/// A metric cell: rounded for reading, exact in `data-value` (same digits as the JSON report).
fn num_cell(v: Option<f64>, which: &str) -> String {
    match v {
        Some(v) => format!(
            "<td class=\"num\" data-run=\"{which}\" data-value=\"{}\" title=\"{}\">{}</td>",
            json_number(v),
            json_number(v),
            fmt_pct(v)
        ),
        None => format!("<td class=\"num na\" data-run=\"{which}\" data-value=\"null\">n/a</td>"),
    }
}

fn delta_cell(v: Option<f64>) -> String {
    match v {
        Some(v) => {
            let cls = if v > 0.0 {
                "up"
            } else if v < 0.0 {
                "down"
            } else {
                "same"
            };
            format!(
                "<td class=\"num {cls}\" data-value=\"{}\">{}{}</td>",
                json_number(v),
                if v > 0.0 { "+" } else { "" },
                fmt_pct(v)
            )
        }
        None => "<td class=\"num na\">n/a</td>".to_string(),
    }
}

/// The number as `report --format json` writes it, so the page and the JSON agree digit for digit.
fn json_number(v: f64) -> String {
    crate::grade_bridge::json_number(v)
}

fn metrics_table(out: &mut String, m: &Metrics) {
    out.push_str(
        "<table class=\"metrics\" id=\"metrics\"><caption>Metrics (% of the denominator)</caption><tbody>",
    );
    for (field, label) in METRIC_ROWS {
        let _ = write!(
            out,
            "<tr data-metric=\"{field}\"><th>{label}</th>{}</tr>",
            num_cell(metric_value(m, field), "run")
        );
    }
    let _ = write!(
        out,
        "<tr data-metric=\"instances\"><th>Instances counted</th><td class=\"num\" data-value=\"{}\">{}</td></tr>\
         <tr data-metric=\"denominator\"><th>Denominator</th><td class=\"num\" data-value=\"{}\">{}</td></tr>\
         </tbody></table>",
        m.instances, m.instances, m.denominator, m.denominator
    );
    if let Some(why) = &m.coverage_missing {
        let _ = write!(
            out,
            "<p class=\"note\" id=\"coverage-note\">{}</p>",
            html(why)
        );
    }
}

fn outcome_counts(instances: &[InstanceView]) -> [usize; 5] {
    let mut c = [0usize; 5];
    for i in instances {
        if let Some(k) = Outcome::ALL.iter().position(|o| *o == i.outcome) {
            c[k] += 1;
        }
    }
    c
}

fn outcome_table(out: &mut String, instances: &[InstanceView]) {
    let counts = outcome_counts(instances);
    out.push_str(
        "<table class=\"counts\" id=\"outcomes\"><caption>Instances by outcome</caption><tbody>",
    );
    for (o, n) in Outcome::ALL.iter().zip(counts) {
        let _ = write!(
            out,
            "<tr data-outcome=\"{0}\"><th><span class=\"o o-{0}\">{1}</span></th>\
             <td class=\"num\"><a href=\"#outcome={0}\">{n}</a></td></tr>",
            o.as_str(),
            o.label()
        );
    }
    let _ = write!(
        out,
        "<tr data-outcome=\"all\"><th>total</th><td class=\"num\"><a href=\"#\">{}</a></td></tr></tbody></table>",
        instances.len()
    );
}

fn reason_table(out: &mut String, instances: &[InstanceView]) {
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for i in instances.iter().filter(|i| i.outcome == Outcome::Error) {
        *reasons
            .entry(i.reason.as_deref().unwrap_or("unknown"))
            .or_default() += 1;
    }
    if reasons.is_empty() {
        return;
    }
    let mut v: Vec<(&str, usize)> = reasons.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    out.push_str(
        "<table class=\"counts reasons\" id=\"reasons\"><caption>Error reasons</caption><tbody>",
    );
    const SHOWN: usize = 15;
    for (r, n) in v.iter().take(SHOWN) {
        let _ = write!(
            out,
            "<tr><th class=\"why\">{}</th><td class=\"num\">{n}</td></tr>",
            html(r)
        );
    }
    if v.len() > SHOWN {
        let rest: usize = v[SHOWN..].iter().map(|x| x.1).sum();
        let _ = write!(
            out,
            "<tr><th>{} other reasons</th><td class=\"num\">{rest}</td></tr>",
            v.len() - SHOWN
        );
    }
    out.push_str("</tbody></table>");
}

fn repo_counts(instances: &[InstanceView]) -> Vec<RepoCounts> {
    let mut by_repo: BTreeMap<&str, [usize; 5]> = BTreeMap::new();
    for i in instances {
        let c = by_repo.entry(i.repo.as_str()).or_default();
        if let Some(k) = Outcome::ALL.iter().position(|o| *o == i.outcome) {
            c[k] += 1;
        }
    }
    by_repo
        .into_iter()
        .map(|(repo, counts)| RepoCounts {
            repo: repo.to_string(),
            counts,
        })
        .collect()
}

fn params_table(out: &mut String, caption: &str, params: &[(String, String)]) {
    if params.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<table class=\"params\"><caption>{}</caption><tbody>",
        html(caption)
    );
    for (k, v) in params {
        let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", html(k), html(v));
    }
    out.push_str("</tbody></table>");
}

/// Filter controls. Hidden until the script runs (they do nothing without it).
fn controls(out: &mut String, repos: &[&str], compare: bool) {
    let mut repos: Vec<&str> = repos.to_vec();
    repos.sort_unstable();
    repos.dedup();
    out.push_str(
        "<div class=\"controls\" id=\"controls\" hidden>\
         <label>Search <input type=\"search\" id=\"f-q\" data-key=\"q\" placeholder=\"instance id\" autocomplete=\"off\"></label>",
    );
    out.push_str("<label>Repository <select id=\"f-repo\" data-key=\"repo\" data-attr=\"data-r\"><option value=\"\">all</option>");
    for r in repos {
        let _ = write!(out, "<option value=\"{0}\">{0}</option>", html(r));
    }
    out.push_str("</select></label>");
    let outcome_select = |out: &mut String, id: &str, key: &str, attr: &str, label: &str| {
        let _ = write!(
            out,
            "<label>{label} <select id=\"{id}\" data-key=\"{key}\" data-attr=\"{attr}\"><option value=\"\">all</option>"
        );
        for o in Outcome::ALL {
            let _ = write!(
                out,
                "<option value=\"{}\">{}</option>",
                o.as_str(),
                o.label()
            );
        }
        if compare {
            out.push_str("<option value=\"missing\">missing</option>");
        }
        out.push_str("</select></label>");
    };
    if compare {
        outcome_select(out, "f-outcome", "outcome", "data-o", "Outcome A");
        outcome_select(out, "f-outcome-b", "outcome_b", "data-ob", "Outcome B");
        out.push_str("<label>Resolved <select id=\"f-cmp\" data-key=\"cmp\" data-attr=\"data-c\"><option value=\"\">all</option>");
        for (k, l) in COMPARE_CATEGORIES {
            let _ = write!(out, "<option value=\"{k}\">{l}</option>");
        }
        out.push_str("</select></label>");
    } else {
        outcome_select(out, "f-outcome", "outcome", "data-o", "Outcome");
    }
    out.push_str("<span id=\"shown\" class=\"shown\" aria-live=\"polite\"></span></div>");
}

fn int_cell(v: Option<u64>) -> String {
    match v {
        Some(n) => format!("<td class=\"num\" data-v=\"{n}\">{n}</td>"),
        None => "<td class=\"num na\" data-v=\"-1\">–</td>".to_string(),
    }
}

/// A 0–1 fraction shown as a percentage.
fn pct_cell(v: Option<f64>) -> String {
    match v {
        Some(x) => format!(
            "<td class=\"num\" data-v=\"{}\">{:.1}%</td>",
            json_number(x),
            x * 100.0
        ),
        None => "<td class=\"num na\" data-v=\"-1\">–</td>".to_string(),
    }
}

fn instance_table(out: &mut String, instances: &[InstanceView]) {
    out.push_str("<section id=\"instances\"><h2>Instances</h2>");
    controls(
        out,
        &instances
            .iter()
            .map(|i| i.repo.as_str())
            .collect::<Vec<_>>(),
        false,
    );
    out.push_str(
        "<p class=\"hint js-only\" hidden>Click an instance to see its patch, runs, tests and coverage.</p>\
         <table id=\"itable\" class=\"itable\"><colgroup><col class=\"c-id\"><col class=\"c-repo\">\
         <col class=\"c-out\"><col class=\"c-num\"><col class=\"c-num\"><col class=\"c-num\"></colgroup><thead><tr>\
         <th data-sort=\"text\">Instance</th><th data-sort=\"text\">Repository</th>\
         <th data-sort=\"text\">Outcome</th><th data-sort=\"num\" class=\"num\">Added F→P</th>\
         <th data-sort=\"num\" class=\"num\">Coverage</th><th data-sort=\"num\" class=\"num\">Δ coverage</th>\
         </tr></thead><tbody>",
    );
    for i in instances {
        let a = escape::anchor(&i.id);
        let _ = write!(
            out,
            "<tr id=\"i-{a}\" data-o=\"{}\" data-r=\"{}\"><td class=\"id\"><a href=\"#open={a}\">{}</a></td>\
             <td>{}</td><td><span class=\"o o-{}\">{}</span>",
            i.outcome.as_str(),
            html(&i.repo),
            html(&i.id),
            html(&i.repo),
            i.outcome.as_str(),
            i.outcome.label(),
        );
        if !i.suspicious.is_empty() {
            let _ = write!(
                out,
                " <span class=\"o o-error sus\" title=\"{}\">suspicious</span>",
                html(&i.suspicious.join("\n"))
            );
        }
        if let Some(r) = &i.reason {
            let _ = write!(out, " <span class=\"why\">{}</span>", html(r));
        }
        let _ = write!(
            out,
            "</td>{}{}{}</tr>",
            int_cell(i.added_f2p),
            pct_cell(i.coverage_pred),
            pct_cell(i.coverage_delta_pred)
        );
    }
    out.push_str("</tbody></table></section>");
}

fn legend(out: &mut String) {
    out.push_str(
        "<footer><p><b>W</b>: the model's tests ran (applicability). <b>S</b>: resolved — at least one \
         new fail-to-pass test and no new failures after the fix. <b>F→X</b>, <b>F→P</b>, <b>P→P</b>: \
         instances with a new test of that transition compared to the base runs. <b>Δ coverage</b>: \
         share of the gold fix's executable changed lines that the model's tests ran more often than \
         the existing tests. All rates are percentages of the denominator.</p>\
         <p>Test grid codes: P passed, F failed, E error, S skipped, O other status, – not reported, \
         x not passed (failed, errored or absent; exact status not recorded).</p></footer>",
    );
}

/// How instance details are embedded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DetailEncoding {
    /// Plain JSON for small runs, compressed chunks above [`PLAIN_DETAILS_LIMIT`] bytes.
    #[default]
    Auto,
    /// Always plain JSON: `{"kind":"run","d":{"<anchor>": <detail>, …}}`.
    Plain,
    /// Always gzip-compressed, base64-encoded chunks of [`DETAIL_CHUNK`] instances each:
    /// `{"kind":"run","enc":"gzip+base64","per":N,"chunks":["…", …]}`. Chunk `i` holds the
    /// details of the instances at positions `i*N .. (i+1)*N` of the table (sorted by id) as one
    /// JSON object keyed like the plain form. The page decompresses a chunk the first time one of
    /// its instances is opened (`DecompressionStream`), so large runs stay small and fast.
    Compressed,
}

/// Above this many bytes of detail JSON, [`DetailEncoding::Auto`] compresses.
pub const PLAIN_DETAILS_LIMIT: usize = 1_000_000;
/// Instances per compressed chunk.
pub const DETAIL_CHUNK: usize = 64;

/// Rendering choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderOptions {
    pub details: DetailEncoding,
}

/// The detail object of each instance, keyed by its anchor, as JSON text.
fn details_object(instances: &[InstanceView]) -> String {
    let mut raw = String::with_capacity(instances.len() * 2048);
    raw.push('{');
    for (n, i) in instances.iter().enumerate() {
        if n > 0 {
            raw.push(',');
        }
        let key = serde_json::to_string(&escape::anchor(&i.id)).unwrap_or_default();
        raw.push_str(&key);
        raw.push(':');
        match serde_json::to_string(&i.detail) {
            Ok(s) => raw.push_str(&s),
            Err(_) => raw.push_str("null"),
        }
    }
    raw.push('}');
    raw
}

fn gzip(text: &str) -> Vec<u8> {
    use std::io::Write as _;
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(text.len() / 4),
        flate2::Compression::new(6),
    );
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(text.as_bytes());
    enc.finish().unwrap_or_default()
}

/// The embedded data element's content, safe to place inside a script element.
fn details_json(instances: &[InstanceView], encoding: DetailEncoding) -> String {
    let plain = || details_object(instances);
    let compressed = match encoding {
        DetailEncoding::Plain => false,
        DetailEncoding::Compressed => true,
        DetailEncoding::Auto => {
            // Estimate from a sample rather than serialising everything twice.
            let sample: usize = instances
                .iter()
                .take(64)
                .map(|i| serde_json::to_string(&i.detail).map_or(0, |s| s.len()))
                .sum();
            let per = sample / instances.len().clamp(1, 64);
            per * instances.len() > PLAIN_DETAILS_LIMIT
        }
    };
    if !compressed {
        return escape::script_safe_json(&format!("{{\"kind\":\"run\",\"d\":{}}}", plain()));
    }
    let mut out =
        format!("{{\"kind\":\"run\",\"enc\":\"gzip+base64\",\"per\":{DETAIL_CHUNK},\"chunks\":[");
    for (n, chunk) in instances.chunks(DETAIL_CHUNK).enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(&base64(&gzip(&details_object(chunk))));
        out.push('"');
    }
    out.push_str("]}");
    // base64 has no characters that need escaping, but keep the guarantee in one place.
    escape::script_safe_json(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// n/a Δ coverage rows say why, next to the table.
    #[test]
    fn missing_coverage_rows_are_explained_on_the_page() {
        let mut out = String::new();
        let m = Metrics {
            coverage_missing: Some("n/a: no gold run <here>".into()),
            ..Metrics::default()
        };
        metrics_table(&mut out, &m);
        assert!(out.contains("<td class=\"num na\""), "{out}");
        assert!(
            out.contains(
                "<p class=\"note\" id=\"coverage-note\">n/a: no gold run &lt;here&gt;</p>"
            ),
            "{out}"
        );
        let mut out = String::new();
        metrics_table(&mut out, &Metrics::default());
        assert!(!out.contains("coverage-note"), "{out}");
    }

    #[test]
    fn base64_matches_known_vectors() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn json_numbers_match_serde() {
        assert_eq!(json_number(17.753623188405797), "17.753623188405797");
        assert_eq!(json_number(0.0), "0.0");
    }
}
