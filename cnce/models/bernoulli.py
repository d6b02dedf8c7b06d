"""Unnormalised Bernoulli model with two positive parameters (Supp. C, Eq. 63)."""
from __future__ import annotations

import torch

from .._validation import check_positive_int, check_theta
from .base import UnnormalisedModel, _uniform
from ..errors import InputError

__all__ = ["Bernoulli"]


class Bernoulli(UnnormalisedModel):
    """``phi(0) = theta_1``, ``phi(1) = theta_2`` with ``theta_1, theta_2 > 0`` (Eq. 63).

    The scale of ``(theta_1, theta_2)`` is not identifiable, so errors are measured after
    normalising the estimate to sum to one (:meth:`error`). Optimisation runs over the free
    parameters ``psi = log theta``, in which ``log phi`` is linear. Data are 0/1 values of
    shape ``(S, N, 1)``; CNCE uses the bit-flip noise of Eq. (64).
    """

    name = "bernoulli"
    linear = True
    discrete = True
    closed_form_mle = True
    #: CNCE sees only the ratio theta_2 / theta_1, and maximum likelihood only the normalised
    #: pair, so the loss is flat along a common factor and theta itself gets no standard error
    identified_up_to = "a common positive factor of (theta_1, theta_2)"

    def __init__(self):
        self.dim = 1
        self.n_params = 2

    def to_free(self, theta):
        if (theta <= 0).any():
            raise InputError(f"theta of the Bernoulli model must be positive; got min {theta.min().item()!r}")
        return torch.log(theta)

    def from_free(self, psi):
        return torch.exp(psi)

    def features(self, u):
        one = (u[..., 0] > 0.5).to(u.dtype)
        return torch.stack([1.0 - one, one], -1), torch.zeros_like(one)

    def _log_phi(self, u, theta):
        one = u[..., 0] > 0.5
        lt = torch.log(theta)
        return torch.where(one, lt[:, 1:2], lt[:, 0:1])

    def jac_log_phi(self, u, psi):
        T, h = self.features(u)
        return torch.einsum("smp,sp->sm", T, psi), T

    def log_partition(self, theta):
        theta = check_theta(theta, 2)
        return torch.log(theta.sum(-1))

    def validate_data(self, x):
        if not ((x == 0) | (x == 1)).all():
            bad = x[(x != 0) & (x != 1)][0].item()
            raise InputError(f"x must hold only 0 and 1 for the Bernoulli model; got {bad!r}")

    def random_params(self, S, generator=None):
        """``p ~ U[0.01, 0.99]``, ``theta = (1 - p, p)`` (already normalised)."""
        p = _uniform(check_positive_int(S, "S"), 0.01, 0.99, generator)
        return torch.stack([1.0 - p, p], -1)

    def init_params(self, S, generator=None):
        """``theta_1, theta_2 ~ U[0.1, 5.1]`` independently (authors' code)."""
        return _uniform(check_positive_int(S, "S"), 0.1, 5.1, generator, size=(2,))

    def sample(self, theta, n, generator=None):
        n = check_positive_int(n, "n")
        theta = check_theta(theta, 2)
        p = theta[:, 1] / theta.sum(-1)
        u = torch.rand(theta.shape[0], n, 1, generator=generator, dtype=theta.dtype, device=theta.device)
        return (u < p[:, None, None]).to(theta.dtype)

    def mle_closed_form(self, x):
        p = x[..., 0].mean(-1)
        return torch.stack([1.0 - p, p], -1)

    def error(self, theta_hat, theta_true):
        """``||theta_hat / (theta_hat_1 + theta_hat_2) - theta*||^2`` (Supp. C)."""
        a, b = self._pair(theta_hat, theta_true)
        return ((a / a.sum(-1, keepdim=True) - b / b.sum(-1, keepdim=True)) ** 2).sum(-1)

    def __repr__(self):
        return "Bernoulli()"
