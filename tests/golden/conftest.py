"""nbval set-up for the golden notebooks in this folder.

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
