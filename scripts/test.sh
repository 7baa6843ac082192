#!/usr/bin/env bash
# Installs spec-doctor with its test extras and runs the whole test-suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install -q -e ".[test]"
python3 -m pytest -q "$@"
