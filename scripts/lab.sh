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
# Options:
#   --active-env  use the active Python environment instead of ./.venv (see 1.)
#   --threads N   CPU threads of each notebook kernel (default 1, as in the book build and the
#                 goldens; more helps at paper scale)
# Other arguments go to `jupyter lab`, e.g. --port 8890, --no-browser, --ip 0.0.0.0.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
ACTIVE=0
THREADS=1
LAB_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --active-env) ACTIVE=1 ;;
    --threads) [ $# -ge 2 ] || { echo "[lab] --threads needs a value" >&2; exit 2; }; THREADS=$2; shift ;;
    --threads=*) THREADS=${1#--threads=} ;;
    *) LAB_ARGS+=("$1") ;;
  esac
  shift
done
if ! [[ "$THREADS" =~ ^[1-9][0-9]*$ ]]; then
  echo "[lab] --threads must be a positive integer; got '$THREADS'" >&2
  exit 2
fi
if [ "$ACTIVE" = 1 ]; then
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
export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS   # inherited by the kernels
args=(--ServerApp.root_dir="$ROOT/notebooks")
if [ "$(id -u)" = 0 ]; then args+=(--allow-root); fi   # containers and CI often run as root
echo "[lab] JupyterLab on notebooks/ with $PY; kernels use $THREADS CPU thread(s) (--threads N)"
exec "$PY" -m jupyter lab "${args[@]}" ${LAB_ARGS[@]+"${LAB_ARGS[@]}"}
