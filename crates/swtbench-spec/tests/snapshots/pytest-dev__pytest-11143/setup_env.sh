#!/bin/bash
set -euxo pipefail
source /opt/miniconda3/bin/activate
conda create -n testbed python=3.9  -y
conda activate testbed
python -m pip install iniconfig==2.0.0 packaging==23.1 pluggy==1.3.0 exceptiongroup==1.1.3 tomli==2.0.1
