#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD 863e49066ca4d61c9adfe62aca3bf21b90e1af8c >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff 863e49066ca4d61c9adfe62aca3bf21b90e1af8c
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .
git apply -v - <<'EOF_114329324912'
None
EOF_114329324912
pytest --no-header -rA --tb=no -p no:cacheprovider xarray/tests/test_combine.py xarray/tests/test_concat.py
git checkout 863e49066ca4d61c9adfe62aca3bf21b90e1af8c
git apply /root/pre_state.patch
