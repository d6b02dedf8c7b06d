"""Numerical checks of the paper's theory (Sec. 2, Supp. B): the CNCE loss as a function of
eps, its eps -> 0 limit and the connection to score matching.

Everything here evaluates the CNCE loss J_N (Eq. 8) of a model at *fixed* parameters with a
*fixed* noise base ``xi`` (so J_N is a deterministic function of eps), batched over ``S``
simulations. Shapes follow :mod:`cnce.noise`: data ``x (S, N, D)``, parameters
``theta (S, P)``, noise base ``xi (S, N, kappa, D)`` with ``y = x + eps xi`` (Eq. 13).

Score-matching limit. For a twice differentiable ``f = log phi`` and symmetric noise,
``J_N(eps) = 2 log 2 + eps A_N + eps^2 B_N + O(eps^3)`` with
``A_N = mean_ij grad f(x_i) . xi_ij`` and
``B_N = 1/2 mean_ij [xi_ij^T H(x_i) xi_ij + 1/2 (grad f(x_i) . xi_ij)^2]``.
``A_N`` is zero only in expectation; with *antithetic* pairs ``(xi, -xi)`` it is zero for
every sample (and so is the eps^3 term), so ``(J_N - 2 log 2) / eps^2 = B_N + O(eps^2)``.
If moreover the directions of each data point are moment-matched (their mean outer product
is exactly the identity), ``B_N`` equals half the sample score-matching objective.
"""
from __future__ import annotations

import math

import torch

from ._validation import per_simulation
from .losses import cnce_G, cnce_loss_from_G, score_matching_loss
from .noise import ConditionalNoise, default_noise
from .errors import InputError

__all__ = [
    "cnce_objective",
    "cnce_excess",
    "loss_curve",
    "antithetic",
    "moment_matched",
    "score",
    "small_eps_limit",
    "sm_objective",
    "laplacian_by_parts",
    "ica_kink_pairs",
]


def _noise(model, noise):
    return default_noise(model) if noise is None else noise


def _G(model, x, theta, eps, xi, noise):
    S, N, D = x.shape
    kappa = xi.shape[2]
    eps = per_simulation(eps, S, x)
    y = noise.apply(x, xi, eps)
    lp_x = model.log_phi(x, theta)
    lp_y = model.log_phi(y.reshape(S, N * kappa, D), theta).reshape(S, N, kappa)
    return cnce_G(lp_x, lp_y, noise.log_ratio(x, y, eps))


def cnce_objective(model, x, theta, eps, xi, noise: ConditionalNoise | None = None) -> torch.Tensor:
    """J_N (Eq. 8) at parameters ``theta`` with noise ``y = apply(x, xi, eps)``; ``(S,)``.

    ``eps`` is a number or an ``(S,)`` tensor. The same function of eps that the epsilon
    heuristic (:func:`cnce.eps.choose_eps`) walks along when ``theta`` is the initial value.
    """
    noise = _noise(model, noise)
    with torch.no_grad():
        return cnce_loss_from_G(_G(model, x, theta, eps, xi, noise))


def cnce_excess(model, x, theta, eps, xi, noise: ConditionalNoise | None = None) -> torch.Tensor:
    """``J_N - 2 log 2``, computed without the cancellation of subtracting ``2 log 2``; ``(S,)``.

    ``softplus(-G) - log 2 = log1p(expm1(-G) / 2)``, accurate when G is tiny (small eps),
    where ``J_N - 2 log 2`` is of order eps^2 and a plain subtraction would lose digits.
    """
    noise = _noise(model, noise)
    with torch.no_grad():
        G = _G(model, x, theta, eps, xi, noise)
        small = G.abs() < 1.0
        Gs = torch.where(small, G, torch.zeros_like(G))
        term = torch.where(small, torch.log1p(torch.expm1(-Gs) / 2), torch.nn.functional.softplus(-G) - math.log(2.0))
        return 2.0 * term.mean(dim=(-2, -1))


def loss_curve(model, x, theta, eps_grid, xi, noise: ConditionalNoise | None = None, *, excess: bool = False) -> torch.Tensor:
    """J_N (or ``J_N - 2 log 2`` if ``excess``) at each eps of a 1-D grid; ``(len(grid), S)``."""
    f = cnce_excess if excess else cnce_objective
    return torch.stack([f(model, x, theta, float(e), xi, noise) for e in torch.as_tensor(eps_grid).tolist()])


def antithetic(xi: torch.Tensor) -> torch.Tensor:
    """``(S, N, k, D) -> (S, N, 2k, D)``: every direction together with its negative."""
    return torch.cat([xi, -xi], dim=2)


def moment_matched(xi: torch.Tensor) -> torch.Tensor:
    """Antithetic directions whose mean outer product is exactly the identity per data point.

    ``xi (S, N, k, D)`` with ``k >= D``: each data point's ``k`` directions are whitened
    (``xi L^-T`` with ``L L^T = mean_j xi_j xi_j^T``), then paired with their negatives, so
    ``mean_j xi_j = 0`` and ``mean_j xi_j xi_j^T = I`` hold exactly, not only in expectation.
    """
    k, D = xi.shape[-2], xi.shape[-1]
    if k < D:
        raise InputError(f"moment matching needs at least D = {D} directions per data point; got {k}")
    C = xi.transpose(-1, -2) @ xi / k
    L = torch.linalg.cholesky(C)
    white = torch.linalg.solve_triangular(L, xi.transpose(-1, -2), upper=False).transpose(-1, -2)
    return antithetic(white)


def score(model, x, theta) -> torch.Tensor:
    """``grad_x log phi(x; theta)``, shape ``(S, N, D)`` (autograd)."""
    x = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model.log_phi(x, theta).sum(), x)
    return g


def small_eps_limit(model, x, theta, xi) -> torch.Tensor:
    """``B_N = 1/2 mean_ij [xi^T H xi + 1/2 (grad f . xi)^2]`` (see the module docstring); ``(S,)``.

    The limit of ``(J_N - 2 log 2) / eps^2`` as eps -> 0 for antithetic noise ``xi`` and a
    twice differentiable ``f = log phi``. The Hessian enters through Hessian-vector
    products (autograd), so a piecewise-linear model (ICA) gets its almost-everywhere
    Hessian, zero: a finite sample never sits on a kink.
    """
    x = x.detach().requires_grad_(True)
    (g,) = torch.autograd.grad(model.log_phi(x, theta).sum(), x, create_graph=True)
    quad = torch.zeros(xi.shape[:-1], dtype=x.dtype, device=x.device)
    for j in range(xi.shape[2]):
        v = xi[:, :, j]
        hv = torch.autograd.grad((g * v).sum(), x, retain_graph=True, allow_unused=True)[0]
        hv = torch.zeros_like(v) if hv is None else hv
        quad[:, :, j] = (v * hv).sum(-1).detach()
    gxi = torch.einsum("snd,snkd->snk", g.detach(), xi)
    return 0.5 * (quad + 0.5 * gxi**2).mean(dim=(-2, -1))


def sm_objective(model, x, theta) -> torch.Tensor:
    """The sample score-matching objective ``mean_i [tr H(x_i) + 1/2 ||grad f(x_i)||^2]``; ``(S,)``."""
    return score_matching_loss(model._log_phi, x, theta).detach()


def laplacian_by_parts(model, x, theta, theta_data) -> torch.Tensor:
    """``E_x[tr H]`` by integration by parts: ``-mean_i grad log p_d(x_i) . grad f(x_i)``; ``(S,)``.

    ``theta_data`` are the parameters of the model the data were drawn from, so
    ``grad log p_d = grad_x log phi(x; theta_data)``. The identity
    ``E[tr H_f] = -E[grad log p_d . grad f]`` holds for the Laplacian in the sense of
    distributions, so for ICA it counts the curvature concentrated on the kinks
    ``b_j . u = 0`` that the almost-everywhere Hessian misses.
    """
    return -(score(model, x, theta_data) * score(model, x, theta)).sum(-1).mean(-1)


def ica_kink_pairs(model, x, theta, xi, eps) -> torch.Tensor:
    """For the ICA model: how many data-noise pairs straddle a kink, ``(S,)``.

    A pair ``(x, x + eps xi)`` straddles the kink of source ``j`` when ``b_j . x`` and
    ``b_j . (x + eps xi)`` have opposite signs; only such pairs feel the curvature of
    ``|b_j . u|``, which sits entirely on the hyperplane ``b_j . u = 0``.
    """
    B = model.demixing(theta)
    s = x @ B.transpose(-1, -2)  # (S, N, D)
    t = xi @ B.transpose(-1, -2).unsqueeze(1)  # (S, N, kappa, D)
    cross = (torch.sign(s).unsqueeze(2) != torch.sign(s.unsqueeze(2) + eps * t)).any(-1)
    return cross.sum(dim=(-2, -1))
