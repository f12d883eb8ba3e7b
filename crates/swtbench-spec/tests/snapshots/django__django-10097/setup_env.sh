#!/bin/bash
set -euxo pipefail
source /opt/miniconda3/bin/activate
conda create -n testbed python=3.5 -y
cat <<'EOF_59812759871' > $HOME/requirements.txt
pytz
sqlparse

argon2-cffi >= 16.1.0
bcrypt
docutils
geoip2
jinja2 >= 2.9.2
numpy
Pillow
pylibmc; sys.platform != 'win32'
python-memcached >= 1.59
pywatchman; sys.platform != 'win32'
PyYAML
selenium

EOF_59812759871
conda activate testbed && python -m pip install -r $HOME/requirements.txt
rm $HOME/requirements.txt
conda activate testbed
python -m pip install setuptools
