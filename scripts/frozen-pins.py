#!/usr/bin/env python3
"""Converts the frozen conda environments of SWE-bench Verified into pip pins for the uv provider.

Usage: scripts/frozen-pins.py FROZEN_JSON VERIFIED_JSONL OUT_JSON_GZ

FROZEN_JSON is swebench_verified_frozen_environments.json ({"_source", "environments": {id: yml}}),
VERIFIED_JSONL the Verified test split (for each instance's repo and version). The output is
gzip -9 of a JSON document with sorted keys and no timestamp, so reruns on unchanged input change
nothing:

  {"format": 1, "source": …, "rules": …,
   "environments": {"<sha256[:16] of the pins>": {"python": "3.9.20", "pins": ["attrs==23.1.0", …],
                                                   "dropped": ["conda-only: libgcc-ng", …]}},
   "instances": {"<instance id>": {"repo": …, "version": …, "env": "<key>"}}}

The rules (also in docs/environments.md):
- A conda package is a Python package when its build string carries a Python tag (py39h…, pyh…,
  py_0, nompi_py310…) or is a noarch metapackage (hd8ed1ab_*): it becomes NAME==VERSION on PyPI,
  under its PyPI name (RENAME). Every other conda package (C libraries, compilers' runtimes, fonts,
  python itself, python_abi, tzdata, openssl, …) is conda-only and dropped.
- A few Python packages are not served from PyPI (UNSERVED: not on PyPI, or only as sources that
  need system libraries the slim Python image lacks); they are dropped and named.
- pip, setuptools and wheel are kept at their frozen versions (they decide how the project itself
  builds and installs).
- The pip section's pins are kept as they are; a pip pin wins over a conda package of the same
  (normalised) name, as it does in the conda environment (pip installs over conda).
- Backports of a standard-library module (STDLIB_FROM: backports.zoneinfo) are dropped on the
  Python versions whose standard library has the module (3.9+): their sources do not build there.
- A few conda builds have no wheel on PyPI for the environment's Python, and their sources do not
  build on a slim image (NO_WHEEL: NumPy 1.19.2 and SciPy 1.5.2 on 3.9): the nearest later release
  of the same minor version that has one is pinned instead, and named.
- The project's own distribution is left out: it is installed from the checkout.
"""
import gzip
import hashlib
import json
import re
import sys

RENAME = {
    "matplotlib-base": "matplotlib",
    "seaborn-base": "seaborn",
    "nbconvert-core": "nbconvert",
    "msgpack-python": "msgpack",
    "brotli-python": "brotli",
    "python-tzdata": "tzdata",
    "python-fastjsonschema": "fastjsonschema",
    "python-xxhash": "xxhash",
    "python-eccodes": "eccodes",
    "pyqt": "pyqt5",
    "pyqt5-sip": "pyqt5-sip",
    "antlr-python-runtime": "antlr4-python3-runtime",
    "iris": "scitools-iris",
    "setuptools_scm": "setuptools-scm",
}
# Conda packages that are parts of another one (installed with it from PyPI).
PART_OF = {"numpy-base": "numpy", "pyarrow-core": "pyarrow", "pybind11-global": "pybind11",
           "nbconvert-pandoc": "nbconvert", "bleach-with-css": "bleach"}
UNSERVED = {
    "cdat_info": "not on PyPI", "cdms2": "not on PyPI", "cdtime": "not on PyPI",
    "distarray": "not on PyPI", "libcf": "not on PyPI",
    "esmpy": "needs the ESMF C library (conda only)",
    "wxpython": "builds from source against GTK",
    "pygobject": "builds from source against GObject introspection",
    "pycairo": "builds from source against cairo",
}
# Backports of a standard-library module: not needed (and their sources no longer build) from the
# Python version given on; conda-forge serves an empty shim there, PyPI only the source.
STDLIB_FROM = {"backports.zoneinfo": ((3, 9), "zoneinfo")}
# Conda builds PyPI has no wheel of for the environment's Python, whose sources do not build on a
# slim Python image (SciPy needs Fortran and BLAS; SciPy 1.5.2's build requires NumPy 1.17.3,
# whose numpy.distutils fails under today's setuptools): (name, version, Python) → the nearest later
# release of the same minor version with a wheel for that Python (checked with pip download
# --only-binary=:all: for cp39 manylinux x86_64). scikit-learn 1.3's 25747 failed on them.
NO_WHEEL = {
    ("numpy", "1.19.2", (3, 9)): "1.19.3",
    ("scipy", "1.5.2", (3, 9)): "1.5.4",
}
PROJECT = {
    "astropy/astropy": "astropy", "django/django": "django", "matplotlib/matplotlib": "matplotlib",
    "mwaskom/seaborn": "seaborn", "pallets/flask": "flask", "psf/requests": "requests",
    "pydata/xarray": "xarray", "pylint-dev/pylint": "pylint", "pytest-dev/pytest": "pytest",
    "scikit-learn/scikit-learn": "scikit-learn", "sphinx-doc/sphinx": "sphinx",
    "sympy/sympy": "sympy",
}
PY_BUILD = re.compile(r"(^|_)py(\d|h|_|$)")
META_BUILD = re.compile(r"^hd8ed1ab_\d+$")


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def convert(yml, repo):
    python = None
    conda, pip, dropped = {}, {}, []
    in_pip = False
    for line in yml.splitlines():
        if line.startswith("  - pip:"):
            in_pip = True
            continue
        m = re.match(r"^      - (\S+)==(\S+)$", line)
        if in_pip and m:
            pip[norm(m.group(1))] = (m.group(1), m.group(2))
            continue
        if re.match(r"^      - ", line):
            raise SystemExit(f"unexpected pip line {line!r}")
        m = re.match(r"^  - ([^=\s]+)=([^=]+)=(\S+)$", line)
        if not m:
            in_pip = False if not line.startswith("      ") else in_pip
            continue
        in_pip = False
        name, version, build = m.groups()
        if name == "python":
            python = version
            continue
        if not (PY_BUILD.search(build) or META_BUILD.match(build)):
            dropped.append(f"conda-only: {name}")
            continue
        if name in PART_OF:
            dropped.append(f"part of {PART_OF[name]}: {name}")
            continue
        if name in UNSERVED:
            dropped.append(f"not served from PyPI ({UNSERVED[name]}): {name}=={version}")
            continue
        pypi = RENAME.get(name, name)
        conda.setdefault(norm(pypi), (pypi, version))
    if python is None:
        raise SystemExit("environment without python")
    merged = dict(conda)
    merged.update(pip)  # pip installs over conda
    py = tuple(int(x) for x in python.split(".")[:2])
    for name, (since, module) in STDLIB_FROM.items():
        if py >= since and norm(name) in merged:
            n, v = merged.pop(norm(name))
            dropped.append(f"in the standard library from Python {since[0]}.{since[1]} ({module}): {n}=={v}")
    for (name, version, on), newer in NO_WHEEL.items():
        if py == on and merged.get(norm(name), (None, None))[1] == version:
            merged[norm(name)] = (merged[norm(name)][0], newer)
            dropped.append(f"no wheel for Python {on[0]}.{on[1]} on PyPI, the nearest release with one instead: "
                           f"{name}=={version} -> {newer}")
    own = PROJECT.get(repo)
    if own and own in merged:
        dropped.append(f"the project itself (installed from the checkout): {merged.pop(own)[0]}")
    pins = sorted(f"{n}=={v}" for n, v in merged.values())
    return python, pins, sorted(set(dropped))


def main():
    frozen_path, verified_path, out = sys.argv[1:4]
    frozen = json.load(open(frozen_path))
    rows = [json.loads(l) for l in open(verified_path) if l.strip()]
    envs, instances = {}, {}
    for row in rows:
        iid = row["instance_id"]
        python, pins, dropped = convert(frozen["environments"][iid], row["repo"])
        key = hashlib.sha256(("python==" + python + "\n" + "\n".join(pins)).encode()).hexdigest()[:16]
        envs[key] = {"python": python, "pins": pins, "dropped": dropped}
        instances[iid] = {"repo": row["repo"], "version": row["version"], "env": key}
    if len(instances) != 500:
        raise SystemExit(f"expected 500 Verified instances, got {len(instances)}")
    doc = {
        "format": 1,
        "source": frozen["_source"] + " Converted by scripts/frozen-pins.py.",
        "environments": envs,
        "instances": instances,
    }
    data = json.dumps(doc, sort_keys=True, indent=0, separators=(",", ":")).encode() + b"\n"
    with open(out + ".tmp", "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", compresslevel=9, mtime=0, filename="") as g:
            g.write(data)
    import os
    os.replace(out + ".tmp", out)
    print(f"{os.path.basename(out)}: {len(instances)} instances, {len(envs)} environments, "
          f"{sum(len(e['pins']) for e in envs.values())} pins, {os.path.getsize(out)} bytes compressed")


if __name__ == "__main__":
    main()
