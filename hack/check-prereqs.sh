#!/usr/bin/env bash
# Copyright 2026 The mrtr-operator Authors.
# Licensed under the Apache License, Version 2.0: http://www.apache.org/licenses/LICENSE-2.0
#
# make test's first step: checks, in well under a second, the tools its suites need beyond Go and
# make, so that a machine without them fails at once with one line naming what is missing, not
# minutes later half way through:
#
#   - $PYTHON (default python3), 3.11 or newer, with venv and ensurepip (Debian ships ensurepip apart,
#     in python3-venv): make test-python makes a virtual environment with it and fills it from PyPI;
#   - Node.js 20.19 or newer, and npm: make test-typescript runs npm ci and node's test runner;
#   - cargo, once the Rust package is there (clients/rust/Cargo.toml): its suite runs cargo test.
#
# It installs nothing: .ci/run installs python3-venv where it is missing before it runs make test.
#
#   hack/check-prereqs.sh [DIR]   (DIR: the repository's root; default this script's parent folder)
set -uo pipefail

# Only bash's builtins besides the tools checked, so that it runs on any PATH.
here=${BASH_SOURCE[0]%/*}
[ "$here" != "${BASH_SOURCE[0]}" ] || here=.
root=${1:-$here/..}
python=${PYTHON:-python3}
missing=()

if ! command -v "$python" >/dev/null 2>&1; then
	missing+=("Python 3.11+ with venv ($python is not on PATH)")
else
	# One interpreter start answers both questions: its version, and whether venv can bootstrap pip.
	# shellcheck disable=SC2016
	state=$("$python" -c '
import sys
v = "%d.%d" % sys.version_info[:2]
try:
    import ensurepip, venv
except ImportError:
    print(v, "no-venv")
else:
    print(v, "old" if sys.version_info < (3, 11) else "ok")' 2>/dev/null) || state="? broken"
	case ${state#* } in
	ok) ;;
	old) missing+=("Python 3.11+ with venv ($python is ${state%% *})") ;;
	no-venv) missing+=("Python 3.11+ with venv and ensurepip ($python ${state%% *} has none: apt-get install python3-venv)") ;;
	*) missing+=("Python 3.11+ with venv ($python does not run)") ;;
	esac
fi

if ! command -v node >/dev/null 2>&1; then
	missing+=("Node.js 20.19+ (node is not on PATH)")
else
	version=$(node --version 2>/dev/null) || version=""
	IFS=. read -r major minor _ <<<"${version#v}"
	if ! [[ $major =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]]; then
		missing+=("Node.js 20.19+ (node --version says '$version')")
	elif ((major < 20 || (major == 20 && minor < 19))); then
		missing+=("Node.js 20.19+ (node is $version)")
	fi
fi
command -v npm >/dev/null 2>&1 || missing+=("npm (not on PATH)")

if [ -f "$root/clients/rust/Cargo.toml" ]; then
	command -v cargo >/dev/null 2>&1 || missing+=("cargo, for clients/rust (not on PATH)")
fi

if [ ${#missing[@]} -gt 0 ]; then
	list=$(printf '; %s' "${missing[@]}")
	echo "make test needs ${list#; }. See docs/development.md, \"What you need\"." >&2
	exit 1
fi
