"""Which instances a resumed gold campaign evaluates (scripts/gold-campaign's --skip-done step).

    python3 scripts/gold-select.py DONE_JSON WANTED TODO REDO UNFLAGGED [RUN FLAGS...]

DONE_JSON is a docs/gold-validation.json written by scripts/gold-summary; WANTED the phase's
instance ids (one per line); TODO the file written with the ids left to evaluate. REDO is a
regular expression (Python syntax) or empty, UNFLAGGED is 1 for --redo-unflagged, and the RUN
FLAGS are the ones given to `swtbench run` after `--` (they decide the invocation's test network).

An instance whose earlier result is settled (resolved, agreeing with the dataset) and which is
selected again only for its missing leaderboard flags keeps the test network it was evaluated
with: evaluated again under another one (an instance whose eval script installs from the package
index at test time, run isolated), it would fail where it had passed. Such instances are left out
and named with the flags that evaluate them under their own network.
"""
import json
import re
import sys

NETWORK_FLAGS = {"isolated": "--no-network", "engine": "(no network flag)",
                 "engine+ca": "--allow-network --ca-in-tests"}


def network_of(extra):
    """The test network of an invocation given the run flags `extra`, in gold-summary's names."""
    if "--no-network" in extra:
        return "isolated"
    return "engine+ca" if "--ca-in-tests" in extra else "engine"


def select(records, wanted, redo=None, unflagged=False, network=None):
    """(left, kept_apart): the ids of `wanted` to evaluate, and those of them that are left out
    because they would be evaluated again only for their flags under another test network than
    their recorded one, as (id, recorded network)."""
    by_id = {r["instance_id"]: r for r in records}
    left, apart = [], []
    for i in wanted:
        r = by_id.get(i)
        if r is None or r.get("status") in (None, "not_run", "no_mirror"):
            left.append(i)
            continue
        settled = r.get("status") == "resolved" and r.get("agrees_with_dataset", True)
        if redo is not None and redo.search(i) and not settled:
            left.append(i)
            continue
        if unflagged and not r.get("leaderboard"):
            recorded = r.get("test_network")
            if settled and network and recorded and recorded != network:
                apart.append((i, recorded))
            else:
                left.append(i)
    return left, apart


def main(argv):
    done_file, wanted_file, todo, redo, unflagged = argv[:5]
    network = network_of(argv[5:])
    try:
        again = re.compile(redo) if redo else None
    except re.error as e:
        sys.exit(f"gold-campaign: --redo {redo!r} is not a regular expression: {e}")
    try:
        with open(done_file) as f:
            records = json.load(f).get("instances", [])
    except (OSError, ValueError) as e:
        sys.exit(f"gold-campaign: cannot read {done_file} (--skip-done): {e}; give a "
                 "docs/gold-validation.json written by scripts/gold-summary")
    with open(wanted_file) as f:
        ids = [l.strip() for l in f if l.strip()]
    left, apart = select(records, ids, again, unflagged == "1", network)
    with open(todo, "w") as f:
        f.write("".join(i + "\n" for i in left))
    print(f"gold-campaign: {len(ids) - len(left)} of {len(ids)} instances already evaluated in "
          f"{done_file}; {len(left)} to go", file=sys.stderr)
    for recorded in sorted({n for _, n in apart}):
        names = [i for i, n in apart if n == recorded]
        print(f"gold-campaign: --redo-unflagged leaves out {len(names)} instance(s) evaluated with the "
              f"test network `{recorded}`, not this invocation's `{network}`: {', '.join(names)}; "
              f"evaluate them again under their own network (run flags {NETWORK_FLAGS.get(recorded, recorded)}, "
              f"e.g. with --only for their ids)", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
