"""cnce: conditional noise-contrastive estimation of unnormalised models.

A reproducible companion to Ceylan & Gutmann (ICML 2018). The public surface:

* :func:`cnce.fit` -- one batched estimator (CNCE, NCE, MLE, score matching);
* :mod:`cnce.models` -- the paper's unnormalised models;
* :mod:`cnce.noise` -- conditional noise (Eqs. 13, 64) and NCE's Gaussian noise;
* :mod:`cnce.losses` -- the loss functions (Eqs. 8-9 and the baselines);
* :mod:`cnce.eps` -- the epsilon heuristic;
* :class:`cnce.FitOptions`, :func:`cnce.option_context`, :func:`cnce.set_options` -- solver
  options (how a fit is computed, not what it estimates).
"""
__version__ = "0.1.0"

from . import eps, losses, models, noise  # noqa: E402
from .fit import METHODS, fit  # noqa: E402
from .options import FitOptions, get_options, option_context, set_options  # noqa: E402
from .result import FitResult  # noqa: E402

__all__ = ["fit", "FitResult", "METHODS", "FitOptions", "option_context", "set_options", "get_options", "models", "noise",
           "losses", "eps", "__version__"]
