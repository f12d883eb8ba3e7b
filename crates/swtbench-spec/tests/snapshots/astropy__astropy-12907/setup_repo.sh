#!/bin/bash
set -euxo pipefail
git clone -o origin https://github.com/astropy/astropy /testbed
chmod -R 777 /testbed
cd /testbed
git reset --hard d16bfe05a744909de4b27f5875fe0d4ed41ce607
git remote remove origin
source /opt/miniconda3/bin/activate
conda activate testbed
echo "Current environment: $CONDA_DEFAULT_ENV"
sed -i 's/requires = \["setuptools",/requires = \["setuptools==68.0.0",/' pyproject.toml
python -m pip install -e .[test] --verbose
