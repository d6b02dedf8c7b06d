"""The ring model (paper Eq. 17): data near a (D-1)-sphere of radius mu."""
from __future__ import annotations

import functools
import math

import numpy as np
import torch

from types import MappingProxyType

from .._validation import check_positive_int, check_theta
from .base import UnnormalisedModel, _uniform
from ..errors import InputError

__all__ = ["Ring"]

_T_MAX = 12.0  # quadrature and sampling grid reach +-12 radial standard deviations


@functools.lru_cache(maxsize=8)
def _leggauss(n: int):
    """Gauss-Legendre nodes and weights on [-1, 1] (cached: numpy takes ~0.3 s for n = 256)."""
    x, w = np.polynomial.legendre.leggauss(n)
    return torch.as_tensor(x, dtype=torch.float64), torch.as_tensor(w, dtype=torch.float64)


class Ring(UnnormalisedModel):
    """``log phi(u; gamma) = -gamma/2 (||u|| - mu)^2`` (Eq. 17), ``u`` in R^D.

    Only the precision ``gamma`` is estimated (theta has one entry); the radius ``mu`` is
    known and fixed. ``mu`` may be a float or a tensor of shape ``(S,)`` (one per
    simulation; :meth:`draw_mu` draws ``U[5, 10]`` as in the authors' code).

    Two data generators (:meth:`sample`):

    * ``radial="exact"``: a sample of the normalised model. In polar coordinates its radial
      density is ``r^(D-1) exp(-gamma/2 (r - mu)^2)`` on ``r > 0`` (the ``r^(D-1)`` is the
      surface factor of the sphere), drawn by inverting its CDF on a fine grid.
    * ``radial="authors"``: the authors' generator: ``r ~ N(mu, 1/gamma)`` truncated below at
      0.1 and a uniform direction. It omits the surface factor, so it is *not* a sample of
      the model; estimators of gamma are then misspecified (the ring notebook discusses it).

    The partition function is a 1-D integral over the radius, computed by Gauss-Legendre
    quadrature (:meth:`log_partition`), which makes maximum likelihood available.
    """

    name = "ring"
    linear = True
    smooth = True
    compiled_kernels = MappingProxyType({"cnce": "ring", "nce": "nce_ring"})

    def __init__(self, dim: int = 5, mu=7.5):
        self.dim = check_positive_int(dim, "dim", 2)
        self.n_params = 1
        mu_t = torch.as_tensor(mu, dtype=torch.float64)
        if mu_t.ndim > 1 or not torch.isfinite(mu_t).all() or (mu_t <= 0).any():
            raise InputError(f"mu must be a positive float or a 1-D tensor of positive radii; got {mu!r}")
        self.mu = mu_t

    @staticmethod
    def draw_mu(S: int, generator=None) -> torch.Tensor:
        """Known radii ``mu ~ U[5, 10]``, shape ``(S,)`` (authors' code)."""
        return _uniform(check_positive_int(S, "S"), 5.0, 10.0, generator)

    def _mu(self, S, like):
        mu = self.mu.to(dtype=like.dtype, device=like.device)
        if mu.ndim == 1 and mu.shape[0] != S:
            raise InputError(f"this Ring has mu for {mu.shape[0]} simulations but got {S}")
        return mu.expand(S) if mu.ndim == 0 else mu

    @classmethod
    def build(cls, S: int, generator=None, **kwargs) -> "Ring":
        """A ring model for ``S`` simulations with their known radii drawn by :meth:`draw_mu`."""
        return cls(mu=cls.draw_mu(S, generator=generator), **kwargs)

    def sim_constants(self, S, like):
        """The known radius of each simulation, ``(S, 1)``."""
        return self._mu(S, like).unsqueeze(-1)

    def take(self, sl, S):
        mu = self.mu
        if mu.ndim == 1 and mu.shape[0] == S and (sl.start, sl.stop) != (0, S):
            import copy

            m = copy.copy(self)
            m.mu = mu[sl]
            return m
        return self

    def features(self, u):
        mu = self._mu(u.shape[0], u).unsqueeze(-1)
        r = torch.linalg.vector_norm(u, dim=-1)
        return (-0.5 * (r - mu) ** 2).unsqueeze(-1), u.new_zeros(u.shape[:-1])

    def _log_phi(self, u, theta):
        T, _ = self.features(u)
        return T[..., 0] * theta[:, :1]

    def jac_log_phi(self, u, psi):
        T, _ = self.features(u)
        return T[..., 0] * psi[:, :1], T

    # -------------------------------------------------------------- normaliser
    def log_partition(self, theta, n_nodes: int = 256):
        """``log Z(gamma) = log A_(D-1) + log int_0^inf r^(D-1) exp(-gamma/2 (r-mu)^2) dr``.

        ``A_(D-1) = 2 pi^(D/2) / Gamma(D/2)`` is the area of the unit sphere. The radial
        integral is taken in ``t = sqrt(gamma) (r - mu)`` over ``[max(-mu sqrt(gamma), -12), 12]``
        with ``n_nodes`` Gauss-Legendre nodes; differentiable in ``gamma``.
        """
        theta = check_theta(theta, 1)
        gamma = theta[:, 0]
        mu = self._mu(theta.shape[0], theta)
        D = self.dim
        x, w = _leggauss(n_nodes)
        x = x.to(dtype=theta.dtype, device=theta.device)
        w = w.to(dtype=theta.dtype, device=theta.device)
        sg = torch.sqrt(gamma)
        lo = torch.clamp(-mu * sg, min=-_T_MAX)
        hi = torch.full_like(lo, _T_MAX)
        half = 0.5 * (hi - lo)
        t = lo.unsqueeze(-1) + half.unsqueeze(-1) * (x + 1.0)
        r = mu.unsqueeze(-1) + t / sg.unsqueeze(-1)
        log_f = (D - 1) * torch.log(torch.clamp(r, min=1e-300)) - 0.5 * t**2
        log_int = torch.logsumexp(log_f + torch.log(w), dim=-1) + torch.log(half) - torch.log(sg)
        log_area = math.log(2.0) + 0.5 * D * math.log(math.pi) - math.lgamma(0.5 * D)
        return log_area + log_int

    # -------------------------------------------------------------- parameters and data
    def random_params(self, S, generator=None):
        """``gamma = 1 / sigma^2`` with ``sigma ~ U[0.3, 1.5]`` (authors' code)."""
        sigma = _uniform(check_positive_int(S, "S"), 0.3, 1.5, generator)
        return (1.0 / sigma**2).unsqueeze(-1)

    def init_params(self, S, generator=None):
        """Drawn like the ground truth, independently."""
        return self.random_params(S, generator)

    def _directions(self, S, n, generator, dtype, device):
        z = torch.randn(S, n, self.dim, generator=generator, dtype=dtype, device=device)
        return z / torch.linalg.vector_norm(z, dim=-1, keepdim=True)

    def sample(self, theta, n, generator=None, radial: str = "exact"):
        """``(S, n, D)`` samples; ``radial`` is ``"exact"`` (the model) or ``"authors"``."""
        n = check_positive_int(n, "n")
        theta = check_theta(theta, 1)
        if theta[:, 0].le(0).any():
            raise InputError(f"theta (the precision gamma) must be > 0 to sample; got {theta[:, 0].min().item()!r}")
        S = theta.shape[0]
        mu = self._mu(S, theta)
        sigma = 1.0 / torch.sqrt(theta[:, 0])
        if radial == "authors":
            r = mu.unsqueeze(-1) + sigma.unsqueeze(-1) * torch.randn(S, n, generator=generator, dtype=theta.dtype, device=theta.device)
            for _ in range(1000):
                low = r < 0.1
                if not low.any():
                    break
                redraw = mu.unsqueeze(-1) + sigma.unsqueeze(-1) * torch.randn(S, n, generator=generator, dtype=theta.dtype, device=theta.device)
                r = torch.where(low, redraw, r)
        elif radial == "exact":
            r = self._sample_radius_exact(mu, sigma, n, generator)
        else:
            raise InputError(f"radial must be 'exact' or 'authors'; got {radial!r}")
        return r.unsqueeze(-1) * self._directions(S, n, generator, theta.dtype, theta.device)

    def _sample_radius_exact(self, mu, sigma, n, generator, n_grid: int = 4097):
        """Inverse-CDF sampling of ``r^(D-1) exp(-(r-mu)^2 / (2 sigma^2))`` on ``r > 0``."""
        D = self.dim
        mode = 0.5 * (mu + torch.sqrt(mu**2 + 4 * (D - 1) * sigma**2))
        lo = torch.clamp(mode - _T_MAX * sigma, min=0.0)
        hi = mode + _T_MAX * sigma
        s = torch.linspace(0.0, 1.0, n_grid, dtype=mu.dtype, device=mu.device)
        r = lo.unsqueeze(-1) + (hi - lo).unsqueeze(-1) * s  # (S, G)
        log_f = (D - 1) * torch.log(torch.clamp(r, min=1e-300)) - 0.5 * ((r - mu.unsqueeze(-1)) / sigma.unsqueeze(-1)) ** 2
        f = torch.exp(log_f - log_f.max(-1, keepdim=True).values)
        cdf = torch.cat([torch.zeros_like(f[:, :1]), torch.cumsum(0.5 * (f[:, 1:] + f[:, :-1]), -1)], -1)
        cdf = cdf / cdf[:, -1:]
        u = torch.rand(mu.shape[0], n, generator=generator, dtype=mu.dtype, device=mu.device)
        idx = torch.clamp(torch.searchsorted(cdf, u), 1, n_grid - 1)
        c0, c1 = cdf.gather(-1, idx - 1), cdf.gather(-1, idx)
        r0, r1 = r.gather(-1, idx - 1), r.gather(-1, idx)
        frac = torch.where(c1 > c0, (u - c0) / (c1 - c0), torch.zeros_like(u))
        return r0 + frac * (r1 - r0)

    def error(self, theta_hat, theta_true):
        """Squared error of the precision ``gamma`` (mu is known)."""
        return super().error(theta_hat, theta_true)

    def __repr__(self):
        mu = self.mu.item() if self.mu.ndim == 0 else f"<{self.mu.shape[0]} radii>"
        return f"Ring(dim={self.dim}, mu={mu})"
