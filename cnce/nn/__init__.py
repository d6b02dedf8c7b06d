"""CNCE for any PyTorch energy network, beside NCE, denoising and sliced score matching.

A network is any ``torch.nn.Module`` (or callable) mapping a batch ``(B, D)`` to unnormalised
log-densities ``(B,)``. :func:`train` fits it with one of four losses (:mod:`cnce.nn.losses`);
:mod:`cnce.nn.toys` has the four standard 2-D toy densities, a small MLP and exact
log-likelihoods by grid normalisation; :mod:`cnce.nn.compare` runs the comparison of the page
"CNCE for your own energy network" (notebook 08).

Example::

    import torch, cnce.nn
    net = cnce.nn.MLPEnergy(dim=2, seed=0)
    x = cnce.nn.sample_toy("8gaussians", 5000, generator=torch.Generator().manual_seed(0))
    res = cnce.nn.train(net, x, method="cnce", kappa=10, eps="auto", steps=2000, seed=0)
    print(cnce.nn.log_likelihood(net, x))
"""
from .losses import cnce_loss, dsm_loss, evaluate, nce_loss, score, ssm_loss
from .toys import (BOX, TOYS, GaussianEnergy, MLPEnergy, eight_gaussians_log_prob, grid, grid_log_normaliser, log_likelihood,
                   sample_toy, true_log_prob)
from .train import DSM_SIGMA, EPS_CAP, METHODS, TrainResult, train

__all__ = ["train", "TrainResult", "METHODS", "EPS_CAP", "DSM_SIGMA", "cnce_loss", "nce_loss", "dsm_loss",
           "ssm_loss", "evaluate", "score", "TOYS", "BOX", "sample_toy", "true_log_prob", "eight_gaussians_log_prob",
           "MLPEnergy", "GaussianEnergy", "grid", "grid_log_normaliser", "log_likelihood"]
