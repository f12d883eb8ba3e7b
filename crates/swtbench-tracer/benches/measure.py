"""Runs a command several times; prints the median wall-clock and CPU seconds as JSON.

    measure.py REPEAT CWD -- COMMAND...

CPU time is user + system time of the command and everything it waited for (RUSAGE_CHILDREN),
which is steadier than wall-clock time on a machine that other work shares.
"""
import json
import resource
import subprocess
import sys
import time


def main():
    repeat = int(sys.argv[1])
    cwd = sys.argv[2]
    command = sys.argv[sys.argv.index("--") + 1:]
    walls, cpus, statuses = [], [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        status = subprocess.call(command, cwd=cwd, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        statuses.append(status)
    walls.sort()
    cpus.sort()
    print(json.dumps({"wall": walls[len(walls) // 2], "cpu": cpus[len(cpus) // 2],
                      "statuses": statuses}))


if __name__ == "__main__":
    main()
