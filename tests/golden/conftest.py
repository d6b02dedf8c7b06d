"""nbval set-up for the golden notebooks in this folder.

Text outputs are compared number by number with a tolerance and word by word exactly
(``tolerant_compare.py``: the default tolerance, the per-cell table and the reasons). Only
stdout and results are compared: stderr (warnings, progress bars) is dropped from both
sides, since its text changes with library versions and timing, not with the results. A
cell that raises still fails. Cells whose output is provenance (timestamps, commits, wall
times) should carry the tag ``nbval-ignore-output`` in their notebook
(``# %% tags=["nbval-ignore-output"]``).

The goldens are produced by ``python -m companion goldens`` (``companion.reruns.regenerate_goldens``):
executed in ``notebooks/`` under :data:`companion.process_env.GOLDEN_ENV` (one thread, fixed hash seed,
no progress bars) on the native CPU. Each golden is checked twice, and no notebook runs a
third time:

* **here, by nbval, on another CPU:** the kernels compile for a generic x86-64 and torch runs
  its baseline kernels (:func:`companion.process_env.generic_cpu_env`), with two threads instead of one
  (``--golden-cpu native`` and ``--golden-threads 1`` give the goldens' own settings;
  ``tests/test_portability.py`` runs the other pairs under ``-m slow``);
* **in the goldens' own configuration** (native CPU, one thread), on the notebooks the book
  build executed (``test_book_matches_goldens.py``), with the comparison of this file.

nbval would start its kernel in this folder with pytest's environment; here its kernels get
the goldens' working directory and environment plus the CPU and threads above, so that only
a real change in the numbers makes a cell fail. The sanitize file is found relative to this
folder, wherever pytest is started from.
"""
from __future__ import annotations

import os
from pathlib import Path

import nbformat
import nbval.kernel
import nbval.plugin

from companion.reruns import default_notebooks_dir
from companion.process_env import GOLDEN_ENV, generic_cpu_env, thread_env
from tolerant_compare import compare_text, tolerance_for

HERE = Path(__file__).resolve().parent
_original_start = nbval.kernel.start_new_kernel


#: the kernels' environment beyond :data:`GOLDEN_ENV`: the CPU (``--golden-cpu``) and threads
#: (``--golden-threads``) of this run (tests/conftest.py)
_KERNEL_ENV: dict[str, str] = {}


def pytest_configure(config):
    _KERNEL_ENV.clear()
    _KERNEL_ENV.update(thread_env(config.getoption("golden_threads")))
    if config.getoption("golden_cpu") == "generic":
        _KERNEL_ENV.update(generic_cpu_env())


def _start_like_goldens(*args, **kwargs):
    kwargs["cwd"] = str(default_notebooks_dir())
    env = dict(os.environ)
    if "NUMBA_CPU_NAME" in _KERNEL_ENV:  # another CPU: none of this process's CPU settings
        env = {k: v for k, v in env.items() if not k.startswith(("NUMBA_", "ATEN_"))}
    kwargs["env"] = {**env, **GOLDEN_ENV, **_KERNEL_ENV}
    return _original_start(*args, **kwargs)


nbval.kernel.start_new_kernel = _start_like_goldens


def pytest_collectstart(collector):
    opt = collector.config.option
    if getattr(opt, "nbval_sanitize_with", None) is None:
        opt.nbval_sanitize_with = str(HERE / "sanitize.cfg")


def _execute_with_history(self, cell_input, allow_stdin=None):
    # nbval sends cells with store_history=False, and IPython then ignores a trailing ';'
    # (it reads the cell from the history), so plotting cells would print `Text(...)` that the
    # goldens (executed like Jupyter and the book do) never had. Execute as Jupyter does.
    return self.kc.execute(cell_input, store_history=True, allow_stdin=False, stop_on_error=False)


nbval.kernel.RunningKernel.execute_cell_input = _execute_with_history


_original_compare = nbval.plugin.IPyNbCell.compare_outputs


def _without_stderr(outputs):
    return [o for o in outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]


def _texts(output):
    """``(key, text)`` of every text an output holds: a stream's text, each text MIME type."""
    if output.get("output_type") == "stream":
        yield ("text",), output.get("text", "")
    for mime, value in (output.get("data") or {}).items():
        if isinstance(value, str) and not mime.startswith("image/"):
            yield ("data", mime), value


def _compare_numbers_with_tolerance(self, test, ref, skip_compare=None):
    """nbval's comparison, with numbers in text outputs compared at a tolerance: a fresh text
    that matches its golden under :func:`tolerant_compare.compare_text` is replaced by the
    golden before nbval compares strings; a text that does not keeps its value, and the
    failure report says which numbers differ and by how much."""
    test = [nbformat.from_dict(o) for o in _without_stderr(test)]
    ref = _without_stderr(ref)
    tol = tolerance_for(Path(str(self.fspath)).name, self.cell.source)
    problems = []
    for fresh, golden in zip(test, ref):
        if fresh.get("output_type") != golden.get("output_type"):
            continue
        for key, g_text in _texts(golden):
            holder = fresh if key[0] == "text" else fresh.get("data", {})
            name = key[-1]
            f_text = holder.get(name)
            if not isinstance(f_text, str):
                continue
            why = compare_text(self.sanitize(g_text), self.sanitize(f_text), tol)
            if why:
                problems += [f"{'/'.join(key)}: {w}" for w in why]
            else:
                holder[name] = g_text
    ok = _original_compare(self, test, ref, skip_compare)
    if not ok and problems:
        self.comparison_traceback.append(
            f"\nnumbers compared with rtol={tol.rtol:g}, atol={tol.atol:g} ({tol.reason}):")
        self.comparison_traceback.extend("  " + p for p in problems)
    return ok


nbval.plugin.IPyNbCell.compare_outputs = _compare_numbers_with_tolerance
