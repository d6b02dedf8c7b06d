#!/usr/bin/env bash
# Create or reuse ./.venv and install the pinned environment (requirements-lock.txt) plus
# the cnce package in editable mode. Idempotent: re-installs only when the lock changes.
#   --core   install only the package's own dependencies (pyproject.toml, at the lock's pins):
#            enough to import cnce and compile its kernels (python -m cnce compile), so that
#            scripts/test.sh can compile them while the rest of the lock installs
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
CORE=0
for arg in "$@"; do
  case "$arg" in
    --core) CORE=1 ;;
    *) echo "ensure-env.sh: unknown argument '$arg' (expected --core)" >&2; exit 2 ;;
  esac
done
STAMP=.venv/.cnce-lock-stamp
CORE_STAMP=.venv/.cnce-core-stamp
WANT=$(cat requirements-lock.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  echo "[ensure-env] creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
# pip compiles every module as it installs: where PYTHONDONTWRITEBYTECODE is set (as on this
# project's machines) Python would otherwise recompile each import in every process
# (--no-compile made the whole suite about 2 minutes slower, measured)
if [ ! -f "$CORE_STAMP" ] || [ "$(cat "$CORE_STAMP")" != "$WANT" ]; then
  echo "[ensure-env] installing the package's dependencies (pyproject.toml, pinned by requirements-lock.txt)"
  .venv/bin/python -m pip install -q --upgrade pip
  mapfile -t DEPS < <(.venv/bin/python -c '
import re, tomllib
for d in tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]:
    print(re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0])')
  OTHERS=()
  for d in "${DEPS[@]}"; do [ "$d" = torch ] || OTHERS+=("$d"); done
  # two installers side by side (pip uses one core; torch alone takes about 40 s): torch with
  # its dependencies, and the others with theirs (the two share no package)
  .venv/bin/python -m pip install -q -c requirements-lock.txt torch &
  torch_pid=$!
  others_rc=0
  .venv/bin/python -m pip install -q -c requirements-lock.txt "${OTHERS[@]}" || others_rc=$?
  wait "$torch_pid" || { echo "[ensure-env] installing torch failed" >&2; exit 1; }
  [ "$others_rc" = 0 ] || { echo "[ensure-env] installing the package's dependencies failed" >&2; exit 1; }
  echo "$WANT" > "$CORE_STAMP"
fi
[ "$CORE" = 1 ] && exit 0
echo "[ensure-env] installing pinned requirements (requirements-lock.txt)"
.venv/bin/python -m pip install -q -r requirements-lock.txt
.venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
# the companion (companion/: the book's workshop, not in the wheel) importable by every process of
# this venv, wherever it runs: notebook kernels start in notebooks/ and tests/golden/
PURELIB=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$PWD" > "$PURELIB/cnce-companion.pth"
.venv/bin/python -m ipykernel install --prefix .venv --name python3 --display-name "Python 3" >/dev/null
echo "$WANT" > "$STAMP"
