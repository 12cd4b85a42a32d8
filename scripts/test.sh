#!/usr/bin/env bash
# Installs what the tests need into .venv and runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
exec .venv/bin/python -m pytest "$@"
