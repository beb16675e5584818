#!/usr/bin/env bash
# Pin what a venv holds: writes constraints/py<major>.<minor>.txt, the versions of every package
# installed in VENV (jetspark itself left out). Run it on a venv whose test run passed; .ci/run
# installs the oldest Python's venv from that file, so CI is reproducible, while the newest Python
# takes the newest versions setup.cfg allows.
#   tools/lock_versions.sh .venv-3.10
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:?usage: tools/lock_versions.sh VENV}"
version="$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
mkdir -p constraints
{
    echo "# The versions the test suite passed with on Python $version (tools/lock_versions.sh, $(date -u +%F))."
    echo "# pip install -e '.[test,docs]' --constraint constraints/py$version.txt"
    "$venv/bin/pip" list --disable-pip-version-check --format=freeze --exclude-editable | grep -Ev '^(jetspark|pip|setuptools|wheel)=='
} >"constraints/py$version.txt"
echo "wrote constraints/py$version.txt"
