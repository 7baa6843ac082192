#!/usr/bin/env bash
# The house rules, as CI runs them: ruff (style, imports), mypy (types), import-linter (the layer contract).
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check src tests bench scripts fixtures
mypy
lint-imports
