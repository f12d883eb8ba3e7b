#!/bin/bash
set -euxo pipefail
git clone -o origin https://github.com/psf/requests /testbed
chmod -R 777 /testbed
cd /testbed
git reset --hard 110048f9837f8441ea536804115e80b69f400277
git remote remove origin
source /opt/miniconda3/bin/activate
conda activate testbed
echo "Current environment: $CONDA_DEFAULT_ENV"
python -m pip install .
