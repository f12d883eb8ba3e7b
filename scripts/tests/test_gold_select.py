"""Tests of scripts/gold-select.py, the resumed campaign's selection (run by scripts/test)."""
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gold-select.py")
_spec = importlib.util.spec_from_file_location("gold_select", _path)
sel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sel)

FLAGS = {"applicable": True, "resolved": True, "f_to_x": True, "f_to_p": True, "p_to_p": False,
         "coverage_delta_gold": 0.5, "coverage_delta_pred": 0.5}


def rec(i, status="resolved", agrees=True, flags=True, network="isolated"):
    r = {"instance_id": i, "status": status, "agrees_with_dataset": agrees}
    if flags:
        r["leaderboard"] = FLAGS
    if network:
        r["test_network"] = network
    return r


RECORDS = [
    rec("a__a-1"),                                      # done, flagged
    rec("a__a-2", flags=False),                         # done, no flags, isolated
    rec("s__s-3", flags=False, network="engine+ca"),    # done, no flags, evaluated with network
    rec("s__s-4", status="unresolved", flags=False, network="engine+ca"),
    rec("a__a-5", status="not_run", flags=False, network=None),
    rec("a__a-6", agrees=False),                        # resolved, differs from the dataset
    rec("a__a-7", flags=False, network=None),           # carried from before networks were recorded
]
WANTED = [r["instance_id"] for r in RECORDS] + ["n__n-8"]


class Network(unittest.TestCase):
    def test_the_run_flags_name_the_network(self):
        self.assertEqual(sel.network_of(["--no-network", "--build-files", "d"]), "isolated")
        self.assertEqual(sel.network_of(["--allow-network", "--ca-in-tests"]), "engine+ca")
        self.assertEqual(sel.network_of([]), "engine")


class Select(unittest.TestCase):
    def test_a_plain_resume_evaluates_only_what_has_no_result(self):
        left, apart = sel.select(RECORDS, WANTED, network="isolated")
        self.assertEqual(left, ["a__a-5", "n__n-8"])
        self.assertEqual(apart, [])

    def test_redo_takes_the_unsettled_ones_that_match(self):
        left, _ = sel.select(RECORDS, WANTED, redo=re.compile("^a__"), network="isolated")
        self.assertEqual(left, ["a__a-5", "a__a-6", "n__n-8"])
        left, _ = sel.select(RECORDS, WANTED, redo=re.compile("^s__"), network="isolated")
        self.assertEqual(left, ["s__s-4", "a__a-5", "n__n-8"])

    def test_unflagged_keeps_a_settled_instance_on_its_own_network(self):
        left, apart = sel.select(RECORDS, WANTED, unflagged=True, network="isolated")
        self.assertEqual(left, ["a__a-2", "s__s-4", "a__a-5", "a__a-7", "n__n-8"])
        self.assertEqual(apart, [("s__s-3", "engine+ca")])
        left, apart = sel.select(RECORDS, WANTED, unflagged=True, network="engine+ca")
        self.assertEqual(left, ["s__s-3", "s__s-4", "a__a-5", "a__a-7", "n__n-8"])
        self.assertEqual(apart, [("a__a-2", "isolated")])


class CommandLine(unittest.TestCase):
    def test_it_writes_the_todo_list_and_names_what_it_left_out(self):
        with tempfile.TemporaryDirectory() as d:
            done, wanted, todo = (os.path.join(d, n) for n in ("done.json", "all.txt", "todo.txt"))
            with open(done, "w") as f:
                json.dump({"instances": RECORDS}, f)
            with open(wanted, "w") as f:
                f.write("\n".join(WANTED) + "\n")
            p = subprocess.run([sys.executable, _path, done, wanted, todo, "", "1", "--no-network"],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(todo) as f:
                self.assertEqual(f.read().split(), ["a__a-2", "s__s-4", "a__a-5", "a__a-7", "n__n-8"])
            self.assertIn("3 of 8 instances already evaluated", p.stderr)
            self.assertIn("leaves out 1 instance(s) evaluated with the test network `engine+ca`", p.stderr)
            self.assertIn("s__s-3", p.stderr)
            self.assertIn("--allow-network --ca-in-tests", p.stderr)

    def test_a_bad_expression_or_file_is_refused_with_its_name(self):
        with tempfile.TemporaryDirectory() as d:
            wanted = os.path.join(d, "all.txt")
            open(wanted, "w").close()
            p = subprocess.run([sys.executable, _path, os.path.join(d, "nope.json"), wanted,
                                os.path.join(d, "t"), "", "0"], capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("nope.json", p.stderr)
            p = subprocess.run([sys.executable, _path, os.path.join(d, "nope.json"), wanted,
                                os.path.join(d, "t"), "(", "0"], capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("--redo '('", p.stderr)


if __name__ == "__main__":
    unittest.main()
