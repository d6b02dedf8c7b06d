#!/usr/bin/env bash
# Work with the notebooks interactively: JupyterLab on notebooks/, from a clean clone.
# 1. sets up ./.venv from the pinned lock (scripts/ensure-env.sh; once, then offline);
# 2. starts JupyterLab with the project's configuration, nothing written to your home's
#    Jupyter configuration:
#    - jupyter/jupyter_server_config.json: Jupytext's contents manager, so the percent-format
#      notebooks/NN_name.py files open as notebooks;
#    - jupyter/labconfig/default_setting_overrides.json: a double-click on a .py opens it as a
#      notebook; no news or update checks (works offline);
#    - notebooks/jupytext.toml: each .py is paired with an ignored notebooks/NN_name.ipynb that
#      keeps the outputs; the .py stays the source of truth (see the README);
#    - the kernel is this environment's Python (`import cnce` is this checkout's package).
# Extra arguments go to `jupyter lab`, e.g. --port 8890, --no-browser, --ip 0.0.0.0.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-env.sh
ROOT=$(pwd)
export JUPYTER_CONFIG_PATH="$ROOT/jupyter${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
export JUPYTER_PREFER_ENV_PATH=1   # the kernel and extensions of .venv come before any in ~/.local
args=(--ServerApp.root_dir="$ROOT/notebooks")
[ "$(id -u)" = 0 ] && args+=(--allow-root)   # containers and CI often run as root
exec .venv/bin/jupyter lab "${args[@]}" "$@"
