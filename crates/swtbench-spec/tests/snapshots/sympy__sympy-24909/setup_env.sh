#!/bin/bash
set -euxo pipefail
source /opt/miniconda3/bin/activate
conda create -n testbed python=3.9 -y
cat <<'EOF_59812759871' > $HOME/requirements.txt
mpmath==1.3.0
pytest
pytest-xdist
pytest-timeout
pytest-split
pytest-doctestplus
hypothesis
flake8
flake8-comprehensions

EOF_59812759871
conda activate testbed && python -m pip install -r $HOME/requirements.txt
rm $HOME/requirements.txt
conda activate testbed
python -m pip install mpmath==1.3.0
