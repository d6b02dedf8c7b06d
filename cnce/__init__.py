"""cnce: conditional noise-contrastive estimation of unnormalised models.

A reproducible companion to Ceylan & Gutmann (ICML 2018). The public surface is :func:`cnce.fit`,
:mod:`cnce.models`, :mod:`cnce.noise`, :mod:`cnce.losses`, :mod:`cnce.eps` and the options
(:class:`cnce.FitOptions`, :func:`cnce.option_context`, :func:`cnce.set_options`).

The rooms, one job each:

* :mod:`cnce.fit` -- the one batched estimator (CNCE, NCE, MLE, score matching): settles every argument once;
* :mod:`cnce.models` -- the paper's unnormalised models and what each declares to the backends;
* :mod:`cnce.noise` -- conditional noise (Eqs. 13, 64) and NCE's Gaussian noise;
* :mod:`cnce.losses` -- the loss functions, written readably (Eqs. 8-9 and the baselines);
* :mod:`cnce.eps` -- eps: the rules, the heuristic, the one resolver, the eps setting grammar;
* :mod:`cnce.options` -- how a fit computes: FitOptions and the solvers' settings;
* :mod:`cnce.backends` -- the plan (formulation, solver settings) and the torch and compiled backends;
* :mod:`cnce.optim` / :mod:`cnce._fused` -- the batched torch solvers / the compiled CPU kernels and solvers;
* :mod:`cnce.result` -- the result types of every solver and backend;
* :mod:`cnce.theory` -- numerical checks of the paper's theory (Sec. 2, Supp. B);
* :mod:`cnce.experiments` -- the synthetic studies: configs per figure, the resumable runner, the store, analysis;
* :mod:`cnce.nn` -- CNCE for any PyTorch energy network, beside NCE, DSM and SSM;
* :mod:`cnce.images` -- the four-layer image model of Section 4;
* :mod:`cnce.plotting` -- the book's figures;
* :mod:`cnce.provenance` -- seeds, atomic writes, git state and source hashes, environment records;
* :mod:`cnce._validation` -- argument checks shared by every front door;
* :mod:`cnce.constraints` -- the one constraint system (typed validators of options and settings);
* :mod:`cnce.locations` -- the data folder of results and weights (the user's choice);
* :mod:`cnce.names` -- typed names: jobs, ablation cells;
* :mod:`cnce.report` -- what a page reports: glued numbers, verdict blocks, t intervals and the rule over seeds;
* :mod:`cnce.cli` / :mod:`cnce.precompile` -- ``python -m cnce`` / ahead-of-time kernel compilation.

The book's workshop (book build, notebook reruns and goldens, speed tables, run adoption, the
notebook registry) is the separate package ``companion`` in the repository; it imports ``cnce``,
never the other way round.
"""
import importlib
import sys
import types

from ._version import __version__

#: what ``cnce.<name>`` gives, loaded on first use (``import cnce`` alone loads neither torch nor
#: numba: ``python -m cnce --help`` and the provenance tools stay fast)
_LAZY = {"fit": ("cnce.fit", "fit"), "METHODS": ("cnce.fit", "METHODS"), "FitResult": ("cnce.result", "FitResult"),
         "FitOptions": ("cnce.options", "FitOptions"), "get_options": ("cnce.options", "get_options"),
         "option_context": ("cnce.options", "option_context"), "set_options": ("cnce.options", "set_options"),
         "eps": ("cnce.eps", None), "losses": ("cnce.losses", None), "models": ("cnce.models", None),
         "noise": ("cnce.noise", None)}

__all__ = ["fit", "FitResult", "METHODS", "FitOptions", "option_context", "set_options", "get_options", "models", "noise",
           "losses", "eps", "__version__"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'cnce' has no attribute {name!r}")
    module, attr = _LAZY[name]
    mod = importlib.import_module(module)
    value = mod if attr is None else getattr(mod, attr)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """``cnce.fit`` is the function, as it was when ``__init__`` imported it eagerly: importing the
    submodule ``cnce.fit`` (which sets the package's attribute) does not replace it."""

    def __setattr__(self, name, value):
        if name == "fit" and isinstance(value, types.ModuleType):
            return  # the module stays sys.modules["cnce.fit"]
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
