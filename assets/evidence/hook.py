# swtbench's evidence hook (docs/integrity.md, "Evidence the tests cannot write into").
#
# A `.pth` line that swtbench puts into the environment's site-packages for one run executes this
# file at the start of every Python process of that environment, with KEY_PATH set. It does
# nothing unless KEY_PATH exists and this process is the test runner (pytest, Django's
# runtests.py); then it claims the key file (rename: one process wins), reads the run's secret and
# the evidence path from it and deletes it, all before any test module is imported. From then on
# it appends the runner's own results to the evidence file, one JSON record per line, each
# followed by a tab and an HMAC-SHA256 chained over the previous line's MAC, so that lines written
# by anything without the secret are told apart. It prints nothing: the log stays the original's.
#
# Records: {"t": "start", "runner", "pid"}; pytest {"t": "r", "id", "rid", "when", "o", "x"}
# (one per test phase report), {"t": "c", "id", "o"} (failed collection); unittest {"t": "u",
# "name", "o"}; {"t": "child"} (a process was started); {"t": "net", "addr"} (the runner's
# process connected to a non-loopback address: once per address, at most 16); {"t": "cov",
# "text"} (what the coverage tracer appended to its cover file); {"t": "end", "exit"}.
#
# Syntax stays within Python 3.5 (the oldest environments of the benchmarks).

import os
import sys


def _swtbench_runner(argv):
    """Which test runner this command line starts, or None."""
    words = [w.decode("utf-8", "replace") for w in argv if w]
    for i, word in enumerate(words):
        base = word.rsplit("/", 1)[-1]
        if base in ("pytest", "py.test", "pytest.py") or base.startswith("pytest-3"):
            return "pytest"
        if word == "-m" and i + 1 < len(words) and words[i + 1] in ("pytest", "py.test"):
            return "pytest"
        if base == "runtests.py":
            return "unittest"
    return None


def _swtbench_start(key_path):
    try:
        with open("/proc/self/cmdline", "rb") as handle:
            argv = handle.read().split(b"\0")
    except (IOError, OSError):
        return None
    runner = _swtbench_runner(argv)
    if runner is None:
        return None
    claimed = "%s.%d" % (key_path, os.getpid())
    try:
        os.rename(key_path, claimed)
    except OSError:
        return None  # another process took it
    try:
        with open(claimed, "rb") as handle:
            lines = handle.read().decode("ascii").split("\n")
    finally:
        try:
            os.unlink(claimed)
        except OSError:
            pass
    secret = bytes(bytearray.fromhex(lines[0].strip()))
    path = lines[1].strip()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    return _Writer(fd, secret, runner)


class _Writer(object):
    def __init__(self, fd, secret, runner):
        import hashlib
        import hmac
        import json

        self._fd = fd
        self._pid = os.getpid()
        self._previous = b""
        self._new = lambda data: hmac.new(secret, data, hashlib.sha256).hexdigest()
        self._dumps = lambda obj: json.dumps(
            obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True
        )
        self.runner = runner
        self.ended = False
        self.record({"t": "start", "runner": runner, "pid": self._pid})

    def record(self, obj):
        if os.getpid() != self._pid:
            return  # a forked child: only the runner's own process writes
        try:
            line = self._dumps(obj).encode("ascii")
            mac = self._new(self._previous + line).encode("ascii")
            self._previous = mac
            data = memoryview(line + b"\t" + mac + b"\n")
            while len(data):
                data = data[os.write(self._fd, data):]
        except Exception:
            pass


def _swtbench_pytest_plugin(writer, name):
    state = {"config": None}
    previous = os.environ.get("PYTEST_PLUGINS")

    def pytest_configure(config):
        state["config"] = config
        # Inner sessions and child processes must not load the plugin again.
        if previous is None:
            os.environ.pop("PYTEST_PLUGINS", None)
        else:
            os.environ["PYTEST_PLUGINS"] = previous

    def pytest_runtest_logreport(report):
        nodeid = getattr(report, "nodeid", None)
        if not isinstance(nodeid, str):
            return
        rid = nodeid
        config = state["config"]
        if config is not None and hasattr(config, "cwd_relative_nodeid"):
            try:
                rid = config.cwd_relative_nodeid(nodeid)
            except Exception:
                rid = nodeid
        writer.record(
            {
                "t": "r",
                "id": nodeid,
                "rid": rid,
                "when": getattr(report, "when", None),
                "o": getattr(report, "outcome", None),
                "x": bool(getattr(report, "wasxfail", None) is not None),
            }
        )

    def pytest_collectreport(report):
        if getattr(report, "outcome", None) == "failed":
            writer.record({"t": "c", "id": getattr(report, "nodeid", ""), "o": "failed"})

    def pytest_sessionfinish(session, exitstatus):
        try:
            code = int(exitstatus)
        except Exception:
            code = None
        writer.record({"t": "end", "exit": code})
        writer.ended = True

    hooks = {
        "pytest_configure": pytest_configure,
        "pytest_runtest_logreport": pytest_runtest_logreport,
        "pytest_collectreport": pytest_collectreport,
        "pytest_sessionfinish": pytest_sessionfinish,
    }
    # pytest imports the plugin by name (PYTEST_PLUGINS). A finder at the end of sys.meta_path
    # serves that one name, so the module is not imported before pytest asks for it (pytest
    # warns, in the log, about plugins it finds imported already).
    import importlib.util

    class _Loader(object):
        def create_module(self, spec):
            return None

        def exec_module(self, module):
            module.__dict__.update(hooks)

    class _Finder(object):
        def find_spec(self, fullname, path=None, target=None):
            if fullname != name:
                return None
            return importlib.util.spec_from_loader(name, _Loader())

        def find_module(self, fullname, path=None):  # Python < 3.4 style callers
            return None

    sys.meta_path.append(_Finder())
    os.environ["PYTEST_PLUGINS"] = name if not previous else previous + "," + name


def _swtbench_unittest(writer):
    import unittest.result

    base = unittest.result.TestResult
    outcomes = [
        ("addSuccess", "ok"),
        ("addFailure", "FAIL"),
        ("addError", "ERROR"),
        ("addSkip", "skipped"),
        ("addExpectedFailure", "expected failure"),
        ("addUnexpectedSuccess", "unexpected success"),
    ]

    def wrap(method, outcome):
        original = getattr(base, method)

        def wrapper(self, test, *args, **kwargs):
            try:
                writer.record({"t": "u", "name": str(test), "o": outcome})
            except Exception:
                pass
            return original(self, test, *args, **kwargs)

        wrapper.__name__ = method
        wrapper.__doc__ = original.__doc__
        return wrapper

    for method, outcome in outcomes:
        setattr(base, method, wrap(method, outcome))

    original_subtest = getattr(base, "addSubTest", None)
    if original_subtest is not None:

        def addSubTest(self, test, subtest, err):
            if err is not None:
                try:
                    writer.record({"t": "u", "name": str(test), "o": "subtest failed"})
                except Exception:
                    pass
            return original_subtest(self, test, subtest, err)

        addSubTest.__doc__ = original_subtest.__doc__
        base.addSubTest = addSubTest


def _swtbench_children(writer):
    # Coverage of traced child processes is not in the evidence; say (once) that there were some.
    seen = []

    def started():
        if not seen:
            seen.append(True)
            writer.record({"t": "child"})

    try:
        import subprocess

        original = subprocess.Popen.__init__

        def __init__(self, *args, **kwargs):
            started()
            return original(self, *args, **kwargs)

        subprocess.Popen.__init__ = __init__
    except Exception:
        pass
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_parent=started)


def _swtbench_network(writer):
    # A verdict that depended on the internet is worth knowing: record (once per address) the
    # connections the runner's process opens to anything but loopback.
    seen = set()

    def connected(address):
        try:
            if not isinstance(address, tuple) or len(address) < 2:
                return  # AF_UNIX and the like
            host = str(address[0])
            if host in ("localhost", "::1", "0.0.0.0", "::") or host.startswith("127."):
                return
            addr = "%s:%s" % (host, address[1])
            if addr in seen or len(seen) >= 16:
                return
            seen.add(addr)
            writer.record({"t": "net", "addr": addr})
        except Exception:
            pass

    if hasattr(sys, "addaudithook"):

        def audit(event, args):
            if event == "socket.connect" and len(args) >= 2:
                connected(args[1])

        sys.addaudithook(audit)
        return
    import socket

    for name in ("connect", "connect_ex"):
        original = getattr(socket.socket, name, None)
        if original is None:
            continue

        def wrapper(self, address, _original=original):
            connected(address)
            return _original(self, address)

        setattr(socket.socket, name, wrapper)


def _swtbench_main(key_path):
    if not os.path.exists(key_path):
        return
    try:
        writer = _swtbench_start(key_path)
    except Exception:
        return
    if writer is None:
        return
    name = "_swtbench_evidence_" + os.path.basename(os.path.dirname(key_path)).lstrip(".")
    name = name.replace("-", "_")
    # The coverage tracer hands over what it appends to its cover file (trace.py write_results).
    sys.modules["_swtbench_evidence"] = _coverage_module(writer)
    try:
        if writer.runner == "pytest":
            _swtbench_pytest_plugin(writer, name)
        else:
            _swtbench_unittest(writer)
        _swtbench_children(writer)
    except Exception:
        pass
    try:
        _swtbench_network(writer)
    except Exception:
        pass

    def at_exit():
        if not writer.ended:
            writer.record({"t": "end", "exit": None, "atexit": True})

    if writer.runner != "pytest":
        import atexit

        atexit.register(at_exit)


def _coverage_module(writer):
    import types

    module = types.ModuleType("_swtbench_evidence")

    def coverage(text):
        writer.record({"t": "cov", "text": text})

    module.coverage = coverage
    return module


_swtbench_main(KEY_PATH)  # noqa: F821 (given by the .pth line)
