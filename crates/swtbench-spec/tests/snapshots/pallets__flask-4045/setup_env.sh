#!/bin/bash
set -euxo pipefail
source /opt/miniconda3/bin/activate
conda create -n testbed python=3.9 -y
cat <<'EOF_59812759871' > $HOME/requirements.txt
alabaster==0.7.12
babel==2.9.1
sphinx==4.1.1
sphinx-issues==1.2.0
sphinx-tabs==3.1.0

asgiref==3.4.1
blinker==1.4
greenlet==1.1.0
pytest==6.2.4
python-dotenv==0.18.0

cfgv==3.3.1
click==8.0.1
distlib==0.3.2
filelock==3.0.12
pip-tools==6.2.0
pre-commit==2.13.0
tox==3.24.0


EOF_59812759871
conda activate testbed && python -m pip install -r $HOME/requirements.txt
rm $HOME/requirements.txt
conda activate testbed
python -m pip install setuptools==70.0.0 Werkzeug==2.3.7 Jinja2==3.0.1 itsdangerous==2.1.2 click==8.0.1 MarkupSafe==2.1.3
