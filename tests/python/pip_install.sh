#!/usr/bin/env bash
# Installs the kiln package as a user would, with `pip install`, into a fresh
# virtual environment, with the extras the tests use (Triton, pytest).
# Usage: pip_install.sh PYTHON VENV SOURCE_DIR WHEEL_BUILD_DIR
# The wheel's CMake build is kept in WHEEL_BUILD_DIR, so a second run only
# rebuilds what changed; the environment itself is made anew every time.
set -euo pipefail
python=$1 venv=$2 src=$3 build=$4
"$python" -m venv --clear "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off \
  --config-settings=build-dir="$build" "$src[triton,test]"
