#!/usr/bin/env bash
# Build the second natural-image set (Section 4): the Debian wallpaper "image pack".
# 1. installs Debian's mate-backgrounds and plasma-workspace-wallpapers with apt-get (needs root;
#    skipped when both are already installed; apt-get update is run when the install fails);
# 2. runs `python -m cnce image-pack` (cnce/images/pack.py): grey, halved by nearest neighbour,
#    8-bit, one compressed .npz (about 5 MB) at data/photos/pack.npz, which git ignores.
# Extra arguments go to `image-pack` (e.g. --out other/place.npz). The python is ./.venv's
# (scripts/ensure-env.sh sets it up) unless PYTHON names another one.
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(mate-backgrounds plasma-workspace-wallpapers)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
need=()
for p in "${PKGS[@]}"; do installed "$p" || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "[photo-pack] error: ${need[*]} not installed and apt-get is not available (a Debian/Ubuntu system is needed)" >&2
    exit 1
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "[photo-pack] error: ${need[*]} not installed and this is not root; run this script as root," >&2
    echo "             or install them first: sudo apt-get install -y ${need[*]}" >&2
    exit 1
  fi
  echo "[photo-pack] installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends "${need[@]}" \
    || { apt-get update -q && apt-get install -y -q --no-install-recommends "${need[@]}"; } \
    || { echo "[photo-pack] error: apt-get could not install ${need[*]}" >&2; exit 1; }
fi

PY=${PYTHON:-.venv/bin/python}
if [ ! -x "$PY" ] && ! command -v "$PY" >/dev/null 2>&1; then
  echo "[photo-pack] error: $PY not found; run scripts/ensure-env.sh first (or set PYTHON)" >&2
  exit 1
fi
start=$(date +%s)
"$PY" -m cnce image-pack "$@"
echo "[photo-pack] done in $(( $(date +%s) - start )) s"
