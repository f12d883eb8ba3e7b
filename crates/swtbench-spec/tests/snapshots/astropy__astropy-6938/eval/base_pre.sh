#!/bin/bash
set -uxo pipefail
source /opt/miniconda3/bin/activate
conda activate testbed
cd /testbed
git diff HEAD c76af9ed6bb89bfba45b9f5bc1e635188278e2fa >> /root/pre_state.patch
git config --global --add safe.directory /testbed
cd /testbed
git status
git show
git diff c76af9ed6bb89bfba45b9f5bc1e635188278e2fa
source /opt/miniconda3/bin/activate
conda activate testbed
python -m pip install -e .[test] --verbose
git apply -v - <<'EOF_114329324912'
None
EOF_114329324912
python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(astropy/io/fits/fitsrec\.py)' -m pytest --no-header -rA  -p no:cacheprovider astropy/io/fits/tests/test_checksum.py astropy/io/fits/tests/test_table.py
cat coverage.cover
git checkout c76af9ed6bb89bfba45b9f5bc1e635188278e2fa
git apply /root/pre_state.patch
