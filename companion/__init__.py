"""companion: the workshop that builds the book around the :mod:`cnce` library.

Two layers, one rule: ``companion`` imports ``cnce``; ``cnce`` never imports ``companion``.
The library (``cnce/``) is what ``pip install cnce`` gives a user: models, noise, losses, eps,
options, ``fit`` and its backends, ``cnce.nn``, the image model with its trainer and measures.
The companion (this package, in this repository only) is the workshop: the claims ledger and
its rendering, the book build and its extension helpers, notebook reruns and goldens, the
environment of notebook kernels, the speed tables, run adoption and the GPU driver.
"""
