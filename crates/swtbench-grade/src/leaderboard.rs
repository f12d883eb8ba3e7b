//! The leaderboard table (§7.5, the original's `src/report.py` + `figures/util.py`): W, S, F→X,
//! F→P, P→P and, when a gold run is available, the three Δ coverage rows; rendered as a GitHub
//! Markdown table, LaTeX, JSON or CSV.
//!
//! Rates are `100 · count / T` with a fixed denominator `T` (276 lite, 433 verified, 1983 full, or
//! a custom one), so missing instances count as failures. The coverage rows divide sums of the
//! prediction's `coverage_delta_pred` by counts of non-null `coverage_delta_gold`, taken from the
//! gold run for Δᵃˡˡ and from the prediction's own reports for Δˢ / Δ¬ˢ, as the original does.
//!
//! Numbers are printed unrounded (Python `repr`), which is what the original's table shows; a
//! number of decimals can be asked for.
//!
//! Pure: reports in, numbers and text out.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::py;
use crate::report::InstanceReport;
use crate::transitions::difference;

/// The datasets with a fixed denominator and a published gold run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dataset {
    Lite,
    Verified,
    Full,
}

impl Dataset {
    pub const ALL: [Dataset; 3] = [Dataset::Lite, Dataset::Verified, Dataset::Full];

    pub fn name(self) -> &'static str {
        match self {
            Dataset::Lite => "lite",
            Dataset::Verified => "verified",
            Dataset::Full => "full",
        }
    }

    /// The number of SWT-Bench instances: SWE-bench minus the filter list.
    pub fn denominator(self) -> usize {
        match self {
            Dataset::Lite => 276,
            Dataset::Verified => 433,
            Dataset::Full => 1983,
        }
    }

    /// The run id of the published gold run the original looks for.
    pub fn gold_run_id(self) -> &'static str {
        match self {
            Dataset::Lite => "validate-lite-gold-1",
            Dataset::Verified => "validate-verified-gold-1",
            Dataset::Full => "validate-full-gold",
        }
    }
}

impl std::str::FromStr for Dataset {
    type Err = crate::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dataset::ALL
            .into_iter()
            .find(|d| d.name() == s.to_ascii_lowercase())
            .ok_or_else(|| crate::UnknownName::new("dataset", s, Some("lite, verified or full")))
    }
}

/// How many instances meet each criterion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub applicable: usize,
    pub resolved: usize,
    pub f_to_x: usize,
    pub f_to_p: usize,
    pub p_to_p: usize,
}

/// The three Δ coverage rows, in percent.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CoverageRows {
    pub all: f64,
    pub resolved: f64,
    pub unresolved: f64,
    /// Gold reports with a non-null `coverage_delta_gold` (the Δᵃˡˡ denominator).
    pub gold_countable: usize,
    /// Resolved prediction reports with a non-null `coverage_delta_gold`.
    pub resolved_countable: usize,
}

/// Why the coverage rows are absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoCoverage {
    /// No gold run directory, or no reports in it.
    NoGoldRun,
    /// The gold run has reports, but none with `coverage_delta_gold` (the original divides by
    /// zero here).
    NoGoldCoverage,
}

/// The table's numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    pub applicability: f64,
    pub success_rate: f64,
    pub f_to_x: f64,
    pub f_to_p: f64,
    pub p_to_p: f64,
    pub coverage: Result<CoverageRows, NoCoverage>,
    pub counts: Counts,
    /// Reports counted (after the filter lists).
    pub instances: usize,
    pub denominator: usize,
}

/// Whether a report counts for applicability (W): it has `tests_pred` and the prediction's runs
/// saw at least a tenth as many tests as the base runs.
pub fn is_applicable(r: &InstanceReport) -> bool {
    let Some(pred) = &r.tests_pred else {
        return false;
    };
    let base = r.tests_base.as_ref().map_or(0, |b| b.total());
    pred.total() as f64 >= 0.1 * base as f64
}

fn set_of(v: &[String]) -> BTreeSet<&str> {
    v.iter().map(String::as_str).collect()
}

/// (F→X, F→P, P→P) of one report; all false without `tests_pred`.
pub fn transitions_beyond_base(r: &InstanceReport) -> (bool, bool, bool) {
    let Some(pred) = &r.tests_pred else {
        return (false, false, false);
    };
    let empty = Default::default();
    let base = r.tests_base.as_ref().unwrap_or(&empty);
    let f2p = !difference(&pred.fail_to_pass, &base.fail_to_pass).is_empty();
    let f2f = !difference(&pred.fail_to_fail, &base.fail_to_fail).is_empty();
    let base_p2p = set_of(&base.pass_to_pass);
    let p2p = pred
        .pass_to_pass
        .iter()
        .any(|t| !base_p2p.contains(t.as_str()));
    (f2p || f2f, f2p, p2p)
}

/// Computes the table. `reports` are the prediction's reports and `gold` the gold run's (`None`
/// when the gold run directory does not exist), both already filtered; their order only affects
/// the last bits of the coverage sums (the original's is directory order; pass them sorted).
pub fn compute(
    reports: &[InstanceReport],
    gold: Option<&[InstanceReport]>,
    denominator: usize,
) -> Metrics {
    let mut c = Counts::default();
    for r in reports {
        c.applicable += usize::from(is_applicable(r));
        c.resolved += usize::from(r.resolved);
        let (fx, fp, pp) = transitions_beyond_base(r);
        c.f_to_x += usize::from(fx);
        c.f_to_p += usize::from(fp);
        c.p_to_p += usize::from(pp);
    }
    let rate = |n: usize| (100 * n) as f64 / denominator as f64;
    Metrics {
        applicability: rate(c.applicable),
        success_rate: rate(c.resolved),
        f_to_x: rate(c.f_to_x),
        f_to_p: rate(c.f_to_p),
        p_to_p: rate(c.p_to_p),
        coverage: coverage_rows(reports, gold),
        counts: c,
        instances: reports.len(),
        denominator,
    }
}

fn sum_delta<'a>(it: impl Iterator<Item = &'a InstanceReport>) -> f64 {
    // `s = 0; s += delta` in iteration order, skipping nulls, as the original.
    let mut s = 0.0;
    for r in it {
        if let Some(d) = r.coverage.coverage_delta_pred {
            s += d;
        }
    }
    s
}

fn count_gold<'a>(it: impl Iterator<Item = &'a InstanceReport>) -> usize {
    it.filter(|r| r.coverage.coverage_delta_gold.is_some())
        .count()
}

fn coverage_rows(
    reports: &[InstanceReport],
    gold: Option<&[InstanceReport]>,
) -> Result<CoverageRows, NoCoverage> {
    let gold = match gold {
        Some(g) if !g.is_empty() => g,
        _ => return Err(NoCoverage::NoGoldRun),
    };
    let g = count_gold(gold.iter());
    if g == 0 {
        return Err(NoCoverage::NoGoldCoverage);
    }
    let resolved = || reports.iter().filter(|r| r.resolved);
    let unresolved = || reports.iter().filter(|r| !r.resolved);
    let gr = count_gold(resolved());
    let all = 100.0 * sum_delta(reports.iter()) / g as f64;
    let res = if gr > 0 {
        100.0 * sum_delta(resolved()) / gr as f64
    } else {
        0.0
    };
    // `g − gr` can be negative: the two counts come from different report sets.
    let rest = g as i64 - gr as i64;
    let unres = if rest > 0 {
        100.0 * sum_delta(unresolved()) / rest as f64
    } else {
        0.0
    };
    Ok(CoverageRows {
        all,
        resolved: res,
        unresolved: unres,
        gold_countable: g,
        resolved_countable: gr,
    })
}

/// The original's `p@k` mode over several samples (seeds) of one model: per instance, one seed's
/// report. The attributes `resolved`, `added_f2p`, `coverage_delta_pred` and
/// `patch_successfully_applied` are tried in that order; for an attribute, the seeds are walked in
/// the given order and a seed is taken when its value is greater than the value taken so far
/// (starting at 0), so the first seed with the highest value wins. The first attribute that takes
/// a seed decides; an instance where every value is 0 (false, null) is left out, as in the
/// original. `per_seed` holds each seed's reports (already filtered); the result is sorted by
/// instance id.
pub fn select_pass_at_k(per_seed: &[Vec<InstanceReport>]) -> Vec<InstanceReport> {
    let mut by_id: BTreeMap<&str, Vec<&InstanceReport>> = BTreeMap::new();
    for reports in per_seed {
        for r in reports {
            by_id.entry(r.instance_id.as_str()).or_default().push(r);
        }
    }
    let attributes: [fn(&InstanceReport) -> f64; 4] = [
        |r| f64::from(u8::from(r.resolved)),
        |r| r.added_f2p.unwrap_or(0) as f64,
        |r| r.coverage.coverage_delta_pred.unwrap_or(0.0),
        |r| f64::from(u8::from(r.patch_successfully_applied)),
    ];
    by_id
        .into_values()
        .filter_map(|candidates| {
            attributes.iter().find_map(|value| {
                let mut best = 0.0;
                let mut chosen = None;
                for r in &candidates {
                    let v = value(r);
                    if v > best {
                        best = v;
                        chosen = Some(*r);
                    }
                }
                chosen.cloned()
            })
        })
        .collect()
}

/// Output formats of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// A GitHub Markdown table (the original's default `tablefmt`).
    #[default]
    Github,
    /// A LaTeX `tabular` with the paper's row macros.
    Latex,
    /// One JSON object with the numbers.
    Json,
    /// `name,metric,label,value` rows.
    Csv,
}

impl std::str::FromStr for Format {
    type Err = crate::UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "github" | "markdown" | "md" => Ok(Format::Github),
            "latex" | "latex_raw" | "tex" => Ok(Format::Latex),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            other => Err(crate::UnknownName::new(
                "format",
                other,
                Some("github, latex, json or csv"),
            )),
        }
    }
}

/// One row: JSON key, plain label, LaTeX label, value.
struct Row {
    key: &'static str,
    label: &'static str,
    latex: &'static str,
    value: f64,
}

fn rows(m: &Metrics) -> Vec<Row> {
    let mut v = vec![
        Row {
            key: "applicability",
            label: "Applicability (W)",
            latex: r"{$\mathcal{W}$}",
            value: m.applicability,
        },
        Row {
            key: "success_rate",
            label: "Success Rate (S)",
            latex: r"{$\suc$}",
            value: m.success_rate,
        },
        Row {
            key: "f_to_x",
            label: "F->X",
            latex: r"{\ftx}",
            value: m.f_to_x,
        },
        Row {
            key: "f_to_p",
            label: "F->P",
            latex: r"{\ftp}",
            value: m.f_to_p,
        },
        Row {
            key: "p_to_p",
            label: "P->P",
            latex: r"{\ptp}",
            value: m.p_to_p,
        },
    ];
    if let Ok(c) = &m.coverage {
        v.extend([
            Row {
                key: "coverage_delta_all",
                label: "Coverage Delta (Δᵃˡˡ)",
                latex: r"{$\dc^{\text{all}}$ }",
                value: c.all,
            },
            Row {
                key: "coverage_delta_resolved",
                label: "Coverage Delta Resolved (Δᔆ)",
                latex: r"{$\dc^{\suc}$}",
                value: c.resolved,
            },
            Row {
                key: "coverage_delta_unresolved",
                label: "Coverage Delta Unresolved (Δⁿᵒᵗ ᔆ)",
                latex: r"{$\dc^{\neg\suc}$}",
                value: c.unresolved,
            },
        ]);
    }
    v
}

fn number(x: f64, decimals: Option<usize>) -> String {
    match decimals {
        Some(d) => format!("{x:.d$}"),
        None => py::float_repr(x),
    }
}

/// Renders the table. `name` heads the value column (the original uses the run id);
/// `decimals` rounds the numbers (`None`: unrounded, as the original prints them).
pub fn render(m: &Metrics, name: &str, format: Format, decimals: Option<usize>) -> String {
    match format {
        Format::Github => render_github(m, name, decimals),
        Format::Latex => render_latex(m, name, decimals),
        Format::Json => render_json(m),
        Format::Csv => render_csv(m, name, decimals),
    }
}

fn render_github(m: &Metrics, name: &str, decimals: Option<usize>) -> String {
    let body: Vec<(String, String)> = rows(m)
        .into_iter()
        .map(|r| (r.label.to_string(), number(r.value, decimals)))
        .collect();
    let width = |s: &str| s.chars().count();
    let w0 = body
        .iter()
        .map(|(l, _)| width(l))
        .chain([width("Method")])
        .max()
        .unwrap_or(0);
    let w1 = body
        .iter()
        .map(|(_, v)| width(v))
        .chain([width(name)])
        .max()
        .unwrap_or(0);
    let line = |a: &str, b: &str, right: bool| {
        let pad_a = " ".repeat(w0 - width(a));
        let pad_b = " ".repeat(w1 - width(b));
        if right {
            format!("| {a}{pad_a} | {pad_b}{b} |\n")
        } else {
            format!("| {a}{pad_a} | {b}{pad_b} |\n")
        }
    };
    let mut out = line("Method", name, true);
    let _ = writeln!(out, "|{}|{}:|", "-".repeat(w0 + 2), "-".repeat(w1 + 1));
    for (l, v) in &body {
        out.push_str(&line(l, v, true));
    }
    out
}

fn latex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '\\' => out.push_str(r"\textbackslash{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '~' => out.push_str(r"\textasciitilde{}"),
            '^' => out.push_str(r"\textasciicircum{}"),
            _ => out.push(c),
        }
    }
    out
}

fn render_latex(m: &Metrics, name: &str, decimals: Option<usize>) -> String {
    let mut out = String::from("\\begin{tabular}{lr}\n\\hline\n");
    let _ = writeln!(out, " Method & {} \\\\", latex_escape(name));
    out.push_str("\\hline\n");
    for r in rows(m) {
        let _ = writeln!(out, " {} & {} \\\\", r.latex, number(r.value, decimals));
    }
    out.push_str("\\hline\n\\end{tabular}\n");
    out
}

fn render_json(m: &Metrics) -> String {
    let mut o = Map::new();
    o.insert("applicability".into(), json!(m.applicability));
    o.insert("success_rate".into(), json!(m.success_rate));
    o.insert("f_to_x".into(), json!(m.f_to_x));
    o.insert("f_to_p".into(), json!(m.f_to_p));
    o.insert("p_to_p".into(), json!(m.p_to_p));
    let (a, r, u) = match &m.coverage {
        Ok(c) => (json!(c.all), json!(c.resolved), json!(c.unresolved)),
        Err(_) => (Value::Null, Value::Null, Value::Null),
    };
    o.insert("coverage_delta_all".into(), a);
    o.insert("coverage_delta_resolved".into(), r);
    o.insert("coverage_delta_unresolved".into(), u);
    o.insert("instances".into(), json!(m.instances));
    o.insert("denominator".into(), json!(m.denominator));
    let mut s = py::dumps_indent4(&Value::Object(o));
    s.push('\n');
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn render_csv(m: &Metrics, name: &str, decimals: Option<usize>) -> String {
    let mut out = String::from("name,metric,label,value\n");
    for r in rows(m) {
        let _ = writeln!(
            out,
            "{},{},{},{}",
            csv_field(name),
            r.key,
            csv_field(r.label),
            number(r.value, decimals)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coverage::CoverageResult;
    use crate::transitions::Transitions;

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| s.to_string()).collect()
    }

    fn rep(
        id: &str,
        pred: Option<Transitions>,
        base: Transitions,
        resolved: bool,
        delta: Option<(f64, f64)>,
    ) -> InstanceReport {
        InstanceReport {
            instance_id: id.into(),
            patch_exists: true,
            patch_successfully_applied: pred.is_some(),
            resolved,
            coverage: CoverageResult {
                coverage_delta_pred: delta.map(|d| d.0),
                coverage_delta_gold: delta.map(|d| d.1),
                ..Default::default()
            },
            added_f2p: None,
            tests_pred: pred,
            tests_base: Some(base),
            tests_gold: None,
            patch_is_none: false,
        }
    }

    #[test]
    fn metrics_by_hand() {
        let base = Transitions {
            pass_to_pass: v(&["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]),
            fail_to_pass: v(&["old"]),
            ..Default::default()
        };
        // 1: resolved, new F→P (old kept).
        let r1 = rep(
            "r1",
            Some(Transitions {
                fail_to_pass: v(&["old", "new"]),
                pass_to_pass: v(&["a"]),
                ..Default::default()
            }),
            base.clone(),
            true,
            Some((0.5, 1.0)),
        );
        // 2: only a new F→F and a new P→P; 2 tests vs 12 base → 2 ≥ 1.2: applicable.
        let r2 = rep(
            "r2",
            Some(Transitions {
                fail_to_fail: v(&["ff"]),
                pass_to_pass: v(&["zz"]),
                ..Default::default()
            }),
            base.clone(),
            false,
            Some((0.25, 0.5)),
        );
        // 3: 1 test vs 12 base → 1 < 1.2: not applicable.
        let r3 = rep(
            "r3",
            Some(Transitions {
                unmatched: v(&["u"]),
                ..Default::default()
            }),
            base.clone(),
            false,
            None,
        );
        // 4: not applied.
        let r4 = rep("r4", None, base, false, None);
        let gold = vec![
            rep("g1", None, Transitions::default(), false, Some((0.0, 1.0))),
            rep("g2", None, Transitions::default(), false, Some((0.0, 0.5))),
            rep("g3", None, Transitions::default(), false, None),
        ];
        let reports = vec![r1, r2, r3, r4];
        let m = compute(&reports, Some(&gold), 10);
        assert_eq!(
            m.counts,
            Counts {
                applicable: 2,
                resolved: 1,
                f_to_x: 2,
                f_to_p: 1,
                p_to_p: 1
            }
        );
        assert_eq!(m.applicability, 20.0);
        assert_eq!(m.success_rate, 10.0);
        assert_eq!(m.f_to_x, 20.0);
        let c = m.coverage.clone().unwrap();
        // G = 2 gold reports with delta_gold; Σ delta_pred = 0.75.
        assert_eq!(c.all, 100.0 * 0.75 / 2.0);
        // Gr = 1 (r1); Δs = 100·0.5/1.
        assert_eq!(c.resolved, 50.0);
        // G − Gr = 1; Δ¬s = 100·0.25/1.
        assert_eq!(c.unresolved, 25.0);
        assert_eq!(m.instances, 4);

        let json = render(&m, "run", Format::Json, None);
        assert_eq!(
            json,
            "{\n    \"applicability\": 20.0,\n    \"success_rate\": 10.0,\n    \"f_to_x\": 20.0,\n    \"f_to_p\": 10.0,\n    \"p_to_p\": 10.0,\n    \"coverage_delta_all\": 37.5,\n    \"coverage_delta_resolved\": 50.0,\n    \"coverage_delta_unresolved\": 25.0,\n    \"instances\": 4,\n    \"denominator\": 10\n}\n"
        );
        let no_gold = compute(&reports, None, 10);
        assert_eq!(no_gold.coverage, Err(NoCoverage::NoGoldRun));
        assert!(
            render(&no_gold, "run", Format::Json, None).contains("\"coverage_delta_all\": null")
        );
        let zero_gold = compute(&reports, Some(&gold[2..]), 10);
        assert_eq!(zero_gold.coverage, Err(NoCoverage::NoGoldCoverage));
    }

    #[test]
    fn table_formats() {
        let m = Metrics {
            applicability: 100.0 * 49.0 / 276.0,
            success_rate: 0.0,
            f_to_x: 1.0,
            f_to_p: 2.0,
            p_to_p: 3.0,
            coverage: Err(NoCoverage::NoGoldRun),
            counts: Counts::default(),
            instances: 5,
            denominator: 276,
        };
        let g = render(&m, "my_run", Format::Github, None);
        assert_eq!(
            g,
            "| Method            |             my_run |\n\
|-------------------|-------------------:|\n\
| Applicability (W) | 17.753623188405797 |\n\
| Success Rate (S)  |                0.0 |\n\
| F->X              |                1.0 |\n\
| F->P              |                2.0 |\n\
| P->P              |                3.0 |\n"
        );
        let l = render(&m, "my_run", Format::Latex, Some(1));
        assert!(l.contains(" Method & my\\_run \\\\\n"), "{l}");
        assert!(l.contains(" {$\\mathcal{W}$} & 17.8 \\\\\n"), "{l}");
        let c = render(&m, "a,b", Format::Csv, None);
        assert!(c.starts_with(
            "name,metric,label,value\n\"a,b\",applicability,Applicability (W),17.753623188405797\n"
        ));
    }
}

#[cfg(test)]
mod pass_at_k_tests {
    use super::*;

    fn report(
        id: &str,
        resolved: bool,
        f2p: Option<u64>,
        delta: Option<f64>,
        applied: bool,
    ) -> InstanceReport {
        let mut r = InstanceReport {
            instance_id: id.to_string(),
            patch_exists: true,
            patch_successfully_applied: applied,
            resolved,
            added_f2p: f2p,
            ..Default::default()
        };
        r.coverage.coverage_delta_pred = delta;
        r
    }

    #[test]
    fn pass_at_k_takes_the_first_attribute_that_picks_a_seed() {
        let seed1 = vec![
            report("a", false, Some(1), Some(0.5), true),
            report("b", false, Some(0), Some(0.2), true),
            report("c", false, None, None, false),
            report("d", false, Some(0), None, true),
        ];
        let seed2 = vec![
            report("a", true, Some(1), Some(0.1), true),
            report("b", false, Some(0), Some(0.7), true),
            report("c", false, None, None, false),
            report("e", false, Some(2), None, true),
        ];
        let seed3 = vec![
            report("a", true, Some(3), Some(0.9), true),
            report("b", false, Some(0), Some(0.7), false),
        ];
        let picked = select_pass_at_k(&[seed1, seed2, seed3]);
        let ids: Vec<&str> = picked.iter().map(|r| r.instance_id.as_str()).collect();
        // c has nothing truthy in any seed: no report, as in the original.
        assert_eq!(ids, vec!["a", "b", "d", "e"]);
        // a: resolved decides, the first resolved seed (2) wins over the later one.
        assert_eq!(picked[0].coverage.coverage_delta_pred, Some(0.1));
        // b: no resolved and no F→P: the highest coverage delta, the first of the ties (seed 2).
        assert_eq!(picked[1].coverage.coverage_delta_pred, Some(0.7));
        assert!(picked[1].patch_successfully_applied);
        // d: only applied.
        assert!(picked[2].patch_successfully_applied && !picked[2].resolved);
        assert_eq!(picked[3].added_f2p, Some(2));
        let m = compute(&picked, None, 10);
        assert_eq!(m.counts.resolved, 1);
        assert_eq!(m.instances, 4);
    }
}
