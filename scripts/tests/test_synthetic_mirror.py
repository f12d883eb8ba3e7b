"""Tests of scripts/synthetic-mirror.py, the large synthetic bare mirror (run by scripts/test)."""
import contextlib
import importlib.util
import io
import os
import random
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "synthetic-mirror.py")
_spec = importlib.util.spec_from_file_location("synthetic_mirror", _path)
sm = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sm)

GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


class Small(random.Random):
    """The script's generator with every blob a thousandth of its size (16 KB -> 16 bytes of hex)."""
    def randbytes(self, n):
        return super().randbytes(n // 1000)


def build(out, commits):
    """Runs the script's main in-process with the small blobs; returns the mirror path it prints."""
    stdout = io.StringIO()
    with mock.patch.object(sm, "random", types.SimpleNamespace(Random=Small)), \
            mock.patch.object(sys, "argv", ["synthetic-mirror.py", out, str(commits)]), \
            mock.patch.dict(os.environ, GIT_ENV), contextlib.redirect_stdout(stdout):
        sm.main()
    return stdout.getvalue().strip()


def git(mirror, *args):
    return subprocess.run(["git", "-C", mirror, *args], capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT_ENV}).stdout


class SyntheticMirror(unittest.TestCase):
    def test_fewer_than_two_commits_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            for n in (0, 1):
                with self.assertRaises(SystemExit) as e:
                    build(os.path.join(d, f"m{n}"), n)
                self.assertIn("at least 2", str(e.exception))

    def test_history_tags_and_feature_branch(self):
        with tempfile.TemporaryDirectory() as d:
            mirror = build(d, 201)
            self.assertEqual(mirror, os.path.join(d, "mirrors", "bench__big.git"))
            self.assertEqual(git(mirror, "rev-parse", "--is-bare-repository").strip(), "true")
            self.assertEqual(git(mirror, "rev-list", "--count", "main").strip(), "201")
            first = git(mirror, "ls-tree", "-r", "-l", "main~200").splitlines()
            self.assertEqual(len(first), 1501)
            sizes = {line.split("\t")[1]: int(line.split()[3]) for line in first}
            self.assertEqual(sizes["pkg/mod0/file0.py"], 17)  # 8 random bytes as hex, and a newline
            self.assertEqual(sizes["pkg/mod14/file1499.py"], 17)
            self.assertIn(b"setup(name='big')", git(mirror, "show", "main~200:setup.py").encode())
            for rev in ("main", "main~1", "main~100"):
                changed = git(mirror, "diff-tree", "--no-commit-id", "-r", "-l0", "--name-only", rev).split()
                self.assertEqual(len(changed), 2)
                self.assertTrue(all(p.startswith("pkg/mod") for p in changed))
                for p in changed:
                    self.assertIn(int(git(mirror, "cat-file", "-s", f"{rev}:{p}")), (21, 41, 61))
            # One tag, on commit 200, annotated.
            self.assertEqual(git(mirror, "tag").split(), ["v1.0"])
            self.assertEqual(git(mirror, "cat-file", "-t", "v1.0").strip(), "tag")
            self.assertEqual(git(mirror, "log", "-1", "--format=%s", "v1.0^{commit}").strip(), "commit 200")
            # feature: one commit off mark int(201 * 0.75) = 150, the 150th commit ("commit 149").
            self.assertEqual(git(mirror, "log", "-1", "--format=%s", "feature~1").strip(), "commit 149")
            self.assertEqual(git(mirror, "diff-tree", "--no-commit-id", "-r", "--name-only", "feature").split(),
                             ["feature.txt"])
            self.assertEqual(int(git(mirror, "cat-file", "-s", "feature:feature.txt")), 201)
            self.assertEqual(git(mirror, "count-objects", "-v").split("\n")[0], "count: 0")  # all packed

    def test_every_run_writes_the_same_repository(self):
        with tempfile.TemporaryDirectory() as d:
            a, b = build(os.path.join(d, "a"), 3), build(os.path.join(d, "b"), 3)
            refs = git(a, "show-ref")
            self.assertEqual(refs, git(b, "show-ref"))
            self.assertEqual(len(refs.splitlines()), 2)  # main and feature, no tag under 200 commits


if __name__ == "__main__":
    unittest.main()
