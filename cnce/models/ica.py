"""Square ICA model with Laplacian sources (paper Eq. 16)."""
from __future__ import annotations

import math

import numpy as np
import torch

from types import MappingProxyType

from .._validation import check_positive_int, check_theta
from .base import UnnormalisedModel

__all__ = ["ICA", "signed_permutation_match"]

SQRT2 = math.sqrt(2.0)


def _match_rows(Bh, Bt):
    """For one pair of ``(D, D)`` numpy arrays: ``(source row, sign)`` of the estimate for each row of
    the truth, minimising ``||P B_hat - B||_F^2`` over signed permutations ``P``."""
    from scipy.optimize import linear_sum_assignment  # here, not at import: scipy.optimize takes 0.6 s

    dm = ((Bh[:, None, :] - Bt[None, :, :]) ** 2).sum(-1)
    dp = ((Bh[:, None, :] + Bt[None, :, :]) ** 2).sum(-1)
    rows, cols = linear_sum_assignment(np.minimum(dm, dp))
    src, sign = np.empty(len(rows), dtype=np.int64), np.empty(len(rows))
    for r, c in zip(rows, cols):
        src[c], sign[c] = r, (1.0 if dm[r, c] <= dp[r, c] else -1.0)
    return src, sign


def signed_permutation_match(B_hat: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """Reorder and re-sign the rows of ``B_hat (S, D, D)`` to best match ``B``.

    Solves ``min_{P signed permutation} ||P B_hat - B||_F^2`` exactly: the cost separates
    over rows, so it is a linear assignment problem on
    ``C_ij = min(||b_hat_i - b_j||^2, ||b_hat_i + b_j||^2)`` (scipy's solver). The authors'
    code instead matches each row greedily by the largest entry of ``B_hat B^-1``, which can
    give the same row twice; the two agree whenever the estimate is close to the truth.
    """
    Bh = B_hat.detach().cpu().numpy()
    Bt = B.detach().cpu().numpy()
    out = np.empty_like(Bh)
    for s in range(Bh.shape[0]):
        src, sign = _match_rows(Bh[s], Bt[s])
        out[s] = sign[:, None] * Bh[s][src]
    return torch.as_tensor(out, dtype=B_hat.dtype, device=B_hat.device)


class ICA(UnnormalisedModel):
    """``log phi(u; B) = -sqrt(2) sum_j |b_j . u|`` (Eq. 16): Laplacian sources of unit variance.

    theta is the demixing matrix ``B`` flattened row by row (D^2 = 16 parameters for D = 4).
    The normalised density adds ``log|det B| - (D/2) log 2``. Ground truth (authors' code):
    mixing ``A`` with standard-normal entries, redrawn until ``cond(A) <= 10``, ``B = A^-1``;
    initialisation ``B0 = 0.1 * N(0, 1)`` entries. The model is not convex in ``B``: an
    estimate can end in a local minimum, as in the paper.
    """

    name = "ica"
    mle_optimizer = "lbfgs"
    #: ``log phi = -a sum_j |b_j . u|`` with ``a = sqrt(2)``: CNCE and NCE are solved from the
    #: projections ``B u`` (:mod:`cnce.backends.projection`), not from Jacobians.
    abs_projection_coef = SQRT2
    compiled_kernels = MappingProxyType({"cnce": "ica", "nce": "nce_ica", "mle": "ica_mle"})
    identified_up_to = "the sign and order of the rows of B"

    def __init__(self, dim: int = 4):
        self.dim = check_positive_int(dim, "dim")
        self.n_params = self.dim * self.dim

    def demixing(self, theta):
        return check_theta(theta, self.n_params).reshape(-1, self.dim, self.dim)

    def _log_phi(self, u, theta):
        B = theta.reshape(-1, self.dim, self.dim)
        return -SQRT2 * (u @ B.transpose(-1, -2)).abs().sum(-1)

    def jac_log_phi(self, u, psi):
        B = psi.reshape(-1, self.dim, self.dim)
        s = u @ B.transpose(-1, -2)  # (S, M, D): b_j . u
        val = -SQRT2 * s.abs().sum(-1)
        jac = (-SQRT2 * torch.sign(s)).unsqueeze(-1) * u.unsqueeze(-2)  # (S, M, D, D)
        return val, jac.reshape(*u.shape[:-1], self.n_params)

    def line_log_phi(self, u, psi, d):
        """Along ``B + alpha D`` the projections are ``s + alpha t`` with ``s = B u``, ``t = D u``
        computed once, so each trial step costs one pass of cheap element-wise work."""
        s = u @ psi.reshape(-1, self.dim, self.dim).transpose(-1, -2)
        t = u @ d.reshape(-1, self.dim, self.dim).transpose(-1, -2)
        return lambda alpha: -SQRT2 * (s + alpha.view(-1, 1, 1) * t).abs().sum(-1)

    def log_partition(self, theta):
        B = self.demixing(theta)
        return 0.5 * self.dim * math.log(2.0) - torch.linalg.slogdet(B)[1]

    def random_mixing(self, S, generator=None, max_cond: float = 10.0):
        S = check_positive_int(S, "S")
        A = torch.randn(S, self.dim, self.dim, generator=generator, dtype=torch.float64)
        for _ in range(10000):
            bad = torch.linalg.cond(A) > max_cond
            if not bad.any():
                return A
            A[bad] = torch.randn(int(bad.sum()), self.dim, self.dim, generator=generator, dtype=torch.float64)
        raise RuntimeError("could not draw well-conditioned mixing matrices")

    def random_params(self, S, generator=None):
        return torch.linalg.inv(self.random_mixing(S, generator)).reshape(-1, self.n_params)

    def init_params(self, S, generator=None):
        S = check_positive_int(S, "S")
        return 0.1 * torch.randn(S, self.n_params, generator=generator, dtype=torch.float64)

    def sample(self, theta, n, generator=None):
        n = check_positive_int(n, "n")
        B = self.demixing(theta)
        A = torch.linalg.inv(B)
        # Laplace(0, b) with b = 1/sqrt(2) has unit variance: the difference of two exponentials.
        e = torch.empty(B.shape[0], n, self.dim, 2, dtype=B.dtype, device=B.device).exponential_(generator=generator)
        s = (e[..., 0] - e[..., 1]) / SQRT2
        return s @ A.transpose(-1, -2)

    def error(self, theta_hat, theta_true):
        """Squared Frobenius distance after the best signed permutation of ``B_hat``'s rows."""
        a, b = self._pair(theta_hat, theta_true)
        Bh = a.reshape(-1, self.dim, self.dim)
        B = b.reshape(-1, self.dim, self.dim)
        return ((signed_permutation_match(Bh, B) - B) ** 2).sum((-2, -1))

    def align(self, theta_hat, theta_true):
        """``theta_hat`` moved to the truth's image under the best signed permutation of its rows,
        and for each aligned entry the index of the entry of ``theta_hat`` it came from."""
        a, b = self._pair(theta_hat, theta_true)
        D = self.dim
        Bh, Bt = a.detach().cpu().reshape(-1, D, D).numpy(), b.detach().cpu().reshape(-1, D, D).numpy()
        out, idx = np.empty_like(Bh), np.empty(Bh.shape, dtype=np.int64)
        for s in range(Bh.shape[0]):
            src, sign = _match_rows(Bh[s], Bt[s])
            out[s] = sign[:, None] * Bh[s][src]
            idx[s] = src[:, None] * D + np.arange(D)[None, :]
        return (torch.as_tensor(out.reshape(-1, D * D), dtype=a.dtype, device=a.device),
                torch.as_tensor(idx.reshape(-1, D * D), device=a.device))
