"""Objective functions: CNCE (Eqs. 8-9), NCE, maximum likelihood and score matching.

The CNCE and NCE losses only see values of ``log phi`` (and, for asymmetric or independent
noise, log-densities of the noise); they do not know which model produced them. That is
what lets one estimator (:func:`cnce.fit`) and the neural image model share this code.

Shapes: a leading batch of simulations ``S`` is optional everywhere; losses reduce over the
sample axes and return one value per simulation.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

__all__ = [
    "LOG4",
    "cnce_G",
    "cnce_loss",
    "cnce_loss_from_G",
    "nce_loss",
    "score_matching_loss",
    "mle_loss",
]

#: The value 2 log 2 that the CNCE loss takes at eps = 0 for every model and theta.
LOG4 = 2.0 * math.log(2.0)


def cnce_G(log_phi_x: torch.Tensor, log_phi_y: torch.Tensor, log_ratio: torch.Tensor | None = None) -> torch.Tensor:
    """The nonlinearity G of Eq. (9) for every data-noise pair.

    ``G(x, y) = log phi(x) - log phi(y) + log p_c(y|x) - log p_c(x|y)``.

    Args:
        log_phi_x: ``(..., N)`` log phi at the data points.
        log_phi_y: ``(..., N, kappa)`` log phi at the noise points (kappa per data point).
        log_ratio: ``log p_c(y|x) - log p_c(x|y)``, shape ``(..., N, kappa)``; ``None`` for a
            symmetric conditional noise distribution, where the two densities cancel.
    """
    G = log_phi_x.unsqueeze(-1) - log_phi_y
    if log_ratio is not None:
        G = G + log_ratio
    return G


def cnce_loss_from_G(G: torch.Tensor) -> torch.Tensor:
    """Eq. (8) given G of shape ``(..., N, kappa)``: ``2/(kappa N) sum log(1 + exp(-G))``.

    Uses the numerically stable ``softplus`` (no clipping of G), so the value is exact for
    any finite G and equals ``2 log 2`` when G = 0 (eps = 0).
    """
    return 2.0 * F.softplus(-G).mean(dim=(-2, -1))


def cnce_loss(log_phi_x: torch.Tensor, log_phi_y: torch.Tensor, log_ratio: torch.Tensor | None = None) -> torch.Tensor:
    """The CNCE loss J_N of Eq. (8), one value per simulation.

    See :func:`cnce_G` for the arguments. ``J_N = 2 log 2`` whenever ``y = x`` (eps = 0).
    """
    return cnce_loss_from_G(cnce_G(log_phi_x, log_phi_y, log_ratio))


def nce_loss(G_x: torch.Tensor, G_y: torch.Tensor) -> torch.Tensor:
    """The NCE loss of Gutmann & Hyvarinen (2012), one value per simulation.

    ``G(u) = log phi(u; theta) + c - log p_n(u) - log nu`` is the log-odds that ``u`` is
    data, with ``c`` the learned log-normaliser and ``nu`` the noise-to-data ratio. The loss
    is the logistic loss of classifying the N data points ``G_x (..., N)`` against the
    ``nu N`` noise points ``G_y (..., M)``, normalised by the number of data points:
    ``J = (1/N) [sum_i log(1 + exp(-G(x_i))) + sum_j log(1 + exp(G(y_j)))]``.
    """
    n = G_x.shape[-1]
    return (F.softplus(-G_x).sum(-1) + F.softplus(G_y).sum(-1)) / n


def score_matching_loss(log_phi, x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Score matching objective (Hyvarinen 2005) via autograd, one value per simulation.

    ``J_SM = mean_i [ sum_k d^2 f/dx_k^2 + 1/2 ||grad_x f||^2 ]`` with ``f = log phi(x; theta)``.
    This is the bracket of the score-matching theorem (Sec. 2; Supp. B, Eq. 60). The result
    is differentiable in ``theta`` (built with ``create_graph=True``).

    Args:
        log_phi: callable ``(u (S, N, D), theta (S, P)) -> (S, N)``.
        x: data ``(S, N, D)``.
        theta: parameters ``(S, P)``.
    """
    x = x.detach().requires_grad_(True)
    f = log_phi(x, theta)
    (score,) = torch.autograd.grad(f.sum(), x, create_graph=True)
    lap = torch.zeros_like(f)
    for k in range(x.shape[-1]):
        (d2,) = torch.autograd.grad(score[..., k].sum(), x, create_graph=True)
        lap = lap + d2[..., k]
    return (lap + 0.5 * (score**2).sum(-1)).mean(-1)


def mle_loss(log_prob, x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Negative mean log-likelihood ``-1/N sum_i log p(x_i; theta)`` per simulation."""
    return -log_prob(x, theta).mean(-1)
