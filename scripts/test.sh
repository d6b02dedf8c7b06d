#!/usr/bin/env bash
# Run the whole test suite from a clean clone: unit tests, the nbval regression tests on the
# golden notebooks (tests/golden/) and the headless-browser check of the built book.
# 1. sets up ./.venv (scripts/ensure-env.sh);
# 2. installs Debian's chromium when it is missing and apt-get is usable (best effort: without
#    it the browser test is skipped, not failed);
# 3. builds the book at quick scale (scripts/book.sh), which the browser test then reuses;
# 4. runs pytest; extra arguments go to pytest (e.g. -m slow, -k quickstart, -x).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-env.sh || exit 1

if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "[test] installing Debian's chromium for the browser test"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq chromium >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
    || echo "[test] could not install chromium: the browser test will be skipped"
fi

export PYTHONHASHSEED=0
status=0
start=$(date +%s)
if [ "${CNCE_SKIP_BOOK:-0}" != 1 ]; then
  echo "[test] building the book (quick scale)"
  .venv/bin/python -m cnce book || { echo "[test] BOOK BUILD FAILED"; status=1; }
  echo "[test] book step took $(( $(date +%s) - start )) s"
fi
t1=$(date +%s)
.venv/bin/python -m pytest "$@" || status=$?
echo "[test] pytest took $(( $(date +%s) - t1 )) s; total $(( $(date +%s) - start )) s"
exit $status
