"""The batched torch backend: every problem, on the CPU or a GPU.

All ``S`` simulations are solved together in one batched optimisation (:mod:`cnce.optim`),
never in a Python loop over simulations; memory is bounded by chunks of simulations
(``sim_batch``; results do not depend on it). CNCE and NCE are logistic losses of a margin,
built from the model's declarations (:class:`~cnce.models.UnnormalisedModel`):

* ``linear``: features computed once per noise draw, every iteration a batched
  logistic-regression Newton step (:class:`~cnce.optim.LinearLogistic`); binary data with
  symmetric noise (``discrete``) enter only through the counts of each pair type;
* ``abs_projection_coef``: the projection problems of :mod:`cnce.backends.projection`;
* otherwise: margins and Jacobians of ``log phi`` (analytic or by autodiff,
  :class:`~cnce.optim.NonlinearLogistic`), or L-BFGS where ``contrastive_optimizer`` says so.

Maximum likelihood uses ``mle_closed_form`` where ``closed_form_mle`` is declared, else the
normalised ``log_prob`` by Newton or L-BFGS (``mle_optimizer``); score matching by autograd.
"""
from __future__ import annotations

import math
import time

import torch

from .. import noise as noise_mod
from ..eps import EpsSearch
from ..losses import cnce_loss, mle_loss, score_matching_loss
from ..optim import AutogradObjective, LinearLogistic, NonlinearLogistic, lbfgs, newton
from ..result import FitResult
from .plan import PAIR_COUNTS, PROJECTIONS
from .projection import AbsProjectionLogistic, BlockedAbsProjectionCNCE
from .streaming import RowStreamLinearCNCE, streamed_J_of_eps

__all__ = ["NAME", "supports", "solve"]

NAME = "torch"


def supports(model, method, noise, device, dtype, form: str) -> str | None:
    """Every problem."""
    return None


def solve(problem) -> FitResult:
    """Solve ``problem`` in chunks of ``problem.chunk`` simulations."""
    t0 = time.perf_counter()
    model, x, method, kappa = problem.model, problem.x, problem.method, problem.kappa
    S, N, D = x.shape
    chunk = problem.chunk
    starts = list(range(0, S, chunk))
    bar = problem.progress
    parts = []
    done = converged = 0
    for s0 in starts:
        sl = slice(s0, min(S, s0 + chunk))
        sub, xs, th0 = model.take(sl, S), x[sl], problem.theta0[sl]
        if method == "cnce":
            e = problem.eps[sl] if isinstance(problem.eps, torch.Tensor) else problem.eps
            parts.append(_fit_cnce(sub, xs, th0, kappa, e, problem.noise, problem.noise_base[sl], problem))
        elif method == "nce":
            parts.append(_fit_nce(sub, xs, th0, kappa, problem.noise_base[sl], problem))
        elif method == "mle":
            parts.append(_fit_mle(sub, xs, th0, problem))
        else:
            parts.append(_fit_sm(sub, xs, th0, problem))
        done += parts[-1].theta.shape[0]
        converged += int(parts[-1].converged.sum())
        bar.update(done=done, converged=converged, chunk=f"{len(parts)}/{len(starts)}", iteration=None, active=None)
    res = FitResult.concat(parts)
    res.seconds = time.perf_counter() - t0
    res.info.update(chunks=len(starts), sim_batch=chunk, row_chunk=problem.row_chunk, device=str(problem.device),
                    backend=NAME,
                    formulation=problem.formulation, optimizer=problem.optimizer, newton=problem.newton)
    return res


def _solve(objective, psi0, problem):
    """Gauss-Newton (:func:`~cnce.optim.newton`), or L-BFGS where the plan says so (nonlinear
    models that declare ``contrastive_optimizer = "lbfgs"``: margins whose Gauss-Newton matrix
    misses most of the curvature)."""
    if problem.optimizer == "newton":
        return newton(objective, psi0, problem.newton, callback=_reporter(problem))
    problem.progress.update(phase="lbfgs")
    return lbfgs(AutogradObjective(lambda psi: objective.loss(psi), hessian=False), psi0, problem.lbfgs)


def _reporter(problem):
    """The Newton callback that reports the iteration and the simulations still iterating."""
    bar = problem.progress
    bar.update(phase="newton")

    def report(it, loss, active):
        bar.update(iteration=it + 1, active=active)  # the count is taken when the line is drawn

    return report


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


def _fit_cnce_counts(model, x, psi0, kappa, eps, noise, base, problem):
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

    if isinstance(eps, EpsSearch):  # J(eps) at the initial parameters from the counts
        m0 = torch.bmm(psi0.unsqueeze(1), Ft).squeeze(1) + b
        sp0 = torch.nn.functional.softplus(-m0)

        def J_of_eps(e):
            return scale * (counts(e) * sp0).sum(-1)

        problem.progress.update(phase="eps")
        eps = eps.on_all_points().run(J_of_eps, x)  # the counts cost the same for any prefix
    objective = LinearLogistic(None, b, scale, Ft=Ft, dtype=x.dtype, weights=counts(eps), hess_points=problem.newton.hess_points)
    return FitResult.from_optim(model, _solve(objective, psi0, problem), method="cnce", kappa=kappa, eps=eps)


def _fit_cnce_streamed(model, x, psi0, kappa, eps, noise, base, problem):
    """CNCE of a linear model with the rows streamed in chunks of ``problem.row_chunk``
    (:mod:`cnce.backends.streaming`): one simulation's features exceed the memory budget."""
    rows = problem.row_chunk
    if isinstance(eps, EpsSearch):
        problem.progress.update(phase="eps")
        eps = eps.run(streamed_J_of_eps(model, x, base, noise, psi0, kappa, rows), x)
    objective = RowStreamLinearCNCE(model, x, base, eps, noise, kappa, rows=rows, feature_dtype=problem.feature_dtype,
                                    hess_points=problem.newton.hess_points, progress=problem.progress)
    return FitResult.from_optim(model, _solve(objective, psi0, problem), method="cnce", kappa=kappa, eps=eps)


def _fit_cnce(model, x, theta0, kappa, eps, noise, base, problem):
    S, N, D = x.shape
    psi0 = model.to_free(theta0)
    if problem.formulation == PAIR_COUNTS:
        return _fit_cnce_counts(model, x, psi0, kappa, eps, noise, base, problem)
    if problem.row_chunk is not None:
        return _fit_cnce_streamed(model, x, psi0, kappa, eps, noise, base, problem)
    if isinstance(eps, EpsSearch):
        lp_x0 = model._log_phi_free(x, psi0)

        def J_of_eps(e, n_data=None):
            n = N if n_data is None else n_data
            xn = x[:, :n]
            y = noise.apply(xn, base[:, :n], e)
            lp_y = model._log_phi_free(y.reshape(S, n * kappa, D), psi0).reshape(S, n, kappa)
            return cnce_loss(lp_x0[:, :n], lp_y, noise.log_ratio(xn, y, e))

        problem.progress.update(phase="eps")
        eps = eps.run(J_of_eps, x)
    y = noise.apply(x, base, eps)
    log_ratio = noise.log_ratio(x, y, eps)
    scale = 2.0 / (N * kappa)
    P = psi0.shape[-1]
    yf = y.reshape(S, N * kappa, D)
    if model.linear:
        fdt = problem.feature_dtype
        Tx, hx = model.features_t(x, fdt)
        Ty, hy = model.features_t(yf, fdt)
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
        objective = LinearLogistic(None, b, scale, Ft=Ft, dtype=x.dtype, hess_points=problem.newton.hess_points)
    elif problem.formulation == PROJECTIONS:
        lr = None if log_ratio is None else log_ratio.reshape(S, N * kappa)
        objective = BlockedAbsProjectionCNCE(x, yf, model.abs_projection_coef, scale, b=lr, kappa=kappa,
                                             hess_points=problem.newton.hess_points,
                                             block_pairs=problem.projection_block_pairs)
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

        objective = NonlinearLogistic(margin_fn, scale, line_fn)
    return FitResult.from_optim(model, _solve(objective, psi0, problem), method="cnce", kappa=kappa, eps=eps)


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


def _nce_c0(model, psi0, y, lpn_y, kappa):
    """NCE's starting log-normaliser: ``-log`` of the importance-sampling estimate of ``Z(theta0)``
    from the noise samples of the first ``ceil(NCE_C0_POINTS / kappa)`` data points (all when
    fewer; as :func:`cnce._fused.nce_c0`), 0 where it is not finite."""
    m = min(y.shape[1], -(-noise_mod.NCE_C0_POINTS // kappa) * kappa)
    y, lpn_y = y[:, :m], lpn_y[:, :m]
    c0 = -(torch.logsumexp(model._log_phi_free(y, psi0) - lpn_y, dim=-1) - math.log(m))
    return torch.where(torch.isfinite(c0), c0, torch.zeros_like(c0))


def _fit_nce(model, x, theta0, kappa, base, problem):
    S, N, D = x.shape
    pn, y, lpn_x, lpn_y, psi0 = _nce_setup(model, x, theta0, kappa, base)
    log_nu = math.log(kappa)
    P = model.n_params
    scale = 1.0 / N
    ones_x = x.new_ones(S, N, 1)
    ones_y = x.new_ones(S, N * kappa, 1)
    if model.linear:
        fdt = problem.feature_dtype
        Tx, hx = model.features_t(x, fdt)
        Ty, hy = model.features_t(y, fdt)
        Ft = torch.cat([torch.cat([Tx, ones_x.to(fdt).transpose(1, 2)], 1), torch.cat([Ty, ones_y.to(fdt).transpose(1, 2)], 1).neg_()], 2)
        hx = 0.0 if hx is None else hx
        hy = 0.0 if hy is None else hy
        b = torch.cat([hx - lpn_x - log_nu, -(hy - lpn_y - log_nu)], 1)
        del Tx, Ty
        objective = LinearLogistic(None, b, scale, Ft=Ft, dtype=x.dtype, hess_points=problem.newton.hess_points)
    elif problem.formulation == PROJECTIONS:
        b = torch.cat([-lpn_x - log_nu, lpn_y + log_nu], 1)
        objective = AbsProjectionLogistic(x, y.contiguous(), model.abs_projection_coef, scale, mode="nce", b=b,
                                          hess_points=problem.newton.hess_points)
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

        objective = NonlinearLogistic(margin_fn, scale, line_fn)
    return FitResult.from_optim(model, _solve(objective, psi0, problem), method="nce", kappa=kappa, log_normaliser=True)


def _fit_mle(model, x, theta0, problem):
    S = x.shape[0]
    if model.closed_form_mle:
        closed = model.mle_closed_form(x)
        nan = torch.full((S,), math.nan, dtype=x.dtype, device=x.device)
        return FitResult(theta=closed, eps=nan, loss=-model.log_prob(x, closed).mean(-1), init_loss=nan,
                         n_iter=torch.zeros(S, dtype=torch.long, device=x.device),
                         converged=torch.ones(S, dtype=torch.bool, device=x.device), grad_norm=torch.zeros_like(nan),
                         method="mle", kappa=None, seconds=0.0)

    def f(psi):
        return mle_loss(lambda u, th: model._log_phi(u, th) - model.log_partition(th).unsqueeze(-1), x, model.from_free(psi))

    psi0 = model.to_free(theta0)
    if problem.optimizer == "lbfgs":
        res = lbfgs(AutogradObjective(f, hessian=False), psi0, problem.lbfgs)
    else:
        res = newton(AutogradObjective(f), psi0, problem.newton, callback=_reporter(problem))
    return FitResult.from_optim(model, res, method="mle", kappa=None)


def _fit_sm(model, x, theta0, problem):
    def f(psi):
        return score_matching_loss(model._log_phi_free, x, psi)

    res = newton(AutogradObjective(f), model.to_free(theta0), problem.newton, callback=_reporter(problem))
    return FitResult.from_optim(model, res, method="sm", kappa=None)
