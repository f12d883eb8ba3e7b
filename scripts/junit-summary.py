#!/usr/bin/env python3
"""Summarises a nextest JUnit report (the `ci`, `fast` or `engine` profile's junit.xml) for
scripts/test: the test count and total test time, the N slowest tests, and the tests that skipped.

A test skips by printing a line that starts with `SKIPPED: ` (its reason) on stdout or stderr and
returning; the profiles keep the output of passing tests in the report, so such lines are found
there. Usage: junit-summary.py JUNIT_XML [N]. Prints to stdout; exit code 0 unless the report
cannot be read.
"""

import sys
import xml.etree.ElementTree as ET

MARK = "SKIPPED: "


def own_output(case):
    """The stdout and stderr of the test's final attempt (not of its retries)."""
    text = []
    for tag in ("system-out", "system-err"):
        for el in case.findall(tag):
            text.append(el.text or "")
    return "\n".join(text)


def outcome(case):
    for tag in ("failure", "error"):
        if case.find(tag) is not None:
            return "FAILED"
    if case.find("skipped") is not None:
        return "ignored"
    if case.find("flakyFailure") is not None or case.find("flakyError") is not None:
        return "flaky"
    return ""


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: junit-summary.py JUNIT_XML [N]")
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        sys.exit(f"junit-summary: cannot read {path}: {e}")

    cases = []
    for case in root.iter("testcase"):
        try:
            secs = float(case.get("time") or 0)
        except ValueError:
            secs = 0.0
        name = f"{case.get('classname', '')} {case.get('name', '')}".strip()
        reasons = [
            line[len(MARK):].strip()
            for line in own_output(case).splitlines()
            if line.startswith(MARK)
        ]
        cases.append((secs, name, outcome(case), reasons))

    total = sum(c[0] for c in cases)
    print(f"{len(cases)} tests, {total:.0f} s of test time (summed over tests run in parallel)")
    print(f"the {min(n, len(cases))} slowest:")
    for secs, name, out, _ in sorted(cases, key=lambda c: -c[0])[:n]:
        flag = f"  [{out}]" if out else ""
        print(f"  {secs:8.1f} s  {name}{flag}")

    skipped = [c for c in cases if c[3]]
    print(f"{len(skipped)} tests skipped")
    for _, name, _, reasons in sorted(skipped, key=lambda c: c[1]):
        print(f"  {name}: {reasons[0]}")


if __name__ == "__main__":
    main()
