"""The four-layer neural image model of Section 4. One job per module:

* :mod:`~cnce.images.configs`: named configurations (``paper``, ``demo``, ``quick``, ``smoke``...),
  the ablation's one-change variants and the FLOP estimate;
* :mod:`~cnce.images.data`, :mod:`~cnce.images.pack`: image loaders, patches, whitening; the photo pack;
* :mod:`~cnce.images.network`: the network (Eqs. 21-25) and its layer-3 input;
* :mod:`~cnce.images.cg`: the authors' conjugate-gradient minimiser;
* :mod:`~cnce.images.recipe`: one meta-iteration (batches, noise, eps rule, optimiser) and the seeds;
* :mod:`~cnce.images.train`: the greedy trainer, Supp. D.2's comparison, branches of a finished run;
* :mod:`~cnce.images.runs`: the committed runs: a run's state, saving, provenance and adoption;
* :mod:`~cnce.images.probes`, :mod:`~cnce.images.measures`, :mod:`~cnce.images.contours`,
  :mod:`~cnce.images.layer_claims`, :mod:`~cnce.images.d2`: probes and the measures of each claim;
* :mod:`~cnce.images.verdicts`, :mod:`~cnce.images.claims`: the result type, interval rules and
  the claims rows; :mod:`~cnce.images.attribution`: the one-change-at-a-time attributions;
* :mod:`~cnce.images.plots`: the figures.
"""
from cnce.images.configs import CONFIGS, ImageConfig, get_config
from cnce.images.network import ImageNetwork, f_th, gain_control

__all__ = ["CONFIGS", "ImageConfig", "get_config", "ImageNetwork", "f_th", "gain_control"]
