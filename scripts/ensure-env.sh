#!/usr/bin/env bash
# Create or reuse ./.venv and install the pinned environment (requirements-lock.txt) plus
# the cnce package in editable mode. Idempotent: re-installs only when the lock changes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[ensure-env] creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
STAMP=.venv/.cnce-lock-stamp
WANT=$(cat requirements-lock.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "[ensure-env] installing pinned requirements (requirements-lock.txt)"
  .venv/bin/python -m pip install -q --upgrade pip
  # pip compiles every module now: where PYTHONDONTWRITEBYTECODE is set (as on this project's
  # machines) Python would otherwise recompile each import in every process (--no-compile made
  # the whole suite about 2 minutes slower, measured)
  .venv/bin/python -m pip install -q -r requirements-lock.txt
  .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
  .venv/bin/python -m ipykernel install --prefix .venv --name python3 --display-name "Python 3" >/dev/null
  echo "$WANT" > "$STAMP"
fi
