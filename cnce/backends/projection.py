"""The logistic problems of models with absolute projections, ``log phi(u; B) = -a sum_j |b_j . u|``
(square ICA, Eq. 16), for the batched torch path: CNCE (Eq. 8) and NCE computed from the
projections ``B u`` instead of the ``(S, n, D^2)`` Jacobian. They follow the problem protocol
of :mod:`cnce.optim` (``full``, ``line``, ``loss``, ``advance``) and are solved by its
:func:`~cnce.optim.newton`. The compiled counterparts are the ``ica`` / ``nce_ica`` kernels of
:mod:`cnce._fused`.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..optim import logistic_loss

__all__ = ["AbsProjectionLogistic", "BlockedAbsProjectionCNCE"]


class AbsProjectionLogistic:
    """CNCE / NCE logistic loss for models ``log phi(u; B) = -a sum_j |b_j . u|`` (square ICA).

    Everything is computed from the projections ``s = B u`` (``S x n x D``), never from the
    ``(S, n, D^2)`` Jacobian: the gradient is two small matrix products
    ``(w * sign(s))^T u``, the Gauss-Newton matrix is formed on a subsample of
    ``hess_points`` margins, and line searches move the cached projections (``s + alpha t``
    with ``t = B_dir u``), which become the next iterate's projections.

    The margin is piecewise linear in ``B``: Gauss-Newton misses the curvature that the kinks
    of ``|b . u|`` contribute in aggregate, which is why these problems converge more slowly.

    ``mode="cnce"``: ``x (S, N, D)``, ``y (S, N * kappa, D)``, margins
    ``m_ik = lp(x_i) - lp(y_ik) (+ b)``. ``mode="nce"``: margins
    ``lp(x) + c + b_x`` and ``-(lp(y) + c) + b_y``; the last parameter is ``c``.
    """

    def __init__(self, x, y, a: float, scale: float, *, hess_points: int, mode: str = "cnce", b=None,
                 kappa: int = 1):
        # points stored transposed, (S, D, n): projections come out as (S, D, n), so the sum
        # over j and the element-wise work run along contiguous rows
        self.x, self.y = x.transpose(1, 2).contiguous(), y.transpose(1, 2).contiguous()
        self.a, self.scale, self.mode, self.b, self.kappa = a, scale, mode, b, kappa
        S, N, D = x.shape
        self.S, self.N, self.D = S, N, D
        self.M = y.shape[1]
        self.hp = hess_points if (hess_points is not None and hess_points > 0) else None
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
        return logistic_loss(self._margins(sx, sy, self._split(psi)[1]), self.scale)

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
        loss = logistic_loss(m, self.scale)
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
        if self.mode == "cnce":
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
            return logistic_loss(self._margins(sx + al * tx, sy + al * ty, cc), self.scale)

        return phi

    def advance(self, step):
        sx, sy, tx, ty = self._line
        al = step.view(-1, 1, 1)
        self._next = (sx + al * tx, sy + al * ty)
        self._line = None


class BlockedAbsProjectionCNCE(AbsProjectionLogistic):
    """:class:`AbsProjectionLogistic` for CNCE, evaluated in blocks of data points.

    One pass over the noise points per loss (line-search trial) and one per loss + gradient;
    the projections are recomputed per block (a ``D x D`` product) rather than stored.
    ``block_pairs`` (summed over simulations) sets the block size: the temporaries of a block
    (projections, margins, weights) stay in cache and are reused instead of being allocated,
    faulted in and streamed through memory once per operation.
    Results equal the unblocked class up to the order of floating-point summation.
    """

    def __init__(self, x, y, a, scale, *, hess_points: int, block_pairs: int, b=None, kappa=1):
        super().__init__(x, y, a, scale, mode="cnce", b=b, kappa=kappa, hess_points=hess_points)
        self.nb = max(1, block_pairs // (self.S * kappa))  # data points per block

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
