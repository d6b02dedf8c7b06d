"""Batched optimisers: every simulation is its own problem, all are solved in one loop.

* :func:`newton` -- damped (Gauss-)Newton with a per-problem Armijo backtracking line search.
  CNCE and NCE losses are logistic losses of a margin ``m(psi)``; their Gauss-Newton matrix
  ``scale * sum_n s(m)(1 - s(m)) J_n J_n^T`` is the exact Hessian when ``m`` is linear in the
  parameters (Gaussian, ring, log-normal, Bernoulli) and almost everywhere for ICA, whose
  margin is piecewise linear. Problems that converge leave the loop's active set.
* :func:`lbfgs` -- batched L-BFGS with Armijo backtracking, for objectives whose Hessian is
  uninformative (the ICA likelihood: ``|b . x|`` has zero curvature almost everywhere).

Problems expose ``full(psi) -> (loss (S,), grad (S, P), hess (S, P, P) | None)`` and
``line(psi, d) -> (alpha (S,) -> loss (S,))`` (a cheap loss along a search direction).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .options import TINY, LBFGSSettings, NewtonSettings
from .result import OptimResult
from .errors import InputError

__all__ = ["LinearLogistic", "NonlinearLogistic", "AutogradObjective", "newton", "lbfgs", "OptimResult"]

def logistic_loss(m: torch.Tensor, scale: float):
    return scale * F.softplus(-m).sum(-1)


class LinearLogistic:
    """``loss(psi) = scale * sum_n softplus(-(F psi + b)_n)`` with fixed features ``F (S, n, P)``.

    Built for speed (see ``benchmarks/``): the features are stored once, transposed to
    ``(S, P, n)`` (so both products per iteration, ``F d`` and ``F^T w``, stream contiguous
    rows) and by default in float32 (``feature_dtype``); margins, loss and gradient are
    accumulated in the parameters' dtype. After a line search the margins at the new point
    are ``m + step * F d`` (no third product). The Gauss-Newton matrix is formed from the
    every ``ceil(n / hess_points)``-th point only (a subsample that mixes data and noise
    points), scaled up; it only sets the search direction, so the minimiser is the same
    while the cost of a Newton iteration stays two passes over the features.
    """

    def __init__(self, F_: torch.Tensor | None, b: torch.Tensor, scale: float, *, Ft: torch.Tensor | None = None,
                 feature_dtype: torch.dtype | None = None, hess_points: int | None = None, dtype: torch.dtype | None = None,
                 weights: torch.Tensor | None = None):
        if Ft is None:
            Ft = F_.transpose(1, 2)
        # the storage dtype is chosen by the caller (``FitOptions.features_dtype``)
        fdt = feature_dtype or Ft.dtype
        self.Ft = Ft.to(fdt).contiguous()
        self.scale = scale
        self.dtype = dtype or (b.dtype if b is not None else (F_ if F_ is not None else Ft).dtype)
        n = self.Ft.shape[-1]
        hp = NewtonSettings.hess_points if hess_points is None else hess_points
        # every stride-th point: a prefix would hold only data points for NCE (data first)
        self.stride = 1 if (hp is None or hp <= 0 or hp >= n) else -(-n // hp)
        self.n_h = -(-n // self.stride)
        # float32 features put a noise floor of about 1e-12 (relative) under the Newton decrement
        # margins, losses and gradients live in ``self.dtype`` (float64 by default): float32
        # margins make the line search's loss differences noisy near the optimum (measured:
        # many more Armijo halvings)
        self.b = b
        #: optional per-point multiplicities ``(S, n)``: the loss is ``scale * sum_j c_j softplus(-m_j)``
        #: (identical points counted once; see ``cnce.fit`` for discrete data)
        self.c = None if weights is None else weights.to(self.dtype)
        #: float32 features under float64 margins: the solver's tolerance is at least ``NewtonSettings.tol_float32``
        self.float32_features = self.Ft.dtype == torch.float32 and self.dtype == torch.float64
        self._m = None  # margins at the last point passed to full()
        self._loss_cur = None
        self._line = None  # (m, Fd) of the last line search
        self._next = None  # margins at psi + step d, after advance()

    def _prod(self, v):  # F v for v (S, P) -> (S, n) in the accumulation dtype
        return torch.bmm(v.to(self.Ft.dtype).unsqueeze(1), self.Ft).squeeze(1).to(self.dtype)

    def margins(self, psi):
        m = self._prod(psi)
        return m + self.b if self.b is not None else m

    def _loss(self, m):
        sp = F.softplus(-m)
        return self.scale * (sp if self.c is None else sp * self.c).sum(-1)

    def _weighted(self, w):
        return w if self.c is None else w * self.c

    def loss(self, psi):
        return self._loss(self.margins(psi))

    def full(self, psi):
        loss = None
        if self._next is not None:
            (m, loss), self._next = self._next, None
        else:
            m = self.margins(psi)
        self._m = m
        w = torch.sigmoid(-m)
        if loss is None:
            loss = self._loss(m)
        self._loss_cur = loss
        g = -self.scale * torch.bmm(self.Ft, self._weighted(w).to(self.Ft.dtype).unsqueeze(-1)).squeeze(-1).to(self.dtype)
        nh = self.n_h
        Fh = self.Ft[:, :, :: self.stride]
        wh = w[:, :: self.stride]
        v = wh * (1.0 - wh)
        v = (v if self.c is None else v * self.c[:, :: self.stride]).to(self.Ft.dtype)
        H = torch.bmm(Fh * v.unsqueeze(1), Fh.transpose(1, 2)).to(self.dtype) * (self.scale * self.Ft.shape[-1] / nh)
        return loss, g, H

    def loss_grad(self, psi):
        """Loss and gradient only (two passes over the features); what the benchmarks time."""
        m = self.margins(psi)
        w = torch.sigmoid(-m)
        g = -self.scale * torch.bmm(self.Ft, self._weighted(w).to(self.Ft.dtype).unsqueeze(-1)).squeeze(-1).to(self.dtype)
        return self._loss(m), g

    def line(self, psi, d):
        m = self._m if self._m is not None else self.margins(psi)
        Fd = self._prod(d)
        self._line = (m, Fd, [])

        def phi(alpha):
            val = self._loss(torch.addcmul(m, alpha.to(m.dtype).unsqueeze(-1), Fd))
            self._line[2].append((alpha.clone(), val))
            return val

        return phi

    def advance(self, step):
        """Margins at ``psi + step d`` for the last line search (used by the next :meth:`full`)."""
        m, Fd, trials = self._line
        # the loss at the accepted step was computed by the line search (same margins, bit
        # for bit): reuse it instead of another softplus pass; step 0 keeps the old loss
        loss = torch.where(step == 0, self._loss_cur, torch.full_like(self._loss_cur, float("nan")))
        for a, v in trials:
            loss = torch.where(step == a, v, loss)
        if bool(torch.isnan(loss).any()):
            loss = None
        self._next = (torch.addcmul(m, step.to(m.dtype).unsqueeze(-1), Fd), loss)
        self._line = None


class NonlinearLogistic:
    """Logistic loss of a margin given by ``margin_fn(psi, jac: bool) -> (m (S, n), J (S, n, P) | None)``.

    ``line_fn(psi, d) -> (alpha (S,) -> m (S, n))``, if given, evaluates margins along a
    search direction faster than calling ``margin_fn`` (e.g. with projections cached).
    """

    def __init__(self, margin_fn, scale: float, line_fn=None):
        self.margin_fn, self.scale, self.line_fn = margin_fn, scale, line_fn

    def loss(self, psi):
        return logistic_loss(self.margin_fn(psi, False)[0], self.scale)

    def full(self, psi):
        m, J = self.margin_fn(psi, True)
        return _gn(m, J, self.scale)

    def line(self, psi, d):
        if self.line_fn is not None:
            margins = self.line_fn(psi, d)
            return lambda alpha: logistic_loss(margins(alpha), self.scale)
        return lambda alpha: self.loss(psi + alpha.unsqueeze(-1) * d)


def _gn(m, J, scale):
    w = torch.sigmoid(-m)
    loss = logistic_loss(m, scale)
    g = -scale * torch.bmm(w.unsqueeze(1), J).squeeze(1)
    v = (w * (1.0 - w)).unsqueeze(-1)
    H = scale * torch.bmm(J.transpose(1, 2), J * v)
    return loss, g, H


class AutogradObjective:
    """Any per-simulation objective ``f(psi) -> (S,)``; gradient and exact Hessian by autograd.

    The Hessian needs P Hessian-vector products (one per parameter, all simulations at once),
    which is cheap for the models here (P <= 16).
    """

    def __init__(self, f, hessian: bool = True):
        self.f, self.hessian = f, hessian

    def loss(self, psi):
        with torch.enable_grad():  # score matching differentiates in x even here
            return self.f(psi.detach()).detach()

    def full(self, psi):
        with torch.enable_grad():
            p = psi.detach().requires_grad_(True)
            loss = self.f(p)
            (g,) = torch.autograd.grad(loss.sum(), p, create_graph=self.hessian)
            H = None
            if self.hessian:
                rows = []
                for k in range(p.shape[-1]):
                    (hk,) = torch.autograd.grad(g[:, k].sum(), p, retain_graph=True)
                    rows.append(hk)
                H = torch.stack(rows, dim=1)
                H = 0.5 * (H + H.transpose(1, 2))
        return loss.detach(), g.detach(), H

    def line(self, psi, d):
        return lambda alpha: self.loss(psi + alpha.unsqueeze(-1) * d)


def _damped_solve(H, g, settings: NewtonSettings):
    """Solve ``(H + lam I) d = -g`` per problem, raising ``lam`` until H + lam I is positive
    definite (``settings.damping``, ``damping_growth``, ``damping_tries``)."""
    P = H.shape[-1]
    eye = torch.eye(P, dtype=H.dtype, device=H.device)
    scale = H.diagonal(dim1=-2, dim2=-1).abs().mean(-1).clamp_min(TINY)
    lam = settings.damping * scale
    d = torch.zeros_like(g)
    todo = torch.ones(g.shape[0], dtype=torch.bool, device=g.device)
    for _ in range(settings.damping_tries):
        L, info = torch.linalg.cholesky_ex(H + lam.view(-1, 1, 1) * eye)
        ok = (info == 0) & todo
        if ok.any():
            sol = torch.cholesky_solve(-g.unsqueeze(-1), L).squeeze(-1)
            d = torch.where(ok.unsqueeze(-1), sol, d)
            todo = todo & ~ok
        if not todo.any():
            break
        lam = torch.where(todo, lam * settings.damping_growth, lam)
    return torch.where(todo.unsqueeze(-1), -g, d)  # gradient step if nothing worked


def _backtrack(phi, loss, slope, alpha, active, settings):
    """Armijo backtracking for every active problem at once: shrink each problem's step
    ``alpha`` until ``phi(alpha) <= loss + c1 * alpha * slope``. Returns the accepted step
    (0 where none was found) and which problems accepted one (inactive ones count as such).

    After a rejected trial the next one is the minimiser of the quadratic through ``loss``,
    ``slope`` and the trial, kept within ``[shrink_min, shrink_max]`` times the step (safeguarded
    backtracking, Nocedal & Wright Sec. 3.5); ``shrink_max`` times the step where that quadratic
    is not convex. On the kinked ICA objectives this needs far fewer trials than halving alone.
    ``settings``: a :class:`NewtonSettings` or :class:`LBFGSSettings` (``c1``, ``max_halvings``,
    ``shrink_min``, ``shrink_max``)."""
    c1, lo, hi = settings.c1, settings.shrink_min, settings.shrink_max
    accepted = ~active
    step = torch.zeros_like(alpha)
    for _ in range(settings.max_halvings):
        trial = phi(alpha)
        ok = ~accepted & torch.isfinite(trial) & (trial <= loss + c1 * alpha * slope)
        step = torch.where(ok, alpha, step)
        accepted |= ok
        if accepted.all():
            break
        curv = trial - loss - slope * alpha
        quad = (-slope * alpha * alpha / (2.0 * curv)).clamp(min=lo * alpha, max=hi * alpha)
        nxt = torch.where(torch.isfinite(trial) & (curv > 0), quad, hi * alpha)
        alpha = torch.where(accepted, alpha, nxt)
    return step, accepted


def newton(problem, psi0: torch.Tensor, settings: NewtonSettings = NewtonSettings(), *, callback=None) -> OptimResult:
    """Batched damped Newton / Gauss-Newton with per-problem Armijo line search, run as
    ``settings`` (:class:`~cnce.options.NewtonSettings`, the fields the compiled solver reads too).

    Stops a problem (converged) when half its Newton decrement ``-g.d / 2`` falls below
    ``tol * max(1, |loss|)`` (at least ``tol_float32`` where the problem stores float32
    features), or when its relative loss decrease stays below ``ftol`` for ``patience``
    consecutive iterations (the test that ends piecewise-smooth problems such as ICA, whose
    gradient jumps at the kinks and never vanishes exactly), or when the line search cannot
    decrease the loss any more while the decrement is below ``stall_tol * max(1, |loss|)``;
    otherwise it stops at ``max_iter`` (not converged). ``settings.roundoff_accept`` is the
    compiled solver's rule only (``ValueError`` here).
    """
    if settings.roundoff_accept:
        raise InputError("settings.roundoff_accept is a rule of the compiled solver (cnce._fused) only; got True")
    psi = psi0.clone()
    S = psi.shape[0]
    max_iter, ftol, patience = settings.max_iter, settings.ftol, settings.patience
    tol = max(settings.tol, settings.tol_float32 if getattr(problem, "float32_features", False) else 0.0)
    loss, g, H = problem.full(psi)
    init_loss = loss.clone()
    active = torch.ones(S, dtype=torch.bool, device=psi.device)
    converged = torch.zeros_like(active)
    n_iter = torch.zeros(S, dtype=torch.long, device=psi.device)
    quiet = torch.zeros(S, dtype=torch.long, device=psi.device)
    alpha0 = torch.ones(S, dtype=psi.dtype, device=psi.device)
    for it in range(max_iter):
        d = _damped_solve(H, g, settings)
        slope = (g * d).sum(-1)  # negative
        dec = -0.5 * slope
        done = active & (dec <= tol * loss.abs().clamp_min(1.0))
        converged |= done
        active &= ~done
        if not active.any():
            break
        d = torch.where(active.unsqueeze(-1), d, torch.zeros_like(d))
        phi = problem.line(psi, d)
        # start where the previous search ended (times alpha_grow, at most 1): piecewise-smooth
        # problems (ICA) otherwise pay many halvings per iteration near the optimum
        step, accepted = _backtrack(phi, loss, slope, alpha0.clone(), active, settings)
        failed = active & ~accepted
        if failed.any():
            # No decrease possible: at the optimum up to round-off if the decrement is tiny.
            converged |= failed & (dec <= settings.stall_tol * loss.abs().clamp_min(1.0))
            active &= ~failed
        psi = psi + step.unsqueeze(-1) * d
        if hasattr(problem, "advance"):
            problem.advance(step)
        alpha0 = torch.where(accepted, (settings.alpha_grow * step).clamp(max=1.0), alpha0)
        n_iter += active.long()
        if callback is not None:
            callback(it, loss, active)
        if not active.any():
            break
        loss_new, g_new, H_new = problem.full(psi)
        rel = (loss - loss_new) / loss.abs().clamp_min(1.0)
        quiet = torch.where(active & (rel < ftol), quiet + 1, torch.zeros_like(quiet))
        flat = active & (quiet >= patience)
        converged |= flat
        loss = torch.where(active, loss_new, loss)
        g = torch.where(active.unsqueeze(-1), g_new, g)
        H = torch.where(active.view(-1, 1, 1), H_new, H)
        active &= ~flat
        if not active.any():
            break
    loss, g, _ = problem.full(psi)
    return OptimResult(psi, loss, init_loss, g.abs().amax(-1), n_iter, converged)


def lbfgs(problem, psi0: torch.Tensor, settings: LBFGSSettings = LBFGSSettings()) -> OptimResult:
    """Batched L-BFGS (two-loop recursion per problem) with Armijo backtracking, run as
    ``settings`` (:class:`~cnce.options.LBFGSSettings`).

    A problem converges when ``max |grad| < gtol`` or when its relative loss decrease stays
    below ``ftol`` for ``patience`` consecutive iterations (the right test for piecewise
    smooth objectives such as the ICA likelihood).
    """
    max_iter, history, gtol, ftol, patience = settings.max_iter, settings.history, settings.gtol, settings.ftol, settings.patience
    psi = psi0.clone()
    S, P = psi.shape
    dt, dev = psi.dtype, psi.device
    loss, g, _ = problem.full(psi)
    init_loss = loss.clone()
    s_hist = torch.zeros(S, history, P, dtype=dt, device=dev)
    y_hist = torch.zeros_like(s_hist)
    rho = torch.zeros(S, history, dtype=dt, device=dev)
    n_hist = 0
    active = torch.ones(S, dtype=torch.bool, device=dev)
    converged = torch.zeros_like(active)
    n_iter = torch.zeros(S, dtype=torch.long, device=dev)
    quiet = torch.zeros(S, dtype=torch.long, device=dev)
    for it in range(max_iter):
        done = active & (g.abs().amax(-1) < gtol)
        converged |= done
        active &= ~done
        if not active.any():
            break
        # two-loop recursion over the stored pairs (newest last)
        q = g.clone()
        a = torch.zeros(S, history, dtype=dt, device=dev)
        k = min(n_hist, history)
        for i in range(k - 1, -1, -1):
            a[:, i] = rho[:, i] * (s_hist[:, i] * q).sum(-1)
            q = q - a[:, i : i + 1] * y_hist[:, i]
        if k > 0:
            sy = (s_hist[:, k - 1] * y_hist[:, k - 1]).sum(-1)
            yy = (y_hist[:, k - 1] ** 2).sum(-1)
            gamma = torch.where(yy > 0, sy / yy, torch.ones_like(sy))
        else:
            gamma = 1.0 / g.norm(dim=-1).clamp_min(TINY)
        r = gamma.unsqueeze(-1) * q
        for i in range(k):
            b = rho[:, i] * (y_hist[:, i] * r).sum(-1)
            r = r + (a[:, i] - b).unsqueeze(-1) * s_hist[:, i]
        d = -r
        slope = (g * d).sum(-1)
        bad = slope >= 0
        d = torch.where(bad.unsqueeze(-1), -g, d)
        slope = torch.where(bad, -(g * g).sum(-1), slope)
        d = torch.where(active.unsqueeze(-1), d, torch.zeros_like(d))
        phi = problem.line(psi, d)
        step, accepted = _backtrack(phi, loss, slope, torch.ones(S, dtype=dt, device=dev), active, settings)
        failed = active & ~accepted
        converged |= failed & (g.abs().amax(-1) < settings.stall_gtol)
        active &= ~failed
        psi_new = psi + step.unsqueeze(-1) * d
        loss_new, g_new, _ = problem.full(psi_new)
        s_vec, y_vec = psi_new - psi, g_new - g
        sy = (s_vec * y_vec).sum(-1)
        keep = active & (sy > settings.curvature_tol * (s_vec.norm(dim=-1) * y_vec.norm(dim=-1)).clamp_min(TINY))
        # shift the history of the problems that take the new pair
        if keep.any():
            idx = keep.view(-1, 1, 1)
            s_hist = torch.where(idx, torch.roll(s_hist, -1, dims=1), s_hist)
            y_hist = torch.where(idx, torch.roll(y_hist, -1, dims=1), y_hist)
            rho = torch.where(keep.view(-1, 1), torch.roll(rho, -1, dims=1), rho)
            s_hist[:, -1] = torch.where(keep.unsqueeze(-1), s_vec, s_hist[:, -1])
            y_hist[:, -1] = torch.where(keep.unsqueeze(-1), y_vec, y_hist[:, -1])
            rho[:, -1] = torch.where(keep, 1.0 / sy.clamp_min(TINY), rho[:, -1])
            n_hist = min(n_hist + 1, history)
        rel = (loss - loss_new) / loss.abs().clamp_min(1.0)
        quiet = torch.where(active & (rel < ftol), quiet + 1, torch.zeros_like(quiet))
        upd = active.unsqueeze(-1)
        psi = torch.where(upd, psi_new, psi)
        g = torch.where(upd, g_new, g)
        loss = torch.where(active, loss_new, loss)
        n_iter += active.long()
        flat = active & (quiet >= patience)
        converged |= flat
        active &= ~flat
    return OptimResult(psi, loss, init_loss, g.abs().amax(-1), n_iter, converged)
