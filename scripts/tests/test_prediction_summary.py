"""Tests of scripts/prediction-summary, swtbench's verdicts beside the official ones (run by scripts/test)."""
import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import tempfile
import unittest

_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "prediction-summary")
_loader = importlib.machinery.SourceFileLoader("prediction_summary", _path)
_spec = importlib.util.spec_from_loader("prediction_summary", _loader)
ps = importlib.util.module_from_spec(_spec)
_loader.exec_module(ps)


def graded(resolved, cov=None, delta=None, applied=True, f2p=0, p2p=0):
    """The inner object of a report.json as swtbench (and the original) writes it."""
    r = {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": applied,
         "resolved": resolved, "coverage_pred": cov, "coverage_gold": None, "coverage_base": None,
         "coverage_delta_pred": delta, "coverage_delta_gold": None}
    if applied:
        r["added_f2p"] = f2p
        tests = {b: [] for b in ps.BUCKETS}
        r["tests_base"] = dict(tests)
        r["tests_pred"] = dict(tests, FAIL_TO_PASS=[f"t{i}" for i in range(f2p)],
                               PASS_TO_PASS=[f"p{i}" for i in range(p2p)])
        r["tests_gold"] = dict(tests)
    return r


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(data if isinstance(data, str) else json.dumps(data))


def campaign(tmp, rows, instances, run_id="r1", model="M", run_report=None, reachable=None, benchmarks=None):
    """A campaign directory: dataset rows (id, repo, version), and per instance (outcome kind or None,
    inner report or None) under runs/run_instance_swt_logs/<run_id>/<model>/<id>/."""
    write(os.path.join(tmp, "dataset.jsonl"),
          "".join(json.dumps({"instance_id": i, "repo": repo, "version": v}) + "\n" for i, repo, v in rows))
    if reachable is not None:
        write(os.path.join(tmp, "all.txt"), "".join(i + "\n" for i in reachable))
    if benchmarks is not None:
        write(os.path.join(tmp, "benchmarks.json"), benchmarks)
    logs = os.path.join(tmp, "runs", "run_instance_swt_logs", run_id)
    os.makedirs(os.path.join(logs, f"pred_pre__{model}"), exist_ok=True)
    for iid, (kind, report) in instances.items():
        d = os.path.join(logs, model, iid)
        if kind is not None:
            outcome = {"kind": kind}
            if kind in ("error", "skipped"):
                outcome["reason"] = f"image build failed; see {tmp}/runs/image_build_logs/x/build_image.log"
            write(os.path.join(d, "swtbench_instance.json"),
                  {"instance_id": iid, "outcome": outcome, "reasons": [], "runs": []})
        if report is not None:
            write(os.path.join(d, "report.json"), {iid: report})
    if run_report is not None:
        write(os.path.join(tmp, "runs", "evaluation_results", f"{model}.{run_id}.json"), run_report)
    return tmp


def rec(iid, official, verdict, detail=None, report=None):
    """A record of an instance of the campaign's dataset (its repository from its id)."""
    return ps.instance_record(iid, {"repo": ps.repo_of(iid), "version": "1.0"}, official, (verdict, detail), report)


def run_main(args):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = ps.main(args)
    return code, err.getvalue()


class OfficialSide(unittest.TestCase):
    def test_each_list_gives_its_verdict(self):
        v = ps.official_verdicts({"resolved_ids": ["a__a-1"], "unresolved_ids": ["a__a-2", "b__b-1"],
                                  "error_ids": ["b__b-2"]}, "r.json")
        self.assertEqual(v, {"a__a-1": "resolved", "a__a-2": "unresolved", "b__b-1": "unresolved",
                             "b__b-2": "error"})

    def test_an_id_in_two_lists_or_a_missing_list_names_the_file(self):
        with self.assertRaises(ps.SummaryError) as e:
            ps.official_verdicts({"resolved_ids": ["a__a-1"], "unresolved_ids": ["a__a-1"], "error_ids": []}, "r.json")
        self.assertEqual(str(e.exception), "r.json: a__a-1 is in both resolved and unresolved ids; the report is "
                                           "inconsistent, check that it is the original file")
        with self.assertRaises(ps.SummaryError) as e:
            ps.official_verdicts({"resolved_ids": [], "unresolved_ids": []}, "r.json")
        self.assertTrue(str(e.exception).startswith("r.json: no list of instance ids under 'error_ids'"))

    def test_a_known_assertflip_report_must_have_the_tables_count(self):
        ps.check_known_report("assertFlip.ablation_0_regeneration_attempts.json", {str(i): "resolved" for i in range(219)})
        with self.assertRaises(ps.SummaryError) as e:
            ps.check_known_report("assertFlip_default_run.json", {"a__a-1": "resolved"})
        self.assertEqual(str(e.exception), "assertFlip_default_run.json: 1 instances, but ASSERTFLIP_RUNS in "
                                           "scripts/prediction-summary says the report of "
                                           "assertflip-default-preds.jsonl holds 326; is it another file under "
                                           "the same name?")
        # Reports the table does not know are not checked.
        ps.check_known_report("other.json", {})

    def test_the_assertflip_table_pairs_each_file_once(self):
        for column in range(3):
            values = [row[column] for row in ps.ASSERTFLIP_RUNS]
            self.assertEqual(len(values), len(set(values)))
        self.assertEqual(sum(row[3] for row in ps.ASSERTFLIP_RUNS), 326 + 326 + 219 + 300 + 351 + 352 + 330 + 148)
        config = ps.example_config()
        self.assertEqual(len(config["sets"]), 9)
        self.assertEqual(config["sets"][0]["official"], "reports/assertFlip_default_run.json")
        self.assertEqual(config["sets"][-1]["self_checks"], "traces")
        for s in config["sets"]:
            ps.check_spec(s, "example")

    def test_a_self_check_is_resolved_by_its_success(self):
        self.assertEqual(ps.self_check_verdict({"success": True, "exception": None}, "x"), ("resolved", None))
        self.assertEqual(ps.self_check_verdict({"success": False, "exception": "PASSES_ON_BASE"}, "x"),
                         ("unresolved", "PASSES_ON_BASE"))
        with self.assertRaises(ps.SummaryError) as e:
            ps.self_check_verdict({"success": "yes"}, "traces/a__a-1/test_result.json")
        self.assertTrue(str(e.exception).startswith("traces/a__a-1/test_result.json: no boolean 'success'"))


class SwtbenchSide(unittest.TestCase):
    def test_the_outcome_kind_decides(self):
        s = lambda kind, **kw: {"outcome": dict(kind=kind, **kw)}
        self.assertEqual(ps.swtbench_verdict(s("resolved"), graded(True), "d"), ("resolved", None))
        self.assertEqual(ps.swtbench_verdict(s("unresolved", applied=False), graded(False, applied=False), "d"),
                         ("unresolved", None))
        self.assertEqual(ps.swtbench_verdict(s("empty_patch"), graded(False, applied=False), "d"),
                         ("unresolved", "empty patch"))
        self.assertEqual(ps.swtbench_verdict(s("error", reason="engine lost"), None, "d"), ("error", "error: engine lost"))
        self.assertEqual(ps.swtbench_verdict(s("skipped", reason="no prediction"), None, "d"),
                         ("error", "skipped: no prediction"))
        self.assertEqual(ps.swtbench_verdict(s("interrupted"), None, "d"), ("not_run", "interrupted"))
        # A tree of `swtbench grade` (no summaries), and nothing at all.
        self.assertEqual(ps.swtbench_verdict(None, graded(True), "d"), ("resolved", None))
        self.assertEqual(ps.swtbench_verdict(None, None, "d"), ("not_run", None))

    def test_a_regraded_report_decides_over_the_runs_summary(self):
        self.assertEqual(ps.swtbench_verdict({"outcome": {"kind": "resolved"}}, graded(False), "runs/x/M/a__a-1"),
                         ("unresolved", "re-graded (the run said resolved)"))
        self.assertEqual(ps.swtbench_verdict({"outcome": {"kind": "unresolved"}}, graded(True), "d"),
                         ("resolved", "re-graded (the run said unresolved)"))
        with self.assertRaises(ps.SummaryError):
            ps.swtbench_verdict({"outcome": {"kind": "exploded"}}, None, "d")

    def test_why_an_instance_was_not_run(self):
        dataset = {"a__a-1": {}, "a__a-2": {}, "a__a-3": {}}
        self.assertEqual(ps.not_run_reason("z__z-1", dataset, None, None),
                         "not in SWT-Bench Lite ∪ Verified after the filter (not in the campaign's dataset)")
        self.assertEqual(ps.not_run_reason("a__a-1", dataset, {"a__a-2", "a__a-3"}, None),
                         "no repository mirror (not in the campaign's all.txt)")
        self.assertEqual(ps.not_run_reason("a__a-2", dataset, {"a__a-2", "a__a-3"}, {"a__a-3"}),
                         "not in the campaign's selection of this run id")
        self.assertEqual(ps.not_run_reason("a__a-3", dataset, {"a__a-2", "a__a-3"}, {"a__a-3"}), "not run yet")

    def test_transitions_count_each_bucket_of_the_prediction(self):
        self.assertEqual(ps.transitions(graded(True, f2p=2, p2p=3)),
                         {"FAIL_TO_PASS": 2, "PASS_TO_PASS": 3, "FAIL_TO_FAIL": 0, "PASS_TO_FAIL": 0,
                          "UNMATCHED": 0, "added_f2p": 2})
        self.assertIsNone(ps.transitions(graded(False, applied=False)))
        self.assertIsNone(ps.transitions(None))

    def test_the_note_says_why_or_which_tests(self):
        self.assertEqual(ps.swtbench_note(rec("a__a-1", "resolved", "error", "error: engine lost")), "error: engine lost")
        self.assertEqual(ps.swtbench_note(rec("a__a-1", "resolved", "unresolved", report=graded(False, applied=False))),
                         "the patch did not apply")
        self.assertEqual(ps.swtbench_note(rec("a__a-1", "resolved", "unresolved", report=graded(False, f2p=1, p2p=2))),
                         "F→P 1, P→P 2")
        self.assertEqual(ps.swtbench_note(rec("a__a-1", "resolved", "unresolved", report=graded(False))), "no tests ran")

    def test_a_repository_outside_the_dataset_comes_from_the_id(self):
        self.assertEqual(ps.repo_of("scikit-learn__scikit-learn-25747"), "scikit-learn/scikit-learn")
        self.assertEqual(ps.repo_of("django__django-11099"), "django/django")


class Figures(unittest.TestCase):
    def test_coverage_means_leave_out_reports_without_coverage(self):
        reports = [graded(True, 0.5, 0.25), graded(False, 1.0, 0.5), graded(False, applied=False),
                   graded(True, 0.0, None)]
        self.assertEqual(ps.coverage_means(reports), {"n": 3, "mean_coverage": 0.5, "mean_coverage_delta": 0.25})
        self.assertEqual(ps.coverage_means([graded(False, applied=False)]),
                         {"n": 0, "mean_coverage": 0, "mean_coverage_delta": 0})

    def test_agreement_counts_only_instances_both_graded(self):
        recs = [rec("a__a-1", "resolved", "resolved"),
                rec("a__a-2", "resolved", "unresolved"),
                rec("a__a-3", "unresolved", "error", "error: x"),
                rec("b__b-1", "absent", "unresolved"),
                rec("b__b-2", "unresolved", "unresolved")]
        self.assertEqual([r["agree"] for r in recs], [True, False, None, None, True])
        self.assertEqual(ps.agreement(recs), {"both": 3, "agree": 2, "percent": 200.0 / 3})
        table = ps.confusion(recs)
        self.assertEqual(table["resolved"], {"resolved": 1, "unresolved": 1, "error": 0, "not_run": 0})
        self.assertEqual(table["unresolved"], {"resolved": 0, "unresolved": 1, "error": 1, "not_run": 0})
        self.assertEqual(table["absent"], {"resolved": 0, "unresolved": 1, "error": 0, "not_run": 0})
        self.assertEqual(ps.per_repository(recs),
                         {"a/a": {"instances": 3, "both": 2, "agree": 1, "official_resolved": 2, "swtbench_resolved": 1},
                          "b/b": {"instances": 2, "both": 1, "agree": 1, "official_resolved": 0, "swtbench_resolved": 0}})
        self.assertEqual([r["instance_id"] for r in recs if ps.one_side_only(r)], ["a__a-3", "b__b-1"])

    def test_the_rate_is_over_the_fixed_denominator_and_skips_filtered_instances(self):
        recs = [rec("a__a-1", "resolved", "resolved"),
                rec("a__a-2", "resolved", "resolved"),
                rec("a__a-3", "resolved", "error", "error: x"),
                rec("a__a-4", "unresolved", "resolved"),
                # Outside the benchmark: not counted.
                rec("z__z-1", "resolved", "not_run", "x")]
        rate = ps.rate_figures(recs, {"a__a-1", "a__a-2", "a__a-3", "a__a-4", "a__a-5"}, {"a__a-2", "z__z-1"}, 8, 62.5)
        self.assertEqual(rate, {"denominator": 8, "benchmark_instances": 5, "swtbench_resolved": 3,
                                "swtbench_rate": 37.5, "leaderboard_skipped": ["a__a-2"], "leaderboard_resolved": 2,
                                "leaderboard_rate": 25.0, "official_resolved": 3, "official_rate": 37.5,
                                "published_rate": 62.5, "published_resolved": 5, "swtbench_not_graded": 1,
                                "missing_from_submission": 1})

    def test_the_published_devstral_rate_stands_for_246_of_276(self):
        rate = ps.rate_figures([], set(), set(), ps.LEADERBOARD_INSTANCES["lite"], 89.1)
        self.assertEqual(rate["published_resolved"], 246)


class Causes(unittest.TestCase):
    def test_a_run_id_key_comes_before_a_plain_one_and_agreeing_instances_take_none(self):
        causes = ps.check_causes({
            "_note": "ignored",
            "a__a-1": {"class": "flaky test", "evidence": "passes 2 of 3 runs"},
            "r1:a__a-1": {"class": "network use", "evidence": "pred_post connected to pypi.org"},
            "a__a-2": {"class": "environment drift", "evidence": "numpy 1.26 instead of 1.24"},
            "a__a-3": {"class": "swtbench defect", "evidence": "x"},
        }, "causes.json")
        recs = [rec("a__a-1", "resolved", "unresolved"),
                rec("a__a-2", "resolved", "error", "error: y"),
                rec("a__a-3", "resolved", "resolved")]
        used = ps.apply_causes(recs, causes, "r1")
        self.assertEqual(used, {"r1:a__a-1", "a__a-2"})
        self.assertEqual((recs[0]["class"], recs[0]["evidence"]), ("network use", "pred_post connected to pypi.org"))
        self.assertEqual(recs[1]["class"], "environment drift")
        self.assertNotIn("class", recs[2])
        recs = [rec("a__a-1", "resolved", "unresolved")]
        ps.apply_causes(recs, causes, "other-run")
        self.assertEqual(recs[0]["class"], "flaky test")

    def test_an_unknown_class_or_no_evidence_names_the_entry(self):
        with self.assertRaises(ps.SummaryError) as e:
            ps.check_causes({"a__a-1": {"class": "cosmic rays", "evidence": "x"}}, "causes.json")
        self.assertEqual(str(e.exception), "causes.json: a__a-1: class 'cosmic rays' is not one of: environment drift, "
                                           "network use, flaky test, deviation of the original reproduced/fixed, "
                                           "swtbench defect, self-check is not the harness, unexplained; fix the entry")
        with self.assertRaises(ps.SummaryError) as e:
            ps.check_causes({"a__a-1": {"class": "unexplained", "evidence": " "}}, "causes.json")
        self.assertEqual(str(e.exception), "causes.json: a__a-1: no evidence; say what shows the class (a log line, "
                                           "a file)")


ROWS = [("a__a-1", "a/a", "1.0"), ("a__a-2", "a/a", "1.0"), ("a__a-3", "a/a", "2.0"), ("b__b-1", "b/b", "0.1"),
        ("b__b-2", "b/b", "0.1")]


class OfficialReportCampaign(unittest.TestCase):
    """An official report beside a fake campaign, through main()."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        t = self.tmp.name
        self.out = campaign(os.path.join(t, "out"), ROWS, {
            "a__a-1": ("resolved", graded(True, 0.5, 0.5, f2p=1, p2p=2)),
            "a__a-2": ("unresolved", graded(False, 1.0, 0.25, p2p=1)),
            "a__a-3": ("error", None),
            "b__b-1": ("unresolved", graded(False, applied=False)),
        }, run_report={"Mean coverage": 0.75, "Mean coverage delta": 0.375, "resolved_ids": ["a__a-1"],
                       "network_ids": ["a__a-2"], "network_use": {"a__a-2": ["pred_post: 151.101.0.223:443"]}},
            reachable=["a__a-1", "a__a-2", "a__a-3", "b__b-1"])
        self.official = os.path.join(t, "official.json")
        write(self.official, {"total_instances": 5, "Mean coverage": 0.7, "Mean coverage delta": 0.4,
                              "resolved_ids": ["a__a-1", "a__a-2", "a__a-3"], "unresolved_ids": ["b__b-1", "b__b-2"],
                              "error_ids": []})
        self.causes = os.path.join(t, "causes.json")
        write(self.causes, {"a__a-2": {"class": "network use", "evidence": "pred_post reached pypi.org | twice"},
                            "z__z-9": {"class": "unexplained", "evidence": "stale"}})
        self.md, self.json = os.path.join(t, "page.md"), os.path.join(t, "page.json")

    def tearDown(self):
        self.tmp.cleanup()

    def run_it(self, *extra):
        return run_main(["--out", self.out, "--run-id", "r1", "--official", self.official, "--name", "Tool X",
                         "--causes", self.causes, "--md", self.md, "--json", self.json, *extra])

    def test_the_json_holds_each_instance_and_the_figures(self):
        code, err = self.run_it()
        self.assertEqual(code, 0, err)
        self.assertIn("1 entries of " + self.causes + " match no disagreeing instance: z__z-9", err)
        with open(self.json) as f:
            data = json.load(f)
        (s,) = data["sets"]
        self.assertEqual((s["name"], s["run_id"], s["model_dir"]), ("Tool X", "r1", "M"))
        self.assertEqual(s["source"]["kind"], "official_report")
        self.assertEqual(s["source"]["file"], "official.json")
        self.assertEqual(len(s["source"]["sha256"]), 64)
        by_id = {r["instance_id"]: r for r in s["instances"]}
        self.assertEqual(sorted(by_id), ["a__a-1", "a__a-2", "a__a-3", "b__b-1", "b__b-2"])
        self.assertEqual(by_id["a__a-1"], {
            "instance_id": "a__a-1", "in_dataset": True, "repo": "a/a", "version": "1.0", "official": "resolved", "swtbench": "resolved",
            "agree": True, "applied": True, "coverage_pred": 0.5, "coverage_delta_pred": 0.5,
            "transitions": {"FAIL_TO_PASS": 1, "PASS_TO_PASS": 2, "FAIL_TO_FAIL": 0, "PASS_TO_FAIL": 0,
                            "UNMATCHED": 0, "added_f2p": 1}})
        self.assertEqual((by_id["a__a-2"]["agree"], by_id["a__a-2"]["class"], by_id["a__a-2"]["network_use"]),
                         (False, "network use", ["pred_post: 151.101.0.223:443"]))
        self.assertEqual(by_id["a__a-3"]["swtbench_detail"],
                         "error: image build failed; see <campaign dir>/runs/image_build_logs/x/build_image.log")
        self.assertIsNone(by_id["a__a-3"]["agree"])
        self.assertEqual((by_id["b__b-1"]["applied"], by_id["b__b-1"]["transitions"]), (False, None))
        self.assertEqual((by_id["b__b-2"]["swtbench"], by_id["b__b-2"]["swtbench_detail"]),
                         ("not_run", "no repository mirror (not in the campaign's all.txt)"))
        fig = s["figures"]
        self.assertEqual(fig["agreement"], {"both": 3, "agree": 2, "percent": 200.0 / 3})
        self.assertEqual(fig["swtbench"], {"resolved": 1, "unresolved": 2, "error": 1, "not_run": 1})
        self.assertEqual(fig["official"], {"resolved": 3, "unresolved": 2, "error": 0, "absent": 0})
        self.assertEqual(fig["disagreeing_by_class"], {"network use": 1})
        self.assertEqual(fig["coverage"], {
            "official": {"mean_coverage": 0.7, "mean_coverage_delta": 0.4}, "official_graded": 5,
            "swtbench_graded": {"n": 2, "mean_coverage": 0.75, "mean_coverage_delta": 0.375},
            "swtbench_both": {"n": 2, "mean_coverage": 0.75, "mean_coverage_delta": 0.375},
            "swtbench_run_report": {"mean_coverage": 0.75, "mean_coverage_delta": 0.375}})
        self.assertNotIn("rate", fig)
        self.assertEqual(fig["outside_dataset"], [])

    def test_the_page_has_the_tables_and_each_instance_that_differs(self):
        code, err = self.run_it()
        self.assertEqual(code, 0, err)
        with open(self.md) as f:
            page = f.read()
        lines = page.splitlines()
        self.assertEqual(lines[0], "# Prediction validation: swtbench's verdicts beside the official ones")
        self.assertIn("| Tool X | 5 | 3 | 2 (66.7 %) | 1 |", lines)
        self.assertIn("## Tool X", lines)
        self.assertIn("- Graded by both: 3; the verdicts agree on 2 (66.7 %)", lines)
        self.assertIn("- Disagreeing: 1 (network use 1)", lines)
        i = lines.index("| official \\ swtbench | resolved | unresolved | error | not run |")
        self.assertEqual(lines[i + 1:i + 6], ["|---|---|---|---|---|", "| resolved | 1 | 1 | 1 | 0 |",
                                              "| unresolved | 0 | 1 | 0 | 1 |", "| error | 0 | 0 | 0 | 0 |",
                                              "| absent | 0 | 0 | 0 | 0 |"])
        self.assertIn("| a/a | 3 | 2 | 1 | 50.0 % | 3 | 1 |", lines)
        self.assertIn("| b/b | 2 | 1 | 1 | 100.0 % | 0 | 0 |", lines)
        self.assertIn("| official report | ≤ 5 | 70.00 % | 40.00 % |", lines)
        self.assertIn("| swtbench, every instance it graded | 2 | 75.00 % | 37.50 % |", lines)
        self.assertIn("| `a__a-2` | a/a | resolved | unresolved | P→P 1 | network use | pred_post reached pypi.org \\| twice |",
                      lines)
        self.assertIn("| `a__a-3` | resolved | error | error: image build failed; see <campaign dir>/runs/image_build_"
                      "logs/x/build_image.log | – | – |", lines)
        self.assertIn("| `b__b-2` | unresolved | not run | no repository mirror (not in the campaign's all.txt) | – | – |",
                      lines)
        self.assertNotIn("Passing by the self-check", page)
        self.assertTrue(page.endswith("|\n"))

    def test_a_run_id_the_campaign_lacks_names_the_ones_it_has(self):
        code, err = run_main(["--out", self.out, "--run-id", "r2", "--official", self.official,
                              "--md", self.md, "--json", self.json])
        self.assertEqual(code, 2)
        self.assertEqual(err.strip(), f"prediction-summary: {self.out}/runs/run_instance_swt_logs/r2: no such run; "
                                      "check the run id (this campaign has: r1) or run scripts/prediction-campaign "
                                      "--run-id r2")
        self.assertFalse(os.path.exists(self.md))

    def test_a_set_without_logs_here_is_carried_over_from_the_earlier_json(self):
        code, err = self.run_it()
        self.assertEqual(code, 0, err)
        with open(self.json) as f:
            first = json.load(f)["sets"][0]
        # The same run id in another campaign directory that has none of its logs.
        other = campaign(os.path.join(self.tmp.name, "other"), ROWS, {"a__a-1": ("resolved", graded(True))},
                         run_id="r9", reachable=["a__a-1"])
        code, err = run_main(["--out", other, "--run-id", "r1", "--official", self.official, "--name", "Tool X",
                              "--causes", self.causes, "--md", self.md, "--json", self.json])
        self.assertEqual(code, 0, err)
        self.assertIn("r1: no logs under", err)
        self.assertIn("1 entries of", err, "the carried set's causes count as used, the stale one does not")
        with open(self.json) as f:
            (again,) = json.load(f)["sets"]
        self.assertEqual(again["instances"], first["instances"])
        self.assertEqual(again["figures"], first["figures"])
        self.assertIn("carried over from page.json", again["carried_over"])
        with open(self.md) as f:
            self.assertIn("*This set is carried over from page.json", f.read())
        # Without an earlier file it is the missing run it was.
        code, err = run_main(["--out", other, "--run-id", "r1", "--official", self.official,
                              "--md", self.md, "--json", os.path.join(self.tmp.name, "new.json")])
        self.assertEqual(code, 2, err)
        self.assertIn("no such run", err)

    def test_a_campaign_continued_elsewhere_keeps_what_the_earlier_json_graded(self):
        code, err = self.run_it()
        self.assertEqual(code, 0, err)
        with open(self.json) as f:
            first = {r["instance_id"]: r for r in json.load(f)["sets"][0]["instances"]}
        # Another campaign directory (another session) with logs of the run id for b__b-2 only.
        other = campaign(os.path.join(self.tmp.name, "other"), ROWS, {"b__b-2": ("resolved", graded(True, f2p=1))},
                         reachable=["b__b-2"])
        code, err = run_main(["--out", other, "--run-id", "r1", "--official", self.official, "--name", "Tool X",
                              "--causes", self.causes, "--md", self.md, "--json", self.json])
        self.assertEqual(code, 0, err)
        with open(self.json) as f:
            (s,) = json.load(f)["sets"]
        rows = {r["instance_id"]: r for r in s["instances"]}
        self.assertNotIn("carried_over", s)
        self.assertEqual(rows["b__b-2"]["swtbench"], "resolved")
        self.assertNotIn("graded_earlier", rows["b__b-2"])
        for iid in ("a__a-1", "a__a-2", "a__a-3", "b__b-1"):
            self.assertEqual(rows[iid]["swtbench"], first[iid]["swtbench"], iid)
            self.assertEqual(rows[iid]["graded_earlier"], "page.json", iid)
        self.assertEqual(rows["a__a-2"]["class"], "network use", "causes apply to kept records too")
        self.assertEqual(s["figures"]["swtbench"], {"resolved": 2, "unresolved": 2, "error": 1, "not_run": 0})
        self.assertIn("4 instance(s) not run in this campaign directory keep the verdict page.json recorded",
                      s["graded_earlier"])
        with open(self.md) as f:
            self.assertIn("*4 instance(s) not run in this campaign directory keep the verdict", f.read())
        # An instance graded in neither stays not run.
        with open(self.json) as f:
            data = json.load(f)
        data["sets"][0]["instances"] = [r for r in data["sets"][0]["instances"] if r["instance_id"] != "a__a-1"]
        prev = os.path.join(self.tmp.name, "prev.json")
        write(prev, data)
        code, err = run_main(["--out", other, "--run-id", "r1", "--official", self.official, "--previous", prev,
                              "--md", self.md, "--json", os.path.join(self.tmp.name, "new.json")])
        self.assertEqual(code, 0, err)
        with open(os.path.join(self.tmp.name, "new.json")) as f:
            rows = {r["instance_id"]: r for r in json.load(f)["sets"][0]["instances"]}
        self.assertEqual(rows["a__a-1"]["swtbench"], "not_run")
        self.assertEqual(rows["a__a-2"]["graded_earlier"], "prev.json")

    def test_a_regraded_tree_is_summarised_by_its_reports(self):
        d = os.path.join(self.out, "runs", "run_instance_swt_logs", "r1", "M", "a__a-1")
        write(os.path.join(d, "report.json"), {"a__a-1": graded(False)})
        code, err = self.run_it()
        self.assertEqual(code, 0, err)
        with open(self.json) as f:
            rows = {r["instance_id"]: r for r in json.load(f)["sets"][0]["instances"]}
        self.assertEqual(rows["a__a-1"]["swtbench"], "unresolved")

    def test_a_config_takes_several_sets_with_paths_relative_to_it(self):
        campaign(self.out, ROWS, {"a__a-1": ("unresolved", graded(False))}, run_id="r2")
        config = os.path.join(self.tmp.name, "config.json")
        write(config, {"sets": [{"run_id": "r1", "name": "first", "official": "official.json"},
                                {"run_id": "r2", "official": "official.json", "origin": "somewhere@abc"}]})
        code, err = run_main(["--out", self.out, "--config", config, "--md", self.md, "--json", self.json])
        self.assertEqual(code, 0, err)
        with open(self.json) as f:
            sets = json.load(f)["sets"]
        self.assertEqual([(s["name"], s["figures"]["agreement"]["both"]) for s in sets], [("first", 3), ("r2", 1)])
        self.assertEqual(sets[1]["source"]["origin"], "somewhere@abc")
        with open(self.md) as f:
            lines = f.read().splitlines()
        self.assertIn("| r2 | 5 | 1 | 0 (0.0 %) | 1 |", lines)

    def test_a_config_set_needs_one_source_and_a_rate_its_benchmark(self):
        config = os.path.join(self.tmp.name, "config.json")
        write(config, {"sets": [{"run_id": "r1"}]})
        code, err = run_main(["--out", self.out, "--config", config, "--md", self.md, "--json", self.json])
        self.assertEqual(code, 2)
        self.assertEqual(err.strip(), f"prediction-summary: {config}: set 1: set r1: give either \"official\" (a "
                                      "report) or \"self_checks\" (a traces directory)")
        with self.assertRaises(ps.SummaryError) as e:
            ps.check_spec({"run_id": "r1", "self_checks": "t", "published_rate": 89.1}, "cli")
        self.assertEqual(str(e.exception), "cli: set r1: a published rate needs its benchmark (lite or verified)")


class SelfCheckCampaign(unittest.TestCase):
    """Reproduction-script predictions with the submission's self-checks and a published rate."""

    def test_the_rate_and_the_instances_the_self_check_passes_and_swtbench_does_not(self):
        with tempfile.TemporaryDirectory() as t:
            rows = [("a__a-1", "a/a", "1.0"), ("a__a-2", "a/a", "1.0"), ("b__b-1", "b/b", "0.1")]
            out = campaign(os.path.join(t, "out"), rows, {
                "a__a-1": ("resolved", graded(True, f2p=1)),
                "a__a-2": ("unresolved", graded(False)),
                "b__b-1": ("resolved", graded(True, f2p=1)),
            }, run_id="dev", model="DevstralTestGen",
                benchmarks={"a__a-1": ["lite"], "a__a-2": ["lite", "verified"], "b__b-1": ["verified"]})
            traces = os.path.join(t, "traces")
            for iid, ok, exc in (("a__a-1", True, None), ("a__a-2", True, None), ("b__b-1", False, "FAILS_ON_HEAD"),
                                 ("c__c-1", True, None)):
                write(os.path.join(traces, iid, "test_result.json"), {"instance_id": iid, "success": ok, "exception": exc})
            md, js = os.path.join(t, "p.md"), os.path.join(t, "p.json")
            code, err = run_main(["--out", out, "--run-id", "dev", "--self-checks", traces, "--published-rate", "89.1",
                                  "--benchmark", "lite", "--md", md, "--json", js])
            self.assertEqual(code, 0, err)
            with open(js) as f:
                (s,) = json.load(f)["sets"]
            self.assertEqual(s["source"], {"kind": "self_checks", "file": "traces", "files": 4})
            self.assertEqual(s["benchmark"], "lite")
            self.assertNotIn("benchmark_ids", s)
            by_id = {r["instance_id"]: r for r in s["instances"]}
            self.assertEqual(by_id["b__b-1"]["self_check_exception"], "FAILS_ON_HEAD")
            self.assertEqual((by_id["c__c-1"]["swtbench"], by_id["c__c-1"]["repo"], by_id["c__c-1"]["version"]),
                             ("not_run", "c/c", None))
            self.assertEqual((s["figures"]["instances"], s["figures"]["outside_dataset"]), (3, ["c__c-1"]))
            rate = s["figures"]["rate"]
            self.assertEqual((rate["denominator"], rate["benchmark_instances"], rate["swtbench_resolved"],
                              rate["official_resolved"], rate["published_resolved"], rate["leaderboard_skipped"]),
                             (276, 2, 1, 2, 246, []))
            self.assertNotIn("coverage", s["figures"])
            with open(md) as f:
                lines = f.read().splitlines()
            self.assertIn("| self-check \\ swtbench | resolved | unresolved | error | not run |", lines)
            self.assertIn("- The campaign's benchmarks.json has 2 instances of SWT-Bench Lite, not 276: the rates "
                          "below are over the leaderboard's number.", lines)
            self.assertIn("- swtbench: 1 of 276 (0.4 %)", lines)
            self.assertIn("- Published: 89.1 % (≈ 246 of 276)", lines)
            self.assertIn("- self-check: 2 of 276 (0.7 %)", lines)
            self.assertIn("Passing by the self-check, not resolved by swtbench (instances of SWT-Bench Lite): 1", lines)
            self.assertIn("| `a__a-2` | unresolved | no tests ran | – | no entry in the causes file |", lines)
            self.assertIn("- Outside SWT-Bench Lite ∪ Verified after the filter, so evaluated by neither the campaign "
                          "nor the leaderboard, and left out below: 1 (c__c-1)", lines)
            self.assertIn("- Instances: 3; self-check: resolved 2, unresolved 1, error 0, absent 0; swtbench: resolved "
                          "2, unresolved 1, error 0, not run 0", lines)


if __name__ == "__main__":
    unittest.main()
