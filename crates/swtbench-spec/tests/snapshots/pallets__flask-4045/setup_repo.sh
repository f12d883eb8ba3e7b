#!/bin/bash
set -euxo pipefail
git clone -o origin https://github.com/pallets/flask /testbed
chmod -R 777 /testbed
cd /testbed
git reset --hard d8c37f43724cd9fb0870f77877b7c4c7e38a19e0
git remote remove origin
source /opt/miniconda3/bin/activate
conda activate testbed
echo "Current environment: $CONDA_DEFAULT_ENV"
python -m pip install -e .
