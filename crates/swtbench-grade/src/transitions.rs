//! Pass/fail transitions between two runs (§7.1) and the resolved decision (§7.2).
//!
//! Each test's status before and after is reduced to P (PASSED), F (FAILED) or X (anything else,
//! or absent), and the test lands in one bucket:
//!
//! | bucket         | transitions |
//! |----------------|-------------|
//! | `FAIL_TO_PASS` | F→P, X→P    |
//! | `PASS_TO_PASS` | P→P         |
//! | `FAIL_TO_FAIL` | F→F, X→F    |
//! | `PASS_TO_FAIL` | P→F, P→X    |
//! | `UNMATCHED`    | F→X, X→X    |
//!
//! This is the original's current categorisation (release 1.3.0, 2025-09). Its release 1.2.0
//! counted F→X and X→X as `FAIL_TO_FAIL` (and left `UNMATCHED` empty), so such a test made an
//! instance unresolved; [`Transitions::between_for`] with [`GradingVersion::V1_2`] does that.
//! Bucket lists are sorted here (the original's order is a set's iteration order).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use swtbench_core::{StatusMap, TestStatus};

use crate::version::GradingVersion;

/// The five buckets of one pre → post comparison; each list sorted.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Transitions {
    #[serde(rename = "FAIL_TO_PASS", default)]
    pub fail_to_pass: Vec<String>,
    #[serde(rename = "PASS_TO_PASS", default)]
    pub pass_to_pass: Vec<String>,
    #[serde(rename = "FAIL_TO_FAIL", default)]
    pub fail_to_fail: Vec<String>,
    #[serde(rename = "PASS_TO_FAIL", default)]
    pub pass_to_fail: Vec<String>,
    #[serde(rename = "UNMATCHED", default)]
    pub unmatched: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pfx {
    P,
    F,
    X,
}

fn reduce(map: &StatusMap, test: &str) -> Pfx {
    match map.get(test) {
        Some(TestStatus::Passed) => Pfx::P,
        Some(TestStatus::Failed) => Pfx::F,
        _ => Pfx::X,
    }
}

impl Transitions {
    /// Buckets every test of either run (the original's `get_eval_report`).
    pub fn between(pre: &StatusMap, post: &StatusMap) -> Transitions {
        Transitions::between_for(pre, post, GradingVersion::default())
    }

    /// [`Transitions::between`] as release `version` of the original buckets them: with
    /// [`GradingVersion::V1_2`], F→X and X→X go to `FAIL_TO_FAIL` and `UNMATCHED` stays empty.
    pub fn between_for(pre: &StatusMap, post: &StatusMap, version: GradingVersion) -> Transitions {
        let mut t = Transitions::default();
        let all: BTreeSet<&String> = pre.keys().chain(post.keys()).collect();
        for test in all {
            let bucket = match (reduce(pre, test), reduce(post, test)) {
                (Pfx::F | Pfx::X, Pfx::P) => &mut t.fail_to_pass,
                (Pfx::P, Pfx::P) => &mut t.pass_to_pass,
                (Pfx::F | Pfx::X, Pfx::F) => &mut t.fail_to_fail,
                (Pfx::P, Pfx::F | Pfx::X) => &mut t.pass_to_fail,
                (Pfx::F | Pfx::X, Pfx::X) => match version {
                    GradingVersion::V1_3 => &mut t.unmatched,
                    GradingVersion::V1_2 => &mut t.fail_to_fail,
                },
            };
            bucket.push(test.clone());
        }
        t
    }

    /// Total number of tests over all buckets (what the applicability metric compares).
    pub fn total(&self) -> usize {
        self.fail_to_pass.len()
            + self.pass_to_pass.len()
            + self.fail_to_fail.len()
            + self.pass_to_fail.len()
            + self.unmatched.len()
    }

    /// Sorts every bucket (reports written by the original are in set order).
    pub fn sort(&mut self) {
        for b in [
            &mut self.fail_to_pass,
            &mut self.pass_to_pass,
            &mut self.fail_to_fail,
            &mut self.pass_to_fail,
            &mut self.unmatched,
        ] {
            b.sort();
        }
    }
}

/// Elements of `a` not in `b`.
pub fn difference<'a>(a: &'a [String], b: &[String]) -> BTreeSet<&'a str> {
    let b: BTreeSet<&str> = b.iter().map(String::as_str).collect();
    a.iter()
        .map(String::as_str)
        .filter(|x| !b.contains(x))
        .collect()
}

/// The tests that went from fail to pass with the model's tests but not in the base runs.
pub fn added_fail_to_pass<'a>(pred: &'a Transitions, base: &Transitions) -> BTreeSet<&'a str> {
    difference(&pred.fail_to_pass, &base.fail_to_pass)
}

/// §7.2: resolved iff the prediction's F→P tests include all of base's plus at least one more,
/// and it adds no P→F and no F→F test that base does not have. Also returns `added_f2p`.
pub fn resolution(pred: &Transitions, base: &Transitions) -> (bool, usize) {
    let added = added_fail_to_pass(pred, base);
    let pred_f2p: BTreeSet<&str> = pred.fail_to_pass.iter().map(String::as_str).collect();
    let covers_base = base
        .fail_to_pass
        .iter()
        .all(|t| pred_f2p.contains(t.as_str()));
    let adds_f2p = covers_base && !added.is_empty();
    let no_new_failures = difference(&pred.pass_to_fail, &base.pass_to_fail).is_empty()
        && difference(&pred.fail_to_fail, &base.fail_to_fail).is_empty();
    (adds_f2p && no_new_failures, added.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm(pairs: &[(&str, &str)]) -> StatusMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), TestStatus::from_word(v)))
            .collect()
    }

    fn v(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn buckets() {
        let pre = sm(&[
            ("fp", "FAILED"),
            ("xp", "ERROR"),
            ("pp", "PASSED"),
            ("ff", "FAILED"),
            ("xf", "SKIPPED"),
            ("pf", "PASSED"),
            ("px", "PASSED"),
            ("fx", "FAILED"),
            ("xx", "ERROR:"),
        ]);
        let post = sm(&[
            ("fp", "PASSED"),
            ("xp", "PASSED"),
            ("pp", "PASSED"),
            ("ff", "FAILED"),
            ("xf", "FAILED"),
            ("pf", "FAILED"),
            ("px", "ERROR"),
            ("fx", "SKIPPED"),
            ("new_pass", "PASSED"),
            ("new_err", "ERROR"),
        ]);
        let t = Transitions::between(&pre, &post);
        assert_eq!(t.fail_to_pass, v(&["fp", "new_pass", "xp"]));
        assert_eq!(t.pass_to_pass, v(&["pp"]));
        assert_eq!(t.fail_to_fail, v(&["ff", "xf"]));
        assert_eq!(t.pass_to_fail, v(&["pf", "px"]));
        assert_eq!(t.unmatched, v(&["fx", "new_err", "xx"]));
        assert_eq!(t.total(), 11);
        // Release 1.2.0: F→X and X→X are FAIL_TO_FAIL, nothing is UNMATCHED; the rest as now.
        let old = Transitions::between_for(&pre, &post, GradingVersion::V1_2);
        assert_eq!(old.fail_to_fail, v(&["ff", "fx", "new_err", "xf", "xx"]));
        assert!(old.unmatched.is_empty());
        assert_eq!(old.fail_to_pass, t.fail_to_pass);
        assert_eq!(old.pass_to_pass, t.pass_to_pass);
        assert_eq!(old.pass_to_fail, t.pass_to_fail);
        assert_eq!(old.total(), 11);
    }

    #[test]
    fn resolution_rules() {
        let base = Transitions {
            fail_to_pass: v(&["b"]),
            fail_to_fail: v(&["ff"]),
            ..Default::default()
        };
        let good = Transitions {
            fail_to_pass: v(&["b", "new"]),
            fail_to_fail: v(&["ff"]),
            unmatched: v(&["ignored"]),
            ..Default::default()
        };
        assert_eq!(resolution(&good, &base), (true, 1));
        // Missing one of base's F→P tests.
        let missing = Transitions {
            fail_to_pass: v(&["new"]),
            ..Default::default()
        };
        assert_eq!(resolution(&missing, &base), (false, 1));
        // A new F→F test.
        let new_ff = Transitions {
            fail_to_pass: v(&["b", "new"]),
            fail_to_fail: v(&["other"]),
            ..Default::default()
        };
        assert_eq!(resolution(&new_ff, &base), (false, 1));
        // A new P→F test.
        let new_pf = Transitions {
            fail_to_pass: v(&["b", "new"]),
            pass_to_fail: v(&["p"]),
            ..Default::default()
        };
        assert_eq!(resolution(&new_pf, &base), (false, 1));
        // Nothing new.
        assert_eq!(resolution(&base, &base), (false, 0));
    }
}
