#!/usr/bin/env bash
# Run the whole test suite from a clean clone: unit tests, the golden notebooks (tests/golden/)
# and the headless-browser check of the built book. Each notebook executes twice: once for the
# book (this CPU, one thread: the goldens' own settings, compared with the goldens after the
# build) and once by nbval on a generic x86-64 with two threads (the other-CPU check).
# 1. sets up ./.venv (scripts/ensure-env.sh): first the package's own dependencies, then, while
#    the kernels compile, the rest of the lock;
# 2. compiles the numba kernels for this CPU (beside the rest of the lock), then for the generic
#    x86-64, while Debian's chromium is installed when missing and apt-get is usable (best
#    effort: without it the browser tests are skipped, not failed) -- so no two processes
#    compile the same kernels at once;
# 3. builds the book at quick scale (`python -m companion book`, as scripts/book.sh does) in the
#    background as soon as the environment is complete and this CPU's kernels are compiled
#    (beside the generic CPU's compile), then at once runs the tests of the built book (its
#    notebooks against the goldens, the browser checks) on two workers, while pytest runs every
#    other test on CNCE_TEST_WORKERS (default 2) pytest-xdist workers from the moment the
#    generic kernels are compiled (it starts with the golden notebooks, which run on the
#    generic CPU).
# Extra arguments go to pytest (e.g. -m slow, -k quickstart, -x); with arguments the book is
# built first and pytest then runs once with them (on the same workers).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
scripts/ensure-env.sh --core || exit 1  # enough to compile the kernels

mkdir -p runs
install_chromium() {
  if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "[test] installing Debian's chromium for the browser test"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq chromium >/dev/null 2>&1 \
      || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
      || echo "[test] could not install chromium: the browser test will be skipped"
  fi
}
CHROMIUM_DONE=runs/.test-chromium.done
rm -f "$CHROMIUM_DONE"
( install_chromium; touch "$CHROMIUM_DONE" ) &
chromium_pid=$!
echo "[test] compiling the CPU kernels for this CPU and for a generic x86-64 (logs: runs/test-compile-*.log)"
NATIVE_RC=runs/.test-compile-native.rc
rm -f "$NATIVE_RC"
( .venv/bin/python -m cnce compile > runs/test-compile-native.log 2>&1; echo $? > "$NATIVE_RC" ) &
native_pid=$!
# the rest of the lock (book, tests, browser) beside it, then the generic CPU's kernels: this
# CPU's come first, since the book waits for them and is the longest path
scripts/ensure-env.sh
env_rc=$?
[ "$env_rc" = 0 ] || { echo "[test] SETTING UP .venv FAILED"; wait "$native_pid"; exit 1; }

# The kernels for this CPU compile longest. pytest need not wait for them: it starts with the
# golden notebooks, which run on the generic CPU; the book (and the chosen tests) wait here.
wait_native() {
  while [ ! -f "$NATIVE_RC" ]; do sleep 1; done
  tail -n 1 runs/test-compile-native.log
  [ "$(cat "$NATIVE_RC")" = 0 ] || { echo "[test] COMPILING THE KERNELS FOR THIS CPU FAILED"; return 1; }
}

export PYTHONHASHSEED=0
WORKERS=${CNCE_TEST_WORKERS:-2}
XDIST=()
[ "$WORKERS" -gt 0 ] && XDIST=(-n "$WORKERS" --dist loadscope --no-loadscope-reorder)
status=0
BOOK_LOG=runs/test-book.log

build_book() {
  .venv/bin/python -m companion book > "$BOOK_LOG" 2>&1
  local rc=$?
  tail -n 5 "$BOOK_LOG"
  echo "[test] book step took $(( $(date +%s) - start )) s (log: $BOOK_LOG)"
  return $rc
}

# the book, then at once the tests of the built book (while pytest may still run)
BOOK_TESTS_LOG=runs/test-built-book.log
BOOK_XDIST=()  # test_lab.py's tests share one JupyterLab server: one xdist group
[ "$WORKERS" -gt 0 ] && BOOK_XDIST=(-n "$WORKERS" --dist loadgroup)
book_and_its_tests() {
  wait_native || return 1
  if [ "${CNCE_SKIP_BOOK:-0}" != 1 ]; then
    build_book || { echo "[test] BOOK BUILD FAILED"; return 1; }
  fi
  while [ ! -f "$CHROMIUM_DONE" ]; do sleep 1; done  # the browser tests need it
  local t2
  t2=$(date +%s)
  .venv/bin/python -m pytest "${BOOK_XDIST[@]}" -p no:cacheprovider -m "(browser or book) and not slow" \
    > "$BOOK_TESTS_LOG" 2>&1
  local rc=$?
  echo "[test] tests of the built book (goldens, browser) took $(( $(date +%s) - t2 )) s (log: $BOOK_TESTS_LOG)"
  return $rc
}
if [ $# -eq 0 ]; then
  # the book needs the complete environment and this CPU's kernels (it waits for them), not
  # the generic CPU's: it starts now, beside their compile
  echo "[test] building the book (quick scale) in the background, then testing it"
  book_and_its_tests &
  book_pid=$!
fi
.venv/bin/python -m companion compile-generic > runs/test-compile-generic.log 2>&1
generic_rc=$?
wait "$chromium_pid"
tail -n 1 runs/test-compile-generic.log
if [ "$generic_rc" != 0 ]; then
  echo "[test] COMPILING THE KERNELS FOR THE GENERIC CPU FAILED"
  wait "$native_pid"
  [ -n "${book_pid:-}" ] && wait "$book_pid"  # nothing left running in the tree
  exit 1
fi
echo "[test] set-up took $(( $(date +%s) - start )) s"

if [ $# -gt 0 ]; then  # chosen tests: the book first, then pytest once with the arguments
  wait_native || exit 1
  if [ "${CNCE_SKIP_BOOK:-0}" != 1 ]; then
    echo "[test] building the book (quick scale)"
    build_book || { echo "[test] BOOK BUILD FAILED"; status=1; }
  fi
  t1=$(date +%s)
  .venv/bin/python -m pytest "${XDIST[@]}" "$@" || status=$?
  echo "[test] pytest took $(( $(date +%s) - t1 )) s; total $(( $(date +%s) - start )) s"
  exit $status
fi

t1=$(date +%s)
.venv/bin/python -m pytest "${XDIST[@]}" -m "not slow and not browser and not book" || status=$?
echo "[test] pytest (all but the tests of the built book) took $(( $(date +%s) - t1 )) s"
wait "$book_pid"
book_rc=$?
wait "$native_pid"
if [ -f "$BOOK_TESTS_LOG" ]; then
  echo "[test] ---- the tests of the built book ($BOOK_TESTS_LOG) ----"
  cat "$BOOK_TESTS_LOG"
fi
[ "$book_rc" = 0 ] || status=1
echo "[test] total $(( $(date +%s) - start )) s"
exit $status
