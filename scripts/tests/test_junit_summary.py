"""Tests of scripts/junit-summary.py, the summary of a nextest JUnit report (run by scripts/test)."""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "junit-summary.py")
_spec = importlib.util.spec_from_file_location("junit_summary", _path)
js = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(js)

# Five tests, 17.3 s in all: a skip reason on stdout, a failure, a flaky test whose retry printed a
# skip line (not the final attempt's) and whose final attempt skipped on stderr, an unreadable time.
REPORT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run"><testsuite name="swtbench">
<testcase classname="swtbench-spec" name="lock::renders" time="1.5"/>
<testcase classname="swtbench-engine" name="build::image" time="12.3"><system-out>building
SKIPPED: no Docker engine
</system-out></testcase>
<testcase classname="swtbench-cli" name="cli::fails" time="3.0"><failure message="assert"/></testcase>
<testcase classname="swtbench-cli" name="cli::flaky" time="0.5">
<flakyFailure message="first"><system-out>SKIPPED: from a retry</system-out></flakyFailure>
<system-err>SKIPPED:   registry not running  </system-err></testcase>
<testcase classname="swtbench-cli" name="bad::time" time="n/a"/>
</testsuite></testsuites>
"""


def case(inner):
    return ET.fromstring(f'<testcase name="t">{inner}</testcase>')


class Parts(unittest.TestCase):
    def test_outcome(self):
        self.assertEqual(js.outcome(case('<failure/><system-out/>')), "FAILED")
        self.assertEqual(js.outcome(case('<error/>')), "FAILED")
        self.assertEqual(js.outcome(case('<skipped/>')), "ignored")
        self.assertEqual(js.outcome(case('<flakyFailure/>')), "flaky")
        self.assertEqual(js.outcome(case('<flakyError/>')), "flaky")
        self.assertEqual(js.outcome(case('<system-out>ok</system-out>')), "")

    def test_own_output_leaves_out_the_retries(self):
        c = case('<rerunFailure><system-out>old</system-out></rerunFailure>'
                 '<system-out>out</system-out><system-err>err</system-err><system-err/>')
        self.assertEqual(js.own_output(c), "out\nerr\n")


class CommandLine(unittest.TestCase):
    def run_script(self, *args):
        return subprocess.run([sys.executable, _path, *args], capture_output=True, text=True)

    def test_counts_slowest_and_skip_reasons(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "junit.xml")
            with open(path, "w") as f:
                f.write(REPORT)
            p = self.run_script(path, "2")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.splitlines(), [
                "5 tests, 17 s of test time (summed over tests run in parallel)",
                "the 2 slowest:",
                "      12.3 s  swtbench-engine build::image",
                "       3.0 s  swtbench-cli cli::fails  [FAILED]",
                "2 tests skipped",
                "  swtbench-cli cli::flaky: registry not running",
                "  swtbench-engine build::image: no Docker engine",
            ])
            p = self.run_script(path)  # N defaults to 15: all five, the flaky one marked
            self.assertIn("the 5 slowest:", p.stdout)
            self.assertIn("       0.5 s  swtbench-cli cli::flaky  [flaky]", p.stdout)
            self.assertIn("       0.0 s  swtbench-cli bad::time\n", p.stdout)

    def test_an_unreadable_report_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "junit.xml")
            with open(path, "w") as f:
                f.write("<testsuites><testcase")
            p = self.run_script(path)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn(f"junit-summary: cannot read {path}", p.stderr)
            p = self.run_script(os.path.join(d, "missing.xml"))
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("missing.xml", p.stderr)


if __name__ == "__main__":
    unittest.main()
