#!/usr/bin/env bash
# Work with the notebooks interactively: JupyterLab on notebooks/, from a clean clone.
# 1. sets up ./.venv from the pinned lock (scripts/ensure-env.sh: once, later starts need no
#    network); with --active-env, uses the active Python environment instead (a conda env made
#    from environment.yml), which must already have cnce and JupyterLab;
# 2. starts JupyterLab with the project's configuration; nothing is written to the Jupyter
#    configuration in your home folder:
#    - jupyter/jupyter_server_config.json: Jupytext's contents manager, so the percent-format
#      notebooks/NN_name.py files open as notebooks;
#    - jupyter/labconfig/default_setting_overrides.json: a double-click on a .py opens it as a
#      notebook; no news or update checks (works offline);
#    - notebooks/jupytext.toml: each .py is paired with an ignored notebooks/NN_name.ipynb that
#      keeps the outputs; the .py stays the source of truth (see the README);
#    - the "Python 3" kernel is this environment's Python, so `import cnce` is this checkout.
# Other arguments go to `jupyter lab`, e.g. --port 8890, --no-browser, --ip 0.0.0.0.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
if [ "${1:-}" = "--active-env" ]; then
  shift
  PY=$(command -v python || command -v python3)
  if ! "$PY" -c "import cnce, jupyterlab, jupytext" 2>/dev/null; then
    echo "[lab] $PY lacks cnce, jupyterlab or jupytext; for conda: conda env create -f environment.yml && conda activate cnce" >&2
    exit 1
  fi
  # the kernel the notebooks name ("python3", shown as "Python 3"), in this environment
  "$PY" -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
else
  scripts/ensure-env.sh
  PY=.venv/bin/python
fi
export JUPYTER_CONFIG_PATH="$ROOT/jupyter${JUPYTER_CONFIG_PATH:+:$JUPYTER_CONFIG_PATH}"
export JUPYTER_PREFER_ENV_PATH=1   # this environment's kernel and extensions before any in ~/.local
args=(--ServerApp.root_dir="$ROOT/notebooks")
if [ "$(id -u)" = 0 ]; then args+=(--allow-root); fi   # containers and CI often run as root
exec "$PY" -m jupyter lab "${args[@]}" "$@"
