"""Large-sample covariance of every estimator of :func:`cnce.fit`: the sandwich.

CNCE, NCE, maximum likelihood and score matching all minimise a mean of per-tuple losses,
``J_N(psi) = 1/N sum_i l_i(psi)``, so they are M-estimators. Under the usual regularity
conditions (an interior, locally unique minimiser; a loss twice differentiable in the
parameters for almost every tuple) the estimate is asymptotically normal with covariance

    Cov(psi_hat) ~= A^{-1} B A^{-1} / N,    A = E[grad^2 l_i],   B = Cov[grad l_i],

(e.g. van der Vaart, *Asymptotic Statistics*, Thm 5.23). A *tuple* is what one term of the
loss sees:

* CNCE (Eqs. 8-9): a data point ``x_i`` with its ``kappa`` noise samples ``y_ik``,
  ``l_i = 2/kappa sum_k log(1 + exp(-G(x_i, y_ik)))``;
* NCE: a data point with its ``nu = kappa`` noise points, ``l_i = log(1 + exp(-G(x_i))) +
  sum_k log(1 + exp(G(y_ik)))``; the parameters are ``(theta, c)`` with ``c`` the learned
  log-normaliser (last);
* maximum likelihood: a data point, ``l_i = -log p(x_i; theta)``; here ``B = A`` when the model
  is right (the information equality), and :func:`sandwich` returns the inverse observed
  information ``A^{-1} / N`` (``mle="fisher"``, the default) or the sandwich (``mle="sandwich"``);
* score matching: a data point, ``l_i = sum_k d^2 f/du_k^2 + 1/2 |grad_u f|^2`` with
  ``f = log phi(x_i; theta)``.

Both matrices are *plug-in* estimates: computed at the estimate, from the data and the
noise the fit used. ``B`` is the empirical covariance of the per-tuple gradients (from the
model's ``jac_log_phi``). ``A`` comes in two forms (``curvature=``):

* ``"observed"``: the Hessian of ``J_N`` (autograd, exact);
* ``"expected"``: from first derivatives only. For CNCE and NCE the Hessian of a tuple's loss
  is ``sum [v grad G grad G^T + w grad^2 G]`` (``w = dl/dG``, ``v = d^2 l/dG^2``); at the true
  parameters the logistic weight is the true posterior of the labels (CNCE: of the pair's
  order given the unordered pair; NCE: of data against noise), so the second term averages to
  zero and ``A = E[v grad G grad G^T]`` (the Fisher-type form of Gutmann & Hyvaerinen 2012,
  Thm 3). For maximum likelihood it is the information equality, ``A = B``.

``"auto"`` (the default) takes ``"expected"`` where ``log phi`` has kinks in the parameters
(ICA's ``|b_j . u|``): there the sample loss's Hessian is zero between kinks and misses the
curvature the kinks contribute in expectation, which a finite difference of the gradient
(``"observed"`` for such a model) recovers only noisily; ``"observed"`` otherwise. NCE's noise
distribution is fitted to the data; its own sampling variability is not propagated (the
usual plug-in; it is second order when the noise is far from the data's law, and it is
said so in the result's ``info``).

The covariance is computed in the optimiser's free parameters ``psi`` and mapped to
``theta`` by the delta method (``theta = model.from_free(psi)``).

Where the asymptotics do not hold, no number is returned: simulations whose fit did not
converge, whose ``A`` is not positive definite (a boundary or flat direction), or whose
covariance is not finite get NaN and a reason. Models identified only up to a symmetry say
so (ICA: sign and order of the rows of ``B``: the interval is about the estimate's own
signed permutation of the truth).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

__all__ = ["Sandwich", "sandwich", "attach", "hessian", "wald_covers", "median_sq_error"]


@dataclass
class Sandwich:
    """The sandwich's parts per simulation.

    ``cov (S, P', P')`` of ``theta`` (NCE: ``(theta, c)``, ``P' = P + 1``), ``stderr (S, P')``
    its square-rooted diagonal, ``A`` and ``B`` in the free parameters, ``N`` the tuples per
    simulation, ``reason`` one string per simulation (``""`` where the covariance is given)."""

    cov: torch.Tensor
    stderr: torch.Tensor
    A: torch.Tensor
    B: torch.Tensor
    N: int
    reason: list


def _psi(model, theta, log_normaliser):
    # a parameter on the boundary may sit at -inf (the log-normal's C): a very low finite
    # value leaves log phi unchanged where it matters and keeps products with zero finite
    theta = theta.clone()
    for p in model.boundary_params:
        theta[:, p] = torch.nan_to_num(theta[:, p], neginf=-1e300, posinf=1e300)
    psi = model.to_free(theta)
    if log_normaliser is not None:
        psi = torch.cat([psi, log_normaliser.unsqueeze(-1).to(psi)], -1)
    return psi


def _linear_in_params(model) -> bool:
    """``log phi`` has no curvature in the parameters (almost everywhere): linear models, and
    ICA's ``-a sum_j |b_j . u|``, piecewise linear in ``B``."""
    return bool(model.linear) or getattr(model, "abs_projection_coef", None) is not None


def _kinked(model) -> bool:
    """``log phi`` has kinks in the parameters (ICA's ``|b_j . u|``): the sample loss's Hessian
    misses the curvature that the kinks contribute in expectation."""
    return getattr(model, "abs_projection_coef", None) is not None


def _fd_hessian(grad_J, psi: torch.Tensor, h: float) -> torch.Tensor:
    """``(S, P, P)``: central differences of the exact gradient ``grad_J (S, P)`` with step ``h``.

    For a loss with kinks this estimates the Hessian of the *expected* loss: a step of ``h``
    crosses about ``N h`` kinks of the sample loss, whose jumps average to the curvature that
    the pointwise Hessian (zero between kinks) misses. The step ``N^(-1/3)`` balances the
    kinks' counting noise (relative ``(N h)^(-1/2)``) against the smooth part's ``h^2`` bias."""
    cols = []
    for p in range(psi.shape[-1]):
        e = torch.zeros_like(psi)
        e[:, p] = h
        cols.append((grad_J(psi + e) - grad_J(psi - e)) / (2 * h))
    H = torch.stack(cols, -1)
    return 0.5 * (H + H.transpose(-1, -2))


def _contrastive(model, x, psi, method, *, kappa, eps, noise, noise_base, hess=True, curved_term=True):
    """CNCE and NCE: per-tuple gradients ``(S, N, P')`` and ``A (S, P', P')``.

    Both losses are sums of ``softplus(+-G)`` over a tuple's pairs, so with ``w = dl/dG`` and
    ``v = d^2 l/dG^2`` the Hessian is ``mean_i sum [v grad G grad G^T + w grad^2 G]``. The first
    term comes from the model's Jacobians; the second only where ``log phi`` is curved in the
    parameters (autograd, with ``w`` held fixed) and ``curved_term`` (``False``: the expected
    form, whose second term averages to zero at the true parameters)."""
    S, N, D = x.shape
    P = model.n_params
    th = psi[:, :P]
    if method == "cnce":
        y = noise.apply(x, noise_base, eps)  # (S, N, kappa, D)
        log_ratio = noise.log_ratio(x, y, eps)
        yf = y.reshape(S, N * kappa, D)
        lx, Jx = model.jac_log_phi(x, th)
        ly, Jy = model.jac_log_phi(yf, th)
        G = lx.unsqueeze(-1) - ly.reshape(S, N, kappa)
        if log_ratio is not None:
            G = G + log_ratio
        w = -(2.0 / kappa) * torch.sigmoid(-G)  # d l_i / d G_ik
        v = (2.0 / kappa) * torch.sigmoid(G) * torch.sigmoid(-G)
        dG = Jx.unsqueeze(-2) - Jy.reshape(S, N, kappa, P)  # grad G, (S, N, kappa, P)
        g = torch.einsum("snk,snkp->snp", w, dG)
        if not hess:
            return g, None
        A = torch.einsum("snk,snkp,snkq->spq", v, dG, dG) / N
        if curved_term and not _linear_in_params(model):
            wd = w.detach()

            def curved(q):
                return (wd * (model._log_phi_free(x, q).unsqueeze(-1)
                              - model._log_phi_free(yf, q).reshape(S, N, kappa))).sum((-2, -1)) / N

            A = A + hessian(curved, th)
        return g, A
    # NCE: G(u) = log phi(u; theta) + c - log p_n(u) - log nu, parameters (theta, c)
    from .noise import NCEGaussianNoise

    pn = NCEGaussianNoise.fit(x)
    yf = pn.apply(noise_base.reshape(S, N * kappa, D))
    c = psi[:, P:P + 1]
    lx, Jx = model.jac_log_phi(x, th)
    ly, Jy = model.jac_log_phi(yf, th)
    Gx = lx + c - pn.log_prob(x) - math.log(kappa)
    Gy = (ly + c - pn.log_prob(yf) - math.log(kappa)).reshape(S, N, kappa)
    wx, vx = -torch.sigmoid(-Gx), torch.sigmoid(Gx) * torch.sigmoid(-Gx)
    wy, vy = torch.sigmoid(Gy), torch.sigmoid(Gy) * torch.sigmoid(-Gy)
    one = lambda J: torch.cat([J, torch.ones_like(J[..., :1])], -1)  # noqa: E731 -- grad G in (theta, c)
    dx, dy = one(Jx), one(Jy).reshape(S, N, kappa, P + 1)
    g = wx.unsqueeze(-1) * dx + torch.einsum("snk,snkp->snp", wy, dy)
    if not hess:
        return g, None
    A = (torch.einsum("sn,snp,snq->spq", vx, dx, dx) + torch.einsum("snk,snkp,snkq->spq", vy, dy, dy)) / N
    if curved_term and not _linear_in_params(model):
        wxd, wyd = wx.detach(), wy.detach().reshape(S, N * kappa)

        def curved(q):
            return ((wxd * model._log_phi_free(x, q)).sum(-1) + (wyd * model._log_phi_free(yf, q)).sum(-1)) / N

        A[:, :P, :P] += hessian(curved, th)
    return g, A


def _single(model, x, psi, method, hess=True):
    """Maximum likelihood and score matching: per-point gradients ``(S, N, P)`` and ``A`` (autograd;
    ``None`` without ``hess``)."""
    S, N, D = x.shape
    if method == "mle":
        def J(q):
            return -(model._log_phi_free(x, q).mean(-1) - model.log_partition(model.from_free(q)))

        # the gradient of log Z is the same for every point: it drops out of the centred covariance
        _, Jx = model.jac_log_phi(x, psi)
        if not hess:
            return -Jx, None
        if _kinked(model):
            return -Jx, _fd_hessian(lambda q: _grad(J, q), psi, N ** (-1 / 3))
        return -Jx, hessian(J, psi)
    if model.sim_constants(S, x) is not None:
        raise NotImplementedError("score matching's per-point gradients need a model without per-simulation constants")

    def per_point(q):  # (S, N), for parameters q (S, P) or one copy per point (S, N, P)
        u = x.detach().requires_grad_(True)
        if q.ndim == 3:
            f = model._log_phi_free(u.reshape(S * N, 1, D), q.reshape(S * N, -1)).reshape(S, N)
        else:
            f = model._log_phi_free(u, q)
        (score,) = torch.autograd.grad(f.sum(), u, create_graph=True)
        lap = torch.zeros_like(f)
        for k in range(D):
            (d2,) = torch.autograd.grad(score[..., k].sum(), u, create_graph=True)
            lap = lap + d2[..., k]
        return lap + 0.5 * (score ** 2).sum(-1)

    with torch.enable_grad():
        qr = psi.detach().unsqueeze(1).expand(S, N, psi.shape[-1]).clone().requires_grad_(True)
        (g,) = torch.autograd.grad(per_point(qr).sum(), qr)
    return g, hessian(lambda q: per_point(q).mean(-1), psi)


def _grad(J, psi: torch.Tensor) -> torch.Tensor:
    q = psi.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        (g,) = torch.autograd.grad(J(q).sum(), q)
    return g


def hessian(J, psi: torch.Tensor) -> torch.Tensor:
    """``(S, P, P)``: the Hessian of ``J (S,)`` in ``psi (S, P)``, the simulations independent
    (one double-backward pass per parameter)."""
    q = psi.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        (g,) = torch.autograd.grad(J(q).sum(), q, create_graph=True)
        rows = []
        for p in range(q.shape[-1]):
            (h,) = torch.autograd.grad(g[:, p].sum(), q, retain_graph=p + 1 < q.shape[-1], allow_unused=True)
            rows.append(torch.zeros_like(q) if h is None else h)
    H = torch.stack(rows, -2)
    return 0.5 * (H + H.transpose(-1, -2))


def _embed(sub: torch.Tensor, keep: torch.Tensor, full: int) -> torch.Tensor:
    """``(S, full, full)`` with ``sub`` at rows and columns ``keep`` and NaN elsewhere."""
    out = torch.full((sub.shape[0], full, full), float("nan"), dtype=sub.dtype, device=sub.device)
    out[:, keep.view(-1, 1), keep.view(1, -1)] = sub
    return out


def _delta(model, psi, cov, P):
    """Map ``cov`` of the free parameters to ``theta`` (the first ``P`` of them) by the delta method."""
    from torch.func import jacrev, vmap

    th = psi[:, :P]
    if torch.equal(model.from_free(th), th):
        return cov
    Jf = vmap(jacrev(lambda p: model.from_free(p.unsqueeze(0)).squeeze(0)))(th)  # (S, P, P)
    Jfull = torch.eye(psi.shape[-1], dtype=psi.dtype, device=psi.device).repeat(psi.shape[0], 1, 1)
    Jfull[:, :P, :P] = Jf
    return Jfull @ cov @ Jfull.transpose(-1, -2)


def sandwich(model, x: torch.Tensor, theta: torch.Tensor, method: str, *, kappa: int | None = None,
             eps: torch.Tensor | None = None, noise=None, noise_base: torch.Tensor | None = None,
             log_normaliser: torch.Tensor | None = None, converged: torch.Tensor | None = None,
             mle: str = "fisher", curvature: str = "auto") -> Sandwich:
    """The plug-in covariance of ``theta`` (and NCE's ``c``) for each of ``S`` simulations.

    Args:
        model: the fitted :class:`~cnce.models.UnnormalisedModel`.
        x: the data ``(S, N, D)``.
        theta: the estimates ``(S, P)``.
        method: ``"cnce"``, ``"nce"``, ``"mle"`` or ``"sm"``.
        kappa, eps, noise, noise_base: what the fit used (CNCE: all four; NCE: ``kappa`` and
            ``noise_base``); ``eps`` an ``(S,)`` tensor.
        log_normaliser: NCE's estimated ``c`` ``(S,)``.
        converged: ``(S,)`` booleans; a simulation whose fit did not converge gets no covariance.
        mle: ``"fisher"`` (inverse information) or ``"sandwich"``, for maximum likelihood.
        curvature: how ``A`` is estimated: ``"observed"`` (the Hessian of the sample loss; ICA's
            kinks by central differences of the gradient), ``"expected"`` (first derivatives
            only, exact in expectation at the true parameters; CNCE, NCE and MLE) or ``"auto"``
            (``"expected"`` for a model with kinks, else ``"observed"``); see the module's text.

    Returns:
        a :class:`Sandwich`; NaN rows where ``reason`` says why.
    """
    if mle not in ("fisher", "sandwich"):
        raise ValueError(f"mle must be 'fisher' or 'sandwich'; got {mle!r}")
    if curvature not in ("auto", "observed", "expected"):
        raise ValueError(f"curvature must be 'auto', 'observed' or 'expected'; got {curvature!r}")
    if curvature == "auto":
        curvature = "expected" if _kinked(model) and method != "sm" else "observed"
    if curvature == "expected" and method == "sm":
        raise ValueError("curvature='expected' is written for 'cnce', 'nce' and 'mle'; score matching takes 'observed'")
    S, N, _ = x.shape
    P = model.n_params
    psi = _psi(model, theta, log_normaliser if method == "nce" else None).detach()
    expected = curvature == "expected"
    with torch.no_grad():
        if method in ("cnce", "nce"):
            kw = dict(kappa=kappa, eps=eps, noise=noise, noise_base=noise_base)
            fd = _kinked(model) and not expected
            g, A = _contrastive(model, x, psi, method, hess=not fd, curved_term=not expected, **kw)
            if fd:
                A = _fd_hessian(lambda q: _contrastive(model, x, q, method, hess=False, **kw)[0].mean(1), psi, N ** (-1 / 3))
        elif method in ("mle", "sm"):
            g, A = _single(model, x, psi, method, hess=not expected)
        else:
            raise ValueError(f"method must be one of ('cnce', 'nce', 'mle', 'sm'); got {method!r}")
    gc = g - g.mean(1, keepdim=True)
    B = gc.transpose(-1, -2) @ gc / N
    if A is None:  # maximum likelihood, expected form: the information equality
        A = B.clone()
    # parameters on the boundary are held at their estimates: the sub-blocks of the others
    keep = [p for p in range(A.shape[-1]) if p not in model.boundary_params]
    full = A.shape[-1]
    A, B = A[:, keep][:, :, keep], B[:, keep][:, :, keep]
    reason = [""] * S
    # A must be positive definite: otherwise the minimiser is not locally unique (a flat
    # direction, a symmetry, a boundary) and the normal approximation has nothing to stand on.
    # "Definite" relative to A's scale: an eigenvalue below 1e-10 of the largest is flat.
    lam = torch.linalg.eigvalsh(A)
    flat = ~(lam[:, 0] > 1e-10 * lam[:, -1].abs())
    L, info = torch.linalg.cholesky_ex(torch.where(flat.view(-1, 1, 1), torch.eye(A.shape[-1], dtype=A.dtype,
                                                                                 device=A.device), A))
    Ainv = torch.cholesky_inverse(L)
    if method == "mle" and mle == "fisher":
        cov = Ainv / N
    else:
        cov = Ainv @ B @ Ainv / N
    k = torch.tensor(keep, device=cov.device)
    cov = _embed(_delta(model, psi, _embed(cov, k, full).nan_to_num(0.0), P)[:, k][:, :, k], k, full)
    for s in range(S):
        if converged is not None and not bool(converged[s]):
            reason[s] = "the fit did not converge: no asymptotic covariance at a point that is not a minimum"
        elif bool(flat[s]) or int(info[s]) != 0:
            reason[s] = ("the loss's Hessian A is not positive definite at the estimate (a flat direction, a symmetry "
                         "or a boundary): the normal approximation does not apply")
        elif not bool(torch.isfinite(cov[s][k][:, k]).all()):
            reason[s] = "the covariance is not finite"
    bad = torch.tensor([bool(r) for r in reason], device=cov.device)

    cov = torch.where(bad.view(-1, 1, 1), torch.full_like(cov, float("nan")), cov)
    stderr = torch.diagonal(cov, dim1=-2, dim2=-1).clamp_min(0).sqrt()
    stderr = torch.where(bad.view(-1, 1), torch.full_like(stderr, float("nan")), stderr)
    return Sandwich(cov=cov, stderr=stderr, A=A, B=B, N=N, reason=reason)


def _chunk(S: int, N: int, kappa: int | None, P: int, budget_bytes: float = 5e8) -> int:
    """Simulations per chunk: the per-pair Jacobians (``N kappa P`` numbers, a few copies) under ``budget_bytes``."""
    per_sim = 8 * 4 * N * max(kappa or 1, 1) * (P + 1)
    return max(1, min(S, int(budget_bytes // per_sim)))


def attach(res, problem) -> None:
    """Set ``res.cov``, ``res.stderr`` and ``res.cov_reason`` of a fit (``cnce.fit(..., cov=True)``),
    in chunks of simulations, from the fit's own ``cnce.backends.FitProblem``."""
    model, x = problem.model, problem.x
    S, N, _ = x.shape
    step = _chunk(S, N, problem.kappa, model.n_params)
    parts = []
    for a in range(0, S, step):
        sl = slice(a, min(S, a + step))
        if problem.method == "sm" and model.sim_constants(S, x) is not None:
            res.cov, res.stderr = (torch.full((S, *shape), float("nan"), dtype=x.dtype, device=x.device)
                                   for shape in ((model.n_params, model.n_params), (model.n_params,)))
            res.cov_reason = ["not computed: score matching's per-point gradients are written for models without "
                              "per-simulation constants"] * S
            return
        parts.append(sandwich(
            model.take(sl, S), x[sl], res.theta[sl], problem.method, kappa=problem.kappa,
            eps=None if problem.method != "cnce" else res.eps[sl], noise=problem.noise,
            noise_base=None if problem.noise_base is None else problem.noise_base[sl],
            log_normaliser=None if res.log_normaliser is None else res.log_normaliser[sl],
            converged=res.converged[sl]))
    res.cov = torch.cat([p.cov for p in parts])
    res.stderr = torch.cat([p.stderr for p in parts])
    res.cov_reason = [r for p in parts for r in p.reason]
    if model.boundary_params:
        res.info["cov_boundary"] = (f"parameters {list(model.boundary_params)} of {type(model).__name__} lie on the boundary "
                                    "(their ideal value is infinite): no standard error; the others' covariance holds them at "
                                    "their estimates")
    if model.identified_up_to:
        res.info["cov_note"] = (f"{type(model).__name__} is identified only up to {model.identified_up_to}: the "
                                "covariance is that of the estimate about its own image of the true parameters")


def wald_covers(model, theta_hat: torch.Tensor, stderr: torch.Tensor, theta_true: torch.Tensor,
                level: float = 0.95) -> torch.Tensor:
    """``(S, P)`` floats: 1 where the Wald interval ``theta_hat +- z stderr`` covers the true
    parameter, 0 where not, NaN where there is no standard error. Models identified up to a
    symmetry are first aligned to the truth (:meth:`~cnce.models.UnnormalisedModel.align`), the
    standard errors carried along."""
    from scipy.stats import norm

    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1); got {level!r}")
    z = float(norm.ppf(0.5 + level / 2))
    P = model.n_params
    aligned, idx = model.align(theta_hat, theta_true)
    se = torch.gather(stderr[..., :P], -1, idx)
    hit = ((aligned - theta_true).abs() <= z * se).to(se.dtype)
    return torch.where(torch.isfinite(se), hit, torch.full_like(se, float("nan")))


def median_sq_error(cov: torch.Tensor, n_draws: int = 20000, generator: torch.Generator | None = None) -> torch.Tensor:
    """``(S,)``: the median of ``|theta_hat - theta|^2`` when ``theta_hat - theta ~ N(0, cov)``,
    the level the paper's error plots show. ``|e|^2`` is a weighted sum of independent
    chi-square(1) variables with the eigenvalues of ``cov`` as weights; its median is taken
    over ``n_draws`` Monte Carlo draws (NaN for a covariance that is not finite)."""
    ok = torch.isfinite(cov).all(-1).all(-1)
    lam = torch.linalg.eigvalsh(torch.where(ok.view(-1, 1, 1), cov, torch.eye(cov.shape[-1], dtype=cov.dtype,
                                                                                device=cov.device))).clamp_min(0)
    z = torch.randn(cov.shape[0], n_draws, cov.shape[-1], generator=generator, dtype=cov.dtype, device=cov.device)
    med = ((z ** 2) @ lam.unsqueeze(-1)).squeeze(-1).median(-1).values
    return torch.where(ok, med, torch.full_like(med, float("nan")))
