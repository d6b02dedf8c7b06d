"""The four-layer neural image model of Section 4: data, network, greedy CNCE training, probes.

Submodules: :mod:`~cnce.images.data` (loaders, patches, whitening), :mod:`~cnce.images.network`
(Eqs. 21-25), :mod:`~cnce.images.train` (greedy CNCE/NCE, eps rule, checkpoints),
:mod:`~cnce.images.probes` (Gabor fits and probes), :mod:`~cnce.images.plots` (figures),
:mod:`~cnce.images.configs` (``quick``, ``demo``, ``paper``).
"""
from cnce.images.configs import CONFIGS, ImageConfig, get_config
from cnce.images.network import ImageNetwork, f_th, gain_control

__all__ = ["CONFIGS", "ImageConfig", "get_config", "ImageNetwork", "f_th", "gain_control"]
