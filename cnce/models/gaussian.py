"""Zero-mean Gaussian model with unknown precision matrix (paper Eq. 15)."""
from __future__ import annotations

import math

import torch

from types import MappingProxyType

from .._validation import check_positive_int, check_theta
from .base import UnnormalisedModel, _uniform

__all__ = ["Gaussian", "random_orthonormal"]


def random_orthonormal(S: int, D: int, generator=None, dtype=torch.float64) -> torch.Tensor:
    """``S`` Haar-distributed orthonormal ``D x D`` matrices (QR with the sign fix)."""
    A = torch.randn(S, D, D, generator=generator, dtype=dtype)
    Q, R = torch.linalg.qr(A)
    return Q * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1)).unsqueeze(-2)


class Gaussian(UnnormalisedModel):
    """``log phi(u; Lambda) = -1/2 u^T Lambda u`` (Eq. 15), ``u`` in R^D.

    theta holds the ``D (D + 1) / 2`` unique entries of the symmetric precision ``Lambda``
    (upper triangle, row by row; 15 for D = 5). ``log phi`` is linear in theta.
    Ground truth (authors' code): ``Lambda = E diag(1/d) E^T`` with ``E`` random orthonormal
    and covariance eigenvalues ``d ~ U[0.1, 1]``; initialisations are drawn the same way.
    """

    name = "gaussian"
    linear = True
    smooth = True
    closed_form_mle = True
    compiled_kernels = MappingProxyType({"cnce": "gaussian", "nce": "nce_gaussian"})

    def __init__(self, dim: int = 5):
        self.dim = check_positive_int(dim, "dim")
        self.n_params = self.dim * (self.dim + 1) // 2
        self._iu = torch.triu_indices(self.dim, self.dim)

    # theta <-> Lambda
    def precision(self, theta: torch.Tensor) -> torch.Tensor:
        """The ``(S, D, D)`` precision matrices of ``theta (S, P)``."""
        theta = check_theta(theta, self.n_params)
        S = theta.shape[0]
        L = theta.new_zeros(S, self.dim, self.dim)
        i, j = self._iu.to(theta.device)
        L[:, i, j] = theta
        L[:, j, i] = theta
        return L

    def valid_params(self, theta: torch.Tensor) -> torch.Tensor:
        """Finite and a positive definite precision (Eq. 15 is normalisable only then)."""
        ok = torch.isfinite(theta).all(-1)
        Lam = self.precision(torch.where(ok.unsqueeze(-1), theta, torch.zeros_like(theta)))
        return ok & (torch.linalg.cholesky_ex(Lam).info == 0)

    def theta_from_precision(self, Lam: torch.Tensor) -> torch.Tensor:
        i, j = self._iu.to(Lam.device)
        return Lam[..., i, j]

    def _log_phi(self, u, theta):
        Lam = self.precision(theta)
        return -0.5 * torch.einsum("smi,sij,smj->sm", u, Lam, u)

    def features(self, u):
        i, j = self._iu.to(u.device)
        T = -u[..., i] * u[..., j]
        T = torch.where(i == j, 0.5 * T, T)
        return T, u.new_zeros(u.shape[:-1])

    def features_t(self, u, dtype=None):
        """``T(u)`` transposed, ``(S, P, M)``, in ``dtype``, and ``h = None`` (zero): the fast
        layout of :class:`cnce.optim.LinearLogistic` (one product of two rows per feature)."""
        dtype = dtype or u.dtype
        ut = u.transpose(-1, -2).to(dtype).contiguous()
        out = torch.empty(*ut.shape[:-2], self.n_params, ut.shape[-1], dtype=dtype, device=u.device)
        for p, (a, b) in enumerate(zip(*self._iu.tolist())):
            torch.mul(ut[..., a, :], ut[..., b, :], out=out[..., p, :])
            out[..., p, :].mul_(-0.5 if a == b else -1.0)
        return out, None

    def jac_log_phi(self, u, psi):
        T, h = self.features(u)
        return torch.einsum("smp,sp->sm", T, psi), T

    def log_partition(self, theta):
        Lam = self.precision(theta)
        return 0.5 * self.dim * math.log(2 * math.pi) - 0.5 * torch.linalg.slogdet(Lam)[1]

    def _draw(self, S, generator):
        E = random_orthonormal(S, self.dim, generator)
        d = _uniform(S, 0.1, 1.0, generator, size=(self.dim,))
        return self.theta_from_precision(E @ torch.diag_embed(1.0 / d) @ E.transpose(-1, -2))

    def random_params(self, S, generator=None):
        return self._draw(check_positive_int(S, "S"), generator)

    def init_params(self, S, generator=None):
        return self._draw(check_positive_int(S, "S"), generator)

    def sample(self, theta, n, generator=None):
        n = check_positive_int(n, "n")
        theta = check_theta(theta, self.n_params)
        Sigma = torch.linalg.inv(self.precision(theta))
        Lc = torch.linalg.cholesky(0.5 * (Sigma + Sigma.transpose(-1, -2)))
        z = torch.randn(theta.shape[0], n, self.dim, generator=generator, dtype=theta.dtype, device=theta.device)
        return z @ Lc.transpose(-1, -2)

    def mle_closed_form(self, x):
        """MLE of a zero-mean Gaussian: the inverse of ``X^T X / N``."""
        C = x.transpose(-1, -2) @ x / x.shape[-2]
        return self.theta_from_precision(torch.linalg.inv(C))
