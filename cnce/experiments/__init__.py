"""Experiments of the paper: declarative configs per figure, a resumable runner, a results store.

Typical use::

    from cnce.experiments import ensure
    df = ensure("consistency", scale="quick")       # computes missing cells, then loads

or from the command line: ``python -m cnce list`` and
``python -m cnce run consistency --scale paper``.
"""
from .configs import FIGURES, SCALES, STUDIES, Cell, ExperimentConfig, experiment_names, get_config
from .runner import derive_seed, ensure, for_display, load_results, missing_cells, page_results, provenance_table, run
from .store import CorruptResultsError, ResultStore, default_results_dir

__all__ = [
    "for_display",
    "FIGURES",
    "SCALES",
    "STUDIES",
    "Cell",
    "ExperimentConfig",
    "experiment_names",
    "get_config",
    "derive_seed",
    "ensure",
    "load_results",
    "missing_cells",
    "page_results",
    "provenance_table",
    "run",
    "CorruptResultsError",
    "ResultStore",
    "default_results_dir",
]
