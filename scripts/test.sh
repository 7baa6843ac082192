#!/usr/bin/env bash
# Installs spec-doctor with its test extras and runs the whole test-suite, then the house rules (ruff, mypy,
# the layer contract). Outside a virtual environment it makes and uses ./.venv (Debian's python3 refuses
# system-wide pip installs).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import sys; sys.exit(sys.prefix == sys.base_prefix)'; then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  # shellcheck disable=SC1091
  . .venv/bin/activate
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
# The CPU build of torch for the offline probe's tests (on this kind of machine pip takes it from a local
# wheel; asking for plain `torch` would pull a multi-GB CUDA build).
python3 -m pip install -q "torch==2.13.0"
python3 -m pip install -q -e ".[test]"
# The tests that start real vLLM servers (marker `live`) run in .ci/run's live phase, after their prerequisites;
# here they are deselected rather than reported as skips. `bash scripts/test.sh -m live` runs them.
python3 -m pytest -q -m "not live" "$@"
bash scripts/lint.sh
