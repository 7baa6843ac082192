#!/usr/bin/env bash
# Installs spec-doctor with its test extras and runs the whole test-suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# The CPU build of torch for the offline probe's tests (on this kind of machine pip takes it from a local
# wheel; asking for plain `torch` would pull a multi-GB CUDA build).
python3 -m pip install -q "torch==2.13.0"
python3 -m pip install -q -e ".[test]"
python3 -m pytest -q "$@"
