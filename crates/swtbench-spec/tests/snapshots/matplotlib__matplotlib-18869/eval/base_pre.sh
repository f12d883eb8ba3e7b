#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD b7d05919865fc0c37a0164cf467d5d5513bd0ede >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff b7d05919865fc0c37a0164cf467d5d5513bd0ede
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .
git apply -v - <<'EOF_114329324912'
None
EOF_114329324912
python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(lib/matplotlib/__init__\.py)' -m pytest --no-header -rA  -p no:cacheprovider lib/matplotlib/tests/test_matplotlib.py
cat coverage.cover
git checkout b7d05919865fc0c37a0164cf467d5d5513bd0ede
git apply /root/pre_state.patch
