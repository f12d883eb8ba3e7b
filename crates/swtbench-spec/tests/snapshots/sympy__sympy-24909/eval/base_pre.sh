#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD d3b4158dea271485e3daa11bf82e69b8dab348ce >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff d3b4158dea271485e3daa11bf82e69b8dab348ce
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .
git apply -v - <<'EOF_114329324912'
None
EOF_114329324912
PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(sympy/physics/units/prefixes\.py)' bin/test -C --verbose sympy/physics/units/tests/test_prefixes.py
cat coverage.cover
git checkout d3b4158dea271485e3daa11bf82e69b8dab348ce
git apply /root/pre_state.patch
