"""Held-out log-likelihood of an energy network in any dimension, with an error bar it can support.

A network gives ``log phi``; its log-likelihood needs ``log Z = log int phi``.

* **D <= 3, quadrature** (:func:`log_normaliser` with ``method="quadrature"``): the midpoint
  rule on a grid over a box around the reference data (their range, widened by half of it on
  each side). Two checks bound the error: the box widened to twice its size must not add
  more than ``tol`` nats (else there is mass outside the box, perhaps an improper density),
  and a grid half as fine must agree within ``tol``. The error bar is the larger of the two.
* **Any D, annealed importance sampling** (AIS; Neal, 2001) from a base ``q0``, a Gaussian
  mixture fitted to the reference data (k-means clusters, the number of components by BIC,
  covariances widened by :data:`BASE_WIDEN` squared), to ``phi`` along the geometric path
  ``q0^(1 - beta) phi^beta``, with Metropolis-adjusted Langevin (MALA) moves whose step
  follows a target acceptance. The forward run's ``log Z`` is a stochastic lower bound
  (Jensen). A **reverse run** (bidirectional Monte Carlo, Grosse et al., 2015; RAISE, Burda
  et al., 2015) starts from reference rows and anneals back to ``q0``; it estimates
  ``1 / Z`` and gives a stochastic upper bound when its start is an exact sample of ``phi``
  (a known density and its own samples; for a network, approximately, as far as it fits
  the data). The estimate is the bracket's midpoint;
  its error bar spans the bracket plus two standard errors of each end.

The estimator **refuses** (raises :class:`UnsupportedEstimateError`, or with
``on_fail="warn"`` warns and returns NaN) when it cannot support a number: an effective
sample size of the forward weights below ``min_ess`` chains, a bracket wider than ``tol``
nats, a non-finite weight, or (quadrature) a failed check.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import torch

from .._validation import check_positive_int, check_rows
from ..errors import InputError, RunError
from ._checks import check_seed, positive_number, torch_threads
from .losses import evaluate

__all__ = ["log_normaliser", "held_out_log_likelihood", "LogNormaliser", "HeldOutLikelihood",
           "UnsupportedEstimateError", "QUADRATURE_MAX_DIM", "BASE_WIDEN"]

#: quadrature is used up to this dimension (``method="auto"``)
QUADRATURE_MAX_DIM = 3
#: grid points per axis for quadrature in 1, 2 and 3 dimensions
GRID = {1: 4001, 2: 401, 3: 101}
#: the AIS base is the reference data's Gaussian with its standard deviations times this
BASE_WIDEN = 1.5
#: MALA's target acceptance in AIS (Roberts & Rosenthal, 1998)
TARGET_ACCEPTANCE = 0.57


class UnsupportedEstimateError(RunError, ArithmeticError):
    """The estimator cannot support a number (ESS too small, bracket too wide, a failed check)."""


@dataclass
class LogNormaliser:
    """An estimate of ``log Z`` with its error bar.

    Attributes:
        log_z: the estimate; ``lo``, ``hi``: the interval it supports.
        method: ``"quadrature"`` or ``"ais"``.
        forward, reverse: AIS's lower and upper ends (forward ``log Z``, reverse ``log Z``),
            NaN for quadrature.
        se_forward, se_reverse: their standard errors (delta method over chains).
        ess: effective sample size of the forward weights (``(sum w)^2 / sum w^2``), and
            ``ess_fraction`` that over the chains; NaN for quadrature.
        chains, temperatures, steps, components: AIS's settings (``components``: of its
            Gaussian-mixture base); ``grid``, ``box`` quadrature's.
        outside, resolution: quadrature's checks (nats added by a wider box, change on a
            grid half as fine).
        problem: why the estimate is refused (``None``: supported).
    """

    log_z: float
    lo: float
    hi: float
    method: str
    forward: float = float("nan")
    reverse: float = float("nan")
    se_forward: float = float("nan")
    se_reverse: float = float("nan")
    ess: float = float("nan")
    ess_fraction: float = float("nan")
    chains: int = 0
    temperatures: int = 0
    steps: int = 0
    grid: int = 0
    box: list = field(default_factory=list)
    outside: float = float("nan")
    resolution: float = float("nan")
    components: int = 0
    problem: str | None = None

    @property
    def error(self) -> float:
        """Half the width of the supported interval."""
        return (self.hi - self.lo) / 2

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass
class HeldOutLikelihood:
    """Mean held-out log-likelihood ``mean log phi(x) - log Z``: ``value``, its interval
    ``lo``-``hi`` from ``log Z``'s, ``se_points`` (the standard error of the mean over the
    held-out points, a separate source of uncertainty), ``n`` points and the ``normaliser``."""

    value: float
    lo: float
    hi: float
    se_points: float
    n: int
    normaliser: LogNormaliser


def _dtype_device(log_phi):
    if isinstance(log_phi, torch.nn.Module):
        p = next(iter(log_phi.parameters()), None)
        if p is not None and p.is_floating_point():
            return p.dtype, p.device
    return torch.float64, torch.device("cpu")


def _values(f, u, chunk=65536):
    with torch.no_grad():
        return torch.cat([evaluate(f, u[i:i + chunk]).double() for i in range(0, u.shape[0], chunk)])


def _refuse(est, problem, on_fail, what="log Z"):
    est.problem = problem
    if on_fail == "raise":
        raise UnsupportedEstimateError(f"{what} cannot be supported: {problem}")
    warnings.warn(f"{what}: {problem}; returning NaN", RuntimeWarning, stacklevel=3)
    est.log_z = est.lo = est.hi = float("nan")
    return est


# ----------------------------------------------------------------------------- quadrature
def _grid_log_z(f, lo, hi, n, dtype, device):
    D = lo.numel()
    axes = [torch.linspace(float(lo[d]), float(hi[d]), n + 1, dtype=torch.float64) for d in range(D)]
    mids = [(a[1:] + a[:-1]) / 2 for a in axes]
    cell = float(torch.prod((hi - lo) / n))
    pts = torch.cartesian_prod(*mids).reshape(-1, D)
    v = _values(f, pts.to(dtype=dtype, device=device))
    return float(torch.logsumexp(v, 0)) + math.log(cell)


def _quadrature(f, ref, dtype, device, n, tol, on_fail):
    D = ref.shape[1]
    mn, mx = ref.min(0).values.double().cpu(), ref.max(0).values.double().cpu()
    rng = (mx - mn).clamp_min(1e-12)
    lo, hi = mn - rng / 2, mx + rng / 2
    n = GRID[D] if n is None else check_positive_int(n, "n", 4)
    lz = _grid_log_z(f, lo, hi, n, dtype, device)
    c, w = (lo + hi) / 2, (hi - lo)
    wide = _grid_log_z(f, c - w, c + w, n, dtype, device)  # twice as wide, same number of cells
    coarse = _grid_log_z(f, lo, hi, n // 2, dtype, device)
    outside, resolution = wide - lz, abs(coarse - lz)
    err = max(abs(outside), resolution, 1e-8 * (1 + abs(lz)))  # the floor: rounding of the sums
    est = LogNormaliser(log_z=lz, lo=lz - err, hi=lz + err, method="quadrature", grid=n,
                        box=[[float(a), float(b)] for a, b in zip(lo, hi)], outside=outside, resolution=resolution)
    if not math.isfinite(lz) or not math.isfinite(wide):
        return _refuse(est, "phi is not finite on the grid", on_fail)
    if outside > tol:
        return _refuse(est, f"the box twice as wide adds {outside:.3g} nats (> tol = {tol:g}): the density has "
                            "mass outside the data's region (perhaps it is improper)", on_fail)
    if resolution > tol:
        return _refuse(est, f"a grid half as fine changes log Z by {resolution:.3g} nats (> tol = {tol:g}); "
                            "pass a larger n", on_fail)
    return est


# ------------------------------------------------------------------------------------ AIS
def _betas(K):
    """A sigmoid schedule from 0 to 1 in K steps (dense at both ends; Grosse et al., 2015)."""
    t = torch.linspace(-4.0, 4.0, K + 1, dtype=torch.float64)
    s = torch.sigmoid(t)
    return ((s - s[0]) / (s[-1] - s[0])).tolist()


def _kmeans(x, K, gen, iters=25):
    """Lloyd's k-means with k-means++ seeding; returns the labels."""
    N = x.shape[0]
    centres = x[torch.randint(0, N, (1,), generator=gen)]
    for _ in range(K - 1):
        d = torch.cdist(x, centres).min(1).values ** 2
        centres = torch.cat([centres, x[torch.multinomial(d / d.sum(), 1, generator=gen)]])
    for _ in range(iters):
        lab = torch.cdist(x, centres).argmin(1)
        centres = torch.stack([x[lab == k].mean(0) if (lab == k).any() else centres[k] for k in range(K)])
    return torch.cdist(x, centres).argmin(1)


class _Base:
    """The AIS base: a Gaussian mixture fitted to the reference data (k-means clusters, their
    means, covariances widened by ``BASE_WIDEN**2``, and shares), the number of components
    chosen by BIC among ``components``."""

    def __init__(self, ref, components, gen):
        N, D = ref.shape
        best = None
        for K in components:
            if K * (D + 2) * 5 > N:  # too few rows for K full covariances
                continue
            lab = _kmeans(ref, K, gen) if K > 1 else torch.zeros(N, dtype=torch.long)
            ks = [k for k in range(K) if int((lab == k).sum()) > D + 1]
            w = torch.tensor([float((lab == k).sum()) for k in ks], dtype=torch.float64)
            mus = torch.stack([ref[lab == k].mean(0) for k in ks])
            covs = torch.stack([torch.cov(ref[lab == k].T).reshape(D, D) for k in ks])
            covs = covs + 1e-6 * covs.diagonal(dim1=-2, dim2=-1).mean(-1)[:, None, None] * torch.eye(D, dtype=ref.dtype)
            self._set(w / w.sum(), mus, covs)
            ll = float(self.log_q(ref).sum())
            bic = -2 * ll + (len(ks) * (D + D * (D + 1) / 2) + len(ks) - 1) * math.log(N)
            if best is None or bic < best[0]:
                best = (bic, w / w.sum(), mus, covs)
        _, w, mus, covs = best
        self._set(w, mus, covs * BASE_WIDEN**2)

    def _set(self, w, mus, covs):
        self.logw, self.mus = w.log(), mus
        self.chol = torch.linalg.cholesky(covs)
        D = mus.shape[1]
        self.log_norm = -0.5 * D * math.log(2 * math.pi) - torch.log(torch.diagonal(self.chol, dim1=-2, dim2=-1)).sum(-1)

    @property
    def components(self) -> int:
        return self.mus.shape[0]

    def log_q(self, u):
        diff = (u.unsqueeze(0) - self.mus.unsqueeze(1)).transpose(1, 2)  # (K, D, B)
        z = torch.linalg.solve_triangular(self.chol, diff, upper=False)
        lk = -0.5 * (z**2).sum(1) + self.log_norm[:, None] + self.logw[:, None]  # (K, B)
        return torch.logsumexp(lk, 0)

    def sample(self, n, gen):
        k = torch.multinomial(self.logw.exp(), n, replacement=True, generator=gen)
        z = torch.randn(n, self.mus.shape[1], generator=gen, dtype=self.mus.dtype)
        return self.mus[k] + (self.chol[k] @ z.unsqueeze(-1)).squeeze(-1)

    def min_var(self) -> float:
        return float((self.chol**2).sum(-1).min())


class _Path:
    """The geometric path between the base q0 and phi: values and scores at beta."""

    def __init__(self, f, base, dtype, device):
        self.f, self.base = f, base
        self.dtype, self.device = dtype, device

    def terms(self, u):
        """``(log phi(u), log q0(u), grad log phi, grad log q0)`` in float64."""
        with torch.enable_grad():
            uu = u.detach().to(dtype=self.dtype, device=self.device).requires_grad_(True)
            lp = evaluate(self.f, uu)
            (g,) = torch.autograd.grad(lp.sum(), uu)
            ud = u.detach().requires_grad_(True)
            lq = self.base.log_q(ud)
            (gq,) = torch.autograd.grad(lq.sum(), ud)
        return lp.detach().double().to(u.device), lq.detach(), g.detach().double().to(u.device), gq.detach()


def _mala(path, u, state, beta, h, gen):
    """One MALA move on ``q0^(1-beta) phi^beta`` for every chain; returns the new state and acceptance."""
    lp, lq, g, gq = state
    val = (1 - beta) * lq + beta * lp
    s = (1 - beta) * gq + beta * g
    xi = torch.randn(u.shape, generator=gen, dtype=u.dtype)
    prop = u + h * s + math.sqrt(2 * h) * xi
    plp, plq, pg, pgq = path.terms(prop)
    pval = (1 - beta) * plq + beta * plp
    ps = (1 - beta) * pgq + beta * pg
    back = u - prop - h * ps
    log_a = pval - val - (back**2).sum(-1) / (4 * h) + (xi**2).sum(-1) / 2
    take = (torch.log(torch.rand(u.shape[0], generator=gen, dtype=u.dtype)) < log_a) & torch.isfinite(pval)
    t1 = take.unsqueeze(-1)
    u = torch.where(t1, prop, u)
    state = (torch.where(take, plp, lp), torch.where(take, plq, lq), torch.where(t1, pg, g), torch.where(t1, pgq, gq))
    return u, state, float(take.double().mean())


def _anneal(path, u, betas, steps, h, gen):
    """AIS along ``betas``; returns the final states and the log-weights ``sum dbeta (log phi - log q0)``."""
    state = path.terms(u)
    logw = torch.zeros(u.shape[0], dtype=torch.float64)
    for b0, b1 in zip(betas[:-1], betas[1:]):
        logw = logw + (b1 - b0) * (state[0] - state[1])
        for _ in range(steps):
            u, state, acc = _mala(path, u, state, b1, h, gen)
            h = min(max(h * math.exp(0.5 * (acc - TARGET_ACCEPTANCE)), 1e-8), 1e3)  # toward the target
    return u, logw, h


def _lme(logw):
    """``log mean exp(logw)`` and its standard error (delta method)."""
    M = logw.numel()
    m = float(torch.logsumexp(logw, 0)) - math.log(M)
    w = torch.exp(logw - logw.max())
    rel = float(w.std() / w.mean()) if M > 1 else float("inf")
    return m, rel / math.sqrt(M)


def _ais(f, ref, dtype, device, chains, temperatures, steps, seed, min_ess, tol, on_fail, components):
    refd = ref.double().cpu()
    gen = torch.Generator().manual_seed(seed)
    base = _Base(refd, components, gen)
    path = _Path(f, base, dtype, device)
    u0 = base.sample(chains, gen)
    h0 = 0.1 * base.min_var() / BASE_WIDEN**2
    betas = _betas(temperatures)
    _, logw, h = _anneal(path, u0, betas, steps, h0, gen)
    est = LogNormaliser(log_z=float("nan"), lo=float("nan"), hi=float("nan"), method="ais", chains=chains,
                        temperatures=temperatures, steps=steps, components=base.components)
    if not torch.isfinite(logw).all():
        return _refuse(est, f"{int((~torch.isfinite(logw)).sum())} of {chains} AIS weights are not finite", on_fail)
    fwd, se_f = _lme(logw)
    w = torch.exp(logw - logw.max())
    est.ess = float(w.sum() ** 2 / (w**2).sum())
    est.ess_fraction = est.ess / chains
    # reverse: start from reference rows (the data: phi's samples when phi fits them, exact
    # samples for a known density), as RAISE (Burda et al., 2015) and BDMC (Grosse et al., 2015)
    idx = torch.randperm(refd.shape[0], generator=gen)[:chains]
    if idx.numel() < chains:
        idx = torch.randint(0, refd.shape[0], (chains,), generator=gen)
    _, logw_r, _ = _anneal(path, refd[idx], betas[::-1], steps, h, gen)
    if not torch.isfinite(logw_r).all():
        return _refuse(est, "reverse AIS weights are not finite", on_fail)
    inv, se_r = _lme(logw_r)  # logw_r accumulates (b_prev - b) (log phi - log q0): estimates log(1/Z)
    rev = -inv
    est.forward, est.reverse, est.se_forward, est.se_reverse = fwd, rev, se_f, se_r
    est.log_z = (fwd + rev) / 2
    est.lo = min(fwd, rev) - 2 * se_f
    est.hi = max(fwd, rev) + 2 * se_r
    if est.ess < min_ess:
        return _refuse(est, f"the forward weights' effective sample size is {est.ess:.1f} of {chains} chains "
                            f"(< min_ess = {min_ess:g}): more temperatures or chains, or a closer base, are needed",
                       on_fail)
    if est.hi - est.lo > 2 * tol:
        return _refuse(est, f"forward and reverse AIS bracket log Z in [{est.lo:.4g}, {est.hi:.4g}], wider than "
                            f"2 tol = {2 * tol:g} nats: the chains do not mix between phi's regions at this budget "
                            "(more temperatures or steps), or phi puts mass where the data are not", on_fail)
    return est


# ------------------------------------------------------------------------------------ API
def log_normaliser(log_phi, reference, *, method: str = "auto", chains: int = 256, temperatures: int = 200,
                   steps: int = 2, n: int | None = None, tol: float = 0.1, min_ess: float = 10.0, seed: int = 0,
                   components=(1, 2, 4, 8), energy: bool = False, on_fail: str = "raise",
                   threads: int | None = None) -> LogNormaliser:
    """``log Z = log int phi`` of a network in any dimension, with an error bar it supports.

    Args:
        log_phi: a network or callable ``(B, D) -> (B,)`` (energies with ``energy=True``).
        reference: data ``(N, D)`` from the density's region (the training data): quadrature's
            box is their range widened by half of it each way; AIS's base is their Gaussian
            with standard deviations times :data:`BASE_WIDEN`.
        method: ``"auto"`` (quadrature for ``D <= 3``, AIS beyond), ``"quadrature"`` or ``"ais"``.
        chains, temperatures, steps: AIS's chains, annealing steps and MALA moves per step.
        n: quadrature's grid points per axis (default :data:`GRID`).
        tol: the largest error (nats) accepted: quadrature's checks; AIS's half-bracket.
        min_ess: the smallest effective sample size (chains) of AIS's forward weights accepted.
        seed: AIS's random numbers (a CPU generator of its own).
        components: the numbers of components tried for AIS's base (a Gaussian mixture on
            k-means clusters of the reference, chosen by BIC).
        on_fail: ``"raise"`` (:class:`UnsupportedEstimateError`) or ``"warn"`` (NaN).
        threads: torch's CPU threads meanwhile (default: one on the CPU, where the small
            batches of chains run fastest; torch's setting on a GPU).

    Returns:
        a :class:`LogNormaliser`.
    """
    if method not in ("auto", "quadrature", "ais"):
        raise InputError(f"method must be 'auto', 'quadrature' or 'ais'; got {method!r}")
    if on_fail not in ("raise", "warn"):
        raise InputError(f"on_fail must be 'raise' or 'warn'; got {on_fail!r}")
    if not callable(log_phi):
        raise InputError(f"log_phi must be a torch.nn.Module or a callable (B, D) -> (B,); got {type(log_phi).__name__}")
    ref = check_rows(reference, name="reference", booleans=False)
    D = ref.shape[1]
    chains = check_positive_int(chains, "chains", 2)
    temperatures = check_positive_int(temperatures, "temperatures")
    steps = check_positive_int(steps, "steps")
    tol = positive_number(tol, "tol")
    min_ess = positive_number(min_ess, "min_ess")
    seed = check_seed(seed)
    if method == "quadrature" and D > QUADRATURE_MAX_DIM:
        raise InputError(f"method='quadrature' is for D <= {QUADRATURE_MAX_DIM}; got D = {D} (use 'ais' or 'auto')")
    f = (lambda u: -log_phi(u)) if energy else log_phi
    dtype, device = _dtype_device(log_phi)
    try:
        evaluate(f, ref[:2].to(dtype=dtype, device=device))
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"log_phi fails on reference of shape {tuple(ref.shape)} ({type(exc).__name__}: {exc}); "
                         "is D the network's input dimension?") from exc
    threads = (1 if device.type == "cpu" else None) if threads is None else check_positive_int(threads, "threads")
    with torch_threads(threads):
        if method == "quadrature" or (method == "auto" and D <= QUADRATURE_MAX_DIM):
            return _quadrature(f, ref, dtype, device, n, tol, on_fail)
        components = tuple(check_positive_int(k, "components") for k in components)
        return _ais(f, ref, dtype, device, chains, temperatures, steps, seed, min_ess, tol, on_fail, components)


def held_out_log_likelihood(log_phi, x, reference, *, energy: bool = False, **kw) -> HeldOutLikelihood:
    """Mean held-out log-likelihood ``mean_i log phi(x_i) - log Z`` of points ``x (M, D)``,
    with ``log Z`` from :func:`log_normaliser` on ``reference`` (the training data; keyword
    arguments go there). Its interval ``lo``-``hi`` is ``log Z``'s; ``se_points`` the
    standard error of the mean over the held-out points."""
    ref = check_rows(reference, name="reference", booleans=False)
    x = check_rows(x, name="x", D=ref.shape[1], booleans=False)
    lz = log_normaliser(log_phi, ref, energy=energy, **kw)
    f = (lambda u: -log_phi(u)) if energy else log_phi
    dtype, device = _dtype_device(log_phi)
    v = _values(f, x.to(dtype=dtype, device=device))
    m = float(v.mean())
    return HeldOutLikelihood(value=m - lz.log_z, lo=m - lz.hi, hi=m - lz.lo, se_points=float(v.std() / math.sqrt(len(v))),
                             n=len(v), normaliser=lz)
