#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD 8dcb12a6cf500e8738d6729ab954a261758f49ca >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff 8dcb12a6cf500e8738d6729ab954a261758f49ca
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .
git apply -v - <<'EOF_114329324912'
None
EOF_114329324912
PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(sympy/printing/ccode\.py)' bin/test -C --verbose reproduce_issue.py sympy/printing/ccode.p
cat coverage.cover
git checkout 8dcb12a6cf500e8738d6729ab954a261758f49ca
git apply /root/pre_state.patch
