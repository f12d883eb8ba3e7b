#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD 6995257cf470d2143ad1683824962de4071c0eb7 >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff 6995257cf470d2143ad1683824962de4071c0eb7
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .
git apply -v - <<'EOF_114329324912'
None
EOF_114329324912
python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(src/_pytest/assertion/rewrite\.py)' -m pytest -rA src/_pytest/assertion/rewrite.py
cat coverage.cover
git checkout 6995257cf470d2143ad1683824962de4071c0eb7
git apply /root/pre_state.patch
