#!/bin/bash
set -euxo pipefail
git clone -o origin https://github.com/django/django /testbed
chmod -R 777 /testbed
cd /testbed
git reset --hard b9cf764be62e77b4777b3a75ec256f6209a57671
git remote remove origin
source /opt/miniconda3/bin/activate
conda activate testbed
echo "Current environment: $CONDA_DEFAULT_ENV"
apt-get update && apt-get install -y locales
echo 'en_US UTF-8' > /etc/locale.gen
locale-gen en_US.UTF-8
python setup.py install
