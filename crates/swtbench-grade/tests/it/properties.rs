//! Properties of grading that must hold for any logs: transitions partition the tests of both
//! runs, resolved implies at least one new fail-to-pass test, and report.json round-trips.

use std::collections::BTreeSet;

use proptest::prelude::*;
use swtbench_core::{StatusMap, TestStatus};
use swtbench_grade::transitions::{resolution, Transitions};
use swtbench_grade::InstanceReport;

fn status() -> impl Strategy<Value = TestStatus> {
    prop_oneof![
        Just(TestStatus::Passed),
        Just(TestStatus::Failed),
        Just(TestStatus::Error),
        Just(TestStatus::Skipped),
        Just(TestStatus::Other("ERROR:".into())),
    ]
}

fn status_map() -> impl Strategy<Value = StatusMap> {
    prop::collection::btree_map("t[0-9]{1,2}", status(), 0..12)
}

proptest! {
    #[test]
    fn buckets_partition_the_union(pre in status_map(), post in status_map()) {
        let t = Transitions::between(&pre, &post);
        let mut all: Vec<&String> = t.fail_to_pass.iter()
            .chain(&t.pass_to_pass).chain(&t.fail_to_fail).chain(&t.pass_to_fail).chain(&t.unmatched)
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        prop_assert_eq!(all.len(), n, "a test is in two buckets");
        let union: BTreeSet<&String> = pre.keys().chain(post.keys()).collect();
        prop_assert_eq!(all.into_iter().collect::<BTreeSet<_>>(), union);
        for b in [&t.fail_to_pass, &t.pass_to_pass] {
            for name in b {
                prop_assert_eq!(post.get(name), Some(&TestStatus::Passed));
            }
        }
    }

    #[test]
    fn resolved_implies_a_new_fail_to_pass(
        pp in status_map(), pq in status_map(), bp in status_map(), bq in status_map()
    ) {
        let pred = Transitions::between(&pp, &pq);
        let base = Transitions::between(&bp, &bq);
        let (resolved, added) = resolution(&pred, &base);
        if resolved {
            prop_assert!(added >= 1);
            for t in &base.fail_to_pass {
                prop_assert!(pred.fail_to_pass.contains(t));
            }
        }
        // The prediction compared with itself as base never resolves.
        prop_assert_eq!(resolution(&pred, &pred), (false, 0));
    }

    #[test]
    fn report_json_round_trips(pp in status_map(), pq in status_map(), cov in proptest::option::of(0.0f64..1.0)) {
        let t = Transitions::between(&pp, &pq);
        let (resolved, added) = resolution(&t, &Transitions::default());
        let r = InstanceReport {
            instance_id: "o__r-1".into(),
            patch_exists: true,
            patch_successfully_applied: true,
            resolved,
            coverage: swtbench_grade::CoverageResult { coverage_pred: cov, coverage_delta_pred: cov, ..Default::default() },
            added_f2p: Some(added as u64),
            tests_base: Some(Transitions::default()),
            tests_pred: Some(t.clone()),
            tests_gold: Some(t),
            patch_is_none: false,
        };
        let back = InstanceReport::from_report_json(&r.to_report_json(), Some("o__r-1")).unwrap();
        prop_assert_eq!(back, r);
    }
}
