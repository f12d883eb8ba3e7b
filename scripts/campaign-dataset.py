#!/usr/bin/env python3
"""The campaigns' dataset and selection: SWE-bench Lite ∪ Verified after SWT-Bench's filter (the
embedded copies in assets/), written once to OUT/dataset.jsonl, which instances each benchmark
holds (OUT/benchmarks.json), and the instance lists OUT/sample.txt (up to 3 of each (repo,
version) with a mirror), OUT/all.txt (every instance with a mirror) and OUT/unreachable.txt.

Usage: campaign-dataset.py CHECKOUT OUT MIRRORS

The gold and the prediction campaigns share it, so that both evaluate the same dataset rows (the
same image keys, the gold runs the prediction runs' coverage Δ is relative to).
"""
import gzip, json, os, sys
here, out, mirrors = sys.argv[1:4]
def rows(name):
    with gzip.open(os.path.join(here, "assets/datasets", name), "rt") as f:
        return [json.loads(l) for l in f if l.strip()]
def excluded(name):
    with open(os.path.join(here, "assets/swt-filters", name)) as f:
        return {l.strip() for l in f if l.strip()}
union, source = {}, {}
for name, flt, label in [("swe-bench-lite.test.jsonl.gz", "lite.txt", "lite"),
                         ("swe-bench-verified.test.jsonl.gz", "verified.txt", "verified")]:
    drop = excluded(flt)
    for r in rows(name):
        if r["instance_id"] in drop:
            continue
        union.setdefault(r["instance_id"], r)
        source.setdefault(r["instance_id"], []).append(label)
ids = sorted(union)
dataset = os.path.join(out, "dataset.jsonl")
if not os.path.exists(dataset):
    with open(dataset + ".tmp", "w") as f:
        for i in ids:
            f.write(json.dumps(union[i], sort_keys=True) + "\n")
    os.replace(dataset + ".tmp", dataset)
with open(os.path.join(out, "benchmarks.json"), "w") as f:
    json.dump(source, f, indent=1, sort_keys=True)
def has_mirror(repo):
    return os.path.isdir(os.path.join(mirrors, repo.replace("/", "__") + ".git"))
by_env = {}
for i in ids:
    r = union[i]
    by_env.setdefault((r["repo"], r["version"]), []).append(i)
sample, reachable, unreachable = [], [], []
for (repo, version), members in sorted(by_env.items()):
    if not has_mirror(repo):
        unreachable.extend(members)
        continue
    reachable.extend(members)
    n = len(members)
    picks = sorted({round(k * (n - 1) / 2) for k in range(3)}) if n > 1 else [0]
    sample.extend(members[p] for p in picks[:3])
for name, values in [("sample.txt", sample), ("all.txt", reachable), ("unreachable.txt", unreachable)]:
    with open(os.path.join(out, name), "w") as f:
        f.write("".join(v + "\n" for v in sorted(values)))
envs = sum(1 for (repo, _) in by_env if has_mirror(repo))
print(f"campaign-dataset: {len(ids)} instances in Lite ∪ Verified after the filter, {len(by_env)} (repo, version) "
      f"environments; {len(reachable)} instances in {envs} environments have a mirror; sample {len(sample)}; "
      f"without a mirror {len(unreachable)}", file=sys.stderr)
