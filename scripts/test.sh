#!/usr/bin/env bash
# Run the whole test suite from a clean clone: unit tests, the nbval regression tests on the
# golden notebooks (tests/golden/) and the headless-browser check of the built book.
# 1. sets up ./.venv (scripts/ensure-env.sh);
# 2. installs Debian's chromium when it is missing and apt-get is usable (best effort: without
#    it the browser test is skipped, not failed);
# 3. builds the book at quick scale (scripts/book.sh) -- in the background while pytest runs
#    every test that does not need it, on CNCE_TEST_WORKERS (default 2) pytest-xdist workers;
# 4. runs the browser tests, which check the built book.
# Extra arguments go to pytest (e.g. -m slow, -k quickstart, -x); with arguments the book is
# built first and pytest then runs once with them (on the same workers).
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
WORKERS=${CNCE_TEST_WORKERS:-2}
XDIST=()
[ "$WORKERS" -gt 0 ] && XDIST=(-n "$WORKERS" --dist loadscope --no-loadscope-reorder)
status=0
start=$(date +%s)
mkdir -p runs
BOOK_LOG=runs/test-book.log

build_book() {
  .venv/bin/python -m cnce book > "$BOOK_LOG" 2>&1
  local rc=$?
  tail -n 5 "$BOOK_LOG"
  echo "[test] book step took $(( $(date +%s) - start )) s (log: $BOOK_LOG)"
  return $rc
}

if [ $# -gt 0 ]; then  # chosen tests: the book first, then pytest once with the arguments
  if [ "${CNCE_SKIP_BOOK:-0}" != 1 ]; then
    echo "[test] building the book (quick scale)"
    build_book || { echo "[test] BOOK BUILD FAILED"; status=1; }
  fi
  t1=$(date +%s)
  .venv/bin/python -m pytest "${XDIST[@]}" "$@" || status=$?
  echo "[test] pytest took $(( $(date +%s) - t1 )) s; total $(( $(date +%s) - start )) s"
  exit $status
fi

book_pid=
if [ "${CNCE_SKIP_BOOK:-0}" != 1 ]; then
  echo "[test] building the book (quick scale) in the background"
  build_book &
  book_pid=$!
fi
t1=$(date +%s)
.venv/bin/python -m pytest "${XDIST[@]}" -m "not slow and not browser" || status=$?
echo "[test] pytest (all but the browser tests) took $(( $(date +%s) - t1 )) s"
if [ -n "$book_pid" ]; then
  wait "$book_pid" || { echo "[test] BOOK BUILD FAILED"; status=1; }
fi
t2=$(date +%s)
.venv/bin/python -m pytest -m "browser and not slow" || status=$?
echo "[test] browser tests took $(( $(date +%s) - t2 )) s; total $(( $(date +%s) - start )) s"
exit $status
