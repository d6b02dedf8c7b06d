"""One estimator for every synthetic experiment: :func:`fit`.

``fit(model, x, method=...)`` estimates ``S`` independent problems (one per simulation) in
one batched optimisation -- never a Python loop over simulations. Methods:

* ``"cnce"``: conditional noise-contrastive estimation, loss J_N of Eq. (8) with G of
  Eq. (9); conditional noise from Eq. (13) (continuous data) or Eq. (64) (binary data);
  eps by the authors' heuristic (:mod:`cnce.eps`) or given.
* ``"nce"``: noise-contrastive estimation (Gutmann & Hyvarinen 2012) with Gaussian noise
  matched to each simulation's data mean and covariance, ``nu = kappa`` noise points per
  data point and a learned log-normaliser ``c`` (returned as ``log_normaliser``).
* ``"mle"``: maximum likelihood (closed form where it exists; otherwise numerical, with the
  ring model's normaliser by quadrature).
* ``"sm"``: score matching (Hyvarinen 2005), by autograd.

CNCE and NCE losses are logistic losses of a margin: for models linear in their parameters
the margin's features are computed once per noise draw and every iteration is a batched
logistic-regression Newton step (:mod:`cnce.optim`). For binary data with symmetric noise
(the Bernoulli model with the flips of Eq. 64) the pairs enter only through how often each
pair type ``(x, y)`` occurs, and the fit runs on those counts (the same loss).
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from . import _fused
from . import noise as noise_mod
from ._torch import make_generator, resolve_device
from ._validation import check_data, check_eps, check_kappa, check_positive_int, check_theta
from .eps import AUTHORS_RULE, BERNOULLI_RULE, EpsRule, choose_eps
from .losses import cnce_loss, mle_loss, score_matching_loss
from .models.base import UnnormalisedModel
from .optim import FEATURE_DTYPE, HESS_POINTS, ICA_HESS_POINTS, AbsProjectionLogistic, BlockedAbsProjectionCNCE, AutogradObjective, LinearLogistic, NonlinearLogistic, lbfgs, newton

__all__ = ["fit", "FitResult", "METHODS"]

METHODS = ("cnce", "nce", "mle", "sm")
BACKENDS = ("auto", "torch", "fused")


@dataclass
class FitResult:
    """Per-simulation estimates and diagnostics of :func:`fit`.

    Tensors have a leading simulation axis ``S`` (dropped when ``x`` was a single ``(N, D)``
    dataset). ``eps`` is NaN for methods without conditional noise; ``log_normaliser`` is
    NCE's learned ``c`` (``None`` otherwise).
    """

    theta: torch.Tensor
    eps: torch.Tensor
    loss: torch.Tensor
    init_loss: torch.Tensor
    n_iter: torch.Tensor
    converged: torch.Tensor
    grad_norm: torch.Tensor
    method: str
    kappa: int | None
    seconds: float
    log_normaliser: torch.Tensor | None = None
    info: dict = field(default_factory=dict)

    def error(self, model: UnnormalisedModel, theta_true) -> torch.Tensor:
        """Squared estimation error per simulation (``model.error``)."""
        return model.error(self.theta, theta_true)

    def __repr__(self) -> str:
        S = self.theta.shape[0] if self.theta.ndim == 2 else 1
        conv = int(self.converged.sum()) if self.converged.ndim else int(self.converged)
        return (f"FitResult(method={self.method!r}, kappa={self.kappa}, S={S}, converged={conv}/{S}, "
                f"median_iter={float(self.n_iter.double().median()):.0f}, seconds={self.seconds:.3f})")


#: ICA-type models (``abs_projection_coef``) use the projection-based problem (set
#: ``CNCE_PROJECTION=0`` for the generic Jacobian-based one, e.g. to compare).
USE_PROJECTION = os.environ.get("CNCE_PROJECTION", "1") != "0"


#: ICA-type (piecewise-linear) problems stop when the loss decreases by less than
#: ``CNCE_STAT_FTOL * n_params / N`` (relative) for 3 iterations in a row, far below the
#: statistical resolution of the loss (order ``n_params / N``); ``0`` restores ``ftol=1e-12``.
#: At N = 2000, kappa = 10 the default changes squared errors by < 0.2 % (benchmarks/).
STAT_FTOL = float(os.environ.get("CNCE_STAT_FTOL", "1e-5"))


def _stat_ftol(model, N):
    return STAT_FTOL * model.n_params / N


def _memory_budget() -> int:
    return int(float(os.environ.get("CNCE_MEMORY_BUDGET_GB", "1.0")) * 2**30)


def fit(
    model: UnnormalisedModel,
    x,
    method: str = "cnce",
    kappa: int = 10,
    eps="auto",
    seed: int = 0,
    *,
    theta0=None,
    noise: noise_mod.ConditionalNoise | None = None,
    noise_base: torch.Tensor | None = None,
    eps_rule: EpsRule | None = None,
    max_iter: int | None = None,
    tol: float = 1e-14,
    device="auto",
    dtype: torch.dtype = torch.float64,
    sim_batch: int | str = "auto",
    progress: bool = False,
    backend: str = "auto",
    threads: int | None = None,
) -> FitResult:
    """Estimate ``model``'s parameters from ``x`` with CNCE, NCE, MLE or score matching.

    Args:
        model: an :class:`~cnce.models.UnnormalisedModel` (e.g. ``cnce.models.Gaussian()``).
        x: data ``(S, N, D)`` (S independent simulations) or ``(N, D)`` (one problem).
        method: ``"cnce"`` (Eqs. 8-9), ``"nce"``, ``"mle"`` or ``"sm"``; see ``model.methods``.
        kappa: noise samples per data point (CNCE) / noise-to-data ratio nu (NCE), an integer >= 1.
        eps: ``"auto"`` (the authors' heuristic, :mod:`cnce.eps`), a number >= 0 or an ``(S,)``
            tensor. Flip noise (Bernoulli) needs eps in [0, 1].
        seed: seeds the initialisation and noise draws (a ``torch.Generator`` also works).
        theta0: initial parameters ``(S, P)`` or ``(P,)``; default ``model.init_params``.
        noise: a :class:`~cnce.noise.ConditionalNoise`; default Eq. (13) or Eq. (64).
        noise_base: pre-drawn base ``(S, >=N, >=kappa, D)`` (see :func:`cnce.noise.draw_base`);
            its prefix is used, so one base serves all N and kappa. NCE maps the same
            standard-normal numbers through its Gaussian.
        eps_rule: an :class:`~cnce.eps.EpsRule` for ``eps="auto"``.
        max_iter: iteration cap (default 100 for Newton, 2000 for L-BFGS).
        tol: Newton-decrement tolerance (relative to the loss).
        device: ``"auto"`` (CUDA when present), ``"cpu"``, ``"cuda"``.
        dtype: float64 by default.
        sim_batch: simulations per chunk; ``"auto"`` keeps each chunk's features under
            ``CNCE_MEMORY_BUDGET_GB`` (default 1 GB). Results do not depend on it.
        progress: show a tqdm bar over chunks.
        backend: ``"auto"`` (default) uses the fused CPU kernels of :mod:`cnce._fused` where
            they apply (CNCE with the noise of Eq. 13 and NCE for the Gaussian, ICA and ring models,
            CNCE with that noise for the log-normal model, and ICA maximum likelihood by the same
            L-BFGS; float64 on the CPU, numba installed) and the batched torch path otherwise;
            ``"torch"`` forces the torch path (also what runs on a GPU); ``"fused"`` requires the
            kernels and raises ValueError where they do not apply. Both solve the same problem
            with the same Newton method; estimates agree to the optimiser's tolerance (convex
            problems: about 5e-7 relative or better; ICA follows the same path but its loose,
            statistically motivated stopping rule can stop at slightly different points).
        threads: CPU threads of the fused kernels (simulations run in parallel); default
            ``torch.get_num_threads()``.

    Returns:
        :class:`FitResult` with ``theta``, ``eps``, ``loss``, ``n_iter``, ``converged``, ...
    """
    t0 = time.perf_counter()
    if not isinstance(model, UnnormalisedModel):
        raise ValueError(f"model must be a cnce.models.UnnormalisedModel instance; got {model!r}")
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    if method not in model.methods:
        raise ValueError(f"method {method!r} does not apply to {model!r}; its methods are {model.methods}")
    dev = resolve_device(device)
    if dtype not in (torch.float64, torch.float32):
        raise ValueError(f"dtype must be torch.float64 or torch.float32; got {dtype!r}")
    x, batched = check_data(x, model.dim, dtype=dtype, device=dev)
    if hasattr(model, "validate_data"):
        model.validate_data(x)
    S, N, D = x.shape
    uses_noise = method in ("cnce", "nce")
    if uses_noise:
        kappa = check_kappa(kappa)
    if noise is None:
        noise = noise_mod.default_noise(model)
    elif not isinstance(noise, noise_mod.ConditionalNoise):
        raise ValueError(f"noise must be a cnce.noise.ConditionalNoise; got {noise!r}")
    if method == "cnce":
        eps = check_eps(eps, S, upper=noise.eps_max, dtype=dtype, device=dev)
    gen = make_generator(seed)
    if theta0 is None:
        theta0 = model.init_params(S, generator=gen)
    theta0 = check_theta(theta0, model.n_params, S, name="theta0", dtype=dtype, device=dev)
    if method in ("cnce", "nce"):
        if noise_base is None:
            noise_base = noise.draw_base(x.new_zeros(S, N, D, device="cpu"), kappa, generator=gen)
        noise_base = _check_base(noise_base, S, N, kappa, D).to(device=dev, dtype=dtype)
    if eps_rule is None:
        eps_rule = BERNOULLI_RULE if isinstance(noise, noise_mod.BernoulliFlipNoise) else AUTHORS_RULE
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}")
    if threads is not None:
        threads = check_positive_int(threads, "threads")
    if sim_batch != "auto":
        sim_batch = check_positive_int(sim_batch, "sim_batch")
    fused_kind = _fused_kind(model, method, noise, dev, dtype) if backend != "torch" else None
    if backend == "fused" and fused_kind is None:
        raise ValueError(
            f"backend='fused' needs numba, dtype float64 on the CPU, and CNCE with the Gaussian noise of Eq. (13) or NCE for a "
            f"Gaussian, ICA or Ring model, CNCE with that noise for LogNormal, or ICA maximum likelihood; got model={model!r}, method={method!r}, noise={type(noise).__name__}, device={dev}, "
            f"dtype={dtype}, numba {'available' if _fused.available() else 'not installed'}")
    if fused_kind is not None:
        if fused_kind == "ica-mle":  # the same L-BFGS as the torch path, per simulation
            res = _fused_result(model, _fused.ica_mle_all(x.contiguous().numpy(), model.to_free(theta0).numpy(),
                                                          a=float(model.abs_projection_coef), max_iter=max_iter or 2000,
                                                          threads=threads), "mle", None)
        elif method == "nce":
            res = _fit_nce_fused(model, fused_kind, x, theta0, kappa, noise_base, max_iter, tol, threads)
        else:
            res = _fit_cnce_fused(model, fused_kind, x, theta0, kappa, eps, noise_base, eps_rule, max_iter, tol, threads)
        res.seconds = time.perf_counter() - t0
        res.info = {"chunks": 1, "sim_batch": S, "device": str(dev), "backend": "fused"}
        if not batched:
            _unbatch(res)
        return res

    per_sim_bytes = _bytes_per_sim(model, method, N, kappa if uses_noise else 1, dtype)
    if sim_batch == "auto":
        chunk = max(1, min(S, _memory_budget() // max(per_sim_bytes, 1)))
    else:
        chunk = sim_batch
    starts = list(range(0, S, chunk))
    parts = []
    iterator = starts
    if progress:
        from tqdm.auto import tqdm

        iterator = tqdm(starts, desc=f"fit {model.name} {method}", unit="chunk", leave=False)
    for s0 in iterator:
        sl = slice(s0, min(S, s0 + chunk))
        sub_model = _sub_model(model, sl, S)
        if method == "cnce":
            e = eps if isinstance(eps, str) else eps[sl]
            parts.append(_fit_cnce(sub_model, x[sl], theta0[sl], kappa, e, noise, noise_base[sl], eps_rule, max_iter, tol))
        elif method == "nce":
            parts.append(_fit_nce(sub_model, x[sl], theta0[sl], kappa, noise_base[sl], max_iter, tol))
        elif method == "mle":
            parts.append(_fit_mle(sub_model, x[sl], theta0[sl], max_iter, tol))
        else:
            parts.append(_fit_sm(sub_model, x[sl], theta0[sl], max_iter, tol))
    out = {k: torch.cat([p[k] for p in parts]) if parts[0][k] is not None else None for k in parts[0]}
    res = FitResult(
        theta=out["theta"], eps=out["eps"], loss=out["loss"], init_loss=out["init_loss"], n_iter=out["n_iter"],
        converged=out["converged"], grad_norm=out["grad_norm"], method=method, kappa=kappa if uses_noise else None,
        seconds=time.perf_counter() - t0, log_normaliser=out.get("log_normaliser"),
        info={"chunks": len(starts), "sim_batch": chunk, "device": str(dev), "backend": "torch"},
    )
    if not batched:
        _unbatch(res)
    return res


def _unbatch(res):
    for k in ("theta", "eps", "loss", "init_loss", "n_iter", "converged", "grad_norm", "log_normaliser"):
        v = getattr(res, k)
        if v is not None:
            setattr(res, k, v[0])


def _fused_kind(model, method, noise, dev, dtype):
    """Which fused kernel serves this fit (``None``: the torch path)."""
    from .models.gaussian import Gaussian
    from .models.ica import ICA
    from .models.lognormal import LogNormal
    from .models.ring import Ring

    if not _fused.available() or dev.type != "cpu" or dtype != torch.float64:
        return None
    if type(model) is ICA and method != "mle" and not USE_PROJECTION:
        return None
    if method == "cnce" and type(noise) is not noise_mod.GaussianNoise:
        return None  # NCE's noise is its own Gaussian: ``noise`` does not enter
    return {
        (Gaussian, "cnce"): _fused.GAUSSIAN, (Gaussian, "nce"): _fused.NCE_GAUSSIAN,
        (ICA, "cnce"): _fused.ICA, (ICA, "nce"): _fused.NCE_ICA, (ICA, "mle"): "ica-mle",
        (Ring, "cnce"): _fused.RING, (Ring, "nce"): _fused.NCE_RING,
        (LogNormal, "cnce"): _fused.LOGNORMAL,
    }.get((type(model), method))


def _fit_cnce_fused(model, kind, x, theta0, kappa, eps, base, rule, max_iter, tol, threads):
    """CNCE by the fused CPU kernels (:mod:`cnce._fused`): same problem, same Newton method."""
    S, N, D = x.shape
    X = x.contiguous().numpy()
    XI = base.numpy()  # a prefix view of the base is fine (strided access)
    psi0 = model.to_free(theta0)
    a = float(getattr(model, "abs_projection_coef", 0.0) or 0.0)
    mu = model._mu(S, x).numpy() if kind == _fused.RING else None

    def prm_of(e):  # the simulations' constants: eps (and the ring's known radius)
        e = e.numpy()
        return e if mu is None else np.stack([e, mu], 1)

    if isinstance(eps, str):  # "auto": the heuristic's J(eps) at the initial parameters, fused too
        P0 = psi0.contiguous().numpy()

        def J_of_eps(e):
            return torch.from_numpy(_fused.loss_all(kind, X, XI, prm_of(e), P0, a=a, threads=threads))

        eps = choose_eps(J_of_eps, x, rule)
    out = _fused.newton_all(kind, X, XI, prm_of(eps), psi0.numpy(), a=a, max_iter=max_iter or 100, tol=tol,
                            threads=threads, **_newton_opts(kind, model, N))
    return _fused_result(model, out, "cnce", kappa, eps=eps)


def _newton_opts(kind, model, N):
    """The fused Newton method's options per problem kind (CNCE and NCE alike)."""
    if kind in (_fused.GAUSSIAN, _fused.NCE_GAUSSIAN):
        # convex and smooth: stop on the Newton decrement (or when no step can lower the loss any
        # more); the "small relative decrease" rule is for the piecewise-smooth ICA problems and
        # would stop the last stage of progressive sampling early when it starts close to the optimum.
        # The last stage forms its Gauss-Newton matrix from all pairs (a subsample makes the
        # iterations converge only linearly there), once, where the first step lands (that step
        # uses the previous stage's matrix); the earlier stages only give starting points (looser
        # stage_tol); the last stage forms the matrix anew where that saves passes (a matrix pass
        # ~ 2 gradient passes). CNCE also lays its noise out once per simulation, in 128-pair
        # blocks that stay in L1.
        opts = dict(progressive=True, reuse_h=True, hess_points=HESS_POINTS, patience=1 << 30, hess_last=0, carry_h=True,
                    stage_tol=1e-5, h_cost=1.0)
        if kind == _fused.GAUSSIAN:
            opts.update(noise_t=True, block_pairs=128)
        return opts
    if kind in (_fused.LOGNORMAL, _fused.RING, _fused.NCE_RING):  # convex, 1-2 parameters: the full matrix costs little
        return dict(progressive=True, reuse_h=True, hess_points=0, patience=1 << 30, stage_tol=1e-5)
    # ICA (non-convex): no progressive sampling (it would change the path), same settings as the torch path
    return dict(progressive=False, reuse_h=False, hess_points=ICA_HESS_POINTS, ftol=max(1e-12, _stat_ftol(model, N)))


def _fused_result(model, out, method, kappa, eps=None, log_normaliser=False):
    """A :class:`FitResult` from the fused kernels' output (:func:`fit` sets ``seconds`` and
    ``info``); with ``log_normaliser`` the last free parameter is NCE's ``c``."""
    t = torch.from_numpy
    psi = t(out["psi"])
    P = model.n_params
    return FitResult(theta=model.from_free(psi[:, :P]), eps=_nan(psi.shape[0], psi) if eps is None else eps,
                     loss=t(out["loss"]), init_loss=t(out["init_loss"]), n_iter=t(out["n_iter"]),
                     converged=t(out["converged"]), grad_norm=t(out["grad_norm"]), method=method, kappa=kappa,
                     seconds=0.0, log_normaliser=psi[:, P].clone() if log_normaliser else None)


# --------------------------------------------------------------------------- helpers
def _check_base(base, S, N, kappa, D):
    if not isinstance(base, torch.Tensor) or base.ndim != 4:
        raise ValueError(f"noise_base must be a tensor of shape (S, N, kappa, D) = ({S}, >={N}, >={kappa}, {D}); got {getattr(base, 'shape', type(base).__name__)}")
    if base.shape[0] != S or base.shape[1] < N or base.shape[2] < kappa or base.shape[3] != D:
        raise ValueError(f"noise_base must have shape ({S}, >={N}, >={kappa}, {D}); got {tuple(base.shape)}")
    return base[:, :N, :kappa]


def _features_t(model, u, dtype):
    """``T(u)`` transposed to ``(S, P, M)`` in ``dtype``, and ``h(u) (S, M)`` or ``None`` when zero."""
    if hasattr(model, "features_t"):
        return model.features_t(u, dtype)
    T, h = model.features(u)
    if not bool(h.ne(0).any()):
        h = None
    return T.transpose(1, 2).to(dtype).contiguous(), h


def _sub_model(model, sl, S):
    """Models with per-simulation constants (the ring's known mu) are sliced with the chunk."""
    mu = getattr(model, "mu", None)
    if isinstance(mu, torch.Tensor) and mu.ndim == 1 and mu.shape[0] == S and (sl.start, sl.stop) != (0, S):
        import copy

        m = copy.copy(model)
        m.mu = mu[sl]
        return m
    return model


def _bytes_per_sim(model, method, N, kappa, dtype):
    item = torch.finfo(dtype).bits // 8
    P = model.n_params + 1
    if method == "cnce":
        n = N * kappa
    elif method == "nce":
        n = N * (1 + kappa)
    else:
        n = N
    return n * (P + 2 * model.dim + 4) * item * 2


def _nan(S, like):
    return torch.full((S,), math.nan, dtype=like.dtype, device=like.device)


def _pack(model, res, eps, extra=None):
    P = model.n_params
    theta = model.from_free(res.psi[:, :P])
    out = dict(theta=theta, eps=eps, loss=res.loss, init_loss=res.init_loss, n_iter=res.n_iter,
               converged=res.converged, grad_norm=res.grad_norm, log_normaliser=extra)
    return out


def _solve(model, problem, psi0, max_iter, tol):
    """Gauss-Newton for smooth or linear margins; L-BFGS where the model asks for it.

    ICA's margin is piecewise linear: its Gauss-Newton matrix misses the curvature that the
    kinks of ``|b . u|`` contribute in aggregate, so Newton steps overshoot and crawl;
    quasi-Newton curvature estimates (as in the authors' use of fminunc) capture it.
    """
    if model.linear or getattr(model, "contrastive_optimizer", "newton") == "newton":
        return newton(problem, psi0, max_iter=max_iter or 100, tol=tol)
    objective = AutogradObjective(lambda psi: problem.loss(psi), hessian=False)
    return lbfgs(objective, psi0, max_iter=max_iter or 2000)


#: discrete data of at most this dimension are fitted from pair-type counts (4^D types)
COUNTS_MAX_DIM = 6


def _binary_pair_types(D, like):
    """All ``4^D`` pairs ``(x, y)`` of binary vectors, as ``(T, D)`` tensors; type ``k`` has
    ``x`` the bits of ``k // 2^D`` and ``y`` those of ``k % 2^D``."""
    k = torch.arange(4**D, device=like.device)
    bits = 2 ** torch.arange(D, device=like.device)
    tx = ((k // 2**D).unsqueeze(-1) // bits % 2).to(like.dtype)
    ty = ((k % 2**D).unsqueeze(-1) // bits % 2).to(like.dtype)
    return tx, ty


def _pair_counts(x, y):
    """``(S, 4^D)``: how often each binary pair type (:func:`_binary_pair_types`) occurs among
    the pairs ``(x_i, y_ik)``; ``x (S, N, D)``, ``y (S, N, K, D)`` with 0/1 entries."""
    S, N, K, D = y.shape
    T = 4**D
    bits = (2 ** torch.arange(D, device=x.device)).to(x.dtype)
    cy = y[..., 0] if D == 1 else y @ bits
    # one bincount over all simulations: simulation s owns the codes s T .. s T + T - 1
    off = (x @ bits) * 2**D + (torch.arange(S, device=x.device, dtype=x.dtype) * T).unsqueeze(-1)
    code = (cy + off.unsqueeze(-1)).reshape(-1).long()
    return torch.bincount(code, minlength=S * T).view(S, T).to(x.dtype)


def _fit_cnce_counts(model, x, psi0, kappa, eps, noise, base, rule, max_iter, tol):
    """CNCE for binary data with symmetric noise: J_N (Eq. 8) depends on the pairs only through
    how often each pair type ``(x, y)`` occurs, so it is a logistic regression over the ``4^D``
    types weighted by their counts -- the same loss summed in another order, at a cost that no
    longer grows with N and kappa after the counting."""
    S, N, D = x.shape
    tx, ty = _binary_pair_types(D, x)
    Tx, hx = model.features(tx.unsqueeze(0))
    Ty, hy = model.features(ty.unsqueeze(0))
    Ft = (Tx - Ty).transpose(1, 2).expand(S, -1, -1).contiguous()  # (S, P, T)
    b = (hx - hy).expand(S, -1).contiguous()
    scale = 2.0 / (N * kappa)

    def counts(e):
        return _pair_counts(x, noise.apply(x, base, e))

    if isinstance(eps, str):  # "auto": J(eps) at the initial parameters from the counts
        m0 = torch.bmm(psi0.unsqueeze(1), Ft).squeeze(1) + b
        sp0 = torch.nn.functional.softplus(-m0)

        def J_of_eps(e):
            return scale * (counts(e) * sp0).sum(-1)

        eps = choose_eps(J_of_eps, x, rule)
        if noise.eps_max is not None:
            eps = eps.clamp(max=noise.eps_max)
    problem = LinearLogistic(None, b, scale, Ft=Ft, dtype=x.dtype, weights=counts(eps))
    return _pack(model, _solve(model, problem, psi0, max_iter, tol), eps)


def _fit_cnce(model, x, theta0, kappa, eps, noise, base, rule, max_iter, tol):
    S, N, D = x.shape
    psi0 = model.to_free(theta0)
    if (model.linear and getattr(model, "discrete", False) and noise.symmetric and D <= COUNTS_MAX_DIM
            and bool(((x == 0) | (x == 1)).all())):
        return _fit_cnce_counts(model, x, psi0, kappa, eps, noise, base, rule, max_iter, tol)
    if isinstance(eps, str):  # "auto"
        lp_x0 = model._log_phi_free(x, psi0)

        def J_of_eps(e):
            y = noise.apply(x, base, e)
            lp_y = model._log_phi_free(y.reshape(S, N * kappa, D), psi0).reshape(S, N, kappa)
            return cnce_loss(lp_x0, lp_y, noise.log_ratio(x, y, e))

        eps = choose_eps(J_of_eps, x, rule)
        if noise.eps_max is not None:
            eps = eps.clamp(max=noise.eps_max)
    y = noise.apply(x, base, eps)
    log_ratio = noise.log_ratio(x, y, eps)
    scale = 2.0 / (N * kappa)
    P = psi0.shape[-1]
    yf = y.reshape(S, N * kappa, D)
    if model.linear:
        fdt = (FEATURE_DTYPE if P >= 4 else None) or x.dtype
        Tx, hx = _features_t(model, x, fdt)
        Ty, hy = _features_t(model, yf, fdt)
        # F = T(x) - T(y) for every pair, built in place in the (S, P, N * kappa) layout
        Ft = Ty.view(S, P, N, kappa).neg_().add_(Tx.unsqueeze(-1)).view(S, P, N * kappa)
        b = None
        if hx is not None or hy is not None or log_ratio is not None:
            b = torch.zeros(S, N, kappa, dtype=x.dtype, device=x.device)
            if hx is not None:
                b = b + hx.unsqueeze(2)
            if hy is not None:
                b = b - hy.view(S, N, kappa)
            if log_ratio is not None:
                b = b + log_ratio
            b = b.reshape(S, N * kappa)
        del Tx, Ty, hy, y, yf
        problem = LinearLogistic(None, b, scale, Ft=Ft, dtype=x.dtype)
    elif getattr(model, "abs_projection_coef", None) is not None and USE_PROJECTION:
        lr = None if log_ratio is None else log_ratio.reshape(S, N * kappa)
        problem = BlockedAbsProjectionCNCE(x, yf, model.abs_projection_coef, scale, b=lr, kappa=kappa)
        problem.ftol_floor = _stat_ftol(model, N)
    else:
        lr = None if log_ratio is None else log_ratio.reshape(S, N * kappa)

        def margin_fn(psi, jac):
            if jac:
                lpx, Jx = model.jac_log_phi(x, psi)
                lpy, Jy = model.jac_log_phi(yf, psi)
                J = (Jx.unsqueeze(2) - Jy.reshape(S, N, kappa, P)).reshape(S, N * kappa, P)
            else:
                lpx, lpy = model._log_phi_free(x, psi), model._log_phi_free(yf, psi)
                J = None
            m = (lpx.unsqueeze(2) - lpy.reshape(S, N, kappa)).reshape(S, N * kappa)
            return (m if lr is None else m + lr), J

        def line_fn(psi, d):
            fx, fy = model.line_log_phi(x, psi, d), model.line_log_phi(yf, psi, d)

            def margins(alpha):
                m = (fx(alpha).unsqueeze(2) - fy(alpha).reshape(S, N, kappa)).reshape(S, N * kappa)
                return m if lr is None else m + lr

            return margins

        problem = NonlinearLogistic(margin_fn, scale, line_fn)
    res = _solve(model, problem, psi0, max_iter, tol)
    return _pack(model, res, eps)


def _nce_setup(model, x, theta0, kappa, base):
    """NCE's noise (the Gaussian matched to each simulation's data), its samples from the base,
    their log densities, and the start ``psi0 = (theta0, c0)`` with ``c0`` the importance-sampling
    estimate of ``-log Z(theta0)`` under the noise."""
    S, N, D = x.shape
    pn = noise_mod.NCEGaussianNoise.fit(x)
    y = pn.apply(base.reshape(S, N * kappa, D))
    lpn_x, lpn_y = pn.log_prob(x), pn.log_prob(y)
    psi0 = model.to_free(theta0)
    return pn, y, lpn_x, lpn_y, torch.cat([psi0, _nce_c0(model, psi0, y, lpn_y, kappa).unsqueeze(-1)], -1)


#: noise points (the first ones, in data-point order) of NCE's importance-sampling start for c
NCE_C0_POINTS = 65536


def _nce_c0(model, psi0, y, lpn_y, kappa):
    """NCE's starting log-normaliser: ``-log`` of the importance-sampling estimate of ``Z(theta0)``
    from the noise samples of the first ``ceil(NCE_C0_POINTS / kappa)`` data points (all when
    fewer; as :func:`cnce._fused.nce_c0`), 0 where it is not finite."""
    m = min(y.shape[1], -(-NCE_C0_POINTS // kappa) * kappa)
    y, lpn_y = y[:, :m], lpn_y[:, :m]
    c0 = -(torch.logsumexp(model._log_phi_free(y, psi0) - lpn_y, dim=-1) - math.log(m))
    return torch.where(torch.isfinite(c0), c0, torch.zeros_like(c0))


def _fit_nce_fused(model, kind, x, theta0, kappa, base, max_iter, tol, threads):
    """NCE by the fused CPU kernels: the noise points are formed on the fly from the base."""
    S, N, D = x.shape
    pn = noise_mod.NCEGaussianNoise.fit(x)
    psi0 = model.to_free(theta0)
    prm = _fused.nce_params(pn.mean.numpy(), pn.chol.numpy(), kappa)
    if kind == _fused.NCE_RING:  # the known radius goes last
        prm = np.concatenate([prm, model._mu(S, x).numpy()[:, None]], 1)
    a = float(getattr(model, "abs_projection_coef", 0.0) or 0.0)
    X, XI = x.contiguous().numpy(), base.numpy()
    c0 = _fused.nce_c0(kind, X, XI, prm, psi0.numpy(), a=a, n_points=NCE_C0_POINTS, threads=threads)
    psi0 = torch.cat([psi0, torch.from_numpy(c0).unsqueeze(-1)], -1)
    out = _fused.newton_all(kind, X, XI, prm, psi0.numpy(), a=a, max_iter=max_iter or 100, tol=tol, threads=threads,
                            **_newton_opts(kind, model, N))
    return _fused_result(model, out, "nce", kappa, log_normaliser=True)


def _fit_nce(model, x, theta0, kappa, base, max_iter, tol):
    S, N, D = x.shape
    pn, y, lpn_x, lpn_y, psi0 = _nce_setup(model, x, theta0, kappa, base)
    log_nu = math.log(kappa)
    P = model.n_params
    scale = 1.0 / N
    ones_x = x.new_ones(S, N, 1)
    ones_y = x.new_ones(S, N * kappa, 1)
    if model.linear:
        fdt = (FEATURE_DTYPE if P >= 4 else None) or x.dtype
        Tx, hx = _features_t(model, x, fdt)
        Ty, hy = _features_t(model, y, fdt)
        Ft = torch.cat([torch.cat([Tx, ones_x.to(fdt).transpose(1, 2)], 1), torch.cat([Ty, ones_y.to(fdt).transpose(1, 2)], 1).neg_()], 2)
        hx = 0.0 if hx is None else hx
        hy = 0.0 if hy is None else hy
        b = torch.cat([hx - lpn_x - log_nu, -(hy - lpn_y - log_nu)], 1)
        del Tx, Ty
        problem = LinearLogistic(None, b, scale, Ft=Ft, dtype=x.dtype)
    elif getattr(model, "abs_projection_coef", None) is not None and USE_PROJECTION:
        b = torch.cat([-lpn_x - log_nu, lpn_y + log_nu], 1)
        problem = AbsProjectionLogistic(x, y.contiguous(), model.abs_projection_coef, scale, mode="nce", b=b)
        problem.ftol_floor = _stat_ftol(model, N)
    else:
        def margin_fn(psi, jac):
            th, c = psi[:, :P], psi[:, P:]
            if jac:
                lpx, Jx = model.jac_log_phi(x, th)
                lpy, Jy = model.jac_log_phi(y, th)
                J = torch.cat([torch.cat([Jx, ones_x], -1), -torch.cat([Jy, ones_y], -1)], 1)
            else:
                lpx, lpy = model._log_phi_free(x, th), model._log_phi_free(y, th)
                J = None
            m = torch.cat([lpx + c - lpn_x - log_nu, -(lpy + c - lpn_y - log_nu)], 1)
            return m, J

        def line_fn(psi, d):
            fx, fy = model.line_log_phi(x, psi[:, :P], d[:, :P]), model.line_log_phi(y, psi[:, :P], d[:, :P])

            def margins(alpha):
                c = (psi[:, P] + alpha * d[:, P]).unsqueeze(-1)
                return torch.cat([fx(alpha) + c - lpn_x - log_nu, -(fy(alpha) + c - lpn_y - log_nu)], 1)

            return margins

        problem = NonlinearLogistic(margin_fn, scale, line_fn)
    res = _solve(model, problem, psi0, max_iter, tol)
    return _pack(model, res, _nan(S, x), extra=res.psi[:, P])


def _fit_mle(model, x, theta0, max_iter, tol):
    S = x.shape[0]
    closed = model.mle_closed_form(x)
    if closed is not None:
        z = torch.zeros(S, dtype=torch.long, device=x.device)
        nan = _nan(S, x)
        return dict(theta=closed, eps=nan, loss=-model.log_prob(x, closed).mean(-1) if model.name != "lognormal" else -model.log_prob(x, closed).mean(-1),
                    init_loss=nan, n_iter=z, converged=torch.ones(S, dtype=torch.bool, device=x.device), grad_norm=torch.zeros_like(nan), log_normaliser=None)

    def f(psi):
        return mle_loss(lambda u, th: model._log_phi(u, th) - model.log_partition(th).unsqueeze(-1), x, model.from_free(psi))

    psi0 = model.to_free(theta0)
    if model.mle_optimizer == "lbfgs":
        res = lbfgs(AutogradObjective(f, hessian=False), psi0, max_iter=max_iter or 2000)
    else:
        res = newton(AutogradObjective(f), psi0, max_iter=max_iter or 100, tol=tol)
    return _pack(model, res, _nan(S, x))


def _fit_sm(model, x, theta0, max_iter, tol):
    S = x.shape[0]

    def f(psi):
        return score_matching_loss(model._log_phi_free, x, psi)

    res = newton(AutogradObjective(f), model.to_free(theta0), max_iter=max_iter or 100, tol=tol)
    return _pack(model, res, _nan(S, x))
