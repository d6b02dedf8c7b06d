"""CNCE for any PyTorch energy network, beside NCE, denoising and sliced score matching.

A network is any ``torch.nn.Module`` (or callable) mapping a batch ``(B, D)`` to unnormalised
log-densities ``(B,)``. :func:`train` fits it with one of four losses (:mod:`cnce.nn.losses`);
:mod:`cnce.nn.objectives` has the same losses as ``nn.Module`` objects for a loop of your own;
:mod:`cnce.nn.toys` has the four standard 2-D toy densities, two more cases, a small MLP and a
quartic energy, and exact log-likelihoods by a checked grid normalisation;
:func:`cnce.nn.langevin` samples a trained network (annealed MALA with step adaptation, warning
when it is likely wrong); :class:`cnce.nn.HealthCheck` catches a collapsed, blown-up or
stalled run (:func:`train` runs it); :func:`cnce.nn.log_normaliser` and
:func:`cnce.nn.held_out_log_likelihood` give ``log Z`` and held-out log-likelihoods in any
dimension with an error bar (quadrature up to 3-D, AIS with a reverse bracket beyond), or
refuse; :mod:`cnce.nn.study` runs the study of the page "CNCE for your own energy network"
(notebook 08) and :mod:`cnce.nn.compare` its verdicts.

Example::

    import torch, cnce.nn
    net = cnce.nn.MLPEnergy(dim=2, seed=0)
    x = cnce.nn.sample_toy("8gaussians", 5000, generator=torch.Generator().manual_seed(0))
    res = cnce.nn.train(net, x, method="cnce", kappa=10, eps="auto", steps=2000, seed=0)
    print(cnce.nn.log_likelihood(net, x))

or, in a loop of your own (the same code as ``train``; the noise follows ``torch.manual_seed``
unless the loss gets ``seed=`` or ``generator=``; one CPU thread is fastest for small
networks, ``torch.set_num_threads(1)``, which ``train`` does by itself)::

    loss = cnce.nn.CNCELoss(kappa=10, eps="auto")      # or NCELoss, DSMLoss, SSMLoss
    # the loss's own parameters (NCE's log-normaliser) train with the network's
    opt = torch.optim.Adam(list(net.parameters()) + list(loss.parameters()), lr=5e-3)
    check = cnce.nn.HealthCheck(loss, lr=5e-3)          # collapse, blow-up, stalled normaliser
    for step in range(2000):
        xb = x[torch.randint(0, len(x), (128,))]
        opt.zero_grad(); value = loss(net, xb); value.backward(); opt.step()
        check(value, net, xb)                           # raises cnce.errors.TrainingError
    print(loss.eps_choice)                              # how eps was chosen, on which rows
    samples = cnce.nn.langevin(net, torch.randn(1000, 2), steps=500, step_size=1e-2, seed=0)
"""
from .losses import cnce_loss, dsm_loss, evaluate, nce_loss, score, ssm_loss
from .toys import (BOX, TOYS, GaussianEnergy, ImproperDensityError, MLPEnergy, QuarticEnergy, eight_gaussians_log_prob,
                   grid, grid_log_normaliser, log_likelihood, normaliser_check, sample_toy, true_log_prob)
from .objectives import (DEFAULT_FACTOR, DEFAULT_SCHEDULE, SCHEDULES, CNCELoss, DSMLoss, EnergyLoss, NCELoss, SSMLoss,
                         make_loss)
from .health import HealthCheck
from .likelihood import HeldOutLikelihood, LogNormaliser, UnsupportedEstimateError, held_out_log_likelihood, log_normaliser
from .sampling import langevin
from .train import DSM_SIGMA, EPS_CAP, METHODS, TrainResult, train

__all__ = ["HealthCheck", "log_normaliser", "held_out_log_likelihood", "LogNormaliser", "HeldOutLikelihood",
           "UnsupportedEstimateError", "CNCELoss", "NCELoss", "DSMLoss", "SSMLoss", "EnergyLoss", "make_loss", "SCHEDULES", "DEFAULT_SCHEDULE", "DEFAULT_FACTOR",
           "langevin", "ImproperDensityError", "normaliser_check", "QuarticEnergy", "train", "TrainResult", "METHODS", "EPS_CAP", "DSM_SIGMA", "cnce_loss", "nce_loss", "dsm_loss",
           "ssm_loss", "evaluate", "score", "TOYS", "BOX", "sample_toy", "true_log_prob", "eight_gaussians_log_prob",
           "MLPEnergy", "GaussianEnergy", "grid", "grid_log_normaliser", "log_likelihood"]
