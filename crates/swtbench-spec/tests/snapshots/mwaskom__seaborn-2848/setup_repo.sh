#!/bin/bash
set -euxo pipefail
git clone -o origin https://github.com/mwaskom/seaborn /testbed
chmod -R 777 /testbed
cd /testbed
git reset --hard 94621cef29f80282436d73e8d2c0aa76dab81273
git remote remove origin
source /opt/miniconda3/bin/activate
conda activate testbed
echo "Current environment: $CONDA_DEFAULT_ENV"
python -m pip install -e .[dev]
