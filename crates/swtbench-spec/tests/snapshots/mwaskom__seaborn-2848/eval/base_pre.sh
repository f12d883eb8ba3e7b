#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD 94621cef29f80282436d73e8d2c0aa76dab81273 >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff 94621cef29f80282436d73e8d2c0aa76dab81273
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .[dev]
git apply -v - <<'EOF_114329324912'
None
EOF_114329324912
python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(seaborn/_oldcore\.py)' -m pytest --no-header -rA tests/test_relational.py
cat coverage.cover
git checkout 94621cef29f80282436d73e8d2c0aa76dab81273
git apply /root/pre_state.patch
