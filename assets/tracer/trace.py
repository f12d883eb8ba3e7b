#!/usr/bin/env python3
"""swtbench line-hit tracer.

Runs a Python program and appends, at exit, one JSON line per traced source file to a cover file:

    {"<path>": {"<line>": <hits>, ...}}

Every executable line of the file is listed, with 0 when it never ran. A source file is traced
when the ``__file__`` of the globals its code runs in fully matches the include pattern.

Command line (compatible with the SWT-Bench evaluation script):

    trace.py --count -C FILE --include-pattern REGEX [--include-pattern REGEX ...]
             (-m MODULE | -c CODE | SCRIPT) [ARGS ...]

Design notes (docs/tracer.md has the long form):
- Python 3.12 and later use ``sys.monitoring`` (LINE events on included code objects only, plus
  JUMP events so that backward jumps within one line count as the line-tracing protocol counts
  them); older Pythons use ``sys.settrace`` and ``threading.settrace``, through the native line
  counter ``_swtbench_lines`` (a C trace function, built in the environment image from
  swtbench_lines.c) when it is there, else with Python trace functions. All give the hit counts a
  plain ``sys.settrace`` line counter gives.
- Python programs started through ``subprocess`` are run under this tracer too, with the same
  options; each process appends its own lines to the cover file with one ``write`` on an
  ``O_APPEND`` descriptor, under an ``flock`` that the kernel drops when its holder dies and that
  nobody waits on for longer than a few seconds.
- By default the program runs the way the original SWT-Bench tracer ran it, wherever that can
  change a test outcome: the tracer's options are printed first, SystemExit is swallowed in every
  process, children are rewritten as the original rewrote them (shell strings included), and the
  program runs in a plain dict. SWTBENCH_TRACE_COMPAT=0 makes traced processes behave as they
  would untraced instead (docs/tracer.md lists both).
- Standard library only; the syntax stays within Python 3.5.
"""

import os
import re
import sys

TRACER_VERSION = "1.3.0"
PROG = "trace.py"
USAGE = (
    "usage: trace.py --count -C FILE [--include-pattern REGEX]... "
    "(-m MODULE | -c CODE | SCRIPT) [ARGS...]"
)
# Internal flag added to the command line of traced child processes: a child behaves like the
# untraced program would (exit status kept, sys.path[0] as Python sets it).
CHILD_FLAG = "--swtbench-child"
BACKEND_ENV = "SWTBENCH_TRACE_BACKEND"
# "0" (or false/no/off) turns off the original tracer's process behaviour (see compat_mode).
COMPAT_ENV = "SWTBENCH_TRACE_COMPAT"
# "0" (or false/no/off) counts with the Python trace functions even where the native line counter
# is installed; "require" makes a missing native counter an error (exit status 2).
NATIVE_ENV = "SWTBENCH_TRACE_NATIVE"
NATIVE_MODULE = "_swtbench_lines"
NATIVE_VERSION = "1"
# Where environment images keep the native counter (built for the image's Python); the tracer's
# own directory is looked at first.
NATIVE_DIR = "/opt/swtbench-tracer"
LOCK_TIMEOUT_SECONDS = 5.0

# Options of the original trace command line that are accepted and have no effect here.
_IGNORED_FLAGS = frozenset(
    [
        "--count", "-t", "--trace", "-l", "--listfuncs", "-T", "--trackcalls", "-r",
        "--report", "-R", "--no-report", "--missing", "-s", "--summary", "-g", "--timing",
    ]
)
_IGNORED_VALUED = frozenset(["-f", "--file", "--ignore-module", "--ignore-dir"])


class UsageError(Exception):
    pass


class Options(object):
    def __init__(self):
        self.cover_file = None
        self.patterns = []
        self.mode = None  # "module", "code" or "script"
        self.target = None
        self.arguments = []
        self.child = False


def parse_args(argv):
    """Parses the tracer's own command line (without the program name)."""
    opts = Options()
    module = code = False
    i = 0
    n = len(argv)
    while i < n:
        arg = argv[i]
        i += 1
        if arg == "--":
            if i >= n:
                raise UsageError("missing the program to run after --")
            opts.target = argv[i]
            i += 1
            break
        if not arg.startswith("-") or arg == "-":
            opts.target = arg
            break
        if arg in ("-h", "--help"):
            raise SystemExit(_print_help())
        if arg == "--version":
            sys.stdout.write("trace %s (swtbench)\n" % TRACER_VERSION)
            raise SystemExit(0)
        if arg in ("-m", "--module"):
            module = True
            continue
        if arg in ("-c", "--cmd"):
            code = True
            continue
        if arg == CHILD_FLAG:
            opts.child = True
            continue
        if arg in _IGNORED_FLAGS:
            continue
        name, value = arg, None
        if arg.startswith("--") and "=" in arg:
            name, value = arg.split("=", 1)
        elif not arg.startswith("--") and len(arg) > 2 and arg[:2] in ("-C", "-f"):
            name, value = arg[:2], arg[2:]
        if name in ("-C", "--coverdir", "--include-pattern") or name in _IGNORED_VALUED:
            if value is None:
                if i >= n:
                    raise UsageError("option %s needs a value" % name)
                value = argv[i]
                i += 1
            if name in ("-C", "--coverdir"):
                opts.cover_file = value
            elif name == "--include-pattern":
                opts.patterns.append(value)
            continue
        raise UsageError("unrecognized option %s" % arg)
    if opts.target is None:
        raise UsageError("missing the program to run (-m MODULE, -c CODE or SCRIPT)")
    if module and code:
        raise UsageError("-m and -c exclude each other")
    opts.mode = "module" if module else ("code" if code else "script")
    opts.arguments = list(argv[i:])
    return opts


def _print_help():
    sys.stdout.write(
        USAGE
        + "\n\nRuns a Python program and appends per-line hit counts of the files whose path"
        "\nfully matches the include patterns (joined with |) to FILE, one JSON line per file.\n"
    )
    return 0


# ---------------------------------------------------------------------------------------------
# Hit counting
#
# `_hits` maps a code object's co_filename to {line: hits}. Its inner dicts are created when a
# code object is first found to be included and are never removed (only emptied after a fork),
# so the hot callbacks need no existence checks.

_hits = {}
_stop_tracing = None
# The native module when it is used, and its tracer once counting started (it holds the hits).
_native_module = None
_native_tracer = None
_main_pid = os.getpid()


def _new_file_counter(filename):
    counter = _hits.get(filename)
    if counter is None:
        from collections import defaultdict

        counter = _hits[filename] = defaultdict(int)
    return counter


def _include_check(matcher):
    """Returns is_included(globals) with results cached per __file__ value."""
    cache = {}

    def is_included(frame_globals):
        filename = frame_globals.get("__file__")
        try:
            return cache[filename]
        except KeyError:
            pass
        except TypeError:  # an unhashable __file__
            return False
        result = isinstance(filename, str) and matcher(filename) is not None
        cache[filename] = result
        return result

    return is_included


def _start_settrace(matcher):
    import threading

    is_included = _include_check(matcher)
    local_tracers = {}

    def make_local(counter):
        def local_trace(frame, event, arg):
            if event == "line":
                counter[frame.f_lineno] += 1
            return local_trace

        return local_trace

    def global_trace(frame, event, arg):
        if not is_included(frame.f_globals):
            return None
        filename = frame.f_code.co_filename
        local = local_tracers.get(filename)
        if local is None:
            local = local_tracers[filename] = make_local(_new_file_counter(filename))
        return local

    threading.settrace(global_trace)
    sys.settrace(global_trace)

    def stop():
        sys.settrace(None)
        threading.settrace(None)

    return stop


def _start_native(module, matcher):
    """The native counter: the same decisions and counts as _start_settrace, in C."""
    global _native_tracer
    import threading

    tracer = _native_tracer = module.Tracer(matcher)
    threading.settrace(tracer)
    tracer.start()

    def stop():
        sys.settrace(None)
        threading.settrace(None)

    return stop


class _NativeSpec(object):
    """What _imp.create_dynamic reads of a module spec."""

    def __init__(self, name, origin):
        self.name = name
        self.origin = origin


def load_native():
    """Returns the native line counter module, or None to count with Python trace functions.

    None when SWTBENCH_TRACE_NATIVE is 0, on Python 3.12 and later (sys.monitoring is used), and
    when no module built for this interpreter is found next to this file or in NATIVE_DIR.
    Raises UsageError when SWTBENCH_TRACE_NATIVE=require and it cannot be loaded.
    """
    choice = os.environ.get(NATIVE_ENV, "").strip().lower()
    if choice in ("0", "false", "no", "off"):
        return None
    module = None
    reason = "Python %d.%d has no native counter" % sys.version_info[:2]
    if (3, 5) <= sys.version_info[:2] < (3, 12):
        try:
            # _imp is built in and already loaded: importing importlib.machinery here would
            # change what the program's own imports do (meta path finders it would consult).
            import _imp

            name = NATIVE_MODULE + _imp.extension_suffixes()[0]
            reason = "no %s in %s or %s" % (name, os.path.dirname(_TRACER_PATH), NATIVE_DIR)
            for directory in (os.path.dirname(_TRACER_PATH), NATIVE_DIR):
                path = os.path.join(directory, name)
                if os.path.isfile(path):
                    # Loaded by path, not imported: sys.path and sys.modules stay as they were.
                    found = _imp.create_dynamic(_NativeSpec(NATIVE_MODULE, path))
                    _imp.exec_dynamic(found)
                    if getattr(found, "VERSION", None) == NATIVE_VERSION:
                        module = found
                    else:
                        reason = "%s is version %s, not %s" % (
                            path, getattr(found, "VERSION", None), NATIVE_VERSION)
                    break
        except Exception as err:
            reason = "%s: %s" % (type(err).__name__, err)
    if module is None and choice == "require":
        raise UsageError("%s=require: cannot load the native line counter: %s" % (NATIVE_ENV, reason))
    return module


def _free_tool_id(monitoring):
    for tool in (4, 3):
        if monitoring.get_tool(tool) is None:
            try:
                monitoring.use_tool_id(tool, "swtbench-trace")
            except ValueError:
                continue
            return tool
    return None


def _start_monitoring(matcher):
    """sys.monitoring backend (3.12+). Returns a stop function, or None when no tool id is free."""
    monitoring = sys.monitoring
    tool = _free_tool_id(monitoring)
    if tool is None:
        return None
    events = monitoring.events
    disable = monitoring.DISABLE
    set_local_events = monitoring.set_local_events
    local_events = events.LINE | events.JUMP
    is_included = _include_check(matcher)
    getframe = sys._getframe
    # id(code) -> code: the included code objects, kept alive so that their ids stay unique.
    included = {}
    # id(code) -> list mapping instruction index to line, built on the first backward jump.
    line_tables = {}
    hits = _hits

    def on_start(code, offset, _included=included):
        if id(code) in _included:
            # Returning DISABLE here would be cheaper, but on 3.13.0 it also drops the LINE
            # events of nested code objects, so included code keeps its PY_START callback.
            return None
        if not is_included(getframe(1).f_globals):
            return disable
        _included[id(code)] = code
        _new_file_counter(code.co_filename)
        set_local_events(tool, code, local_events)
        return None

    def on_line(code, line, _hits=hits):
        _hits[code.co_filename][line] += 1

    def on_jump(code, source, target, _tables=line_tables, _hits=hits):
        # The line-tracing protocol reports a line event for every backward jump whose source
        # and target are on the same line (one-line loops, comprehensions); LINE events do not.
        # Which jumps qualify is fixed per instruction, so all others are disabled for good.
        if target > source:
            return disable
        table = _tables.get(id(code))
        if table is None:
            table = _tables[id(code)] = _line_table(code)
        line = table[target >> 1] if (target >> 1) < len(table) else None
        if line is None or line != (table[source >> 1] if (source >> 1) < len(table) else None):
            return disable
        _hits[code.co_filename][line] += 1
        return None

    monitoring.register_callback(tool, events.LINE, on_line)
    monitoring.register_callback(tool, events.JUMP, on_jump)
    monitoring.register_callback(tool, events.PY_START, on_start)
    monitoring.set_events(tool, events.PY_START)

    def stop():
        try:
            monitoring.set_events(tool, 0)
            for code in included.values():
                set_local_events(tool, code, 0)
            for event in (events.PY_START, events.LINE, events.JUMP):
                monitoring.register_callback(tool, event, None)
            monitoring.free_tool_id(tool)
        except Exception:
            pass

    return stop


def _line_table(code):
    size = 0
    spans = list(code.co_lines())
    for _start, end, _line in spans:
        if end > size:
            size = end
    table = [None] * ((size + 1) >> 1)
    for start, end, line in spans:
        for index in range(start >> 1, (end + 1) >> 1):
            table[index] = line
    return table


def start_tracing(patterns):
    """Starts counting; returns the function that stops it."""
    matcher = re.compile("|".join(patterns)).fullmatch
    backend = os.environ.get(BACKEND_ENV, "auto")
    stop = None
    if backend != "settrace" and hasattr(sys, "monitoring"):
        stop = _start_monitoring(matcher)
    if stop is None and _native_module is not None:
        stop = _start_native(_native_module, matcher)
    if stop is None:
        stop = _start_settrace(matcher)
    return stop


def _forget_parent_hits():
    if _native_tracer is not None:
        _native_tracer.clear()
    for counter in list(_hits.values()):
        counter.clear()


# ---------------------------------------------------------------------------------------------
# Executable lines
#
# The lines listed for a file are the line starts of all its code objects (as reported by
# dis.findlinestarts when the file is compiled by the running interpreter), minus the lines of
# string tokens that directly follow an INDENT token or open the file (docstrings, by the same
# tokenizer rule the original harness uses, so line sets and coverage numbers agree with it).


def executable_lines(path):
    """Returns the set of executable line numbers of a source file, or None when unreadable."""
    import dis
    import tokenize
    import types
    import warnings

    try:
        with tokenize.open(path) as handle:
            source = handle.read()
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError) as err:
        _warn("cannot read %s: %s" % (path, err))
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = compile(source, path, "exec", 0, True)
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as err:
        _warn("cannot compile %s: %s" % (path, err))
        return False
    docstrings = _docstring_lines(source)
    lines = set()
    pending = [code]
    while pending:
        current = pending.pop()
        for _offset, line in dis.findlinestarts(current):
            if line is not None and line not in docstrings:
                lines.add(line)
        for const in current.co_consts:
            if isinstance(const, types.CodeType):
                pending.append(const)
    return lines


def _docstring_lines(source):
    import io
    import token
    import tokenize

    lines = set()
    previous = token.INDENT
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            kind = tok[0]
            if kind == token.STRING and previous == token.INDENT:
                lines.update(range(tok[2][0], tok[3][0] + 1))
            previous = kind
    except (tokenize.TokenError, SyntaxError):
        pass
    return lines


# ---------------------------------------------------------------------------------------------
# Writing the results


def render_results(hits_by_file):
    """Turns {co_filename: {line: hits}} into the cover-file text (one JSON line per file)."""
    import json

    merged = {}
    for filename, counter in hits_by_file.items():
        if not counter or not isinstance(filename, str):
            continue
        if filename.startswith("<") and filename.endswith(">"):
            continue
        if filename.endswith(".pyc"):
            filename = filename[:-1]
        target = merged.setdefault(filename, {})
        for line, count in counter.items():
            target[line] = target.get(line, 0) + count
    out = []
    for filename in sorted(merged):
        lines = executable_lines(filename)
        if lines is False:
            continue
        counter = merged[filename]
        body = ", ".join(
            '"%d": %d' % (line, counter.get(line, 0)) for line in sorted(lines or ())
        )
        out.append("{%s: {%s}}\n" % (json.dumps(filename), body))
    return "".join(out)


def append_to_file(path, text):
    """Appends text with a single write on an O_APPEND descriptor, under a bounded flock."""
    data = text.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    except OSError as err:
        _warn("cannot open %s for writing: %s" % (path, err))
        return False
    try:
        locked = _lock(fd, LOCK_TIMEOUT_SECONDS)
        try:
            view = memoryview(data)
            while len(view):
                written = os.write(fd, view)
                view = view[written:]
        finally:
            if locked:
                _unlock(fd)
    except OSError as err:
        _warn("cannot write %s: %s" % (path, err))
        return False
    finally:
        os.close(fd)
    return True


def _lock(fd, timeout):
    # The kernel releases an flock when its holder exits or is killed, so a crashed writer never
    # leaves a stale lock behind; the timeout only bounds waiting on a live but stuck holder, after
    # which the single O_APPEND write still lands whole.
    try:
        import errno
        import fcntl
        import time
    except ImportError:
        return False
    deadline = time.time() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except (IOError, OSError) as err:
            # Only "held by someone else" is worth waiting for; a file system without flock
            # support (ENOLCK, EOPNOTSUPP, ...) never grants it.
            if err.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                return False
            if time.time() >= deadline:
                _warn("cover file still locked after %.0f s, writing without the lock" % timeout)
                return False
            time.sleep(0.02)


def _unlock(fd):
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)
    except (ImportError, IOError, OSError):
        pass


def _snapshot_hits():
    if _native_tracer is not None:
        return _native_tracer.snapshot()
    for _attempt in range(10):
        try:
            return dict((name, dict(counter)) for name, counter in list(_hits.items()))
        except RuntimeError:  # a still-running thread added a line while copying
            continue
    return {}


def write_results(cover_file):
    global _stop_tracing
    if _stop_tracing is not None:
        stop, _stop_tracing = _stop_tracing, None
        stop()
    try:
        text = render_results(_snapshot_hits())
    except Exception as err:  # never let the write disturb the program's own exit
        _warn("cannot render the coverage: %s: %s" % (type(err).__name__, err))
        return
    if text:
        # swtbench's evidence hook (when the harness installed one for this process) keeps a
        # copy the tests cannot edit in the cover file.
        evidence = sys.modules.get("_swtbench_evidence")
        if evidence is not None:
            try:
                evidence.coverage(text)
            except Exception:
                pass
        append_to_file(cover_file, text)


def _warn(message):
    try:
        sys.stderr.write("%s: %s\n" % (PROG, message))
        sys.stderr.flush()
    except Exception:
        pass


# ---------------------------------------------------------------------------------------------
# Child processes
#
# subprocess.Popen is wrapped: when argv[0] is a Python interpreter, the command is rewritten to
# `sys.executable <python options> <this file> <tracer options> (-m MOD | -c -- CODE | -- SCRIPT)
# <arguments>`. Like the original, the child runs on this interpreter (tox's virtualenv python is
# replaced by the one the project is installed in, which is what makes coverage work there).

_PYTHON_NAME = re.compile(r"python(3(\.\d+)*)?[a-z]?(\.exe)?\Z")
_NO_ARG_FLAGS = frozenset("bBdEIOPqsSuvxRt")
_NOT_TRACED_FLAGS = frozenset("ihV?")


def is_python_name(path):
    return _PYTHON_NAME.match(os.path.basename(path)) is not None


def split_python_args(args):
    """Splits a python command line (without argv[0]).

    Returns (python_options, mode, rest, consumed) where mode is ["-m", MOD], ["-c", CODE] or
    ["--", SCRIPT] and consumed is how many items of args the options and mode took, or None for
    invocations that are not traced (interactive, stdin, --help, --version, unknown options).
    """
    options = []
    i = 0
    n = len(args)
    while i < n:
        arg = args[i]
        if arg == "--":
            if i + 1 < n:
                return options, ["--", args[i + 1]], args[i + 2:], i + 2
            return None
        if arg == "-" or not arg.startswith("-"):
            if arg == "-":
                return None
            return options, ["--", arg], args[i + 1:], i + 1
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            if name != "--check-hash-based-pycs":
                return None
            if "=" in arg:
                options.append(arg)
                i += 1
            elif i + 1 < n:
                options.extend(args[i:i + 2])
                i += 2
            else:
                return None
            continue
        j = 1
        while j < len(arg):
            flag = arg[j]
            if flag in "cm":
                if j > 1:
                    options.append(arg[:j])
                value = arg[j + 1:]
                if value:
                    return options, ["-" + flag, value], args[i + 1:], i + 1
                if i + 1 < n:
                    return options, ["-" + flag, args[i + 1]], args[i + 2:], i + 2
                return None
            if flag in "WX":
                if j > 1:
                    options.append(arg[:j])
                value = arg[j + 1:]
                if value:
                    options.append("-" + flag + value)
                elif i + 1 < n:
                    options.extend(["-" + flag, args[i + 1]])
                    i += 1
                else:
                    return None
                break
            if flag in _NOT_TRACED_FLAGS or flag not in _NO_ARG_FLAGS:
                return None
            j += 1
        else:
            options.append(arg)
        i += 1
    return None


def _child_mode(mode):
    if mode[0] == "-c":
        return ["-c", "--", mode[1]]
    return list(mode)


def rewrite_argv(argv, tracer_args):
    """Returns the traced form of an argv list, or None to leave it alone."""
    if not argv or not sys.executable:
        return None
    try:
        words = [_to_str(item) for item in argv]
    except TypeError:
        return None
    if not is_python_name(words[0]):
        return None
    split = split_python_args(words[1:])
    if split is None:
        return None
    options, mode, rest, _consumed = split
    return [sys.executable] + options + [_TRACER_PATH] + tracer_args + _child_mode(mode) + rest


def _to_str(item):
    if hasattr(os, "fspath"):
        item = os.fspath(item)
    if isinstance(item, bytes):
        item = os.fsdecode(item)
    if not isinstance(item, str):
        raise TypeError("not a path")
    return item


_SHELL_STOP = frozenset(" \t\n;&|<>()")


def shell_words(command):
    """Splits the first simple command of a POSIX shell string into words.

    Yields (value, end, literal) where end is the index just past the word in command and
    literal is False when the word holds an expansion whose value the shell decides. Stops at the
    first operator, comment or construct it does not follow.
    """
    i = 0
    n = len(command)
    while True:
        while i < n and command[i] in " \t":
            i += 1
        if i >= n or command[i] in _SHELL_STOP or command[i] == "#":
            return
        parts = []
        literal = True
        while i < n and command[i] not in _SHELL_STOP:
            ch = command[i]
            if ch == "\\":
                if i + 1 < n and command[i + 1] != "\n":
                    parts.append(command[i + 1])
                i += 2
            elif ch == "'":
                close = command.find("'", i + 1)
                if close < 0:
                    return
                parts.append(command[i + 1:close])
                i = close + 1
            elif ch == '"':
                i += 1
                while i < n and command[i] != '"':
                    c = command[i]
                    if c == "\\" and i + 1 < n and command[i + 1] in '$`"\\\n':
                        if command[i + 1] != "\n":
                            parts.append(command[i + 1])
                        i += 2
                        continue
                    if c in "$`":
                        literal = False
                    parts.append(c)
                    i += 1
                if i >= n:
                    return
                i += 1
            else:
                if ch in "$`*?[~{":
                    literal = False
                parts.append(ch)
                i += 1
        yield "".join(parts), i, literal


def rewrite_shell(command, tracer_args):
    """Returns the traced form of a shell command string, or None to leave it alone.

    Only the interpreter, its options and the script / -m / -c word are rewritten; the text after
    them (arguments, redirections, further commands) is kept as written.
    """
    if not sys.executable:
        return None
    import shlex

    words = []
    for value, end, literal in shell_words(command):
        words.append((value, end, literal))
        if len(words) == 1 and not (literal and is_python_name(value)):
            return None
        if len(words) > 1:
            split = split_python_args([w[0] for w in words[1:]])
            if split is not None and split[3] == len(words) - 1:
                if not all(w[2] for w in words):
                    return None
                options, mode = split[0], split[1]
                head = [sys.executable] + options + [_TRACER_PATH] + tracer_args
                head += _child_mode(mode)
                return " ".join(shlex.quote(word) for word in head) + command[end:]
    return None


def rewrite_popen_call(args, kwargs, tracer_args):
    """Rewrites the (args, kwargs) of a Popen call; returns None to leave them alone."""
    if args:
        command = args[0]
    elif "args" in kwargs:
        command = kwargs["args"]
    else:
        return None
    shell = args[8] if len(args) > 8 else kwargs.get("shell", False)
    if isinstance(command, str):
        new = rewrite_shell(command, tracer_args) if shell else None
    elif isinstance(command, (list, tuple)):
        if shell:
            if not command or not isinstance(command[0], str):
                return None
            first = rewrite_shell(command[0], tracer_args)
            new = None if first is None else [first] + list(command[1:])
        else:
            new = rewrite_argv(list(command), tracer_args)
    else:
        return None
    if new is None:
        return None
    if args:
        return (new,) + tuple(args[1:]), kwargs
    kwargs = dict(kwargs)
    kwargs["args"] = new
    return args, kwargs


def install_subprocess_hook(tracer_args):
    import functools
    import subprocess

    original = subprocess.Popen.__init__

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        try:
            rewritten = rewrite_popen_call(args, kwargs, tracer_args)
        except Exception:
            rewritten = None
        if rewritten is not None:
            args, kwargs = rewritten
        original(self, *args, **kwargs)

    subprocess.Popen.__init__ = __init__


# ---------------------------------------------------------------------------------------------
# Child processes as the original tracer rewrote them (the default)
#
# The scores SWT-Bench publishes were produced under the original tracer, whose rewriting of child
# commands decides what a test that starts Python sees: which commands are traced (any program
# whose name contains "python"), the option list each child prints, its exit status, and, for
# shell strings, a command the shell cannot parse (the words are re-joined with spaces, so the
# include pattern's parentheses reach /bin/sh unquoted). The functions below reproduce that
# behaviour, including the exceptions it raises for arguments it cannot handle (path objects,
# bytes, positional Popen arguments after the command), because they are part of what the tests
# under it experienced.

# How the original classified each word after the interpreter, tried in this order.
_ORIGINAL_INTERACTIVE = re.compile(r"-[A-Za-z]*i[A-Za-z]*$")
_ORIGINAL_SCRIPT = re.compile(r"[^-].+")
_ORIGINAL_LONE_DASH = re.compile(r"-$")
_ORIGINAL_DOUBLE_DASH = re.compile(r"--$")
_ORIGINAL_MODE = re.compile(r"-([a-z]+)?([cm])(.+)?", re.IGNORECASE)
_ORIGINAL_VALUED = ("-X", "-W", "--check-hash-based-pycs")


def original_child_command(argv, words):
    """The argv the original tracer ran for a python argv (or None to leave it alone).

    words are the tracer options the parent was given (what it printed), handed on verbatim.
    """
    options = []
    script = None
    mode = []
    rest = iter(argv[1:])
    for arg in rest:
        if _ORIGINAL_INTERACTIVE.match(arg):
            return None
        found = _ORIGINAL_SCRIPT.match(arg)
        if found:
            script = found.group(0)
            break
        if _ORIGINAL_LONE_DASH.match(arg):
            break
        if _ORIGINAL_DOUBLE_DASH.match(arg):
            script = next(rest, None)
            break
        found = _ORIGINAL_MODE.match(arg)
        if found:
            if found.group(1):
                options.append("-" + found.group(1))
            mode = ["-" + found.group(2), found.group(3) or next(rest, None)]
            break
        options.append(arg)
        if arg in _ORIGINAL_VALUED:
            options.append(next(rest, None))
    head = [sys.executable] + options + [_TRACER_FILE] + list(words)
    if script:
        return head + [script] + list(rest)
    if mode and mode[-1] is not None:
        return head + mode + list(rest)
    return None


def install_original_subprocess_hook(words):
    import functools
    import shlex
    import subprocess

    try:
        from collections.abc import Sequence
    except ImportError:  # pragma: no cover - Python < 3.3
        from collections import Sequence

    original = subprocess.Popen.__init__

    # Only the command may be positional, as with the original's wrapper.
    @functools.wraps(original)
    def __init__(self, args, **kwargs):
        command = args
        if isinstance(command, str):
            command = shlex.split(command)
        new = None
        if isinstance(command, Sequence):
            if "python" in os.path.basename(command[0]):
                new = original_child_command(command, words)
                if new is not None and kwargs.get("shell") and isinstance(args, str):
                    new = " ".join(new)
        original(self, args if new is None else new, **kwargs)

    subprocess.Popen.__init__ = __init__


# ---------------------------------------------------------------------------------------------
# Running the program

_TRACER_PATH = os.path.abspath(__file__)
# The tracer's path as Python set it, which the original put into its children's commands.
_TRACER_FILE = __file__


class _NoSuchModule(ImportError):
    pass


def _prepare(opts):
    """Returns (code, globals, argv0) for the program; module lookup happens before tracing."""
    if opts.mode == "module":
        import runpy

        find = runpy._get_module_details
        try:
            if find.__code__.co_argcount >= 2:
                _name, spec, code = find(opts.target, _NoSuchModule)
            else:
                _name, spec, code = find(opts.target)
        except _NoSuchModule as err:
            sys.stderr.write("%s: %s\n" % (sys.executable, err))
            sys.stderr.flush()
            raise _Exit(1)
        main_globals = {
            "__name__": "__main__",
            "__file__": spec.origin,
            "__cached__": spec.cached,
            "__loader__": spec.loader,
            "__package__": spec.parent,
            "__spec__": spec,
        }
        return code, main_globals, spec.origin
    if opts.mode == "code":
        code = compile(opts.target, "<string>", "exec", 0, True)
        main_globals = {"__name__": "__main__", "__package__": None, "__spec__": None}
        return code, main_globals, "-c"
    path = opts.target
    try:
        opener = getattr(__import__("io"), "open_code", None)
        if opener is not None:
            with opener(path) as handle:
                source = handle.read()
        else:
            with open(path, "rb") as handle:
                source = handle.read()
    except OSError as err:
        sys.stderr.write("%s: can't open file %r: %s\n" % (sys.executable, path, err))
        sys.stderr.flush()
        raise _Exit(1 if not opts.child else 2)
    code = compile(source, path, "exec", 0, True)
    main_globals = {
        "__name__": "__main__",
        "__file__": path,
        "__cached__": None,
        "__package__": None,
        "__spec__": None,
    }
    return code, main_globals, path


class _Exit(Exception):
    def __init__(self, status):
        Exception.__init__(self, status)
        self.status = status


def _set_path0(opts):
    """Sets sys.path[0], which Python pointed at this tracer's directory.

    At the top level this keeps what the original tracer did (the script's directory as given for
    a script, unchanged for -m and -c) so that imports resolve as in the original harness; a child
    gets what an untraced `python ...` would have.
    """
    flags = sys.flags
    if getattr(flags, "isolated", 0) or getattr(flags, "safe_path", False) or not sys.path:
        return
    if opts.mode == "script":
        if opts.child:
            sys.path[0] = os.path.dirname(os.path.realpath(opts.target))
        else:
            sys.path[0] = os.path.dirname(opts.target)
    elif opts.child:
        if opts.mode == "module" and sys.version_info >= (3, 7):
            sys.path[0] = os.getcwd()
        else:
            sys.path[0] = ""


def _open_source(path):
    opener = getattr(__import__("io"), "open_code", None)  # 3.8+
    if opener is not None:
        return opener(path)
    return open(path, "rb")


def compat_mode():
    """True unless SWTBENCH_TRACE_COMPAT is 0, false, no or off."""
    value = os.environ.get(COMPAT_ENV, "").strip().lower()
    return value not in ("0", "false", "no", "off")


def original_option_words(argv0, argv, opts):
    """The tracer options as the original printed them: the words before the first occurrence of
    the program, without the -m or -c right before it. Raises UsageError where it refused them."""
    full = [argv0] + list(argv)
    words = full[1:full.index(opts.target)]
    if opts.mode != "script":
        if not words or words[-1] not in ("-m", "-c"):
            raise UsageError("must specify -m or -c before the module or command")
        words = words[:-1]
    return words


def run_like_original(opts, words):
    """Runs the program as the original tracer did, wherever that can change a test outcome.

    The option list is printed to stdout first; SystemExit is swallowed in every process
    (children and forks included, so they exit 0); an OSError ends the run with the original's
    message and status 1; any other exception propagates (traceback, status 1). The program runs
    in a plain dict while sys.modules["__main__"] stays this file; sys.argv and sys.path[0] are
    set as the original set them; Python children are rewritten as the original rewrote them and
    write to the cover file named as given, relative to their own working directory.
    Coverage is still written at exit, also after an uncaught exception.
    """
    global _stop_tracing
    print(words)
    pattern_error = _pattern_error(opts.patterns)
    if pattern_error is not None:
        # The original ended here with a traceback and status 1; the status is kept.
        sys.stderr.write(pattern_error)
        return 1
    install_original_subprocess_hook(words)
    tracing = bool(opts.patterns) and opts.cover_file is not None
    if opts.cover_file is None:
        _warn("no -C/--coverdir given, nothing will be recorded")
    if tracing:
        import atexit

        atexit.register(write_results, opts.cover_file)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forget_parent_hits)
    try:
        if opts.mode == "module":
            import runpy

            _name, spec, code = runpy._get_module_details(opts.target)
            sys.argv = [code.co_filename] + opts.arguments
            main_globals = {
                "__name__": "__main__",
                "__file__": code.co_filename,
                "__package__": spec.parent,
                "__loader__": spec.loader,
                "__spec__": spec,
                "__cached__": None,
            }
        elif opts.mode == "code":
            code = compile(opts.target, "<string>", "exec")
            main_globals = {
                "__name__": "__main__",
                "__file__": "<string>",
                "__package__": None,
                "__cached__": None,
            }
        else:
            sys.argv = [opts.target] + opts.arguments
            sys.path[0] = os.path.dirname(opts.target)
            with _open_source(opts.target) as handle:
                code = compile(handle.read(), opts.target, "exec")
            main_globals = {
                "__file__": opts.target,
                "__name__": "__main__",
                "__package__": None,
                "__cached__": None,
            }
        if tracing:
            _stop_tracing = start_tracing(opts.patterns)
        exec(code, main_globals, main_globals)
    except OSError as err:
        sys.exit("Cannot run file %r because: %s" % (sys.argv[0], err))
    except SystemExit:
        pass
    return 0


def _pattern_error(patterns):
    """The error message for include patterns that do not compile (joined with |), else None."""
    try:
        re.compile("|".join(patterns))
    except re.error as err:
        return (
            "%s: error: bad --include-pattern %s: %s in %r; pass Python regular expressions "
            "that fully match the absolute paths to trace\n"
            % (PROG, " ".join(repr(p) for p in patterns), err, "|".join(patterns))
        )
    return None


def main(argv=None):
    global _stop_tracing, _native_module
    if argv is None:
        argv = sys.argv[1:]
    try:
        opts = parse_args(argv)
        compat = not opts.child and compat_mode()
        if compat:
            words = original_option_words(sys.argv[0], argv, opts)
    except UsageError as err:
        sys.stderr.write("%s\n%s: error: %s\n" % (USAGE, PROG, err))
        return 2
    if opts.patterns and opts.cover_file is not None:
        # Nothing is said about which counter is used: the counts are the same, and output a test
        # could see (a child's stderr) must not change.
        try:
            _native_module = load_native()
        except UsageError as err:
            sys.stderr.write("%s: error: %s\n" % (PROG, err))
            return 2
    if compat:
        return run_like_original(opts, words)
    pattern_error = _pattern_error(opts.patterns)
    if pattern_error is not None:
        sys.stderr.write(pattern_error)
        return 2
    tracing = bool(opts.patterns) and opts.cover_file is not None
    if opts.cover_file is None:
        _warn("no -C/--coverdir given, nothing will be recorded")

    _set_path0(opts)
    try:
        code, main_globals, argv0 = _prepare(opts)
    except _Exit as exit_:
        return exit_.status
    sys.argv = [argv0] + opts.arguments

    if tracing:
        cover_file = os.path.abspath(opts.cover_file)
        child_args = [
            "--count", "-C", cover_file, "--include-pattern", "|".join(opts.patterns), CHILD_FLAG
        ]
        install_subprocess_hook(child_args)
        import atexit

        # atexit runs after the interpreter has joined non-daemon threads and after the handlers
        # the program registers itself, so their lines are counted too.
        atexit.register(write_results, cover_file)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forget_parent_hits)
        _stop_tracing = start_tracing(opts.patterns)

    import types

    main_module = types.ModuleType("__main__")
    main_module.__dict__.update(main_globals)
    sys.modules["__main__"] = main_module
    try:
        exec(code, main_module.__dict__)
    except SystemExit:
        # The original tracer exits 0 whatever the program's exit status; the harness's
        # reproduction-script mode depends on it. Children and forked processes keep theirs.
        if opts.child or os.getpid() != _main_pid:
            raise
    except KeyboardInterrupt:
        raise
    except BaseException:
        # Report the error as Python would, without this file's frames; exit status 1 as for
        # any uncaught exception. The coverage is still written (atexit).
        kind, value, traceback = sys.exc_info()
        if traceback is not None:
            traceback = traceback.tb_next
            if value is not None:
                value.__traceback__ = traceback
        sys.excepthook(kind, value, traceback)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
