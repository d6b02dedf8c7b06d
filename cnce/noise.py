"""Noise distributions: conditional noise for CNCE and independent noise for NCE.

Conditional noise ``p_c(y | x; eps)`` is split into a *base* draw that does not depend on
``eps`` (standard-normal ``xi`` for Eq. 13, uniforms for the flips of Eq. 64) and a cheap,
deterministic :meth:`ConditionalNoise.apply`. The epsilon heuristic and the experiment
runner reuse one base per simulation across eps, N and kappa (prefixes of it), as the
authors' code does.

Asymmetric conditional noise adds its log-ratio ``log p_c(y|x) - log p_c(x|y)`` to G
(Eq. 9); symmetric noise (both built-ins) has ``log_ratio = None`` and the densities cancel.
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from ._validation import check_positive_int, per_simulation
from .constraints import Integer, validate
from .eps import AUTHORS_RULE, BERNOULLI_RULE, EpsRule
from .errors import InputError

__all__ = [
    "ConditionalNoise",
    "GaussianNoise",
    "BernoulliFlipNoise",
    "MultiplicativeLogNormalNoise",
    "NCEGaussianNoise",
    "draw_base",
    "draw_streams",
    "default_base",
]


class ConditionalNoise:
    """Interface of a conditional noise distribution ``p_c(y | x; eps)``.

    Subclasses declare :attr:`base_kind` (or implement :meth:`draw_base`) and implement
    :meth:`apply`; asymmetric ones set ``symmetric = False`` and implement :meth:`log_prob`
    (then :meth:`log_ratio` is derived).
    """

    symmetric: bool = True
    #: largest admissible eps (``None``: unbounded).
    eps_max: float | None = None
    #: the eps heuristic's rule for this noise, unless ``cnce.fit`` is given ``eps_rule``
    eps_rule: EpsRule = AUTHORS_RULE
    #: what :meth:`draw_base` draws, if it is i.i.d. standard numbers: ``"normal"`` or
    #: ``"uniform"`` on [0, 1). Then :func:`cnce.fit` draws a missing base with
    #: :func:`draw_streams` (fast, one stream per simulation); ``None``: with :meth:`draw_base`.
    base_kind: str | None = None

    def draw_base(self, x: torch.Tensor, kappa: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """Random numbers ``(S, N, kappa, D)`` that :meth:`apply` turns into noise for any eps:
        drawn as the declared :attr:`base_kind` says (a noise without one implements this)."""
        draw = {"normal": torch.randn, "uniform": torch.rand}.get(self.base_kind)
        if draw is None:
            raise NotImplementedError(f"{type(self).__name__} declares no base_kind: it must implement draw_base")
        S, N, D = x.shape
        return draw(S, N, kappa, D, generator=generator, dtype=x.dtype, device=x.device)

    def apply(self, x: torch.Tensor, base: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        """Noise samples ``y (S, N, kappa, D)`` from data ``x (S, N, D)`` and ``eps (S,)``."""
        raise NotImplementedError

    def sample(self, x, kappa: int, eps, generator=None) -> torch.Tensor:
        """Draw ``kappa`` noise samples per data point: ``(S, N, kappa, D)``."""
        kappa = check_positive_int(kappa, "kappa")
        eps = per_simulation(eps, x.shape[0], x)
        return self.apply(x, self.draw_base(x, kappa, generator), eps)

    def log_prob(self, y: torch.Tensor, x: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
        """``log p_c(y | x; eps)`` with ``y (S, N, kappa, D)``, ``x (S, N, D)``: ``(S, N, kappa)``."""
        raise NotImplementedError

    def log_ratio(self, x: torch.Tensor, y: torch.Tensor, eps: torch.Tensor) -> torch.Tensor | None:
        """``log p_c(y|x) - log p_c(x|y)`` for Eq. (9), or ``None`` when p_c is symmetric."""
        if self.symmetric:
            return None
        xb = x.unsqueeze(-2).expand_as(y)
        # log p_c(x | y): condition on each noise point, evaluate at its data point.
        S, N, K, D = y.shape
        lp_xy = self.log_prob(xb.reshape(S, N * K, 1, D), y.reshape(S, N * K, D), eps).reshape(S, N, K)
        return self.log_prob(y, x, eps) - lp_xy


class GaussianNoise(ConditionalNoise):
    """``y = x + eps xi``, ``xi ~ N(0, I)``: the symmetric conditional noise of Eq. (13)."""

    base_kind = "normal"

    def apply(self, x, base, eps):
        return x.unsqueeze(-2) + eps.view(-1, 1, 1, 1) * base

    def log_prob(self, y, x, eps):
        D = x.shape[-1]
        e = eps.view(-1, 1, 1)
        d2 = ((y - x.unsqueeze(-2)) ** 2).sum(-1)
        return -0.5 * d2 / e**2 - D * torch.log(e) - 0.5 * D * math.log(2 * math.pi)


class BernoulliFlipNoise(ConditionalNoise):
    """Flip each bit with probability eps (Eq. 64); symmetric, eps in [0, 1]."""

    eps_max = 1.0
    eps_rule = BERNOULLI_RULE
    base_kind = "uniform"

    def apply(self, x, base, eps):
        flip = base < eps.view(-1, 1, 1, 1)
        xb = x.unsqueeze(-2).expand_as(base)
        return torch.where(flip, 1.0 - xb, xb)

    def log_prob(self, y, x, eps):
        """Each of the D bits flips independently: ``k log eps + (D - k) log(1 - eps)`` with
        ``k`` the number of flipped bits."""
        e = eps.view(-1, 1, 1)
        k = (y != x.unsqueeze(-2)).sum(-1).to(y.dtype)
        D = y.shape[-1]
        return torch.xlogy(k, e) + torch.xlogy(D - k, 1.0 - e)


class MultiplicativeLogNormalNoise(ConditionalNoise):
    """``y = x exp(eps xi)`` for positive data: an *asymmetric* conditional noise.

    ``p_c(y|x) = N(log y; log x, eps^2) / y``, so ``log p_c(y|x) - log p_c(x|y) = log x - log y``
    enters G (Eq. 9). Included to exercise the general interface.
    """

    symmetric = False
    base_kind = "normal"

    def apply(self, x, base, eps):
        if (x <= 0).any():
            raise InputError("x must be positive for MultiplicativeLogNormalNoise; got a value <= 0")
        return x.unsqueeze(-2) * torch.exp(eps.view(-1, 1, 1, 1) * base)

    def log_prob(self, y, x, eps):
        D = x.shape[-1]
        e = eps.view(-1, 1, 1)
        ly, lx = torch.log(y), torch.log(x).unsqueeze(-2)
        return (-0.5 * ((ly - lx) ** 2).sum(-1) / e**2 - D * torch.log(e) - 0.5 * D * math.log(2 * math.pi) - ly.sum(-1))

    def log_ratio(self, x, y, eps):
        """``log p_c(y|x) - log p_c(x|y) = sum_d (log x_d - log y_d)`` in closed form: the
        Gaussian parts cancel, and the difference of log-densities would be NaN at eps = 0."""
        return (torch.log(x).unsqueeze(-2) - torch.log(y)).sum(-1)


class NCEGaussianNoise:
    """NCE's independent noise: a Gaussian with the data's sample mean and covariance.

    ``fit(x)`` estimates one Gaussian per simulation; ``apply(base)`` maps standard-normal
    numbers to noise samples, so NCE can reuse CNCE's noise base (the same numbers).
    """

    def __init__(self, mean: torch.Tensor, cov: torch.Tensor):
        self.mean = mean
        self.cov = cov
        self.chol = torch.linalg.cholesky(cov)

    @classmethod
    def fit(cls, x: torch.Tensor, jitter: float = 1e-10) -> "NCEGaussianNoise":
        mean = x.mean(-2)
        xc = x - mean.unsqueeze(-2)
        cov = xc.transpose(-1, -2) @ xc / (x.shape[-2] - 1)
        D = x.shape[-1]
        cov = cov + jitter * cov.diagonal(dim1=-2, dim2=-1).mean(-1).view(-1, 1, 1) * torch.eye(D, dtype=x.dtype, device=x.device)
        return cls(mean, cov)

    def apply(self, base: torch.Tensor) -> torch.Tensor:
        """``base (S, M, D)`` standard normal -> samples ``(S, M, D)``."""
        return self.mean.unsqueeze(-2) + base @ self.chol.transpose(-1, -2)

    def sample(self, n: int, generator=None) -> torch.Tensor:
        S, D = self.mean.shape
        return self.apply(torch.randn(S, n, D, generator=generator, dtype=self.mean.dtype, device=self.mean.device))

    def log_prob(self, u: torch.Tensor) -> torch.Tensor:
        D = u.shape[-1]
        z = torch.linalg.solve_triangular(self.chol, (u - self.mean.unsqueeze(-2)).transpose(-1, -2), upper=False)
        logdet = torch.log(self.chol.diagonal(dim1=-2, dim2=-1)).sum(-1)
        return -0.5 * (z**2).sum(-2) - logdet.unsqueeze(-1) - 0.5 * D * math.log(2 * math.pi)


#: noise points (the first ones, in data-point order) of NCE's importance-sampling start for its
#: log-normaliser ``c`` (both backends)
NCE_C0_POINTS = 65536


def default_noise(model) -> ConditionalNoise:
    """The conditional noise the paper uses for ``model``: flips for discrete data, else Eq. (13)."""
    return BernoulliFlipNoise() if getattr(model, "discrete", False) else GaussianNoise()


def draw_base(model, S: int, N: int, kappa: int, generator: torch.Generator | None = None, dtype=torch.float64) -> torch.Tensor:
    """One noise base ``(S, N, kappa, D)`` for ``model`` (uniform for discrete, else normal).

    Pass it to :func:`cnce.fit` as ``noise_base``; fits take its prefix ``[:, :N, :kappa]``,
    so one base serves every N and kappa of an experiment (and NCE reads the same numbers).
    """
    S, N, kappa = check_positive_int(S, "S"), check_positive_int(N, "N"), check_positive_int(kappa, "kappa")
    shape = (S, N, kappa, model.dim)
    if getattr(model, "discrete", False):
        return torch.rand(shape, generator=generator, dtype=dtype)
    return torch.randn(shape, generator=generator, dtype=dtype)


def draw_streams(S: int, N: int, kappa: int, D: int, *, key: int, kind: str = "normal", threads: int = 1,
                 dtype=torch.float64) -> torch.Tensor:
    """A noise base ``(S, N, kappa, D)`` of i.i.d. standard-normal (``kind="normal"``) or
    uniform numbers, simulation ``s`` from its own numpy ``SFC64`` stream seeded with
    ``SeedSequence([key, s])``.

    The numbers do not depend on ``threads`` (simulations are drawn in parallel, each from its
    own stream), nor on ``S`` (simulation ``s`` is the same in any batch that has it), and
    ``N`` points are a prefix of any larger draw with the same ``kappa``. numpy's ziggurat
    sampler draws normals faster than ``torch.randn`` (``benchmarks/noise_draw.py``). This
    is how :func:`cnce.fit` draws a missing
    ``noise_base``; the experiments keep :func:`draw_base` (their committed results were
    computed with it).
    """
    S, N, kappa, D = (check_positive_int(v, name) for v, name in ((S, "S"), (N, "N"), (kappa, "kappa"), (D, "D")))
    threads = check_positive_int(threads, "threads")
    if kind not in ("normal", "uniform"):
        raise InputError(f"kind must be 'normal' or 'uniform'; got {kind!r}")
    validate(key, Integer(lo=0), "key")
    out = np.empty((S, N, kappa, D))

    def one(s):
        g = np.random.Generator(np.random.SFC64(np.random.SeedSequence([int(key), s])))
        if kind == "normal":
            g.standard_normal(out=out[s])
        else:
            g.random(out=out[s])

    if threads == 1 or S == 1:
        for s in range(S):
            one(s)
    else:  # numpy fills arrays without the GIL
        with ThreadPoolExecutor(min(threads, S)) as pool:
            list(pool.map(one, range(S)))
    return torch.from_numpy(out).to(dtype)


def default_base(noise: ConditionalNoise, S: int, N: int, kappa: int, D: int, generator: torch.Generator,
                 threads: int = 1) -> torch.Tensor:
    """The base :func:`cnce.fit` draws when none is given: :func:`draw_streams` keyed by one
    number from ``generator`` where the noise declares a ``base_kind``, else its own
    :meth:`ConditionalNoise.draw_base`. Always on the CPU, float64."""
    if noise.base_kind is None:
        return noise.draw_base(torch.zeros(S, N, D, dtype=torch.float64), kappa, generator=generator)
    key = int(torch.randint(0, 2**62, (1,), generator=generator))
    return draw_streams(S, N, kappa, D, key=key, kind=noise.base_kind, threads=threads)
