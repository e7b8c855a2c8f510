#!/usr/bin/env bash
# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
#
# Makes sure $PYTHON (default python3) can make a virtual environment for the Python package's suite
# (make test-python): Debian ships venv's pip bootstrap, ensurepip, apart, in python3-venv. As root
# with apt-get it installs python3 and python3-venv when they are missing; elsewhere it says what to
# install and fails.
set -euo pipefail

python=${PYTHON:-python3}
"$python" -c 'import ensurepip, venv, sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1 && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "installing python3 and python3-venv (make test-python needs venv and ensurepip)"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv
	"$python" -c 'import ensurepip, venv, sys; sys.exit(sys.version_info < (3, 11))' && exit 0
fi
echo "make test-python needs Python 3.11 or newer with venv and ensurepip as $python" \
	"(Debian: apt-get install python3 python3-venv; or set PYTHON=/path/to/python3.11)" >&2
exit 1
