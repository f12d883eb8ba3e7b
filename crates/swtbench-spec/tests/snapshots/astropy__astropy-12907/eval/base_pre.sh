#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD d16bfe05a744909de4b27f5875fe0d4ed41ce607 >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff d16bfe05a744909de4b27f5875fe0d4ed41ce607
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .[test] --verbose
git apply -v - <<'EOF_114329324912'
None
EOF_114329324912
python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(astropy/modeling/separable\.py)' -m pytest --no-header -rA  -p no:cacheprovider astropy/modeling/tests/test_separable.py
cat coverage.cover
git checkout d16bfe05a744909de4b27f5875fe0d4ed41ce607
git apply /root/pre_state.patch
