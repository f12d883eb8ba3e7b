#!/bin/bash
set -euxo pipefail
git clone -o origin https://github.com/pylint-dev/pylint /testbed
chmod -R 777 /testbed
cd /testbed
git reset --hard 182cc539b8154c0710fcea7e522267e42eba8899
git remote remove origin
source /opt/miniconda3/bin/activate
conda activate testbed
echo "Current environment: $CONDA_DEFAULT_ENV"
python -m pip install -e .
