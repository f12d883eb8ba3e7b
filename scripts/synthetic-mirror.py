#!/usr/bin/env python3
"""A large synthetic repository, as a bare mirror, for measuring instance image builds from
`--repo-mirror` (docs/spec-table.md, "Repository mirrors in image builds").

    scripts/synthetic-mirror.py DIR [COMMITS]

writes DIR/mirrors/bench__big.git: a first commit of 1 500 files of 16 KB of random hex text, then
COMMITS-1 commits (default 8000) on `main` that each rewrite two files with 20–60 KB of fresh random
text, a tag `vN.0` every 200 commits, and a branch `feature` off the commit three quarters of the way
with a 200 KB file of its own. With 8 000 commits the mirror is about 370 MB (57 000 objects).
The content is seeded, so every run writes the same repository.
"""
import os
import random
import subprocess
import sys


def main():
    out = sys.argv[1]
    n_commits = int(sys.argv[2]) if len(sys.argv) > 2 else 8000
    if n_commits < 2:
        sys.exit(f"synthetic-mirror: COMMITS must be at least 2 (the feature branch starts "
                 f"three quarters of the way), not {n_commits}")
    n_files = 1500
    rnd = random.Random(1)
    mirror = os.path.join(out, "mirrors", "bench__big.git")
    os.makedirs(os.path.dirname(mirror), exist_ok=True)
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", mirror], check=True)
    p = subprocess.Popen(["git", "-C", mirror, "fast-import", "--quiet"], stdin=subprocess.PIPE)
    w = p.stdin.write
    t0 = 1600000000
    mark = 0

    def blob(size):
        return rnd.randbytes(size // 2).hex().encode() + b"\n"

    def commit(ref, i, files):
        nonlocal mark
        mark += 1
        msg = f"commit {i}".encode()
        w(f"commit {ref}\nmark :{mark}\ncommitter T <t@example.invalid> {t0 + i * 60} +0000\n".encode())
        w(b"data %d\n%s\n" % (len(msg), msg))
        for path, data in files:
            w(f"M 100644 inline {path}\n".encode())
            w(b"data %d\n%s\n" % (len(data), data))
        return mark

    files = [(f"pkg/mod{k // 100}/file{k}.py", blob(16000)) for k in range(n_files)]
    files.append(("setup.py", b"from setuptools import setup\nsetup(name='big')\n"))
    commit("refs/heads/main", 0, files)
    for i in range(1, n_commits):
        changed = [
            (f"pkg/mod{k // 100}/file{k}.py", blob(rnd.choice([20000, 40000, 60000])))
            for k in rnd.sample(range(n_files), 2)
        ]
        m = commit("refs/heads/main", i, changed)
        if i % 200 == 0:
            w(f"tag v{i // 200}.0\nfrom :{m}\ntagger T <t@example.invalid> {t0 + i * 60} +0000\n".encode())
            w(b"data 7\nrelease\n")
    w(f"reset refs/heads/feature\nfrom :{int(n_commits * 0.75)}\n".encode())
    commit("refs/heads/feature", n_commits + 1, [("feature.txt", blob(200000))])
    p.stdin.close()
    if p.wait() != 0:
        sys.exit("git fast-import failed")
    subprocess.run(["git", "-C", mirror, "repack", "-adq"], check=True)
    print(mirror)


if __name__ == "__main__":
    main()
