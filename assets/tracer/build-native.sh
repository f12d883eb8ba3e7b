#!/bin/sh
# Builds the coverage tracer's native line counter (_swtbench_lines, from swtbench_lines.c in this
# script's directory) for a Python interpreter, into this script's directory, where trace.py
# looks for it:
#
#   build-native.sh [PYTHON]        (default: python3, the interpreter the eval scripts run)
#
# The C compiler is $CC (default cc); the headers are the interpreter's own (sysconfig's include
# path). It never fails: without a compiler, without headers, on a Python that does not need it
# (3.12 and later use sys.monitoring) or when the module does not load, it says why and exits 0,
# and trace.py counts with Python trace functions (the same counts, only slower).
dir=$(cd "$(dirname "$0")" && pwd)
py=${1:-python3}
cc=${CC:-cc}
say() { echo "swtbench tracer: $*"; }
skip() {
    say "native line counter not built: $* (the tracer counts with Python trace functions)"
    exit 0
}

command -v "$py" >/dev/null 2>&1 || skip "no $py"
version=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || skip "$py does not run"
case "$version" in
    2.* | 3.[0-4]) say "native line counter not built: the tracer does not run on Python $version"; exit 0 ;;
    3.[5-9] | 3.1[01]) ;;
    *) skip "Python $version uses sys.monitoring" ;;
esac
include=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null) \
    || skip "no include path from sysconfig"
[ -f "$include/Python.h" ] || skip "no Python.h in $include (the interpreter's headers are missing)"
suffix=$("$py" -c 'import _imp; print(_imp.extension_suffixes()[0])' 2>/dev/null) \
    || skip "no extension suffix"
command -v "$cc" >/dev/null 2>&1 || skip "no C compiler ($cc)"

target="$dir/_swtbench_lines$suffix"
partial="$target.partial.$$"
if ! "$cc" -shared -fPIC -O2 -I"$include" -o "$partial" "$dir/swtbench_lines.c" 2>"$partial.log"; then
    sed 's/^/  /' "$partial.log" | tail -n 20
    rm -f "$partial" "$partial.log"
    skip "$cc failed for Python $version"
fi
rm -f "$partial.log"
# The same loading as trace.py's, and a line counted, before the module is put in place.
if ! "$py" - "$partial" <<'EOF'
import _imp
import sys


class Spec(object):
    def __init__(self, name, origin):
        self.name = name
        self.origin = origin


module = _imp.create_dynamic(Spec("_swtbench_lines", sys.argv[1]))
_imp.exec_dynamic(module)
namespace = {"__file__": "probe.py"}
exec(compile("def probe():\n    return 1\n", "probe.py", "exec"), namespace)
tracer = module.Tracer(lambda name: name if name == "probe.py" else None)
tracer.start()
namespace["probe"]()
sys.settrace(None)
hits = tracer.snapshot()
assert hits == {"probe.py": {2: 1}}, hits
EOF
then
    rm -f "$partial"
    skip "the module built for Python $version does not work"
fi
chmod 0644 "$partial"
mv -f "$partial" "$target"
say "native line counter built for Python $version: $target"
