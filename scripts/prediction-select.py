#!/usr/bin/env python3
"""Which predictions a prediction campaign evaluates: those whose instance is in the campaign's
reachable instances (SWT-Bench Lite ∪ Verified after the filter, with a mirror: the gold
campaign's all.txt) and, with a pattern, whose id matches it. Says how many of the file's
predictions are left out and why (not in the filtered benchmarks, no mirror), naming a few.

Usage: prediction-select.py PREDICTIONS REACHABLE OUT [REGEX]
"""
import json
import re
import sys


def read_prediction_ids(path):
    """The instance ids of a .jsonl or .json predictions file, in file order, once each."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    stripped = text.lstrip()
    if stripped.startswith("["):
        records = json.loads(text)
    elif stripped.startswith("{") and not path.endswith(".jsonl"):
        loaded = json.loads(text)
        records = list(loaded.values()) if "instance_id" not in loaded else [loaded]
    else:
        records = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"prediction-select: {path}:{n}: not JSON ({e})")
    ids = []
    for r in records:
        i = r.get("instance_id") if isinstance(r, dict) else None
        if not isinstance(i, str):
            sys.exit(f"prediction-select: {path}: a record without an instance_id")
        if i not in ids:
            ids.append(i)
    return ids


def select(prediction_ids, reachable, only=None):
    """(selected ids sorted, left-out ids sorted, ids the pattern dropped sorted)."""
    keep = re.compile(only) if only else None
    chosen, missing, unmatched = [], [], []
    for i in prediction_ids:
        if i not in reachable:
            missing.append(i)
        elif keep is not None and not keep.search(i):
            unmatched.append(i)
        else:
            chosen.append(i)
    return sorted(chosen), sorted(missing), sorted(unmatched)


def main(argv):
    if len(argv) not in (4, 5):
        sys.exit(__doc__.strip().splitlines()[-1])
    predictions, reachable_path, out = argv[1:4]
    only = argv[4] if len(argv) == 5 and argv[4] else None
    if only:
        try:
            re.compile(only)
        except re.error as e:
            sys.exit(f"prediction-campaign: --only {only!r} is not a regular expression: {e}")
    with open(reachable_path, encoding="utf-8") as f:
        reachable = {l.strip() for l in f if l.strip()}
    ids = read_prediction_ids(predictions)
    chosen, missing, unmatched = select(ids, reachable, only)
    with open(out, "w", encoding="utf-8") as f:
        f.write("".join(i + "\n" for i in chosen))
    msg = f"prediction-campaign: {len(chosen)} of {len(ids)} predictions to evaluate"
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        msg += f"; {len(missing)} not in SWT-Bench Lite ∪ Verified after the filter or without a mirror ({shown})"
    if unmatched:
        msg += f"; {len(unmatched)} left out by --only"
    print(msg, file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
