#!/usr/bin/env bash
# Regenerate the nbval golden notebooks under tests/golden/ deliberately (after an intended
# change of a notebook or of the numbers it prints). Arguments: notebook names (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-env.sh
exec .venv/bin/python -m companion goldens "$@"
