"""Tests of scripts/gold-summary's comparison with the dataset (run by scripts/test)."""
import importlib.machinery
import importlib.util
import os
import tempfile
import unittest

_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gold-summary")
_loader = importlib.machinery.SourceFileLoader("gold_summary", _path)
_spec = importlib.util.spec_from_loader("gold_summary", _loader)
gs = importlib.util.module_from_spec(_spec)
_loader.exec_module(gs)

# Django 4.2 under Python 3.11 (the method's name repeated in the class path), with a docstring
# that two tests share, one without a docstring, and a docstring line without a final period.
LOG = """test_add_field_alter_field (migrations.test_optimizer.OptimizerTests.test_add_field_alter_field)
AlterField should optimize into AddField. ... ok
test_add_field_delete_field (migrations.test_optimizer.OptimizerTests.test_add_field_delete_field)
RemoveField should cancel AddField ... ok
test_plain (migrations.test_optimizer.OptimizerTests.test_plain) ... ok
test_shared_one (pagination.tests.PaginationTests.test_shared_one)
Paginator.get_page() with an empty object_list. ... ok
test_shared_two (pagination.tests.PaginationTests.test_shared_two)
Paginator.get_page() with an empty object_list. ... FAIL
"""


class DjangoDocstringNames(unittest.TestCase):
    def test_descriptions_name_the_tests_that_printed_them(self):
        d = gs.django_descriptions(LOG)
        self.assertEqual(d["AlterField should optimize into AddField."],
                         {"test_add_field_alter_field (migrations.test_optimizer.OptimizerTests.test_add_field_alter_field)"})
        self.assertEqual(d["RemoveField should cancel AddField"],
                         {"test_add_field_delete_field (migrations.test_optimizer.OptimizerTests.test_add_field_delete_field)"})
        self.assertEqual(len(d["Paginator.get_page() with an empty object_list."]), 2)
        self.assertNotIn("test_plain (migrations.test_optimizer.OptimizerTests.test_plain)", d)

    def test_a_docstring_name_agrees_only_when_every_test_that_printed_it_does(self):
        d = gs.django_descriptions(LOG)
        gold = {
            "FAIL_TO_PASS": ["test_add_field_alter_field (migrations.test_optimizer.OptimizerTests.test_add_field_alter_field)"],
            "PASS_TO_PASS": [
                "test_add_field_delete_field (migrations.test_optimizer.OptimizerTests.test_add_field_delete_field)",
                "test_plain (migrations.test_optimizer.OptimizerTests.test_plain)",
                "test_shared_one (pagination.tests.PaginationTests.test_shared_one)",
            ],
        }
        f2p = ["AlterField should optimize into AddField."]
        p2p = ["RemoveField should cancel AddField",
               "test_plain (migrations.test_optimizer.OptimizerTests.test_plain)",
               "Paginator.get_page() with an empty object_list."]
        missing, not_passing, described = gs.compare_with_dataset(f2p, p2p, gold, d)
        self.assertEqual(missing, [])
        # test_shared_two failed after the fix: the shared docstring does not agree.
        self.assertEqual(not_passing, ["Paginator.get_page() with an empty object_list."])
        self.assertEqual(described, 2)

    def test_a_docstring_of_a_test_that_passes_does_not_stand_for_a_failing_to_passing_one(self):
        d = gs.django_descriptions(LOG)
        gold = {"FAIL_TO_PASS": [], "PASS_TO_PASS": [
            "test_add_field_alter_field (migrations.test_optimizer.OptimizerTests.test_add_field_alter_field)"]}
        missing, _, described = gs.compare_with_dataset(["AlterField should optimize into AddField."], [], gold, d)
        self.assertEqual(missing, ["AlterField should optimize into AddField."])
        self.assertEqual(described, 0)

    def test_a_shared_docstring_is_failing_to_passing_when_one_of_its_tests_is(self):
        log = ("test_other_units (t.TZAwareTimesinceTests)\nTest other units. ... ok\n"
               "test_other_units (t.TimesinceTests)\nTest other units. ... ok\n")
        d = gs.django_descriptions(log)
        gold = {"FAIL_TO_PASS": ["test_other_units (t.TZAwareTimesinceTests)"],
                "PASS_TO_PASS": ["test_other_units (t.TimesinceTests)"]}
        self.assertEqual(gs.compare_with_dataset(["Test other units."], [], gold, d), ([], [], 1))
        # Not when one of them fails after the fix.
        gold["PASS_TO_PASS"] = []
        gold["PASS_TO_FAIL"] = ["test_other_units (t.TimesinceTests)"]
        self.assertEqual(gs.compare_with_dataset(["Test other units."], [], gold, d), (["Test other units."], [], 0))

    def test_without_a_log_names_are_compared_as_they_are(self):
        missing, not_passing, described = gs.compare_with_dataset(["a"], ["b"], {"FAIL_TO_PASS": ["a"], "PASS_TO_PASS": []}, {})
        self.assertEqual((missing, not_passing, described), ([], ["b"], 0))


def campaign_with_log(tmp, iid, log, pre_log=None):
    """A campaign directory with `log` as the gold run's output after the fix (and `pre_log`
    before it)."""
    for run, text in (("pred_post__gold", log), ("pred_pre__gold", pre_log)):
        if text is None:
            continue
        d = gs.run_dir(tmp, iid, run)
        os.makedirs(d)
        with open(os.path.join(d, "test_output.txt"), "w") as f:
            f.write(text)
    return tmp


CHILD = """+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(src/x\\.py)' -m pytest -rA testing/test_a.py
['--count', '-C', 'coverage.cover', '--include-pattern', '/testbed/(src/x\\.py)']
=================================== FAILURES ===================================
\x1b[31m\x1b[1m_____________ TestLogging.test_child_exit _____________\x1b[0m

>       assert result.ret == 5
E       assert 0 == 5
----------------------------- Captured stdout call -----------------------------
running: /opt/swtbench-venv/bin/python3 -mpytest
['--count', '-C', 'coverage.cover', '--include-pattern', '/testbed/(src/x\\.py)']
collected 0 items
_____________ test_other[unittest] _____________

E   requests.exceptions.ConnectionError: HTTPSConnectionPool(host='www.example.org', port=443): Max retries exceeded (Caused by NameResolutionError("Failed to resolve 'www.example.org' ([Errno -3] Temporary failure in name resolution)"))
=========================== short test summary info ============================
"""


DJANGO_CHILD = """\
test_alpha (admin_scripts.tests.T) ... ok
test_plain (admin_scripts.tests.ManageCheck) ... ERROR
test_sorted (admin_scripts.tests.ManageCheck)
All errors/warnings should be sorted by level and by message. ... FAIL

======================================================================
FAIL: test_sorted (admin_scripts.tests.ManageCheck)
All errors/warnings should be sorted by level and by message.
----------------------------------------------------------------------
Traceback (most recent call last):
AssertionError: 118 != 0 : Stream should be empty: actually contains '['--count', '-C', 'coverage.cover', '--include-pattern', '/testbed/(django/x\\.py)']

======================================================================
ERROR: test_plain (admin_scripts.tests.ManageCheck)
----------------------------------------------------------------------
Traceback (most recent call last):
KeyError: 'x'

----------------------------------------------------------------------
Ran 3 tests in 0.1s

FAILED (failures=1, errors=1)
"""


class DisagreementCauses(unittest.TestCase):
    def test_django_failure_sections_are_found_by_name_or_docstring(self):
        names = ["All errors/warnings should be sorted by level and by message.",
                 "test_plain (admin_scripts.tests.ManageCheck)", "test_alpha (admin_scripts.tests.T)"]
        s = gs.failure_sections(DJANGO_CHILD, names)
        self.assertEqual(sorted(s), sorted(names[:2]))
        self.assertIn("coverage.cover", s[names[0]])
        self.assertNotIn("KeyError", s[names[0]])
        self.assertIn("KeyError", s[names[1]])
        self.assertNotIn("Ran 3 tests", s[names[1]])
        with tempfile.TemporaryDirectory() as tmp:
            out = campaign_with_log(tmp, "django__django-1", DJANGO_CHILD)
            why = gs.disagreement_cause(out, "django__django-1", [], names[:1], "isolated")
            self.assertIn("runs under the tracer", why)
            # A failure with nothing of the tracer in it is not explained by it.
            self.assertIsNone(gs.disagreement_cause(out, "django__django-1", [], names[:2], "isolated"))

    def test_failure_sections_are_found_by_test_id_through_colour_codes(self):
        s = gs.failure_sections(CHILD, ["testing/test_a.py::TestLogging::test_child_exit",
                                        "testing/test_a.py::test_other[unittest]",
                                        "testing/test_a.py::test_absent"])
        self.assertEqual(sorted(s), ["testing/test_a.py::TestLogging::test_child_exit",
                                     "testing/test_a.py::test_other[unittest]"])
        self.assertIn("assert 0 == 5", s["testing/test_a.py::TestLogging::test_child_exit"])
        self.assertNotIn("NameResolutionError", s["testing/test_a.py::TestLogging::test_child_exit"])

    def test_a_child_python_under_the_tracer_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = campaign_with_log(tmp, "o__r-1", CHILD)
            why = gs.disagreement_cause(out, "o__r-1", [], ["testing/test_a.py::TestLogging::test_child_exit"], "isolated")
            self.assertIn("runs under the tracer", why)
            # A test whose failure has nothing of the tracer is not explained by it: with the
            # network, nothing explains the second test, so the instance has no cause.
            both = ["testing/test_a.py::TestLogging::test_child_exit", "testing/test_a.py::test_other[unittest]"]
            self.assertIsNone(gs.disagreement_cause(out, "o__r-1", [], both, "engine"))
            # Isolated, each test has its own cause, and both are named with their counts.
            why = gs.disagreement_cause(out, "o__r-1", [], both, "isolated")
            self.assertIn("runs under the tracer", why)
            self.assertIn("www.example.org", why)
            self.assertIn("(1 test)", why)
            # A cause found by hand covers the test the log does not explain.
            why = gs.disagreement_cause(out, "o__r-1", [], both, "engine",
                                        {"testing/test_a.py::test_other[unittest]": "checked by hand"})
            self.assertIn("checked by hand (1 test)", why)

    def test_public_hosts_explain_a_failure_only_in_an_isolated_run(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = campaign_with_log(tmp, "o__r-1", CHILD)
            tests = ["testing/test_a.py::test_other[unittest]"]
            why = gs.disagreement_cause(out, "o__r-1", [], tests, "isolated")
            self.assertIn("www.example.org", why)
            self.assertIn("--no-network", why)
            self.assertIsNone(gs.disagreement_cause(out, "o__r-1", [], tests, "engine"))

    def test_django_lines_the_parser_reads_otherwise(self):
        pre = ("test_a (app.tests.T) ... ok\n"
               "test_b (app.tests.T) ... test_c (app.tests.T) ... ok\n")
        post = ("test_a (app.tests.T) ... expected failure\n"
                "test_b (app.tests.T) ... ok\n"
                "test_c (app.tests.T) ... ok\n"
                "test_d (app.tests.T) ... ok\n")
        with tempfile.TemporaryDirectory() as tmp:
            out = campaign_with_log(tmp, "django__django-1", post, pre)
            # test_b's status line before the fix is cut off by test_c's: a FAIL_TO_PASS test that
            # the parser saw pass.
            self.assertIn("cut off", gs.disagreement_cause(out, "django__django-1", ["test_b (app.tests.T)"], []))
            # test_b follows an 'expected failure' line after the fix: the parser drops it.
            self.assertIn("'expected failure'", gs.disagreement_cause(out, "django__django-1", [], ["test_b (app.tests.T)"]))
            # A child Python process under the tracer prints its options on the test's own line;
            # the test after it then follows a 'FAIL' alone on its line.
            post2 = ("test_e (app.tests.T) ... ['--count', '-C', 'coverage.cover', '--include-pattern', 'x']\n"
                     "FAIL\n"
                     "test_f (app.tests.T) ... ok\n")
            with open(os.path.join(gs.run_dir(tmp, "django__django-1"), "test_output.txt"), "w") as f:
                f.write(post + post2)
            why = gs.disagreement_cause(out, "django__django-1", [], ["test_e (app.tests.T)", "test_f (app.tests.T)"])
            self.assertIn("runs under the tracer", why)
            # A test with a docstring (the dataset names it by the docstring's first line) after
            # a failed one: the test before ends two lines up, above the name line.
            post3 = ("test_g (app.tests.T) ... FAIL\n"
                     "test_h (app.tests.T)\n"
                     "Ensure h works. ... ok\n"
                     "test_i (app.tests.T) ... ok\n"
                     "test_j (app.tests.T)\n"
                     "Ensure j works. ... ok\n")
            with open(os.path.join(gs.run_dir(tmp, "django__django-1"), "test_output.txt"), "w") as f:
                f.write(post3)
            self.assertIn("'FAIL'", gs.disagreement_cause(out, "django__django-1", [], ["Ensure h works."]))
            self.assertIsNone(gs.disagreement_cause(out, "django__django-1", [], ["Ensure j works."]))
            # A docstring line with '...' in it: the parser finds no status for the test.
            post4 = ("test_k (app.tests.T)\n"
                     "With patterns(..., prefix=False), the default ... ok\n")
            with open(os.path.join(gs.run_dir(tmp, "django__django-1"), "test_output.txt"), "w") as f:
                f.write(post4)
            # A docstring line several tests print, one of them skipped (a backend not configured).
            post5 = ("test_x (cache.tests.DBCacheTests)\n"
                     "If None is cached, get() returns it. ... ok\n"
                     "test_x (cache.tests.PyLibMCCacheTests)\n"
                     "If None is cached, get() returns it. ... skipped 'PyLibMCCache backend not configured'\n"
                     "test_x (cache.tests.LocMemCacheTests)\n"
                     "If None is cached, get() returns it. ... ok\n")
            with open(os.path.join(gs.run_dir(tmp, "django__django-1"), "test_output.txt"), "w") as f:
                f.write(post5)
            self.assertIn("PyLibMCCache backend not configured", gs.disagreement_cause(
                out, "django__django-1", [], ["If None is cached, get() returns it."]))
            with open(os.path.join(gs.run_dir(tmp, "django__django-1"), "test_output.txt"), "w") as f:
                f.write(post5[:post5.rindex("... ok")] + "... FAIL\n")
            self.assertNotIn("skipped", gs.disagreement_cause(
                out, "django__django-1", [], ["If None is cached, get() returns it."]) or "")
            with open(os.path.join(gs.run_dir(tmp, "django__django-1"), "test_output.txt"), "w") as f:
                f.write(post4)
            self.assertIn("holds '...'", gs.disagreement_cause(
                out, "django__django-1", [], ["With patterns(..., prefix=False), the default"]))
            self.assertIn("exit code fail (1 test)", why)
            self.assertIn("ends in 'FAIL'", why)
            # test_d follows an ordinary 'ok': nothing explains it.
            self.assertIsNone(gs.disagreement_cause(out, "django__django-1", [], ["test_d (app.tests.T)"]))

    def test_a_child_under_the_tracer_is_named_by_its_status_line_when_its_report_shows_only_the_assertion(self):
        # The child prints the tracer's options after ' ... '; the FAIL report holds the assertion.
        post = ("test_crash (dbshell.tests.T) ... ['--count', '-C', 'coverage.cover', '--include-pattern', 'x']\n"
                "FAIL\n"
                "test_nopass (dbshell.tests.T) ... ok\n"
                "\n" + "=" * 70 + "\n"
                "FAIL: test_crash (dbshell.tests.T)\n" + "-" * 70 + "\n"
                "Traceback (most recent call last):\n"
                "AssertionError: CalledProcessError not raised\n\n" + "-" * 70 + "\n"
                "Ran 2 tests in 0.1s\n")
        with tempfile.TemporaryDirectory() as tmp:
            out = campaign_with_log(tmp, "django__django-1", post)
            self.assertIn("test_crash (dbshell.tests.T)", gs.failure_sections(post, ["test_crash (dbshell.tests.T)"]))
            why = gs.disagreement_cause(out, "django__django-1", [], ["test_crash (dbshell.tests.T)"])
            self.assertIn("runs under the tracer", why or "")

    def test_a_hand_cause_for_tests_passing_before_the_fix_covers_only_those(self):
        pre = ("test_a (app.tests.T) ... ok\n"
               "Session repr should be the session key. ... ok\n"
               "test_b (app.tests.T) ... FAIL\n")
        post = ("test_a (app.tests.T) ... ok\n"
                "Session repr should be the session key. ... ok\n"
                "test_b (app.tests.T) ... ok\n")
        why_by_hand = "the dataset's run crashed before the fix"
        with tempfile.TemporaryDirectory() as tmp:
            out = campaign_with_log(tmp, "django__django-1", post, pre)
            passed = ["Session repr should be the session key.", "test_a (app.tests.T)"]
            self.assertEqual(gs.disagreement_cause(out, "django__django-1", passed, [], None, None, why_by_hand),
                             why_by_hand)
            # Without the hand cause nothing names them.
            self.assertIsNone(gs.disagreement_cause(out, "django__django-1", passed, []))
            # test_b failed before the fix here: the hand cause does not cover it.
            self.assertIsNone(gs.disagreement_cause(out, "django__django-1", ["test_b (app.tests.T)"], [], None,
                                                    None, why_by_hand))
            # Nor a PASS_TO_PASS test that did not pass after the fix.
            self.assertIsNone(gs.disagreement_cause(out, "django__django-1", [], ["test_a (app.tests.T)"], None,
                                                    None, why_by_hand))


class RunCauses(unittest.TestCase):
    def test_a_test_command_the_environments_pytest_refuses_is_named(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = campaign_with_log(tmp, "astropy__astropy-1", "usage: pytest.py [options]\n"
                                    "pytest.py: error: unrecognized arguments: --no-header\n")
            self.assertIn("--no-header", gs.run_cause(out, "astropy__astropy-1"))
            self.assertIsNone(gs.run_cause(out, "astropy__astropy-2"))


class CampaignPace(unittest.TestCase):
    def test_reused_instances_do_not_count_and_an_idle_invocation_is_left_out(self):
        import json
        with tempfile.TemporaryDirectory() as tmp:
            def events(name, rows):
                with open(os.path.join(tmp, name), "w") as f:
                    f.write("".join(json.dumps(r) + "\n" for r in rows) + "{not json\n")
            events("events-all-1.jsonl", [
                {"event": "evaluation_started", "elapsed_ms": 0},
                {"event": "instance_finished", "elapsed_ms": 100, "duration_ms": 0},
                {"event": "instance_finished", "elapsed_ms": 60000, "duration_ms": 59000},
                {"event": "instance_finished", "elapsed_ms": 120000, "duration_ms": 61000},
                "not json",
            ])
            events("events-all-2.jsonl", [{"event": "instance_finished", "elapsed_ms": 5, "duration_ms": 0}])
            rows = gs.campaign_pace(tmp)
            self.assertEqual(rows, [("events-all-1.jsonl", 120.0, 2, 100.0)])


class MirrorSources(unittest.TestCase):
    def test_every_campaign_repository_has_a_source(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        mirrors = gs.mirror_sources(os.path.join(root, "scripts", "gold-mirrors.json"))
        # The repositories of Lite ∪ Verified, each named <owner>__<name> after a GitHub repository.
        for name in ("django__django", "sympy__sympy", "scikit-learn__scikit-learn", "astropy__astropy"):
            self.assertIn(name, mirrors)
        for name, m in mirrors.items():
            self.assertRegex(m["source"], r"^[A-Za-z0-9][\w.-]*/[\w.-]+$", name)

    def test_a_missing_file_is_no_table(self):
        self.assertEqual(gs.mirror_sources("/nonexistent/gold-mirrors.json"), {})


class LeaderboardFlags(unittest.TestCase):
    REP = {
        "resolved": True,
        "coverage_delta_pred": 0.5,
        "coverage_delta_gold": 0.5,
        "tests_base": {"FAIL_TO_PASS": [], "PASS_TO_PASS": ["a", "b"], "FAIL_TO_FAIL": ["x"],
                       "PASS_TO_FAIL": [], "UNMATCHED": []},
        "tests_pred": {"FAIL_TO_PASS": ["new"], "PASS_TO_PASS": ["a", "b"], "FAIL_TO_FAIL": ["x"],
                       "PASS_TO_FAIL": [], "UNMATCHED": []},
    }

    def test_transitions_count_only_beyond_the_base_runs(self):
        f = gs.leaderboard_flags(self.REP)
        self.assertEqual((f["applicable"], f["resolved"], f["f_to_x"], f["f_to_p"], f["p_to_p"]),
                         (True, True, True, True, False))
        rep = dict(self.REP, tests_pred=dict(self.REP["tests_pred"], FAIL_TO_PASS=[], PASS_TO_PASS=["a", "b", "c"],
                                             FAIL_TO_FAIL=["x", "y"]))
        f = gs.leaderboard_flags(rep)
        self.assertEqual((f["f_to_x"], f["f_to_p"], f["p_to_p"]), (True, False, True))

    def test_no_prediction_runs_is_nothing_and_few_tests_is_not_applicable(self):
        f = gs.leaderboard_flags(dict(self.REP, tests_pred=None, resolved=False))
        self.assertFalse(any(f[k] for k in ("applicable", "resolved", "f_to_x", "f_to_p", "p_to_p")))
        base = dict(self.REP["tests_base"], PASS_TO_PASS=[f"t{i}" for i in range(50)])
        f = gs.leaderboard_flags(dict(self.REP, tests_base=base))
        self.assertFalse(f["applicable"])  # 4 tests against 51: less than a tenth

    def test_figures_and_their_check_against_the_report(self):
        a = gs.leaderboard_flags(self.REP)
        b = gs.leaderboard_flags(dict(self.REP, resolved=False, coverage_delta_pred=0.25, coverage_delta_gold=None))
        f = gs.figures([a, b], denominator=4)
        self.assertEqual(f["success_rate"], 25.0)
        self.assertEqual(f["f_to_p"], 50.0)
        self.assertEqual(f["coverage_delta_all"], 75.0)  # 0.75 over the one gold delta
        self.assertEqual(f["coverage_delta_resolved"], 50.0)
        self.assertEqual(gs.check_flags([a, b], dict(f)), [])
        self.assertEqual(gs.check_flags([a, b], dict(f, p_to_p=10.0)), ["p_to_p"])

    def test_the_comparison_puts_each_benchmark_beside_its_published_row(self):
        a = gs.leaderboard_flags(self.REP)
        b = gs.leaderboard_flags(dict(self.REP, tests_pred=dict(self.REP["tests_pred"], PASS_TO_PASS=["a", "b", "c"])))
        recs = [{"instance_id": "x-1", "benchmarks": ["lite"], "leaderboard": a},
                {"instance_id": "x-2", "benchmarks": ["lite", "verified"], "leaderboard": b},
                {"instance_id": "x-3", "benchmarks": ["verified"], "leaderboard": b}]
        rows = gs.comparison_rows(recs, skipped={"x-3"})
        self.assertEqual([r[0] for r in rows], ["Lite ∪ Verified", "Lite", "Lite, published gold", "Verified",
                                                "Verified, published gold"])
        # P→P: x-2 and x-3 add a passing test, x-3's report is skipped (a filter list's) but counted in n.
        self.assertEqual(rows[0][1:2] + rows[0][6:8], ["3", "33.3", "1"])
        self.assertEqual(rows[1][1:2] + rows[1][6:8], ["2", "50.0", "1"])
        self.assertEqual(rows[3][1:2] + rows[3][6:8], ["2", "50.0", "1"])
        self.assertEqual(rows[2], ["Lite, published gold", "276", "–", "–", "–", "–", "10.86", "30", "71.84", "–"])
        self.assertEqual(rows[4][6:8], ["15.01", "65"])
        # A benchmark without flagged instances has only its published row.
        self.assertEqual([r[0] for r in gs.comparison_rows(recs[:1], set())],
                         ["Lite ∪ Verified", "Lite", "Lite, published gold", "Verified, published gold"])

    def test_unflagged_instances_are_counted_per_repository(self):
        done = [{"repo": "r/a"}, {"repo": "r/b", "leaderboard": {"resolved": True}}, {"repo": "r/b"}, {"repo": "r/b", "leaderboard": {}},
                {"repo": "r/a", "leaderboard": {"resolved": True}}]
        self.assertEqual(list(gs.unflagged_by_repo(done).items()), [("r/b", 2), ("r/a", 1)])

    def test_filter_list_instances_are_skipped_as_swtbench_report_skips_them(self):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        skipped = gs.swt_filtered(root)
        # In Lite after its filter, but in Verified's filter list: the report skips it.
        self.assertIn("scikit-learn__scikit-learn-25747", skipped)
        self.assertNotIn("django__django-11099", skipped)
        self.assertEqual(gs.swt_filtered("/nonexistent"), set())


class EnvKeys(unittest.TestCase):
    def test_an_instance_image_names_its_env_image(self):
        self.assertEqual(gs.env_image_of("exec.eval.x86_64.6250e53a1abaa01a6886b7.c26187ee6922268ef4195a:latest"),
                         "exec.env.x86_64.6250e53a1abaa01a6886b7:latest")
        self.assertEqual(gs.env_image_of("localhost:5000/ns/exec.eval.arm64.ab12.cd34:latest"),
                         "localhost:5000/ns/exec.env.arm64.ab12:latest")
        for other in ("exec.env.x86_64.ab12:latest", "python:3.9-slim-bookworm", "", None):
            self.assertIsNone(gs.env_image_of(other), other)

    def test_the_gold_runs_key_file_gives_the_image_and_the_network(self):
        import json
        with tempfile.TemporaryDirectory() as tmp:
            d = gs.run_dir(tmp, "x__y-1")
            os.makedirs(d)
            with open(os.path.join(d, "swtbench_key.json"), "w") as f:
                json.dump({"inputs": {"instance_image": "exec.eval.x86_64.aa.bb:latest", "network": True,
                                      "test_ca_sha256": "00"}}, f)
            inputs = gs.gold_run_inputs(tmp, "x__y-1")
            self.assertEqual(gs.env_image_of(inputs["instance_image"]), "exec.env.x86_64.aa:latest")
            self.assertEqual(gs.test_network(inputs), "engine+ca")
            self.assertEqual(gs.gold_run_inputs(tmp, "x__y-2"), {})
            self.assertIsNone(gs.test_network(gs.gold_run_inputs(tmp, "x__y-2")))


class MissingObjects(unittest.TestCase):
    def test_the_files_a_mirror_lacks_are_named_from_swtbenchs_message(self):
        cause = ("reading the repository mirror /w/m/astropy__astropy.git: git mirror /w/.mirror/a+a/repo: it lacks 2 "
                 "object(s) of commit c0a24c1dc957a3b565294213f435fefb2ec99714's files: astropy/utils/iers/data/"
                 "eopc04.1962-now (4a48cb86af7454056316ceca5011ba607cf1f31d), a/b.dat (34d568d1475966f07b7fa098e1a9f1ca1e"
                 "73c19b); a complete mirror holds them (`git clone --mirror`; a copy that leaves out large files does not)")
        named = gs.missing_object(cause, {"base_commit": "c0a24c1dc957a3b565294213f435fefb2ec99714"})
        self.assertEqual(named, "the repository mirror lacks astropy/utils/iers/data/eopc04.1962-now (blob "
                                "4a48cb86af74), a/b.dat (blob 34d568d14759) of the base commit c0a24c1dc957: the fetched "
                                "snapshot leaves out its largest files; a complete mirror (git clone --mirror) has it")
        self.assertNotIn("/w/", named)
        more = gs.missing_object(cause.replace("73c19b);", "73c19b) and 4 more;"), {})
        self.assertIn("a/b.dat (blob 34d568d14759) and 4 more of the base commit", more)
        self.assertIsNone(gs.missing_object("reading the repository mirror failed: permission denied", {}))


if __name__ == "__main__":
    unittest.main()
