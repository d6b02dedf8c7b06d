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

from dataclasses import dataclass

import os

import torch
import torch.nn.functional as F

__all__ = ["LinearLogistic", "NonlinearLogistic", "AutogradObjective", "newton", "lbfgs", "OptimResult"]


def _env_dtype(name, default):
    v = os.environ.get(name, default)
    return {"float32": torch.float32, "float64": torch.float64, "same": None}[v]


#: storage dtype of fixed logistic features (``CNCE_FEATURE_DTYPE`` = float32 | float64 | same)
FEATURE_DTYPE = _env_dtype("CNCE_FEATURE_DTYPE", "float32")
#: points per problem used to form the Gauss-Newton matrix (``CNCE_HESS_POINTS``; 0 = all)
HESS_POINTS = int(os.environ.get("CNCE_HESS_POINTS", "4096"))
#: the same for the piecewise-linear ICA problems, whose iterations (and local optima)
#: depend on the Gauss-Newton matrix much more (``CNCE_ICA_HESS_POINTS``)
ICA_HESS_POINTS = int(os.environ.get("CNCE_ICA_HESS_POINTS", "32768"))
#: add the kernel-smoothed kink curvature to the ICA Gauss-Newton matrix (``CNCE_KINK``)
KINK_CURVATURE = os.environ.get("CNCE_KINK", "0") == "1"


@dataclass
class OptimResult:
    psi: torch.Tensor
    loss: torch.Tensor
    init_loss: torch.Tensor
    grad_norm: torch.Tensor
    n_iter: torch.Tensor
    converged: torch.Tensor


def _logistic(m: torch.Tensor, scale: float):
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
        # float32 storage pays only where features dominate the work (P >= 4: Gaussian,
        # NCE on it); small-P models keep the parameters' dtype.
        fdt = feature_dtype or (FEATURE_DTYPE if Ft.shape[1] >= 4 else None) or Ft.dtype
        src_dtype = Ft.dtype
        self.Ft = Ft.to(fdt).contiguous()
        self.scale = scale
        self.dtype = dtype or (b.dtype if b is not None else (F_ if F_ is not None else Ft).dtype)
        n = self.Ft.shape[-1]
        hp = HESS_POINTS if hess_points is None else hess_points
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
        self.tol_floor = 1e-13 if self.Ft.dtype == torch.float32 and self.dtype == torch.float64 else 0.0
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
        return _logistic(self.margin_fn(psi, False)[0], self.scale)

    def full(self, psi):
        m, J = self.margin_fn(psi, True)
        return _gn(m, J, self.scale)

    def line(self, psi, d):
        if self.line_fn is not None:
            margins = self.line_fn(psi, d)
            return lambda alpha: _logistic(margins(alpha), self.scale)
        return lambda alpha: self.loss(psi + alpha.unsqueeze(-1) * d)


def _gn(m, J, scale):
    w = torch.sigmoid(-m)
    loss = _logistic(m, scale)
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


def _damped_solve(H, g):
    """Solve ``(H + lam I) d = -g`` per problem, raising ``lam`` until H + lam I is positive definite."""
    P = H.shape[-1]
    eye = torch.eye(P, dtype=H.dtype, device=H.device)
    scale = H.diagonal(dim1=-2, dim2=-1).abs().mean(-1).clamp_min(1e-300)
    lam = 1e-12 * scale
    d = torch.zeros_like(g)
    todo = torch.ones(g.shape[0], dtype=torch.bool, device=g.device)
    for _ in range(12):
        L, info = torch.linalg.cholesky_ex(H + lam.view(-1, 1, 1) * eye)
        ok = (info == 0) & todo
        if ok.any():
            sol = torch.cholesky_solve(-g.unsqueeze(-1), L).squeeze(-1)
            d = torch.where(ok.unsqueeze(-1), sol, d)
            todo = todo & ~ok
        if not todo.any():
            break
        lam = torch.where(todo, lam * 1e3, lam)
    return torch.where(todo.unsqueeze(-1), -g, d)  # gradient step if nothing worked


def _backtrack(phi, loss, slope, alpha, active, c1, max_halvings):
    """Armijo backtracking for every active problem at once: shrink each problem's step
    ``alpha`` until ``phi(alpha) <= loss + c1 * alpha * slope``. Returns the accepted step
    (0 where none was found) and which problems accepted one (inactive ones count as such).

    After a rejected trial the next one is the minimiser of the quadratic through ``loss``,
    ``slope`` and the trial, kept within ``[0.1, 0.5]`` times the step (safeguarded
    backtracking, Nocedal & Wright Sec. 3.5); plain halving where that quadratic is not convex.
    On the kinked ICA objectives this needs far fewer trials than halving alone."""
    accepted = ~active
    step = torch.zeros_like(alpha)
    for _ in range(max_halvings):
        trial = phi(alpha)
        ok = ~accepted & torch.isfinite(trial) & (trial <= loss + c1 * alpha * slope)
        step = torch.where(ok, alpha, step)
        accepted |= ok
        if accepted.all():
            break
        curv = trial - loss - slope * alpha
        quad = (-slope * alpha * alpha / (2.0 * curv)).clamp(min=0.1 * alpha, max=0.5 * alpha)
        nxt = torch.where(torch.isfinite(trial) & (curv > 0), quad, 0.5 * alpha)
        alpha = torch.where(accepted, alpha, nxt)
    return step, accepted


def newton(problem, psi0: torch.Tensor, *, max_iter: int = 100, tol: float = 1e-14, ftol: float = 1e-12, patience: int = 3, c1: float = 1e-4, max_halvings: int = 40, callback=None) -> OptimResult:
    """Batched damped Newton / Gauss-Newton with per-problem Armijo line search.

    Stops a problem (converged) when half its Newton decrement ``-g.d / 2`` falls below
    ``tol * max(1, |loss|)``, or when its relative loss decrease stays below ``ftol`` for
    ``patience`` consecutive iterations (the test that ends piecewise-smooth problems such
    as ICA, whose gradient jumps at the kinks and never vanishes exactly), or when the line
    search cannot decrease the loss any more while the decrement is below ``1e-8``;
    otherwise it stops at ``max_iter`` (not converged).
    """
    psi = psi0.clone()
    S = psi.shape[0]
    tol = max(tol, getattr(problem, "tol_floor", 0.0))
    ftol = max(ftol, getattr(problem, "ftol_floor", 0.0))
    loss, g, H = problem.full(psi)
    init_loss = loss.clone()
    active = torch.ones(S, dtype=torch.bool, device=psi.device)
    converged = torch.zeros_like(active)
    n_iter = torch.zeros(S, dtype=torch.long, device=psi.device)
    quiet = torch.zeros(S, dtype=torch.long, device=psi.device)
    alpha0 = torch.ones(S, dtype=psi.dtype, device=psi.device)
    for it in range(max_iter):
        d = _damped_solve(H, g)
        slope = (g * d).sum(-1)  # negative
        dec = -0.5 * slope
        done = active & (dec <= tol * loss.abs().clamp_min(1.0))
        converged |= done
        active &= ~done
        if not active.any():
            break
        d = torch.where(active.unsqueeze(-1), d, torch.zeros_like(d))
        phi = problem.line(psi, d)
        # start where the previous search ended (times 4, at most 1): piecewise-smooth
        # problems (ICA) otherwise pay many halvings per iteration near the optimum
        step, accepted = _backtrack(phi, loss, slope, alpha0.clone(), active, c1, max_halvings)
        failed = active & ~accepted
        if failed.any():
            # No decrease possible: at the optimum up to round-off if the decrement is tiny.
            converged |= failed & (dec <= 1e-8 * loss.abs().clamp_min(1.0))
            active &= ~failed
        psi = psi + step.unsqueeze(-1) * d
        if hasattr(problem, "advance"):
            problem.advance(step)
        alpha0 = torch.where(accepted, (4.0 * step).clamp(max=1.0), alpha0)
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


def lbfgs(problem, psi0: torch.Tensor, *, max_iter: int = 2000, history: int = 10, gtol: float = 1e-10, ftol: float = 1e-14, patience: int = 5, c1: float = 1e-4, max_halvings: int = 50) -> OptimResult:
    """Batched L-BFGS (two-loop recursion per problem) with Armijo backtracking.

    A problem converges when ``max |grad| < gtol`` or when its relative loss decrease stays
    below ``ftol`` for ``patience`` consecutive iterations (the right test for piecewise
    smooth objectives such as the ICA likelihood).
    """
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
            gamma = 1.0 / g.norm(dim=-1).clamp_min(1e-300)
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
        step, accepted = _backtrack(phi, loss, slope, torch.ones(S, dtype=dt, device=dev), active, c1, max_halvings)
        failed = active & ~accepted
        converged |= failed & (g.abs().amax(-1) < 1e-6)
        active &= ~failed
        psi_new = psi + step.unsqueeze(-1) * d
        loss_new, g_new, _ = problem.full(psi_new)
        s_vec, y_vec = psi_new - psi, g_new - g
        sy = (s_vec * y_vec).sum(-1)
        keep = active & (sy > 1e-12 * (s_vec.norm(dim=-1) * y_vec.norm(dim=-1)).clamp_min(1e-300))
        # shift the history of the problems that take the new pair
        if keep.any():
            idx = keep.view(-1, 1, 1)
            s_hist = torch.where(idx, torch.roll(s_hist, -1, dims=1), s_hist)
            y_hist = torch.where(idx, torch.roll(y_hist, -1, dims=1), y_hist)
            rho = torch.where(keep.view(-1, 1), torch.roll(rho, -1, dims=1), rho)
            s_hist[:, -1] = torch.where(keep.unsqueeze(-1), s_vec, s_hist[:, -1])
            y_hist[:, -1] = torch.where(keep.unsqueeze(-1), y_vec, y_hist[:, -1])
            rho[:, -1] = torch.where(keep, 1.0 / sy.clamp_min(1e-300), rho[:, -1])
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


class AbsProjectionLogistic:
    """CNCE / NCE logistic loss for models ``log phi(u; B) = -a sum_j |b_j . u|`` (square ICA).

    Everything is computed from the projections ``s = B u`` (``S x n x D``), never from the
    ``(S, n, D^2)`` Jacobian: the gradient is two small matrix products
    ``(w * sign(s))^T u``, the Gauss-Newton matrix is formed on a subsample of
    ``hess_points`` margins, and line searches move the cached projections (``s + alpha t``
    with ``t = B_dir u``), which become the next iterate's projections.

    The margin is piecewise linear in ``B``, so Gauss-Newton misses the curvature that the
    kinks of ``|b . u|`` contribute in aggregate: ``-sigma(-m) d^2 m`` with
    ``d^2 |s| / ds^2 = 2 delta(s)``. With ``kink_curvature`` the delta is replaced by a
    Gaussian kernel density estimate of the projections at zero (Silverman's bandwidth) on
    the same subsample, which makes the Newton direction that of the smoothed aggregate
    loss. It changes only the search direction; the loss and gradient are exact, so the
    minimiser is the same.

    ``mode="cnce"``: ``x (S, N, D)``, ``y (S, N * kappa, D)``, margins
    ``m_ik = lp(x_i) - lp(y_ik) (+ b)``. ``mode="nce"``: margins
    ``lp(x) + c + b_x`` and ``-(lp(y) + c) + b_y``; the last parameter is ``c``.
    """

    def __init__(self, x, y, a: float, scale: float, *, mode: str = "cnce", b=None, kappa: int = 1,
                 hess_points: int | None = None, kink_curvature: bool | None = None):
        # points stored transposed, (S, D, n): projections come out as (S, D, n), so the sum
        # over j and the element-wise work run along contiguous rows
        self.x, self.y = x.transpose(1, 2).contiguous(), y.transpose(1, 2).contiguous()
        self.a, self.scale, self.mode, self.b, self.kappa = a, scale, mode, b, kappa
        S, N, D = x.shape
        self.S, self.N, self.D = S, N, D
        self.M = y.shape[1]
        hp = ICA_HESS_POINTS if hess_points is None else hess_points
        self.hp = hp if (hp is not None and hp > 0) else None
        self.kink = KINK_CURVATURE if kink_curvature is None else kink_curvature
        self._proj = None  # (psi, sx, sy) projections at the last point
        self._line = None
        self._next = None

    # ------------------------------------------------------------------ pieces
    def _split(self, psi):
        D = self.D
        B = psi[:, : D * D].reshape(-1, D, D)
        c = psi[:, D * D] if self.mode == "nce" else None
        return B, c

    def _project(self, psi):
        B, _ = self._split(psi)
        return torch.bmm(B, self.x), torch.bmm(B, self.y)

    def _margins(self, sx, sy, c):
        lpx = sx.abs().sum(1).mul_(-self.a)
        lpy = sy.abs().sum(1).mul_(-self.a)
        if self.mode == "cnce":
            m = (lpx.unsqueeze(-1) - lpy.view(self.S, self.N, self.kappa)).reshape(self.S, -1)
        else:
            cc = c.unsqueeze(-1)
            m = torch.cat([lpx + cc, -(lpy + cc)], 1)
        return m if self.b is None else m + self.b

    def _weights(self, w):
        """Per-point weights of d m / d lp for data and noise: ``(wx (S, N), wy (S, M))``."""
        if self.mode == "cnce":
            return w.view(self.S, self.N, self.kappa).sum(-1), -w
        return w[:, : self.N], -w[:, self.N :]

    # ------------------------------------------------------------------ problem protocol
    def loss(self, psi):
        sx, sy = self._project(psi)
        return _logistic(self._margins(sx, sy, self._split(psi)[1]), self.scale)

    def full(self, psi):
        if self._next is not None:
            sx, sy = self._next
            self._next = None
        else:
            sx, sy = self._project(psi)
        self._proj = (sx, sy)
        loss, g, w = self._loss_grad(psi, sx, sy)
        H = self._hessian(sx, sy, w)
        return loss, g, H

    def loss_grad(self, psi):
        """Loss and gradient only; what the benchmarks time."""
        sx, sy = self._project(psi)
        return self._loss_grad(psi, sx, sy)[:2]

    def _loss_grad(self, psi, sx, sy):
        _, c = self._split(psi)
        m = self._margins(sx, sy, c)
        w = torch.sigmoid(-m)
        loss = _logistic(m, self.scale)
        wx, wy = self._weights(w)
        # d lp / dB = -a sign(B u) u^T; the loss gradient is -scale * sum_n w_n dm_n/dpsi
        gB = torch.bmm(torch.sign(sx).mul_(wx.unsqueeze(1)), self.x.transpose(1, 2))
        gB = gB + torch.bmm(torch.sign(sy).mul_(wy.unsqueeze(1)), self.y.transpose(1, 2))
        g = (self.a * self.scale) * gB.reshape(self.S, -1)
        if self.mode == "nce":
            gc = -self.scale * (w[:, : self.N].sum(-1) - w[:, self.N :].sum(-1))
            g = torch.cat([g, gc.unsqueeze(-1)], -1)
        return loss, g, w

    def _hessian(self, sx, sy, w):
        S, N, D, k = self.S, self.N, self.D, self.kappa
        a = self.a
        x, y = self.x, self.y
        if self.mode == "cnce":
            nx = N if self.hp is None else max(1, min(N, self.hp // k))
            ny = nx * k
            factor = N / nx
            wh = w.view(S, N, k)[:, :nx]
            # Jacobian rows of the subsample, (S, D*D, n): -a sign(b_j.u) u_c at row j*D + c
            Jx = (torch.sign(sx[:, :, :nx]).unsqueeze(2) * x[:, :, :nx].unsqueeze(1)).reshape(S, D * D, nx, 1)
            Jy = (torch.sign(sy[:, :, :ny]).unsqueeze(2) * y[:, :, :ny].unsqueeze(1)).reshape(S, D * D, nx, k)
            J = Jy.neg_().add_(Jx).reshape(S, D * D, ny)  # (-a) factors out: a^2 below
            v = (wh * (1 - wh)).reshape(S, 1, ny)
            H = torch.bmm(J * v, J.transpose(1, 2)) * (a * a)
            wx_h, wy_h = wh.sum(-1), -wh.reshape(S, ny)
        else:
            M = self.M
            nx = N if self.hp is None else max(1, min(N, self.hp // 2))
            ny = M if self.hp is None else max(1, min(M, self.hp // 2))
            wxa, wya = w[:, :nx], w[:, N : N + ny]
            Jx = ((-a * torch.sign(sx[:, :, :nx])).unsqueeze(2) * x[:, :, :nx].unsqueeze(1)).reshape(S, D * D, nx)
            Jy = ((-a * torch.sign(sy[:, :, :ny])).unsqueeze(2) * y[:, :, :ny].unsqueeze(1)).reshape(S, D * D, ny)
            Jx = torch.cat([Jx, torch.ones_like(Jx[:, :1])], 1)
            Jy = torch.cat([Jy, torch.ones_like(Jy[:, :1])], 1)
            vx = (wxa * (1 - wxa)).unsqueeze(1)
            vy = (wya * (1 - wya)).unsqueeze(1)
            H = torch.bmm(Jx * vx, Jx.transpose(1, 2)) * (N / nx) + torch.bmm(Jy * vy, Jy.transpose(1, 2)) * (M / ny)
            factor = None
            wx_h, wy_h = wxa, -wya
        if self.kink:
            Hk = torch.zeros(S, D * D, D * D, dtype=H.dtype, device=H.device)
            fx = N / nx
            fy = (self.M / ny)
            for u, s, wt, f in ((x[:, :, :nx], sx[:, :, :nx], wx_h, fx), (y[:, :, :ny], sy[:, :, :ny], wy_h, fy)):
                n = s.shape[-1]
                h = 1.06 * s.std(dim=-1).clamp_min(1e-12) * n ** (-0.2)  # (S, D)
                dens = torch.exp(-0.5 * (s / h.unsqueeze(-1)) ** 2) / (h.unsqueeze(-1) * 2.5066282746310002)  # (S, D, n)
                # -sigma(-m) d2m: + 2a delta(b_j.u) u u^T per unit weight (wt carries the sign of dm/dlp)
                coef = (2.0 * a * f) * wt.unsqueeze(1) * dens  # (S, D, n)
                for j in range(D):
                    blk = torch.bmm(u * coef[:, j : j + 1], u.transpose(1, 2))
                    Hk[:, j * D : (j + 1) * D, j * D : (j + 1) * D] += blk
            # data and noise kinks pull in opposite directions; keep the positive part of
            # each row's block so that the matrix stays positive semi-definite
            for j in range(D):
                sl = slice(j * D, (j + 1) * D)
                blk = Hk[:, sl, sl]
                ev, V = torch.linalg.eigh(0.5 * (blk + blk.transpose(1, 2)))
                Hk[:, sl, sl] = (V * ev.clamp_min(0).unsqueeze(1)) @ V.transpose(1, 2)
            if self.mode == "cnce":
                H = H * factor + Hk
            else:
                H = H.clone()
                H[:, : D * D, : D * D] += Hk
        elif self.mode == "cnce":
            H = H * factor
        return self.scale * H

    def line(self, psi, d):
        if self._proj is None:
            self._proj = self._project(psi)
        sx, sy = self._proj
        Bd, cd = self._split(d)
        tx, ty = torch.bmm(Bd, self.x), torch.bmm(Bd, self.y)
        _, c = self._split(psi)
        self._line = (sx, sy, tx, ty)

        def phi(alpha):
            al = alpha.view(-1, 1, 1)
            cc = None if c is None else c + alpha * cd
            return _logistic(self._margins(sx + al * tx, sy + al * ty, cc), self.scale)

        return phi

    def advance(self, step):
        sx, sy, tx, ty = self._line
        al = step.view(-1, 1, 1)
        self._next = (sx + al * tx, sy + al * ty)
        self._line = None


#: pairs (summed over simulations) per block of the blocked ICA CNCE passes: the
#: temporaries of a block (projections, margins, weights) stay in cache and are reused
#: instead of being allocated, faulted in and streamed through memory once per operation
BLOCK_PAIRS = int(os.environ.get("CNCE_BLOCK_PAIRS", "65536"))


class BlockedAbsProjectionCNCE(AbsProjectionLogistic):
    """:class:`AbsProjectionLogistic` for CNCE, evaluated in blocks of data points.

    One pass over the noise points per loss (line-search trial) and one per loss + gradient;
    the projections are recomputed per block (a ``D x D`` product) rather than stored.
    Results equal the unblocked class up to the order of floating-point summation.
    """

    def __init__(self, x, y, a, scale, *, b=None, kappa=1, hess_points=None, kink_curvature=None):
        super().__init__(x, y, a, scale, mode="cnce", b=b, kappa=kappa, hess_points=hess_points, kink_curvature=False)
        self.nb = max(1, BLOCK_PAIRS // (self.S * kappa))  # data points per block

    def _pass(self, B, grad: bool, Bd=None, alpha=None):
        S, N, k, a = self.S, self.N, self.kappa, self.a
        if Bd is not None:
            B = B + alpha.view(-1, 1, 1) * Bd
        sx = torch.bmm(B, self.x)
        lpx = sx.abs().sum(1).mul_(-a)
        loss = torch.zeros(S, dtype=self.x.dtype, device=self.x.device)
        if grad:
            gB = torch.zeros(S, self.D, self.D, dtype=self.x.dtype, device=self.x.device)
            wx = torch.empty(S, N, dtype=self.x.dtype, device=self.x.device)
        for i0 in range(0, N, self.nb):
            i1 = min(N, i0 + self.nb)
            yb = self.y[:, :, i0 * k : i1 * k]
            sy = torch.bmm(B, yb)
            lpy = sy.abs().sum(1).mul_(-a)
            m = lpy.view(S, i1 - i0, k).neg_().add_(lpx[:, i0:i1].unsqueeze(-1)).view(S, -1)
            if self.b is not None:
                m += self.b[:, i0 * k : i1 * k]
            m.neg_()  # -m
            loss += F.softplus(m).sum(-1)
            if grad:
                w = torch.sigmoid(m)
                wx[:, i0:i1] = w.view(S, i1 - i0, k).sum(-1)
                gB -= torch.bmm(torch.sign(sy).mul_(w.unsqueeze(1)), yb.transpose(1, 2))
        loss *= self.scale
        if not grad:
            return loss
        gB += torch.bmm(torch.sign(sx).mul_(wx.unsqueeze(1)), self.x.transpose(1, 2))
        return loss, (self.a * self.scale) * gB.reshape(S, -1)

    def loss(self, psi):
        return self._pass(self._split(psi)[0], False)

    def loss_grad(self, psi):
        return self._pass(self._split(psi)[0], True)

    def full(self, psi):
        B = self._split(psi)[0]
        loss, g = self._pass(B, True)
        # Gauss-Newton matrix on the subsample (its own small pass)
        S, N, k = self.S, self.N, self.kappa
        nx = N if self.hp is None else max(1, min(N, self.hp // k))
        xs, ys = self.x[:, :, :nx], self.y[:, :, : nx * k]
        sx, sy = torch.bmm(B, xs), torch.bmm(B, ys)
        lpx = sx.abs().sum(1).mul_(-self.a)
        lpy = sy.abs().sum(1).mul_(-self.a)
        m = (lpx.unsqueeze(-1) - lpy.view(S, nx, k)).reshape(S, -1)
        if self.b is not None:
            m = m + self.b[:, : nx * k]
        w = torch.sigmoid(-m)
        D = self.D
        Jx = (torch.sign(sx).unsqueeze(2) * xs.unsqueeze(1)).reshape(S, D * D, nx, 1)
        Jy = (torch.sign(sy).unsqueeze(2) * ys.unsqueeze(1)).reshape(S, D * D, nx, k)
        J = Jy.neg_().add_(Jx).reshape(S, D * D, nx * k)
        v = (w * (1 - w)).unsqueeze(1)
        H = torch.bmm(J * v, J.transpose(1, 2)) * (self.a * self.a * self.scale * N / nx)
        return loss, g, H

    def line(self, psi, d):
        B, Bd = self._split(psi)[0], self._split(d)[0]
        return lambda alpha: self._pass(B, False, Bd, alpha)

    def advance(self, step):  # projections are recomputed per block; nothing is cached
        pass
