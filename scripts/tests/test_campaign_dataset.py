"""Tests of scripts/campaign-dataset.py, the campaigns' dataset and instance lists (run by scripts/test)."""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unittest

_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "campaign-dataset.py")


def row(iid, repo, version, origin):
    return {"instance_id": iid, "repo": repo, "version": version, "origin": origin}


# Lite drops a__x-3, Verified drops b__y-1; a__x-2 is in both (Lite's row is kept).
LITE = [row("a__x-1", "a/x", "1.0", "lite"), row("a__x-2", "a/x", "1.0", "lite"),
        row("a__x-3", "a/x", "1.0", "lite"), row("b__y-1", "b/y", "2.0", "lite")]
VERIFIED = [row("a__x-2", "a/x", "1.0", "verified"), row("a__x-3", "a/x", "1.0", "verified")]
VERIFIED += [row(f"a__x-{k}", "a/x", "1.0", "verified") for k in (4, 5, 6)]
VERIFIED += [row("a__x-7", "a/x", "2.0", "verified"), row("b__y-1", "b/y", "2.0", "verified")]


class CampaignDataset(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.checkout, self.out, self.mirrors = (os.path.join(d, n) for n in ("co", "out", "mirrors"))
        os.makedirs(os.path.join(self.checkout, "assets", "datasets"))
        os.makedirs(os.path.join(self.checkout, "assets", "swt-filters"))
        os.makedirs(self.out)
        os.makedirs(os.path.join(self.mirrors, "a__x.git"))  # b/y has no mirror
        for name, rows in [("swe-bench-lite.test.jsonl.gz", LITE), ("swe-bench-verified.test.jsonl.gz", VERIFIED)]:
            with gzip.open(os.path.join(self.checkout, "assets", "datasets", name), "wt") as f:
                f.write("".join(json.dumps(r) + "\n" for r in rows) + "\n")
        self.filters("a__x-3\n", "\nb__y-1\n")

    def tearDown(self):
        self.tmp.cleanup()

    def filters(self, lite, verified):
        for name, text in [("lite.txt", lite), ("verified.txt", verified)]:
            with open(os.path.join(self.checkout, "assets", "swt-filters", name), "w") as f:
                f.write(text)

    def run_script(self):
        p = subprocess.run([sys.executable, _path, self.checkout, self.out, self.mirrors],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def read(self, name):
        with open(os.path.join(self.out, name)) as f:
            return f.read()

    def test_union_after_the_filters_lists_and_sample(self):
        p = self.run_script()
        rows = [json.loads(l) for l in self.read("dataset.jsonl").splitlines()]
        self.assertEqual([r["instance_id"] for r in rows],
                         ["a__x-1", "a__x-2", "a__x-3", "a__x-4", "a__x-5", "a__x-6", "a__x-7", "b__y-1"])
        origin = {r["instance_id"]: r["origin"] for r in rows}
        self.assertEqual((origin["a__x-2"], origin["a__x-3"], origin["b__y-1"]), ("lite", "verified", "lite"))
        self.assertEqual(json.loads(self.read("benchmarks.json"))["a__x-2"], ["lite", "verified"])
        self.assertEqual(json.loads(self.read("benchmarks.json"))["a__x-3"], ["verified"])
        self.assertEqual(self.read("all.txt").split(), [f"a__x-{k}" for k in range(1, 8)])
        self.assertEqual(self.read("unreachable.txt"), "b__y-1\n")
        # (a/x, 1.0) has 6 members: positions round(0), round(2.5) = 2, round(5); (a/x, 2.0) has one.
        self.assertEqual(self.read("sample.txt").split(), ["a__x-1", "a__x-3", "a__x-6", "a__x-7"])
        self.assertIn("8 instances in Lite ∪ Verified after the filter, 3 (repo, version) environments; "
                      "7 instances in 2 environments have a mirror; sample 4; without a mirror 1", p.stderr)

    def test_the_dataset_is_written_once_the_lists_every_time(self):
        self.run_script()
        first = self.read("dataset.jsonl")
        self.filters("", "b__y-1\n")  # a__x-3 now also comes from Lite
        self.run_script()
        self.assertEqual(self.read("dataset.jsonl"), first)
        self.assertEqual(json.loads(self.read("benchmarks.json"))["a__x-3"], ["lite", "verified"])
        self.assertFalse(os.path.exists(os.path.join(self.out, "dataset.jsonl.tmp")))


if __name__ == "__main__":
    unittest.main()
