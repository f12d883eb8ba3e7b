//! How stable a run is over repeats (`run --repeat N`: every run executed N times in fresh
//! containers): which tests changed their transition between repeats (flaky), and in how many
//! repeats each instance was resolved and its patch applied.
//!
//! A test is flaky on a side (base, pred, gold) when its bucket (fail→pass, pass→pass,
//! fail→fail, pass→fail, unmatched) is not the same in every repeat whose report has that side,
//! or it is in some of them and missing from others. Repeats without a report (an error) say
//! nothing about tests and count as not resolved.
//!
//! The flaky list ([`FlakyList`]) is what a gold run's repeats find; grading with it
//! (`--flaky-list`) leaves those tests out of the transitions ([`leave_out`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::logs::ParsedRun;
use crate::report::InstanceReport;
use crate::transitions::Transitions;

/// The flaky tests of one instance, per side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlakyTests {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pred: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gold: Vec<String>,
}

impl FlakyTests {
    pub fn is_empty(&self) -> bool {
        self.base.is_empty() && self.pred.is_empty() && self.gold.is_empty()
    }

    /// Every flaky test, on any side, sorted.
    pub fn all(&self) -> BTreeSet<String> {
        self.base
            .iter()
            .chain(&self.pred)
            .chain(&self.gold)
            .cloned()
            .collect()
    }
}

/// One instance over the repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceStability {
    /// Repeats with a report.
    pub graded: usize,
    /// Repeats in which it was resolved.
    pub resolved: usize,
    /// Repeats in which the model patch applied.
    pub applied: usize,
    /// Its outcome is the same in every repeat (all resolved, or none: graded and not).
    pub stable: bool,
    #[serde(default, skip_serializing_if = "FlakyTests::is_empty")]
    pub flaky: FlakyTests,
}

/// A run's stability: per instance, over `repeats` repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stability {
    pub repeats: usize,
    pub instances: BTreeMap<String, InstanceStability>,
}

/// Tests left out of the transitions, by instance: `{"<instance>": ["<test>", …]}`.
pub type FlakyList = BTreeMap<String, BTreeSet<String>>;

/// Each test's bucket in `t`.
fn buckets(t: &Transitions) -> BTreeMap<&str, &'static str> {
    let mut m = BTreeMap::new();
    for (name, list) in [
        ("FAIL_TO_PASS", &t.fail_to_pass),
        ("PASS_TO_PASS", &t.pass_to_pass),
        ("FAIL_TO_FAIL", &t.fail_to_fail),
        ("PASS_TO_FAIL", &t.pass_to_fail),
        ("UNMATCHED", &t.unmatched),
    ] {
        for test in list {
            m.insert(test.as_str(), name);
        }
    }
    m
}

/// The tests whose bucket differs between the repeats that have this side.
fn flaky_side(sides: &[&Transitions]) -> Vec<String> {
    let maps: Vec<BTreeMap<&str, &str>> = sides.iter().map(|t| buckets(t)).collect();
    let tests: BTreeSet<&str> = maps.iter().flat_map(|m| m.keys().copied()).collect();
    tests
        .into_iter()
        .filter(|test| {
            let first = maps.first().and_then(|m| m.get(test));
            maps.iter().any(|m| m.get(test) != first)
        })
        .map(str::to_string)
        .collect()
}

/// The stability of the instances in `repeats` (each repeat: its reports by instance id; an
/// instance missing from a repeat had no report there).
pub fn stability(repeats: &[BTreeMap<String, InstanceReport>]) -> Stability {
    let ids: BTreeSet<&String> = repeats.iter().flat_map(|r| r.keys()).collect();
    let instances = ids
        .into_iter()
        .map(|id| {
            let reports: Vec<&InstanceReport> = repeats.iter().filter_map(|r| r.get(id)).collect();
            let resolved = reports.iter().filter(|r| r.resolved).count();
            let applied = reports
                .iter()
                .filter(|r| r.patch_successfully_applied)
                .count();
            let side = |get: fn(&InstanceReport) -> Option<&Transitions>| {
                let sides: Vec<&Transitions> = reports.iter().filter_map(|r| get(r)).collect();
                flaky_side(&sides)
            };
            let flaky = FlakyTests {
                base: side(|r| r.tests_base.as_ref()),
                pred: side(|r| r.tests_pred.as_ref()),
                gold: side(|r| r.tests_gold.as_ref()),
            };
            let stable = reports.len() == repeats.len()
                && (resolved == 0 || resolved == repeats.len())
                && (applied == 0 || applied == repeats.len());
            let s = InstanceStability {
                graded: reports.len(),
                resolved,
                applied,
                stable,
                flaky,
            };
            (id.clone(), s)
        })
        .collect();
    Stability {
        repeats: repeats.len(),
        instances,
    }
}

impl Stability {
    /// The flaky list these repeats give: every flaky test of every instance, any side.
    pub fn flaky_list(&self) -> FlakyList {
        self.instances
            .iter()
            .filter(|(_, s)| !s.flaky.is_empty())
            .map(|(id, s)| (id.clone(), s.flaky.all()))
            .collect()
    }

    /// `9 of 10 instance(s) stable over 4 repeats; 1 resolved in 2 of 4; 3 flaky test(s) in 2
    /// instance(s)`.
    pub fn summary(&self) -> String {
        let n = self.instances.len();
        let stable = self.instances.values().filter(|s| s.stable).count();
        let mut text = format!(
            "{stable} of {n} instance(s) stable over {} repeat(s)",
            self.repeats
        );
        let unstable: Vec<String> = self
            .instances
            .iter()
            .filter(|(_, s)| !s.stable)
            .take(5)
            .map(|(id, s)| format!("{id} resolved in {} of {}", s.resolved, self.repeats))
            .collect();
        if !unstable.is_empty() {
            text.push_str(&format!(" ({}", unstable.join(", ")));
            if n - stable > unstable.len() {
                text.push_str(&format!(" and {} more", n - stable - unstable.len()));
            }
            text.push(')');
        }
        let list = self.flaky_list();
        let tests: usize = list.values().map(BTreeSet::len).sum();
        text.push_str(&format!(
            "; {tests} flaky test(s) in {} instance(s)",
            list.len()
        ));
        text
    }

    /// The file's JSON text.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).unwrap_or_default();
        s.push('\n');
        s
    }
}

/// A text that is not a flaky list; says where and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a flaky list ({{\"<instance id>\": [\"<test>\", …]}}): {message}")]
pub struct FlakyListError {
    /// The JSON reader's account, with the line and column.
    pub message: String,
}

/// Reads a flaky list (`{"<instance>": ["<test>", …]}`); the error says what is wrong.
pub fn parse_flaky_list(text: &str) -> Result<FlakyList, FlakyListError> {
    serde_json::from_str(text).map_err(|e| FlakyListError {
        message: e.to_string(),
    })
}

/// The flaky list's JSON text.
pub fn flaky_list_json(list: &FlakyList) -> String {
    let mut s = serde_json::to_string_pretty(list).unwrap_or_default();
    s.push('\n');
    s
}

/// Leaves `tests` out of every run's statuses, so that no transition names them.
pub fn leave_out(parsed: &mut [ParsedRun], tests: &BTreeSet<String>) {
    if tests.is_empty() {
        return;
    }
    for run in parsed {
        run.log.tests.retain(|name, _| !tests.contains(name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(
        id: &str,
        resolved: bool,
        pred: Transitions,
        gold: Option<Transitions>,
    ) -> InstanceReport {
        InstanceReport {
            instance_id: id.into(),
            patch_exists: true,
            patch_successfully_applied: true,
            resolved,
            tests_pred: Some(pred),
            tests_base: Some(Transitions::default()),
            tests_gold: gold,
            ..Default::default()
        }
    }

    fn t(f2p: &[&str], f2f: &[&str]) -> Transitions {
        Transitions {
            fail_to_pass: f2p.iter().map(|s| s.to_string()).collect(),
            fail_to_fail: f2f.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn repeat(reports: Vec<InstanceReport>) -> BTreeMap<String, InstanceReport> {
        reports
            .into_iter()
            .map(|r| (r.instance_id.clone(), r))
            .collect()
    }

    #[test]
    fn a_test_that_flips_between_repeats_is_flaky_and_a_steady_one_is_not() {
        let repeats = vec![
            repeat(vec![
                report("a", true, t(&["t_flip", "t_steady"], &[]), None),
                report("b", false, t(&[], &["u"]), Some(t(&["g"], &[]))),
            ]),
            repeat(vec![
                report("a", false, t(&["t_steady"], &["t_flip"]), None),
                report("b", false, t(&[], &["u"]), Some(t(&["g"], &[]))),
            ]),
            repeat(vec![
                report("a", true, t(&["t_flip", "t_steady"], &[]), None),
                report("b", false, t(&[], &["u"]), Some(t(&[], &["g"]))),
            ]),
        ];
        let s = stability(&repeats);
        let a = &s.instances["a"];
        assert_eq!((a.graded, a.resolved, a.stable), (3, 2, false));
        assert_eq!(a.flaky.pred, vec!["t_flip"]);
        let b = &s.instances["b"];
        assert_eq!(
            (b.resolved, b.stable),
            (0, true),
            "never resolved is stable"
        );
        assert!(b.flaky.pred.is_empty());
        assert_eq!(b.flaky.gold, vec!["g"]);
        let list = s.flaky_list();
        assert_eq!(list.len(), 2);
        assert!(list["a"].contains("t_flip") && !list["a"].contains("t_steady"));
        assert_eq!(
            s.summary(),
            "1 of 2 instance(s) stable over 3 repeat(s) (a resolved in 2 of 3); 2 flaky test(s) in 2 instance(s)"
        );
    }

    #[test]
    fn a_test_missing_from_some_repeats_is_flaky_and_a_missing_report_is_unstable() {
        let repeats = vec![
            repeat(vec![report("a", false, t(&[], &["x", "y"]), None)]),
            repeat(vec![report("a", false, t(&[], &["x"]), None)]),
            repeat(vec![]),
        ];
        let s = stability(&repeats);
        let a = &s.instances["a"];
        assert_eq!(a.graded, 2);
        assert!(!a.stable, "a repeat without a report");
        assert_eq!(a.flaky.pred, vec!["y"]);
    }

    #[test]
    fn flaky_lists_read_back_and_leave_their_tests_out() {
        let mut list = FlakyList::new();
        list.insert("a".into(), ["t1".to_string()].into_iter().collect());
        let text = flaky_list_json(&list);
        assert_eq!(parse_flaky_list(&text).unwrap(), list);
        assert!(parse_flaky_list("[1]")
            .unwrap_err()
            .to_string()
            .contains("not a flaky list"));
        let mut parsed: Vec<ParsedRun> = vec![ParsedRun::default(); 2];
        for p in parsed.iter_mut() {
            p.log
                .tests
                .insert("t1".into(), swtbench_core::TestStatus::Failed);
            p.log
                .tests
                .insert("t2".into(), swtbench_core::TestStatus::Passed);
        }
        leave_out(&mut parsed, &list["a"]);
        for p in &parsed {
            assert!(!p.log.tests.contains_key("t1"));
            assert!(p.log.tests.contains_key("t2"));
        }
    }
}
