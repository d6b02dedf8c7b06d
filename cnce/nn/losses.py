"""Losses for an energy network ``log_phi: (B, D) -> (B,)`` (unnormalised log-densities).

The network is any ``torch.nn.Module`` or callable; it returns ``log phi(x)``, the negative
of what energy-based-model libraries call the energy. Each loss takes the network, a batch
``x (B, D)`` and its random numbers, and returns a scalar to minimise:

* :func:`cnce_loss`: CNCE, Eqs. (8)-(9), through :func:`cnce.losses.cnce_loss` (the same code
  as :func:`cnce.fit` and the image model), with the Gaussian noise of Eq. (13) or any
  :class:`cnce.noise.ConditionalNoise`;
* :func:`nce_loss`: NCE (Gutmann & Hyvarinen, 2012) with a learned log-normaliser ``c``, noise
  a Gaussian fitted to the data (:class:`cnce.noise.NCEGaussianNoise`), ``nu = kappa``, through
  :func:`cnce.losses.nce_loss`;
* :func:`dsm_loss`: denoising score matching (Vincent, 2011);
* :func:`ssm_loss`: sliced score matching (Song et al., 2019).

All four see ``kappa`` random draws per data point (noise points, noise perturbations or
projection directions), so that equal ``kappa`` is an equal budget of noise samples.
"""
from __future__ import annotations

import math

import torch

import torch.nn.functional as F

from .. import losses as _losses
from ..errors import InputError
from ..noise import ConditionalNoise, GaussianNoise, NCEGaussianNoise

__all__ = ["evaluate", "score", "cnce_loss", "nce_loss", "dsm_loss", "ssm_loss", "LOG4", "REDUCTIONS", "reduce"]

#: what ``reduction`` accepts, as in torch's losses: the mean over the batch (the loss
#: of the paper's equations), the sum, or one value per data point
REDUCTIONS = ("mean", "sum", "none")

LOG4 = _losses.LOG4


def reduce(per_point: torch.Tensor, reduction: str) -> torch.Tensor:
    """``per_point (B,)`` reduced as torch's losses do (``"mean"``, ``"sum"``, ``"none"``)."""
    if reduction == "mean":
        return per_point.mean()
    if reduction == "sum":
        return per_point.sum()
    if reduction == "none":
        return per_point
    raise InputError(f"reduction must be one of {REDUCTIONS}; got {reduction!r}")


def evaluate(log_phi, u: torch.Tensor, *, name: str = "log_phi") -> torch.Tensor:
    """``log_phi(u)`` for ``u (..., D)`` as one batch, checked to return one value per point.

    An output of shape ``(B, 1)`` (a network ending in ``Linear(h, 1)``) is taken as ``(B,)``.
    Raises :class:`cnce.errors.InputError` (a ``ValueError``) naming ``name`` when the output
    has another shape or is not a tensor."""
    lead = u.shape[:-1]
    flat = u.reshape(-1, u.shape[-1])
    out = log_phi(flat)
    if not isinstance(out, torch.Tensor):
        raise InputError(f"{name} must return a torch.Tensor of shape (B,) or (B, 1); got {type(out).__name__}")
    if out.shape == (flat.shape[0], 1):
        out = out.squeeze(-1)
    if out.shape != (flat.shape[0],):
        raise InputError(f"{name} must map a batch (B, D) = {tuple(flat.shape)} to unnormalised log-densities "
                         f"of shape (B,) or (B, 1) = ({flat.shape[0]},); got shape {tuple(out.shape)}")
    return out.reshape(lead)


def score(log_phi, u: torch.Tensor, *, create_graph: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log_phi(u), grad_u log_phi(u))`` for ``u (B, D)``; the score is differentiable in the
    network's parameters when ``create_graph``."""
    u = u.detach().requires_grad_(True)
    f = evaluate(log_phi, u)
    (s,) = torch.autograd.grad(f.sum(), u, create_graph=create_graph)
    return f, s


def cnce_loss(log_phi, x: torch.Tensor, base: torch.Tensor, eps, noise: ConditionalNoise | None = None,
              reduction: str = "mean") -> torch.Tensor:
    """The CNCE loss J_N of Eq. (8) on the batch ``x (B, D)``.

    Args:
        log_phi: the network ``(B, D) -> (B,)``.
        x: data ``(B, D)``.
        base: the noise's random numbers ``(B, kappa, D)`` (``noise.draw_base``: standard
            normal for Eq. 13); the noise is ``y = noise.apply(x, base, eps)``.
        eps: the noise scale (a float or 0-d tensor, > 0).
        noise: a :class:`cnce.noise.ConditionalNoise` (default :class:`GaussianNoise`,
            ``y = x + eps xi``); an asymmetric one adds its log-ratio to G (Eq. 9).

        reduction: ``"mean"`` (Eq. 8), ``"sum"`` or ``"none"`` (one value per data point,
            ``2/kappa sum_k log(1 + exp(-G))``).

    Returns:
        a scalar (``(B,)`` with ``reduction="none"``); ``2 log 2`` when ``y = x``.
    """
    noise = GaussianNoise() if noise is None else noise
    e = torch.as_tensor(eps, dtype=x.dtype, device=x.device).reshape(1)
    y = noise.apply(x.unsqueeze(0), base.unsqueeze(0), e)[0]  # (B, kappa, D)
    f = evaluate(log_phi, torch.cat([x, y.reshape(-1, x.shape[-1])]))
    B = x.shape[0]
    f_x, f_y = f[:B], f[B:].reshape(B, -1)
    log_ratio = noise.log_ratio(x.unsqueeze(0), y.unsqueeze(0), e)
    log_ratio = None if log_ratio is None else log_ratio[0]
    if reduction == "mean":
        return _losses.cnce_loss(f_x, f_y, log_ratio)
    G = _losses.cnce_G(f_x, f_y, log_ratio)
    return reduce(2.0 * F.softplus(-G).mean(-1), reduction)


def nce_loss(log_phi, x: torch.Tensor, base: torch.Tensor, log_normaliser: torch.Tensor,
             noise: NCEGaussianNoise, reduction: str = "mean") -> torch.Tensor:
    """NCE with a learned log-normaliser ``c`` (a scalar tensor, trained with the network).

    ``G(u) = log_phi(u) + c - log p_n(u) - log nu`` with ``nu = kappa``; the loss is the
    logistic loss of the ``B`` data points against the ``kappa B`` noise points
    ``y = noise.apply(base)`` (:func:`cnce.losses.nce_loss`, per data point).

    Args:
        base: standard-normal numbers ``(B, kappa, D)`` for the noise points.
        noise: an :class:`cnce.noise.NCEGaussianNoise` with one Gaussian (``S = 1``), usually
            ``NCEGaussianNoise.fit(x_train[None])``.
    """
    B, kappa, D = base.shape
    y = noise.apply(base.reshape(1, B * kappa, D))  # (1, kappa B, D)
    u = torch.cat([x.unsqueeze(0), y], dim=1)
    log_pn = noise.log_prob(u)[0]
    G = evaluate(log_phi, u[0]) + log_normaliser - log_pn - math.log(kappa)
    if reduction == "mean":
        return _losses.nce_loss(G[:B], G[B:])
    # per data point: its own term and those of its kappa noise points (their mean is the loss)
    return reduce(F.softplus(-G[:B]) + F.softplus(G[B:]).reshape(B, kappa).sum(-1), reduction)


def dsm_loss(log_phi, x: torch.Tensor, base: torch.Tensor, sigma, reduction: str = "mean") -> torch.Tensor:
    """Denoising score matching (Vincent, 2011) at noise level ``sigma``.

    With ``x~ = x + sigma xi`` (``xi = base``, ``(B, kappa, D)`` standard normal), the loss is
    ``mean 1/2 || grad log_phi(x~) + xi / sigma ||^2``; its minimiser is the score of the data
    density smoothed with ``N(0, sigma^2 I)``. For Gaussian noise this is CNCE's small-eps
    limit in disguise: both match scores (Theorem 2; the page "CNCE for your own energy
    network").
    """
    sigma = float(sigma)
    xt = (x.unsqueeze(1) + sigma * base).reshape(-1, x.shape[-1])
    _, s = score(log_phi, xt)
    per = 0.5 * ((s + base.reshape(-1, x.shape[-1]) / sigma) ** 2).sum(-1)
    if reduction == "mean":
        return per.mean()
    return reduce(per.reshape(x.shape[0], -1).mean(-1), reduction)


def ssm_loss(log_phi, x: torch.Tensor, v: torch.Tensor, *, variance_reduction: bool = True,
             reduction: str = "mean") -> torch.Tensor:
    """Sliced score matching (Song et al., 2019) with projections ``v (B, kappa, D)``.

    ``mean [ v^T (d s / d x) v + 1/2 (v^T s)^2 ]`` with ``s = grad log_phi(x)``; with
    ``variance_reduction`` (SSM-VR, for standard-normal ``v``) the second term is replaced by
    its expectation over ``v``, ``1/2 ||s||^2``. Both equal score matching's objective
    (Hyvarinen, 2005) in expectation over ``v``.
    """
    B, kappa, D = v.shape
    xr = x.unsqueeze(1).expand(B, kappa, D).reshape(-1, D).detach().requires_grad_(True)
    f = evaluate(log_phi, xr)
    (s,) = torch.autograd.grad(f.sum(), xr, create_graph=True)
    vf = v.reshape(-1, D)
    sv = (s * vf).sum(-1)
    (hv,) = torch.autograd.grad(sv.sum(), xr, create_graph=True)
    vhv = (hv * vf).sum(-1)
    second = 0.5 * (s**2).sum(-1) if variance_reduction else 0.5 * sv**2
    per = vhv + second
    if reduction == "mean":
        return per.mean()
    return reduce(per.reshape(B, kappa).mean(-1), reduction)
