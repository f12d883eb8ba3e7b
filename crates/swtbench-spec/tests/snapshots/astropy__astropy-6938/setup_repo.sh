#!/bin/bash
set -euxo pipefail
git clone -o origin https://github.com/astropy/astropy /testbed
chmod -R 777 /testbed
cd /testbed
git reset --hard c76af9ed6bb89bfba45b9f5bc1e635188278e2fa
git remote remove origin
source /opt/miniconda3/bin/activate
conda activate testbed
echo "Current environment: $CONDA_DEFAULT_ENV"
python -m pip install -e .[test] --verbose
