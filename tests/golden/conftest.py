"""nbval set-up for the golden notebooks in this folder.

Only stdout and results are compared: stderr (warnings, progress bars) is dropped from both
sides, since its text changes with library versions and timing, not with the results. A
cell that raises still fails. Cells whose output is provenance (timestamps, commits, wall
times) should carry the tag ``nbval-ignore-output`` in their notebook
(``# %% tags=["nbval-ignore-output"]``).

The goldens are produced by ``python -m cnce goldens`` (``cnce.batch.regenerate_goldens``):
executed in ``notebooks/`` under :data:`cnce.batch.GOLDEN_ENV` (one thread, fixed hash seed,
no progress bars). nbval would start its kernel in this folder with pytest's environment;
here its kernels get the same working directory and environment as the goldens had, so that
only a real change in the numbers makes a cell fail. The sanitize file is found relative to
this folder, wherever pytest is started from.
"""
from __future__ import annotations

import os
from pathlib import Path

import nbval.kernel
import nbval.plugin

from cnce.batch import GOLDEN_ENV, default_notebooks_dir

HERE = Path(__file__).resolve().parent
_original_start = nbval.kernel.start_new_kernel


def _start_like_goldens(*args, **kwargs):
    kwargs["cwd"] = str(default_notebooks_dir())
    kwargs["env"] = {**os.environ, **GOLDEN_ENV}
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


def _compare_without_stderr(self, test, ref, skip_compare=None):
    return _original_compare(self, _without_stderr(test), _without_stderr(ref), skip_compare)


nbval.plugin.IPyNbCell.compare_outputs = _compare_without_stderr
