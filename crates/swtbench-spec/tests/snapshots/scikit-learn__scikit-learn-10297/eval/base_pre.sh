#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD b90661d6a46aa3619d3eec94d5281f5888add501 >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff b90661d6a46aa3619d3eec94d5281f5888add501
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -v --no-use-pep517 --no-build-isolation -e .
git apply -v - <<'EOF_114329324912'
None
EOF_114329324912
python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(sklearn/linear_model/ridge\.py)' -m pytest --no-header -rA  -p no:cacheprovider sklearn/linear_model/tests/test_ridge.py
cat coverage.cover
git checkout b90661d6a46aa3619d3eec94d5281f5888add501
git apply /root/pre_state.patch
