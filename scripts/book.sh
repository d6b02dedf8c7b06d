#!/usr/bin/env bash
# Build the companion book into _build/html at quick scale, from a clean clone.
# Sets up ./.venv first (scripts/ensure-env.sh). Notebooks run through the execution cache,
# so a rebuild after a prose edit only re-renders pages. Warnings and failing cells fail
# the build. Options (passed to `python -m companion book`):
#   --clean       delete _build and the execution cache first (re-executes every notebook)
#   --no-strict   keep going on warnings (drafting)
#   --threads N   CPU threads per notebook kernel (default 1: the numbers match the goldens)
#   --jobs N      notebooks executed at a time (default 2; each on its own threads)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-env.sh
# the kernels first (seconds once cached), so that notebooks executing side by side do not
# each compile them
.venv/bin/python -m cnce compile
exec nice -n "${CNCE_NICE:-0}" .venv/bin/python -m companion book "$@"
