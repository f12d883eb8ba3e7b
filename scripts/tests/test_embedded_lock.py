"""Tests of scripts/embedded-lock, which keeps a lock's resolved environments (run by scripts/test)."""
import contextlib
import importlib.machinery
import importlib.util
import io
import os
import tempfile
import unittest

_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "embedded-lock")
_loader = importlib.machinery.SourceFileLoader("embedded_lock", _path)
_spec = importlib.util.spec_from_loader("embedded_lock", _loader)
el = importlib.util.module_from_spec(_spec)
_loader.exec_module(el)

HEADER = "# swtbench environment lock, written by `swtbench envs lock`.\nformat = 1\n"
A = '[[env]]\nrepo = "a/a"\nsource = "resolved"\npins = [\n    "x==1",\n]\n'
B = '[[env]]\nrepo = "b/b"\nsource = "frozen"\norigin = "frozen pins"\n'
C = '[[env]]\nrepo = "c/c"\nsource = "resolved"\ninstances = ["c__c-1"]\n'


class Blocks(unittest.TestCase):
    def test_header_and_env_blocks(self):
        header, envs = el.blocks(HEADER + "\n" + A + "\n" + B)
        self.assertEqual(header, HEADER)
        self.assertEqual(envs, [A, B])

    def test_a_lock_without_entries_is_all_header(self):
        self.assertEqual(el.blocks(HEADER), (HEADER, []))


class Main(unittest.TestCase):
    def run_main(self, text):
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "all.lock"), os.path.join(d, "uv.lock")
            with open(src, "w") as f:
                f.write(text)
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                el.main(["embedded-lock", src, out])
            with open(out) as f:
                return f.read(), err.getvalue()

    def test_only_resolved_entries_are_kept_byte_for_byte(self):
        body, err = self.run_main(HEADER + "\n" + A + "\n" + B + "\n" + C)
        self.assertEqual(body, HEADER + "\n" + A + "\n" + C)
        self.assertIn("2 resolved environment(s) kept, 1 frozen left out", err)

    def test_an_all_frozen_lock_leaves_the_header(self):
        body, err = self.run_main(HEADER + "\n" + B)
        self.assertEqual(body, HEADER)
        self.assertIn("0 resolved environment(s) kept, 1 frozen left out", err)

    def test_a_last_entry_without_its_newline_is_read(self):
        body, err = self.run_main(HEADER + "\n" + B + "\n" + A.rstrip("\n").replace(
            'pins = [\n    "x==1",\n]', '').rstrip("\n"))
        self.assertIn("1 resolved environment(s) kept, 1 frozen left out", err)
        self.assertIn('repo = "a/a"', body)

    def test_refusals(self):
        with self.assertRaises(SystemExit) as e:
            self.run_main("format = 2\n\n" + A)
        self.assertIn("not a format 1 lock", str(e.exception))
        with self.assertRaises(SystemExit) as e:
            self.run_main(HEADER + "\n" + A + "\n" + A.replace('"resolved"', '"pinned"'))
        self.assertIn("an entry is neither resolved nor frozen", str(e.exception))
        with self.assertRaises(SystemExit) as e:
            el.main(["embedded-lock"])
        self.assertIn("Usage: scripts/embedded-lock LOCK [OUT]", str(e.exception))


if __name__ == "__main__":
    unittest.main()
