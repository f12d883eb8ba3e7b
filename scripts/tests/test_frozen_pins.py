"""Tests of scripts/frozen-pins.py, frozen conda environments to pip pins (run by scripts/test)."""
import gzip
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "frozen-pins.py")
_spec = importlib.util.spec_from_file_location("frozen_pins", _path)
fp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fp)

YML = """name: testbed
channels:
  - conda-forge
dependencies:
  - _libgcc_mutex=0.1=conda_forge
  - python=PY=h955ad1f_1
  - python_abi=3.9=5_cp39
  - tzdata=2024a=h04d1e81_0
  - numpy=1.19.2=py39h89c1606_0
  - numpy-base=1.19.2=py39h2ae0177_0
  - matplotlib-base=3.5.0=py39h2fa2bec_0
  - six=1.16.0=pyhd3eb1b0_1
  - backports.zoneinfo=0.2.1=py39hf3d152e_9
  - cdms2=3.1.5=py39h_0
  - astropy=5.0=py39h_0
  - attrs-meta=1.0=hd8ed1ab_0
  - pip=24.0=py_0
  - pip:
      - Six==1.15.0
      - requests==2.0
prefix: /opt/conda/envs/testbed
"""
COMMON_DROPS = ["conda-only: _libgcc_mutex", "conda-only: python_abi", "conda-only: tzdata",
                "part of numpy: numpy-base", "not served from PyPI (not on PyPI): cdms2==3.1.5"]


class Convert(unittest.TestCase):
    def test_python_3_9_applies_every_rule(self):
        python, pins, dropped = fp.convert(YML.replace("PY", "3.9.20"), "astropy/astropy")
        self.assertEqual(python, "3.9.20")
        self.assertEqual(pins, ["Six==1.15.0", "attrs-meta==1.0", "matplotlib==3.5.0", "numpy==1.19.3",
                                "pip==24.0", "requests==2.0"])
        self.assertEqual(dropped, sorted(COMMON_DROPS + [
            "in the standard library from Python 3.9 (zoneinfo): backports.zoneinfo==0.2.1",
            "no wheel for Python 3.9 on PyPI, the nearest release with one instead: numpy==1.19.2 -> 1.19.3",
            "the project itself (installed from the checkout): astropy"]))

    def test_python_3_8_keeps_the_backport_the_build_and_another_projects_package(self):
        python, pins, dropped = fp.convert(YML.replace("PY", "3.8.18"), "psf/requests")
        self.assertEqual(python, "3.8.18")
        self.assertEqual(pins, ["Six==1.15.0", "astropy==5.0", "attrs-meta==1.0", "backports.zoneinfo==0.2.1",
                                "matplotlib==3.5.0", "numpy==1.19.2", "pip==24.0"])
        self.assertEqual(dropped, sorted(COMMON_DROPS + ["the project itself (installed from the checkout): requests"]))

    def test_refusals_and_names(self):
        self.assertEqual(fp.norm("Backports_Zone.Info"), "backports-zone-info")
        with self.assertRaises(SystemExit) as e:
            fp.convert("dependencies:\n  - six=1.16.0=pyh_0\n", "a/a")
        self.assertIn("without python", str(e.exception))
        with self.assertRaises(SystemExit) as e:
            fp.convert(YML.replace("PY", "3.9.20").replace("requests==2.0", "-e ."), "a/a")
        self.assertIn("unexpected pip line '      - -e .'", str(e.exception))


class CommandLine(unittest.TestCase):
    def test_500_instances_share_two_environments_in_a_reproducible_gzip(self):
        ids = [f"psf__requests-{k}" for k in range(500)]
        envs = {i: YML.replace("PY", "3.9.20" if k % 2 else "3.8.18") for k, i in enumerate(ids)}
        with tempfile.TemporaryDirectory() as d:
            frozen, verified, out = (os.path.join(d, n) for n in ("frozen.json", "v.jsonl", "pins.json.gz"))
            with open(frozen, "w") as f:
                json.dump({"_source": "Test environments.", "environments": envs}, f)
            with open(verified, "w") as f:
                f.write("".join(json.dumps({"instance_id": i, "repo": "psf/requests", "version": "2.0"}) + "\n"
                                for i in ids))
            p = subprocess.run([sys.executable, _path, frozen, verified, out], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out, "rb") as f:
                raw = f.read()
        self.assertEqual(raw[4:8], b"\0\0\0\0")  # no timestamp in the gzip header
        doc = json.loads(gzip.decompress(raw))
        self.assertEqual(doc["format"], 1)
        self.assertEqual(doc["source"], "Test environments. Converted by scripts/frozen-pins.py.")
        _, pins, _ = fp.convert(envs[ids[1]], "psf/requests")
        key = hashlib.sha256(("python==3.9.20\n" + "\n".join(pins)).encode()).hexdigest()[:16]
        self.assertEqual(len(doc["environments"]), 2)
        self.assertEqual(doc["environments"][key]["pins"], pins)
        self.assertEqual(doc["instances"][ids[1]], {"repo": "psf/requests", "version": "2.0", "env": key})
        self.assertNotEqual(doc["instances"][ids[0]]["env"], key)
        self.assertIn("500 instances, 2 environments, 13 pins", p.stdout)

    def test_anything_but_500_instances_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            frozen, verified = os.path.join(d, "f.json"), os.path.join(d, "v.jsonl")
            with open(frozen, "w") as f:
                json.dump({"_source": "", "environments": {"a__a-1": YML.replace("PY", "3.9.20")}}, f)
            with open(verified, "w") as f:
                f.write(json.dumps({"instance_id": "a__a-1", "repo": "a/a", "version": "1"}) + "\n")
            p = subprocess.run([sys.executable, _path, frozen, verified, os.path.join(d, "o.gz")],
                               capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("expected 500 Verified instances, got 1", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "o.gz")))


if __name__ == "__main__":
    unittest.main()
