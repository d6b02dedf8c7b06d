"""Fused CPU kernels (numba) for CNCE with the additive noise of Eq. (13).

Why: on a CPU the batched torch path (:class:`cnce.optim.LinearLogistic`,
:class:`cnce.backends.projection.BlockedAbsProjectionCNCE`) makes a dozen full passes over memory per
Newton iteration (noise, features, margins, ``softplus``, ``sigmoid``, two products and
the Gauss-Newton matrix are separate tensor operations over all simulations at once). Here
one compiled pass per point pair does all of it: the noise ``y = x + eps xi`` and the
model's sufficient statistics are formed on the fly from the data and the noise base (no
feature matrix is stored), and the margin, ``softplus``, ``sigmoid``, gradient and
Gauss-Newton accumulation share one exponential. Each simulation is solved to the end
before the next starts, so its data stay in cache across iterations, and simulations run on
``threads`` Python threads (:func:`_over_sims`; the kernels release the GIL).

Structure: a model's kernel is one *block kernel* (``_block_<name>``) that forms the margins
and features of the rows of a block of data points; a single driver, :func:`_drive`, runs the
block loop and accumulates loss, gradient and Gauss-Newton matrix for every kernel. numba
compiles the driver once per kernel (``kind`` is a compile-time constant, so it is as tight as
a hand-written pass); :func:`_pass` picks the compiled driver for a run-time ``kind``, and
:func:`_newton_one` / :func:`_newton_all` solve with it. Adding a kernel: a block kernel, a
branch in :func:`_block` and :func:`_pass`, and its name in :data:`KERNELS`.

Algorithm (the same as :func:`cnce.optim.newton`): damped Gauss-Newton with a per-problem
Armijo line search, the Gauss-Newton matrix from every ``stride``-th pair, the same stopping
rules (Newton decrement, ``patience`` small relative decreases, failed line search at a tiny
decrement), read from the same :class:`~cnce.options.NewtonSettings` (whose docstring says why
``alpha_grow`` differs between the two). Two differences that do not change the minimiser of a
convex problem:

* the first trial step of a line search evaluates the loss together with the gradient and
  Gauss-Newton matrix (one pass, the step is usually accepted);
* *progressive sampling* (``stages``): the problem is first solved on a prefix of the data
  (with all its noise samples), e.g. ``N/16`` then ``N/4``, each solution starting the next,
  so that the full data see only the last two or three Newton iterations. Used for the
  convex Gaussian problem; off for ICA, whose local optima depend on the path. For the
  Gaussian the last stage forms its Gauss-Newton matrix from all pairs (from a subsample the
  iterations converge only linearly), the noise steps are laid out once per simulation
  (:func:`_block_gauss_t`), and the earlier stages stop at a looser tolerance.

Supported problems: ``kind = 0`` Gaussian (Eq. 15, features ``-u_a u_b`` and ``-u_a^2 / 2``),
``kind = 1`` ICA (Eq. 16, ``log phi = -a sum_j |b_j . u|``), and NCE (Gutmann & Hyvarinen
2012) for the same two models, ``kind = 2`` and ``3``: each data point and its ``K`` noise
points ``y = mu + L xi`` (the Gaussian matched to the data, formed on the fly from the same
noise base) are rows of a logistic regression with the learned log-normaliser ``c`` as the
last parameter; ``kind = 4``: CNCE for the log-normal model of Supp. C (Eq. 62); ``kind = 5``
and ``6``: CNCE and NCE for the ring model (Eq. 17) with its known radius.
:func:`available` says whether numba imported.
"""
from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .options import COMPILED_RULES, TINY, NewtonSettings

# The compiled Newton solver's constants: NewtonSettings' defaults, frozen into the kernels at
# compile time (numba folds them as literals, so the compiled code is the same as with literals;
# passing them at run time changed how LLVM optimised the solver and moved estimates in the
# last bits). newton_all refuses settings whose values differ (check_compiled_rules).
# One name per field of COMPILED_RULES, in its order (a rule added there must be named here).
(_STALL_TOL, _DAMPING, _DAMPING_GROWTH, _DAMPING_TRIES, _SHRINK_MIN, _SHRINK_MAX, _ROUNDOFF_TOL, _REUSE_RHO_LO,
 _REUSE_RHO_HI, _H_QUADRATIC, _H_LINEAR, _H_HORIZON) = (getattr(NewtonSettings, f) for f in COMPILED_RULES)

try:  # numba is a dependency, but keep the package importable without it (torch fallback)
    from numba import literally, njit

    HAVE_NUMBA = True
except Exception:  # pragma: no cover - exercised only where numba is missing
    HAVE_NUMBA = False

__all__ = ["available", "KERNELS", "GAUSSIAN", "ICA", "NCE_GAUSSIAN", "NCE_ICA", "LOGNORMAL", "RING", "NCE_RING", "newton_all", "loss_all", "ica_mle_all", "nce_params"]

#: problem kinds: CNCE (Eq. 8) for the Gaussian and ICA models, NCE for the same models, and
#: CNCE for the log-normal model
GAUSSIAN, ICA, NCE_GAUSSIAN, NCE_ICA, LOGNORMAL, RING, NCE_RING = 0, 1, 2, 3, 4, 5, 6
#: kernel name (what a model declares in ``compiled_kernels``) -> problem kind; ``ica_mle`` is
#: the ICA likelihood's L-BFGS (:func:`ica_mle_all`)
KERNELS = {"gaussian": GAUSSIAN, "ica": ICA, "nce_gaussian": NCE_GAUSSIAN, "nce_ica": NCE_ICA, "lognormal": LOGNORMAL,
           "ring": RING, "nce_ring": NCE_RING, "ica_mle": -1}
#: kinds whose passes can read noise steps laid out once per simulation (``NewtonSettings.noise_t``)
LAYS_OUT_NOISE = frozenset({GAUSSIAN})


def available() -> bool:
    return HAVE_NUMBA


if HAVE_NUMBA:

    _JIT = dict(cache=True, error_model="numpy", boundscheck=False)
    # reductions (loss, gradient, Gauss-Newton sums) vectorise only when the compiler may
    # reassociate additions; the logistic block itself stays IEEE-exact (its argument
    # reduction depends on the order of operations)
    _JIT_SUM = dict(_JIT, fastmath={"reassoc", "contract", "nsz"})
    # the entry points (``_*_all``): simulations ``lo..hi-1``, without the GIL, so that
    # :func:`_over_sims` runs them on several Python threads. (numba's ``parallel=True`` did
    # this with ``prange`` but compiled every callee three times more: each parallel function
    # links its callees into an outlined body and again into itself, and the drivers under
    # them were most of the compile time.)
    _JIT_ALL = dict(_JIT, nogil=True)

    @njit(**_JIT)
    def _logistic_block(M, SP, W, nt):
        """``SP = softplus(-M)`` and ``W = sigmoid(-M)`` for ``M[:nt]``, written so that the
        compiler vectorises it (libm's scalar ``exp``/``log1p`` would cost twice as much):
        ``e = exp(-|m|)`` by Cody-Waite reduction (``2^-k exp(-r)``, Taylor to degree 12 on
        ``|r| <= ln 2 / 2``) and ``log1p(e) = 2 atanh(e / (2 + e))`` (odd series, ``z <= 1/3``).
        Relative error below 1e-15 (tested against numpy). ``|m| > 40`` is clipped at 40
        (``e < 5e-18``, below the round-off of any loss sum)."""
        for t in range(nt):
            mm = M[t]
            a = abs(mm)
            a = a if a < 40.0 else 40.0
            ki = np.int64(a * 1.4426950408889634 + 0.5)
            kf = np.float64(ki)
            r = (kf * 6.93147180369123816490e-01 - a) + kf * 1.90821492927058770002e-10
            p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (1.0 / 720 + r * (
                1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880 + r * (1.0 / 3628800 + r * (1.0 / 39916800 + r * (
                    1.0 / 479001600))))))))))))
            e = p * (np.float64(np.int64(1) << (np.int64(60) - ki)) * 8.673617379884035e-19)
            z = e / (2.0 + e)
            z2 = z * z
            sr = 1.0 + z2 * (1 / 3 + z2 * (1 / 5 + z2 * (1 / 7 + z2 * (1 / 9 + z2 * (1 / 11 + z2 * (1 / 13 + z2 * (
                1 / 15 + z2 * (1 / 17 + z2 * (1 / 19 + z2 * (1 / 21 + z2 * (1 / 23 + z2 * (1 / 25 + z2 * (1 / 27 + z2 * (
                    1 / 29 + z2 * (1 / 31 + z2 * (1 / 33 + z2 / 35))))))))))))))))
            neg = mm < 0.0
            SP[t] = (-mm if neg else 0.0) + 2.0 * z * sr
            inv = 1.0 / (1.0 + e)
            W[t] = inv if neg else e * inv

    @njit(**_JIT_SUM)
    def _gn_block(W, F, V, H, P, nt):
        """``H += sum_t w_t (1 - w_t) f_t f_t^T`` (upper triangle) for the block's pairs."""
        for t in range(nt):
            V[t] = W[t] * (1.0 - W[t])
        for q in range(P):
            Fq = F[q]
            for r in range(q, P):
                Fr = F[r]
                acc = 0.0
                for t in range(nt):
                    acc += V[t] * Fq[t] * Fr[t]
                H[q, r] += acc

    @njit(inline="always", **_JIT_SUM)
    def _grad_block(W, F, P, nt, g):
        """``g -= sum_t w_t f_t`` for the block's rows."""
        for q in range(P):
            Fq = F[q]
            acc = 0.0
            for t in range(nt):
                acc += W[t] * Fq[t]
            g[q] -= acc

    @njit(inline="always", **_JIT_SUM)
    def _block_loss(M, SP, W, nt, loss):
        """The block's logistic terms (``SP``, ``W`` from the margins ``M``); returns ``loss`` plus
        the block's ``sum softplus(-m)``."""
        _logistic_block(M, SP, W, nt)
        for t in range(nt):
            loss += SP[t]
        return loss

    # ------------------------------------------------------------------ per-model block kernels
    # Each fills, for the rows of data points ``i0 .. i1 - 1`` (``K`` pairs each for CNCE,
    # ``K + 1`` points for NCE), the margins ``M`` and -- always where the margin needs them,
    # else when ``want`` -- the rows' features ``F[q] = d m / d psi_q``. Everything else of a
    # pass (block loop, logistic terms, loss, gradient, Gauss-Newton sums) is :func:`_pass`.
    # ``prm`` holds the simulation's constants: ``[eps, ...]`` for CNCE, :func:`nce_params`
    # for NCE, the model's own constants (the ring's radius) last.

    @njit(inline="always", **_JIT)
    def _project_row(th, r, D, Rows, t0, nt, out):
        """``out[t] = b_r . Rows[:, t0 + t]`` for ``t < nt``, with ``b_r`` row ``r`` of the
        ``(D, D)`` matrix ``th`` (flat), summed over the columns in order (ICA's projections)."""
        for t in range(nt):
            out[t] = 0.0
        for c in range(D):
            brc = th[r * D + c]
            Rc = Rows[c]
            for t in range(nt):
                out[t] += brc * Rc[t0 + t]

    @njit(inline="always", **_JIT)
    def _fill_block(X, XI, eps, i0, i1, K, XB, Z, M):
        """Lay out the pairs of data points ``i0 .. i1 - 1`` as columns: ``x`` repeated ``K`` times
        in ``XB``, the noise steps ``z = eps xi`` in ``Z``; zero the margins ``M``."""
        D = X.shape[1]
        t = 0
        for i in range(i0, i1):
            for k in range(K):
                for c in range(D):
                    XB[c, t] = X[i, c]
                    Z[c, t] = eps * XI[i, k, c]
                t += 1
        for u in range(t):
            M[u] = 0.0

    @njit(**_JIT_SUM)
    def _block_gauss(X, XI, prm, th, i0, i1, K, a_unused, want, buf):
        """CNCE for the Gaussian (Eq. 15). The pair's features ``f = T(x) - T(y)`` are formed as
        ``c (x_a z_b + z_a x_b + z_a z_b)`` with ``z = eps xi``: no cancellation between ``T(x)``
        and ``T(y)`` (exactly 0 at eps = 0)."""
        XB, Z, M, F = buf[0], buf[1], buf[2], buf[5]
        D = X.shape[1]
        nt = (i1 - i0) * K
        _fill_block(X, XI, prm[0], i0, i1, K, XB, Z, M)
        p = 0
        for u in range(D):
            for v in range(u, D):
                c = 0.5 if u == v else 1.0
                Xa, Xb, Za, Zb = XB[u], XB[v], Z[u], Z[v]
                tp = th[p]
                if want:
                    Fp = F[p]
                    for t in range(nt):
                        Fp[t] = c * (Xa[t] * Zb[t] + Za[t] * Xb[t] + Za[t] * Zb[t])
                    for t in range(nt):
                        M[t] += tp * Fp[t]
                else:  # loss only (the eps heuristic): the same margins, the features not stored
                    for t in range(nt):
                        M[t] += tp * (c * (Xa[t] * Zb[t] + Za[t] * Xb[t] + Za[t] * Zb[t]))
                p += 1

    @njit(**_JIT_SUM)
    def _block_gauss_t(X, ZT, th, i0, i1, K, buf):
        """:func:`_block_gauss` on the noise steps laid out once per simulation, ``ZT[c, i K + k] =
        eps xi[i, k, c]`` (:func:`_noise_t`), read in place (no per-pass transpose). With
        ``v = x + z / 2`` the features are ``f_ab = z_a v_b + z_b v_a`` (``a < b``) and
        ``f_aa = z_a v_a``: the same ``c (x_a z_b + z_a x_b + z_a z_b)``, fewer operations."""
        V, M, F = buf[0], buf[2], buf[5]
        D = X.shape[1]
        nt = (i1 - i0) * K
        t0 = i0 * K
        for c in range(D):
            Vc = V[c]
            Zc = ZT[c, t0:t0 + nt]
            t = 0
            for i in range(i0, i1):
                xc = X[i, c]
                for k in range(K):
                    Vc[t + k] = xc + 0.5 * Zc[t + k]
                t += K
        p = 0
        for u in range(D):
            Za = ZT[u, t0:t0 + nt]
            Va = V[u]
            Fp = F[p]
            tp = th[p]
            if u == 0:
                for t in range(nt):
                    f = Za[t] * Va[t]
                    Fp[t] = f
                    M[t] = tp * f
            else:
                for t in range(nt):
                    f = Za[t] * Va[t]
                    Fp[t] = f
                    M[t] += tp * f
            p += 1
            for v in range(u + 1, D):
                Zb = ZT[v, t0:t0 + nt]
                Vb = V[v]
                Fp = F[p]
                tp = th[p]
                for t in range(nt):
                    f = Za[t] * Vb[t] + Zb[t] * Va[t]
                    Fp[t] = f
                    M[t] += tp * f
                p += 1

    @njit(**_JIT_SUM)
    def _block_ica(X, XI, prm, th, i0, i1, K, a, want, buf):
        """CNCE for ICA (Eq. 16), ``m = a (sum_j |b_j . y| - sum_j |b_j . x|)``. ``b_j . y = b_j . x
        + b_j . z`` with ``z = eps xi``, so that the margin is exactly 0 at eps = 0; features
        ``f_(r, c) = a (sign(b_r . y) y_c - sign(b_r . x) x_c)``."""
        XB, Z, M, SP, F, SG, SX = buf[0], buf[1], buf[2], buf[3], buf[5], buf[6], buf[7]
        D = X.shape[1]
        nt = (i1 - i0) * K
        _fill_block(X, XI, prm[0], i0, i1, K, XB, Z, M)
        for r in range(D):
            Sx = SX[r]
            _project_row(th, r, D, Z, 0, nt, SP)
            # b_r . x once per data point instead of once per pair (the same sum over c; the
            # compiler may contract it differently, so its last bit can differ: measured 2e-16)
            t = 0
            for i in range(i0, i1):
                px = 0.0
                for c in range(D):
                    px += th[r * D + c] * X[i, c]
                for k in range(K):
                    Sx[t + k] = px
                t += K
            if want:  # the signs, for the features (:func:`_grad_ica`)
                Sg = SG[r]
                for t in range(nt):
                    sx = Sx[t]
                    sy = sx + SP[t]
                    M[t] += a * (abs(sy) - abs(sx))
                    Sg[t] = 1.0 if sy > 0.0 else (-1.0 if sy < 0.0 else 0.0)
                    Sx[t] = 1.0 if sx > 0.0 else (-1.0 if sx < 0.0 else 0.0)
            else:
                for t in range(nt):
                    sx = Sx[t]
                    M[t] += a * (abs(sx + SP[t]) - abs(sx))

    @njit(inline="always", **_JIT)
    def _fill_nce(X, XI, prm, i0, i1, K, XB, Z, M, T):
        """NCE's rows for data points ``i0 .. i1 - 1``: the data points (first ``i1 - i0``
        columns of ``XB``), then their ``K`` noise points each, ``y = mu + L xi``; ``Z[0]`` holds
        the label ``s`` (+1 data, -1 noise) and ``Z[1]`` the margin's offset ``-log p_n(x) - log nu``
        or ``log p_n(y) + log nu``, so that ``m = s (log phi(u) + c) + Z[1]``. ``prm`` from
        :func:`nce_params`; ``T (D, B)`` is scratch. Loops run along the rows (vectorised)."""
        D = X.shape[1]
        DD = D * D
        C = prm[D + 2 * DD]
        Sg, Of = Z[0], Z[1]
        nd = i1 - i0
        for j in range(nd):
            for c in range(D):
                XB[c, j] = X[i0 + j, c]
            Sg[j] = 1.0
            Of[j] = C
            M[j] = 0.0
        for r in range(D):  # -log p_n(x) = |Linv (x - mu)|^2 / 2 + const, Linv lower triangular
            for c in range(r + 1):
                lrc, mc, Xc = prm[D + DD + r * D + c], prm[c], XB[c]
                for j in range(nd):
                    M[j] += lrc * (Xc[j] - mc)
            for j in range(nd):
                Of[j] += 0.5 * M[j] * M[j]
                M[j] = 0.0
        t = 0
        for i in range(i0, i1):
            for k in range(K):
                for c in range(D):
                    T[c, t] = XI[i, k, c]
                t += 1
        nn = t
        for j in range(nn):
            Sg[nd + j] = -1.0
            Of[nd + j] = -C
            M[nd + j] = 0.0
        for c in range(D):
            Tc = T[c]
            for j in range(nn):
                Of[nd + j] -= 0.5 * Tc[j] * Tc[j]
        for r in range(D):
            Xr = XB[r]
            mr = prm[r]
            for j in range(nn):
                Xr[nd + j] = mr
            for c in range(r + 1):
                lrc, Tc = prm[D + r * D + c], T[c]
                for j in range(nn):
                    Xr[nd + j] += lrc * Tc[j]

    @njit(**_JIT_SUM)
    def _block_nce_gauss(X, XI, prm, th, i0, i1, K, a_unused, want, buf):
        """NCE for the Gaussian model (Gutmann & Hyvarinen 2012): parameters ``(theta, c)``,
        rows ``m = s (theta . T(u) + c) + offset`` (:func:`_fill_nce`)."""
        XB, Z, M, F = buf[0], buf[1], buf[2], buf[5]
        D = X.shape[1]
        P = th.shape[0]
        nt = (i1 - i0) * (K + 1)
        _fill_nce(X, XI, prm, i0, i1, K, XB, Z, M, buf[7])
        Sg, Of = Z[0], Z[1]
        p = 0
        for u in range(D):
            for v in range(u, D):
                c = -0.5 if u == v else -1.0
                Fp = F[p]
                Xa, Xb = XB[u], XB[v]
                tp = th[p]
                for t in range(nt):
                    fp = c * Sg[t] * Xa[t] * Xb[t]
                    Fp[t] = fp
                    M[t] += tp * fp
                p += 1
        Fc = F[P - 1]
        tc = th[P - 1]
        for t in range(nt):
            Fc[t] = Sg[t]
            M[t] += tc * Sg[t] + Of[t]

    @njit(**_JIT_SUM)
    def _block_nce_ica(X, XI, prm, th, i0, i1, K, a, want, buf):
        """NCE for the ICA model: parameters ``(B, c)``, ``log phi(u) = -a sum_j |b_j . u|``, rows
        ``m = s (log phi(u) + c) + offset`` (:func:`_fill_nce`); features ``f_(r, c) = -a s
        sign(b_r . u) u_c`` and ``f_c = s``."""
        XB, Z, M, F, SG = buf[0], buf[1], buf[2], buf[5], buf[6]
        D = X.shape[1]
        P = th.shape[0]
        nt = (i1 - i0) * (K + 1)
        _fill_nce(X, XI, prm, i0, i1, K, XB, Z, M, buf[7])
        Sgn, Of = Z[0], Z[1]
        for r in range(D):
            Sr = SG[r]
            _project_row(th, r, D, XB, 0, nt, Sr)
            for t in range(nt):
                sr = Sr[t]
                M[t] -= a * Sgn[t] * abs(sr)
                Sr[t] = 1.0 if sr > 0.0 else (-1.0 if sr < 0.0 else 0.0)
        tc = th[P - 1]
        for t in range(nt):
            M[t] += tc * Sgn[t] + Of[t]
        if want:
            for r in range(D):
                Sr = SG[r]
                for c in range(D):
                    Fq = F[r * D + c]
                    Xc = XB[c]
                    for t in range(nt):
                        Fq[t] = -a * Sgn[t] * Sr[t] * Xc[t]
            Fc = F[P - 1]
            for t in range(nt):
                Fc[t] = Sgn[t]

    @njit(**_JIT_SUM)
    def _block_lognormal(X, XI, prm, th, i0, i1, K, a_unused, want, buf):
        """CNCE for the log-normal model (Supp. C, Eq. 62), ``log phi(u) = -theta/2 (log u)^2 - log u``
        for ``u > 0`` and ``C`` otherwise, with the noise of Eq. (13). Where ``x`` and ``y = x + z``
        are both positive the pair's feature and offset are formed from ``d = log y - log x =
        log1p(z / x)``: ``f_theta = d (2 log x + d) / 2``, offset ``d`` (no cancellation as eps -> 0)."""
        M, F = buf[2], buf[5]
        eps = prm[0]
        th0, th1 = th[0], th[1]
        F0, F1 = F[0], F[1]
        t = 0
        for i in range(i0, i1):
            x = X[i, 0]
            lx = math.log(x) if x > 0.0 else 0.0
            for k in range(K):
                z = eps * XI[i, k, 0]
                y = x + z
                if x > 0.0:
                    if y > 0.0:
                        d = math.log1p(z / x)
                        f0, f1, b = 0.5 * d * (2.0 * lx + d), 0.0, d
                    else:
                        f0, f1, b = -0.5 * lx * lx, -1.0, -lx
                elif y > 0.0:
                    ly = math.log(y)
                    f0, f1, b = 0.5 * ly * ly, 1.0, ly
                else:
                    f0, f1, b = 0.0, 0.0, 0.0
                F0[t] = f0
                F1[t] = f1
                M[t] = th0 * f0 + th1 * f1 + b
                t += 1

    @njit(**_JIT_SUM)
    def _block_ring(X, XI, prm, th, i0, i1, K, a_unused, want, buf):
        """CNCE for the ring model (Eq. 17) with known radius ``mu = prm[1]``, noise of Eq. (13)
        with ``eps = prm[0]``: one feature per pair, ``f = ((|y| - mu)^2 - (|x| - mu)^2) / 2``,
        formed as ``(|y| - |x|) (|y| + |x| - 2 mu) / 2`` with ``|y| - |x| = (2 x.z + z.z) / (|y| + |x|)``
        (no cancellation as eps -> 0)."""
        XB, Z, M, SP, W, F, RX = buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6]
        eps, mu = prm[0], prm[1]
        D = X.shape[1]
        nt = (i1 - i0) * K
        F0 = F[0]
        XZ, ZZ, XX = RX[0], SP, W  # scratch rows (SP and W are overwritten by the logistic later)
        th0 = th[0]
        _fill_block(X, XI, eps, i0, i1, K, XB, Z, M)
        for t in range(nt):
            XZ[t] = 0.0
            ZZ[t] = 0.0
            XX[t] = 0.0
        for c in range(D):
            Xc, Zc = XB[c], Z[c]
            for t in range(nt):
                XZ[t] += Xc[t] * Zc[t]
                ZZ[t] += Zc[t] * Zc[t]
                XX[t] += Xc[t] * Xc[t]
        for t in range(nt):
            rx = math.sqrt(XX[t])
            ry = math.sqrt(XX[t] + 2.0 * XZ[t] + ZZ[t])
            den = rx + ry
            dr = (2.0 * XZ[t] + ZZ[t]) / den if den > 0.0 else 0.0
            f = 0.5 * dr * (rx + ry - 2.0 * mu)
            F0[t] = f
            M[t] = th0 * f

    @njit(**_JIT_SUM)
    def _block_nce_ring(X, XI, prm, th, i0, i1, K, a_unused, want, buf):
        """NCE for the ring model: parameters ``(gamma, c)``, ``mu`` the last entry of ``prm``
        (after :func:`nce_params`), rows as :func:`_block_nce_gauss`."""
        XB, Z, M, F = buf[0], buf[1], buf[2], buf[5]
        D = X.shape[1]
        mu = prm[prm.shape[0] - 1]
        nt = (i1 - i0) * (K + 1)
        _fill_nce(X, XI, prm, i0, i1, K, XB, Z, M, buf[7])
        Sg, Of = Z[0], Z[1]
        F0, F1 = F[0], F[1]
        th0, th1 = th[0], th[1]
        for c in range(D):
            Xc = XB[c]
            for t in range(nt):
                M[t] += Xc[t] * Xc[t]
        for t in range(nt):
            dr = math.sqrt(M[t]) - mu
            f = -0.5 * Sg[t] * dr * dr
            F0[t] = f
            F1[t] = Sg[t]
            M[t] = th0 * f + th1 * Sg[t] + Of[t]

    @njit(**_JIT_SUM)
    def _grad_ica(D, nt, a, W, g, buf):
        """ICA's features ``f_(r, c) = a (sign(b_r . y) y_c - sign(b_r . x) x_c)`` formed together
        with the gradient sums (one sweep; the block kernel left the signs in ``SG``, ``SX``)."""
        XB, Z, F, SG, SX = buf[0], buf[1], buf[5], buf[6], buf[7]
        for r in range(D):
            Sg, Sx = SG[r], SX[r]
            for c in range(D):
                q = r * D + c
                Fq = F[q]
                Xc, Zc = XB[c], Z[c]
                acc = 0.0
                for t in range(nt):
                    fq = a * (Sg[t] * (Xc[t] + Zc[t]) - Sx[t] * Xc[t])
                    Fq[t] = fq
                    acc += W[t] * fq
                g[q] -= acc

    @njit(inline="always", **_JIT)
    def _block(kind, X, XI, prm, th, i0, i1, K, a, want, buf):
        """The block kernel of problem ``kind``."""
        if kind == GAUSSIAN:
            _block_gauss(X, XI, prm, th, i0, i1, K, a, want, buf)
        elif kind == ICA:
            _block_ica(X, XI, prm, th, i0, i1, K, a, want, buf)
        elif kind == NCE_GAUSSIAN:
            _block_nce_gauss(X, XI, prm, th, i0, i1, K, a, want, buf)
        elif kind == NCE_ICA:
            _block_nce_ica(X, XI, prm, th, i0, i1, K, a, want, buf)
        elif kind == LOGNORMAL:
            _block_lognormal(X, XI, prm, th, i0, i1, K, a, want, buf)
        elif kind == RING:
            _block_ring(X, XI, prm, th, i0, i1, K, a, want, buf)
        else:
            _block_nce_ring(X, XI, prm, th, i0, i1, K, a, want, buf)

    # ------------------------------------------------------------------ the one pass driver
    @njit(**_JIT_SUM)
    def _drive(kind, X, XI, prm, th, n_data, K, a, want, hb, g, H, buf, zt):
        """One pass of problem ``kind`` over the first ``n_data`` data points, in blocks of whole
        data points: the block kernel (:func:`_block`) forms margins and features, then the
        block's logistic terms add to the loss and (``want``) ``g = -sum w f`` and, in every
        ``hb``-th block, ``H = sum w (1 - w) f f^T`` (unscaled, upper triangle). Returns the
        summed ``softplus(-m)`` and the number of rows in Gauss-Newton blocks. ``zt (D, >= N K)``
        holds the Gaussian's noise steps laid out once (:func:`_noise_t`); 0 columns: not laid out.

        ``kind`` is a compile-time constant (``literally``): numba compiles this driver once per
        problem with the other problems' branches folded away, so each compiled pass is as
        tight as a hand-written one (with a run-time ``kind`` the ICA pass ran 1.7x slower,
        measured). :func:`_pass` calls it with ``kind`` a constant."""
        literally(kind)
        M, SP, W, F = buf[2], buf[3], buf[4], buf[5]
        P = th.shape[0]
        R = _rows(kind, K)
        nb = M.shape[0] // R
        tiled = kind == GAUSSIAN and zt.shape[1] >= n_data * K
        loss = 0.0
        n_h = 0
        if want:
            g[:] = 0.0
            H[:, :] = 0.0
        blk = 0
        for i0 in range(0, n_data, nb):
            i1 = min(n_data, i0 + nb)
            nt = (i1 - i0) * R
            if tiled:
                _block_gauss_t(X, zt, th, i0, i1, K, buf)
            else:
                _block(kind, X, XI, prm, th, i0, i1, K, a, want, buf)
            loss = _block_loss(M, SP, W, nt, loss)
            if want:
                if kind == ICA:  # features and gradient in one sweep
                    _grad_ica(X.shape[1], nt, a, W, g, buf)
                else:
                    _grad_block(W, F, P, nt, g)
                if blk % hb == 0:
                    n_h += nt
                    if P >= 3:  # 3 x 3 tiles (1.5-2.3x the entry-wise sums at P = 16-21)
                        _gn_block_v(W, F, SP, buf[1], H, P, nt)
                    else:
                        _gn_block(W, F, SP, H, P, nt)
            blk += 1
        return loss, n_h

    @njit(**_JIT)
    def _pass(kind, X, XI, prm, th, n_data, K, a, want, hb, g, H, buf, zt):
        """:func:`_drive` for a run-time ``kind``: one compiled driver per problem, so that the
        solver around it (:func:`_newton_one`) is compiled once for all problems.

        Callers pass ``want`` and ``hb`` as run-time values (``np.bool_(False)``, ``np.int64(1)``),
        never as bare constants: numba compiles a callee once per *literal* argument, and this
        function holds all seven drivers, so each constant flag compiled them all again (14
        drivers, two of this function, three of :func:`_full`: twice the compile time). The
        flags choose branches outside the inner loops."""
        if kind == GAUSSIAN:
            return _drive(GAUSSIAN, X, XI, prm, th, n_data, K, a, want, hb, g, H, buf, zt)
        if kind == ICA:
            return _drive(ICA, X, XI, prm, th, n_data, K, a, want, hb, g, H, buf, zt)
        if kind == NCE_GAUSSIAN:
            return _drive(NCE_GAUSSIAN, X, XI, prm, th, n_data, K, a, want, hb, g, H, buf, zt)
        if kind == NCE_ICA:
            return _drive(NCE_ICA, X, XI, prm, th, n_data, K, a, want, hb, g, H, buf, zt)
        if kind == LOGNORMAL:
            return _drive(LOGNORMAL, X, XI, prm, th, n_data, K, a, want, hb, g, H, buf, zt)
        if kind == RING:
            return _drive(RING, X, XI, prm, th, n_data, K, a, want, hb, g, H, buf, zt)
        return _drive(NCE_RING, X, XI, prm, th, n_data, K, a, want, hb, g, H, buf, zt)

    @njit(**_JIT)
    def _noise_t(XI, eps, n_data, ZT):
        """``ZT[c, i K + k] = eps XI[i, k, c]`` for the first ``n_data`` points (see :func:`_block_gauss_t`)."""
        K = XI.shape[1]
        D = XI.shape[2]
        for i in range(n_data):
            for k in range(K):
                t = i * K + k
                for c in range(D):
                    ZT[c, t] = eps * XI[i, k, c]

    @njit(**_JIT_ALL)
    def _nce_c0_all(kind, X, XI, prm, theta, a, n0, block_pairs, out, lo, hi):
        """NCE's start for ``c``: ``-log`` of the importance-sampling estimate of ``Z(theta)`` from the
        noise points of the first ``n0`` data points, ``-(logsumexp(log phi(y) - log p_n(y)) - log n)``."""
        D = X.shape[2]
        K = XI.shape[2]
        P = theta.shape[1]
        log_nu = math.log(K)
        for s in range(lo, hi):
            buf = _buffers(K + 1, D, P, block_pairs)
            XB, Z, M = buf[0], buf[1], buf[2]
            th = theta[s]
            nb = M.shape[0] // (K + 1)
            mx = -np.inf
            acc = 0.0
            for i0 in range(0, n0, nb):
                i1 = min(n0, i0 + nb)
                _fill_nce(X[s], XI[s], prm[s], i0, i1, K, XB, Z, M, buf[7])
                nd = i1 - i0
                for t in range(nd, nd + nd * K):
                    lp = 0.0
                    if kind == NCE_GAUSSIAN:
                        p = 0
                        for u in range(D):
                            for v in range(u, D):
                                lp -= (0.5 if u == v else 1.0) * th[p] * XB[u, t] * XB[v, t]
                                p += 1
                    elif kind == NCE_RING:
                        rr = 0.0
                        for c in range(D):
                            rr += XB[c, t] * XB[c, t]
                        dr = math.sqrt(rr) - prm[s, prm.shape[1] - 1]
                        lp = -0.5 * th[0] * dr * dr
                    else:
                        for r in range(D):
                            pr = 0.0
                            for c in range(D):
                                pr += th[r * D + c] * XB[c, t]
                            lp -= a * abs(pr)
                    val = lp - (Z[1, t] - log_nu)
                    if val > mx:
                        acc = acc * math.exp(mx - val) + 1.0
                        mx = val
                    else:
                        acc += math.exp(val - mx)
            c0 = -(mx + math.log(acc) - math.log(n0 * K))
            out[s] = c0 if np.isfinite(c0) else 0.0

    @njit(**_JIT_SUM)
    def _gn_block_v(W, F, V, VF, H, P, nt):
        """:func:`_gn_block` in 3 x 3 tiles of ``H`` (nine sums per sweep over the pairs, six loads
        for nine multiply-adds) with ``v_t f_q`` formed once per row; the last ``P mod 3`` columns
        one entry at a time."""
        for t in range(nt):
            V[t] = W[t] * (1.0 - W[t])
        P3 = P - P % 3
        for r in range(P3, P):
            Fr = F[r]
            for q in range(r + 1):
                Fq = F[q]
                acc = 0.0
                for t in range(nt):
                    acc += V[t] * Fq[t] * Fr[t]
                H[q, r] += acc
        for q0 in range(0, P3, 3):
            A0, A1, A2 = VF[0], VF[1], VF[2]
            Fa, Fb, Fc = F[q0], F[q0 + 1], F[q0 + 2]
            for t in range(nt):
                A0[t] = V[t] * Fa[t]
                A1[t] = V[t] * Fb[t]
                A2[t] = V[t] * Fc[t]
            for r0 in range(q0, P3, 3):
                B0, B1, B2 = F[r0], F[r0 + 1], F[r0 + 2]
                s00 = s01 = s02 = s10 = s11 = s12 = s20 = s21 = s22 = 0.0
                for t in range(nt):
                    a0, a1, a2 = A0[t], A1[t], A2[t]
                    b0, b1, b2 = B0[t], B1[t], B2[t]
                    s00 += a0 * b0
                    s01 += a0 * b1
                    s02 += a0 * b2
                    s10 += a1 * b0
                    s11 += a1 * b1
                    s12 += a1 * b2
                    s20 += a2 * b0
                    s21 += a2 * b1
                    s22 += a2 * b2
                H[q0, r0] += s00
                H[q0, r0 + 1] += s01
                H[q0, r0 + 2] += s02
                H[q0 + 1, r0 + 1] += s11
                H[q0 + 1, r0 + 2] += s12
                H[q0 + 2, r0 + 2] += s22
                if r0 > q0:  # off-diagonal tile: all nine are upper-triangle entries
                    H[q0 + 1, r0] += s10
                    H[q0 + 2, r0] += s20
                    H[q0 + 2, r0 + 1] += s21

    @njit(**_JIT)
    def _is_nce(kind):
        return kind == NCE_GAUSSIAN or kind == NCE_ICA or kind == NCE_RING

    @njit(**_JIT)
    def _rows(kind, K):
        """Rows (point pairs for CNCE, points for NCE) per data point."""
        return K + 1 if _is_nce(kind) else K

    @njit(**_JIT)
    def _scale(kind, n_data, K):
        """The loss's normalisation: ``2 / (N K)`` for CNCE (Eq. 8), ``1 / N`` for NCE."""
        return 1.0 / n_data if _is_nce(kind) else 2.0 / (n_data * K)

    @njit(**_JIT)
    def _buffers(R, D, P, block_pairs):
        """Per-thread scratch: ``XB, Z (D, B), M, SP, W (B,), F (P, B), SG, SX (D, B)`` with
        ``B = R * max(1, block_pairs // R)`` rows per block (whole data points, ``R`` rows each:
        :func:`_rows`). ``Z`` has at least 3 rows (NCE keeps the label and offset there; the
        Gauss-Newton tiles, :func:`_gn_block_v`, use it as scratch)."""
        B = R * max(1, block_pairs // R)
        return (np.empty((D, B)), np.empty((max(D, 3), B)), np.empty(B), np.empty(B), np.empty(B), np.empty((P, B)),
                np.empty((D, B)), np.empty((D, B)))

    @njit(**_JIT)
    def _full(kind, X, XI, prm, th, n_data, K, a, hess_points, g, H, buf, want_h, zt):
        """Loss, gradient and (if ``want_h``; else ``H`` is left alone) the Gauss-Newton matrix
        from about ``hess_points`` pairs (whole blocks), scaled to the problem's ``2 / (N K)``."""
        n = n_data * _rows(kind, K)
        if want_h:
            hb = 1 if hess_points <= 0 else max(1, n // hess_points)
        else:
            hb = 1 << 62
        P = th.shape[0]
        Hw = H if want_h else np.empty((P, P))
        loss, n_h = _pass(kind, X, XI, prm, th, n_data, K, a, np.bool_(True), hb, g, Hw, buf, zt)
        scale = _scale(kind, n_data, K)
        for q in range(P):
            g[q] *= scale
        if want_h:
            hs = scale * n / n_h
            for q in range(P):
                for r in range(q, P):
                    H[q, r] *= hs
                    H[r, q] = H[q, r]
        return loss * scale

    @njit(**_JIT)
    def _damped_solve(H, g, d, L):
        """``(H + lam I) d = -g`` by Cholesky, raising ``lam`` until it succeeds (as
        optim._damped_solve, with NewtonSettings' damping, damping_growth, damping_tries)."""
        P = g.shape[0]
        sc = 0.0
        for q in range(P):
            sc += abs(H[q, q])
        sc = max(sc / P, TINY)
        lam = _DAMPING * sc
        for _ in range(_DAMPING_TRIES):
            ok = True
            for q in range(P):
                for r in range(q + 1):
                    s = H[q, r] + (lam if q == r else 0.0)
                    for t in range(r):
                        s -= L[q, t] * L[r, t]
                    if q == r:
                        if s <= 0.0 or not np.isfinite(s):
                            ok = False
                            break
                        L[q, q] = math.sqrt(s)
                    else:
                        L[q, r] = s / L[r, r]
                if not ok:
                    break
            if ok:
                for q in range(P):  # L z = -g
                    s = -g[q]
                    for t in range(q):
                        s -= L[q, t] * d[t]
                    d[q] = s / L[q, q]
                for q in range(P - 1, -1, -1):  # L^T d = z
                    s = d[q]
                    for t in range(q + 1, P):
                        s -= L[t, q] * d[t]
                    d[q] = s / L[q, q]
                return
            lam *= _DAMPING_GROWTH
        for q in range(P):
            d[q] = -g[q]

    @njit(**_JIT)
    def _newton_one(kind, X, XI, prm, theta, n_data, K, a, hess_points, max_iter, tol, ftol, patience, c1, max_halvings,
                    buf, reuse_h, cnt, Hio, h_in, zt, h_cost, alpha_grow):
        """Solve one problem on its first ``n_data`` data points; ``theta`` is updated in place.
        Returns ``(loss, max |grad|, iterations, converged)``.

        ``reuse_h``: keep the Gauss-Newton matrix of the previous iteration (skip its
        accumulation, the most expensive part of a pass) while the last step was a full step
        and the loss fell by 0.5-1.5 times the decrease the quadratic model predicted; the
        matrix only sets the direction, so the minimiser is the same (used for the Gaussian).

        ``Hio`` (optional, ``(P, P)``): receives the last Gauss-Newton matrix; with ``h_in`` it also
        supplies the first one (the previous stage's, at a nearby point), so that the first pass
        forms only the loss and gradient and the first trial step forms the matrix anew (from
        ``hess_points`` pairs) where the step lands.

        ``h_cost > 0`` (a matrix from all pairs; the cost of forming it in gradient passes): also
        form the matrix anew at the next trial point when that is predicted to take fewer passes
        to ``tol``. Model (measured on the Gaussian; NewtonSettings' ``h_quadratic``, ``h_linear``,
        ``h_horizon``): with the matrix formed where the decrement was ``d_h``, the next decrement
        is ``2 d_h^2`` and each later one ``10 d_h`` times the previous one (linear convergence,
        the matrix from a point too far away), over at most 30 passes.

        ``cnt`` (3,) accumulates the passes over the data, weighted by the share of the data
        they read (``n_data / N``): loss only, loss and gradient, and with the Gauss-Newton matrix."""
        P = theta.shape[0]
        w = n_data / X.shape[0]
        g = np.empty(P)
        H = np.empty((P, P))
        g2 = np.empty(P)
        H2 = np.empty((P, P))
        d = np.empty(P)
        L = np.zeros((P, P))
        th_new = np.empty(P)
        scale = _scale(kind, n_data, K)
        if Hio is not None and h_in:
            loss = _full(kind, X, XI, prm, theta, n_data, K, a, hess_points, g, H, buf, np.bool_(False), zt)
            cnt[1] += w
            H[:, :] = Hio
        else:
            loss = _full(kind, X, XI, prm, theta, n_data, K, a, hess_points, g, H, buf, np.bool_(True), zt)
            cnt[2] += w
        alpha0 = 1.0
        quiet = 0
        it = 0
        converged = False
        want_h = True
        first_full = True
        h_new = not (Hio is not None and h_in)  # the matrix was formed at the current point
        dec_h = 0.0
        while it < max_iter:
            _damped_solve(H, g, d, L)
            slope = 0.0
            for q in range(P):
                slope += g[q] * d[q]
            dec = -0.5 * slope
            lim = tol * max(1.0, abs(loss))
            if dec <= lim:
                converged = True
                break
            if h_new:
                dec_h = dec
            if h_cost > 0.0 and not want_h and dec_h > 0.0:
                nxt = _H_QUADRATIC * dec * dec if h_new else _H_LINEAR * dec_h * dec
                m_stale = 1  # passes to lim keeping the matrix
                dd = nxt
                while dd > lim and m_stale < _H_HORIZON:
                    dd *= _H_LINEAR * dec_h
                    m_stale += 1
                m_fresh = 1  # forming it anew at the next point
                if nxt > lim:
                    dd = _H_QUADRATIC * nxt * nxt
                    m_fresh = 2
                    while dd > lim and m_fresh < _H_HORIZON:
                        dd *= _H_LINEAR * nxt
                        m_fresh += 1
                want_h = m_fresh + h_cost < m_stale
            alpha = alpha0
            accepted = False
            have_full = False
            loss_new = 0.0
            for h in range(max_halvings):
                for q in range(P):
                    th_new[q] = theta[q] + alpha * d[q]
                if h == 0 and first_full:
                    loss_new = _full(kind, X, XI, prm, th_new, n_data, K, a, hess_points, g2, H2, buf, want_h, zt)
                    cnt[2 if want_h else 1] += w
                    have_full = True
                else:
                    loss_new = scale * _pass(kind, X, XI, prm, th_new, n_data, K, a, np.bool_(False), np.int64(1), g2,
                                             H2, buf, zt)[0]
                    cnt[0] += w
                    have_full = False
                if np.isfinite(loss_new) and loss_new <= loss + c1 * alpha * slope:
                    accepted = True
                    break
                if have_full and dec <= _ROUNDOFF_TOL * max(1.0, abs(loss)):
                    # the decrease is below the round-off of the loss sum, so the Armijo test is
                    # noise: take the full step if it shrinks the gradient (else stop: converged)
                    g_old = 0.0
                    g_new = 0.0
                    for q in range(P):
                        g_old += g[q] * g[q]
                        g_new += g2[q] * g2[q]
                    accepted = np.isfinite(loss_new) and g_new < g_old
                    break
                # next trial: the minimiser of the quadratic through loss, slope and the
                # rejected trial, kept within [0.1, 0.5] times the step (safeguarded backtracking)
                curv = loss_new - loss - slope * alpha
                nxt = _SHRINK_MAX * alpha
                if np.isfinite(loss_new) and curv > 0.0:
                    nxt = -slope * alpha * alpha / (2.0 * curv)
                    nxt = min(max(nxt, _SHRINK_MIN * alpha), _SHRINK_MAX * alpha)
                alpha = nxt
            it += 1
            # evaluate gradient and Gauss-Newton matrix with the first trial step only while
            # first trials are being accepted (ICA often halves; then those passes are wasted)
            first_full = accepted and alpha == alpha0
            if not accepted:
                converged = dec <= _STALL_TOL * max(1.0, abs(loss))
                break
            if not have_full:
                want_h = True
                loss_new = _full(kind, X, XI, prm, th_new, n_data, K, a, hess_points, g2, H2, buf, np.bool_(True), zt)
                cnt[2] += w
            rho = (loss - loss_new) / dec if dec > 0.0 else 1.0
            used_h = want_h
            want_h = not (reuse_h and alpha == 1.0 and _REUSE_RHO_LO <= rho <= _REUSE_RHO_HI)
            rel = (loss - loss_new) / max(1.0, abs(loss))
            quiet = quiet + 1 if rel < ftol else 0
            theta[:] = th_new
            loss = loss_new
            g[:] = g2
            if used_h:
                H[:, :] = H2
            h_new = used_h
            alpha0 = min(1.0, alpha_grow * alpha)
            if quiet >= patience:
                converged = True
                break
        if Hio is not None:
            Hio[:, :] = H
        gmax = 0.0
        for q in range(P):
            gmax = max(gmax, abs(g[q]))
        return loss, gmax, it, converged

    @njit(**_JIT_ALL)
    def _newton_all(kind, X, XI, prm, theta, stages, a, hess_points, block_pairs, max_iter, tol, stage_tol, ftol,
                    patience, c1, max_halvings, reuse_h, init_loss, loss, gmax, n_iter, conv, passes, hess_last,
                    carry_h, noise_t, h_cost, alpha_grow, lo, hi):
        N, D = X.shape[1], X.shape[2]
        K = XI.shape[2]
        P = theta.shape[1]
        for s in range(lo, hi):
            buf = _buffers(_rows(kind, K), D, P, block_pairs)
            g0 = np.empty(P)
            H0 = np.empty((P, P))
            th = theta[s].copy()
            Hc = np.empty((P, P))
            # the Gaussian's noise steps laid out once (D x N K), read in place by every pass
            zt = np.empty((D, N * K if noise_t and kind == 0 else 0))
            if zt.shape[1] > 0:
                _noise_t(XI[s], prm[s, 0], N, zt)
            init_loss[s] = _scale(kind, N, K) * _pass(kind, X[s], XI[s], prm[s], th, N, K, a, np.bool_(False),
                                                      np.int64(1), g0, H0, buf, zt)[0]
            passes[s, 0] += 1.0
            for st in range(stages.shape[0]):
                last = st == stages.shape[0] - 1
                hp = hess_last if last and hess_last >= 0 else hess_points
                l, gm, it, cv = _newton_one(kind, X[s], XI[s], prm[s], th, stages[st], K, a, hp, max_iter,
                                            tol if last else stage_tol, ftol, patience, c1, max_halvings, buf, reuse_h,
                                            passes[s], Hc, carry_h and st > 0, zt, h_cost if last and hp == 0 else 0.0,
                                            alpha_grow)
                if last:
                    loss[s] = l
                    gmax[s] = gm
                    n_iter[s] = it
                    conv[s] = cv
            theta[s, :] = th

    @njit(**_JIT_ALL)
    def _loss_all(kind, X, XI, prm, theta, a, block_pairs, sims, n_data, out, lo, hi):
        """``out[j]`` = the loss of simulation ``sims[j]`` on its first ``n_data`` data points (``j`` in ``lo..hi-1``)."""
        D = X.shape[2]
        K = XI.shape[2]
        P = theta.shape[1]
        for j in range(lo, hi):
            s = sims[j]
            buf = _buffers(_rows(kind, K), D, P, block_pairs)
            out[j] = _scale(kind, n_data, K) * _pass(kind, X[s], XI[s], prm[s], theta[s].copy(), n_data, K, a,
                                                     np.bool_(False), np.int64(1), np.empty(P), np.empty((P, P)), buf,
                                                     np.empty((D, 0)))[0]


    @njit(**_JIT)
    def _ica_mle_pass(XT, th, a, want, g, S):
        """ICA negative log-likelihood without its ``-log|det B|`` term, ``a mean_n sum_j |b_j . x_n|``,
        and (``want``) its gradient ``a mean_n sign(B x_n) x_n^T`` into ``g``. ``XT`` is ``(D, N)``.

        ``S`` is ``(P + 2, L)`` scratch: row 0 holds one block's projections, row 1 and rows 2..
        running sums of the loss and gradient per lane ``t mod L``, added up in a fixed order at
        the end. The sums are therefore the same whatever vector width the compiler picks (no
        fast-math: with reassociation the L-BFGS path of this non-smooth loss, which amplifies
        the last bit, depended on how the kernel was compiled: a freshly compiled kernel and
        the same kernel loaded from numba's cache ended at different estimates)."""
        D, N = XT.shape
        L = S.shape[1]
        Z = S[0]
        R = S[1]
        R[:] = 0.0
        if want:
            S[2:, :] = 0.0
        for t0 in range(0, N, L):
            nt = min(L, N - t0)
            for r in range(D):
                _project_row(th, r, D, XT, t0, nt, Z)
                for t in range(nt):
                    R[t] += abs(Z[t])
                if want:
                    for t in range(nt):
                        Z[t] = 1.0 if Z[t] > 0.0 else (-1.0 if Z[t] < 0.0 else 0.0)
                    for c in range(D):
                        G = S[2 + r * D + c]
                        Xc = XT[c]
                        for t in range(nt):
                            G[t] += Z[t] * Xc[t0 + t]
        total = 0.0
        for t in range(L):
            total += R[t]
        if want:
            for q in range(g.shape[0]):
                acc = 0.0
                G = S[2 + q]
                for t in range(L):
                    acc += G[t]
                g[q] = acc * (a / N)
        return a * total / N

    @njit(**_JIT)
    def _ica_mle_eval(XT, th, a, want, g, S, Bm, const):
        """Full ICA negative log-likelihood (mean over points) and its gradient."""
        D = XT.shape[0]
        for r in range(D):
            for c in range(D):
                Bm[r, c] = th[r * D + c]
        sign, logdet = np.linalg.slogdet(Bm)
        if sign == 0.0 or not np.isfinite(logdet):
            return np.inf
        f = _ica_mle_pass(XT, th, a, want, g, S) - logdet + const
        if want:
            Binv = np.linalg.inv(Bm)
            for r in range(D):
                for c in range(D):
                    g[r * D + c] -= Binv[c, r]  # d(-log|det B|)/dB = -B^{-T}
        return f

    @njit(**_JIT)
    def _ica_mle_lbfgs(XT, theta, a, const, max_iter, history, gtol, ftol, patience, c1, max_halvings, stall_gtol,
                       curvature_tol, shrink_min, shrink_max):
        """Batched-free L-BFGS of :func:`cnce.optim.lbfgs` for one ICA likelihood (same
        two-loop recursion, safeguarded Armijo backtracking from the unit step, stopping rules).
        Updates ``theta`` in place; returns ``(loss, init_loss, max |grad|, iterations, converged)``."""
        D = XT.shape[0]
        P = theta.shape[0]
        S = np.empty((P + 2, 256))
        Bm = np.empty((D, D))
        g = np.empty(P)
        g_new = np.empty(P)
        th_new = np.empty(P)
        d = np.empty(P)
        q = np.empty(P)
        al = np.empty(history)
        sh = np.zeros((history, P))
        yh = np.zeros((history, P))
        rho = np.zeros(history)
        n_hist = 0
        head = 0  # index of the oldest stored pair
        loss = _ica_mle_eval(XT, theta, a, np.bool_(True), g, S, Bm, const)
        init_loss = loss
        it = 0
        quiet = 0
        converged = False
        while it < max_iter:
            gmax = 0.0
            for k in range(P):
                gmax = max(gmax, abs(g[k]))
            if gmax < gtol:
                converged = True
                break
            for k in range(P):
                q[k] = g[k]
            for j in range(n_hist - 1, -1, -1):  # newest to oldest
                idx = (head + j) % history
                s_q = 0.0
                for k in range(P):
                    s_q += sh[idx, k] * q[k]
                al[j] = rho[idx] * s_q
                for k in range(P):
                    q[k] -= al[j] * yh[idx, k]
            if n_hist > 0:
                idx = (head + n_hist - 1) % history
                sy = 0.0
                yy = 0.0
                for k in range(P):
                    sy += sh[idx, k] * yh[idx, k]
                    yy += yh[idx, k] * yh[idx, k]
                gamma = sy / yy if yy > 0.0 else 1.0
            else:
                gn = 0.0
                for k in range(P):
                    gn += g[k] * g[k]
                gamma = 1.0 / max(np.sqrt(gn), TINY)
            for k in range(P):
                q[k] *= gamma
            for j in range(n_hist):  # oldest to newest
                idx = (head + j) % history
                b = 0.0
                for k in range(P):
                    b += yh[idx, k] * q[k]
                b *= rho[idx]
                for k in range(P):
                    q[k] += (al[j] - b) * sh[idx, k]
            slope = 0.0
            for k in range(P):
                d[k] = -q[k]
                slope += g[k] * d[k]
            if slope >= 0.0:
                slope = 0.0
                for k in range(P):
                    d[k] = -g[k]
                    slope -= g[k] * g[k]
            alpha = 1.0
            accepted = False
            loss_new = loss
            for h in range(max_halvings):
                for k in range(P):
                    th_new[k] = theta[k] + alpha * d[k]
                loss_new = _ica_mle_eval(XT, th_new, a, np.bool_(False), g_new, S, Bm, const)
                if np.isfinite(loss_new) and loss_new <= loss + c1 * alpha * slope:
                    accepted = True
                    break
                curv = loss_new - loss - slope * alpha
                nxt = shrink_max * alpha
                if np.isfinite(loss_new) and curv > 0.0:
                    nxt = min(max(-slope * alpha * alpha / (2.0 * curv), shrink_min * alpha), shrink_max * alpha)
                alpha = nxt
            if not accepted:
                converged = gmax < stall_gtol
                break
            loss_new = _ica_mle_eval(XT, th_new, a, np.bool_(True), g_new, S, Bm, const)
            sy = 0.0
            ss = 0.0
            yy = 0.0
            for k in range(P):
                sk = th_new[k] - theta[k]
                yk = g_new[k] - g[k]
                sy += sk * yk
                ss += sk * sk
                yy += yk * yk
            if sy > curvature_tol * max(np.sqrt(ss) * np.sqrt(yy), TINY):
                if n_hist < history:
                    idx = (head + n_hist) % history
                    n_hist += 1
                else:
                    idx = head
                    head = (head + 1) % history
                for k in range(P):
                    sh[idx, k] = th_new[k] - theta[k]
                    yh[idx, k] = g_new[k] - g[k]
                rho[idx] = 1.0 / sy
            rel = (loss - loss_new) / max(1.0, abs(loss))
            quiet = quiet + 1 if rel < ftol else 0
            for k in range(P):
                theta[k] = th_new[k]
                g[k] = g_new[k]
            loss = loss_new
            it += 1
            if quiet >= patience:
                converged = True
                break
        gmax = 0.0
        for k in range(P):
            gmax = max(gmax, abs(g[k]))
        return loss, init_loss, gmax, it, converged

    @njit(**_JIT_ALL)
    def _ica_mle_all(X, theta, a, const, max_iter, history, gtol, ftol, patience, c1, max_halvings, stall_gtol,
                     curvature_tol, shrink_min, shrink_max, loss, init_loss, gmax, n_iter, conv, lo, hi):
        for s in range(lo, hi):
            XT = np.ascontiguousarray(X[s].T)
            th = theta[s].copy()
            l, l0, gm, it, cv = _ica_mle_lbfgs(XT, th, a, const, max_iter, history, gtol, ftol, patience, c1,
                                               max_halvings, stall_gtol, curvature_tol, shrink_min, shrink_max)
            theta[s, :] = th
            loss[s] = l
            init_loss[s] = l0
            gmax[s] = gm
            n_iter[s] = it
            conv[s] = cv


def ica_mle_all(X, theta0, settings, *, a, threads: int):
    """Maximum likelihood for the ICA model (Eq. 16 with its normaliser) by L-BFGS, every
    simulation in one call: the algorithm and stopping rules of :func:`cnce.optim.lbfgs`, with
    the same :class:`~cnce.options.LBFGSSettings`."""
    S, N, D = X.shape
    theta = np.array(theta0, dtype=np.float64, order="C", copy=True)
    out = dict(loss=np.empty(S), init_loss=np.empty(S), grad_norm=np.empty(S), n_iter=np.empty(S, np.int64),
               converged=np.empty(S, np.bool_))
    const = 0.5 * D * math.log(2.0)
    st = settings
    _over_sims(_ica_mle_all, S, threads, X, theta, float(a), const, int(st.max_iter), int(st.history),
               float(st.gtol), float(st.ftol), int(st.patience), float(st.c1), int(st.max_halvings),
               float(st.stall_gtol), float(st.curvature_tol), float(st.shrink_min), float(st.shrink_max), out["loss"],
               out["init_loss"], out["grad_norm"], out["n_iter"], out["converged"])
    out["psi"] = theta
    return out


#: at most this many threads: more than the CPUs only slow the fit
_CPUS = os.cpu_count() or 1
_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    """A pool of ``threads`` worker threads, one per process and size (a forked child makes
    its own: the parent's threads do not exist there)."""
    key = (os.getpid(), threads)
    with _POOLS_LOCK:
        if key not in _POOLS:
            _POOLS[key] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"cnce-kernels-{threads}")
        return _POOLS[key]


def _over_sims(kernel, n: int, threads: int, *args) -> None:
    """Run an entry point ``kernel(*args, lo, hi)`` over its ``n`` simulations (or indices):
    in this thread when ``threads`` (an integer >= 1, settled by :func:`cnce.fit`) is 1 or
    ``n`` is 1, else one simulation per task on a pool of ``min(threads, n, CPUs)`` threads
    (the kernels release the GIL; the first free thread takes the next simulation). Every
    simulation is solved by one thread with the same code, so the results do not depend on
    ``threads``."""
    threads = max(1, min(int(threads), n, _CPUS))
    if threads == 1:
        if n > 0:
            kernel(*args, 0, n)
        return
    pool = _pool(threads)
    for f in [pool.submit(kernel, *args, s, s + 1) for s in range(n)]:
        f.result()


def default_stages(N: int, K: int, progressive: bool, min_pairs: int = 2_000) -> np.ndarray:
    """Prefix sizes (data points) of progressive sampling: ``N/16, N/4, N`` where each stage
    keeps at least ``min_pairs`` pairs; just ``[N]`` when off or too small."""
    st = [N]
    if progressive:
        for div in (4, 16):
            nd = N // div
            if nd * K >= min_pairs:
                st.insert(0, nd)
    return np.asarray(st, dtype=np.int64)


def _prm(prm):
    """Per-simulation constants as ``(S, Q)`` float64: ``eps (S,)`` becomes ``(S, 1)``."""
    prm = np.asarray(prm, dtype=np.float64)
    return np.ascontiguousarray(prm[:, None] if prm.ndim == 1 else prm)


def nce_params(mean, chol, kappa: int) -> np.ndarray:
    """NCE's per-simulation constants for the NCE kinds: the noise Gaussian ``N(mean, L L^T)``
    (``mean (S, D)``, lower Cholesky factor ``chol (S, D, D)``) packed as
    ``[mean, L (row-major), L^-1 (row-major), log det L + D/2 log(2 pi) - log nu]``."""
    mean = np.asarray(mean, dtype=np.float64)
    L = np.asarray(chol, dtype=np.float64)
    S, D = mean.shape
    Linv = np.linalg.inv(L)
    Linv = np.tril(Linv)  # exact zeros above the diagonal
    C = np.log(np.diagonal(L, axis1=1, axis2=2)).sum(-1) + 0.5 * D * math.log(2 * math.pi) - math.log(kappa)
    return np.ascontiguousarray(np.concatenate([mean, L.reshape(S, -1), Linv.reshape(S, -1), C[:, None]], 1))


def _block_pairs(block_pairs) -> int:
    """Pairs per block of a loss pass: the fit's ``NewtonSettings.sim_block_pairs`` (what
    :mod:`cnce.backends.compiled` passes), or its default for a direct call."""
    return int(NewtonSettings.sim_block_pairs if block_pairs is None else block_pairs)


def nce_c0(kind, X, XI, prm, theta, *, n_points: int, threads: int, block_pairs: int | None = None, a=0.0):
    """NCE's starting log-normaliser for every simulation (see ``cnce.backends.torch._nce_c0``): from the noise
    points of the first ``ceil(n_points / K)`` data points (all when fewer)."""
    S, N, _ = X.shape
    K = XI.shape[2]
    out = np.empty(S)
    _over_sims(_nce_c0_all, S, threads, kind, X, XI, _prm(prm), np.ascontiguousarray(theta, dtype=np.float64),
               float(a), min(N, -(-int(n_points) // K)), _block_pairs(block_pairs), out)
    return out


def check_compiled_rules(settings) -> None:
    """``ValueError`` naming each field of :data:`cnce.options.COMPILED_RULES` whose value in
    ``settings`` differs from the one the compiled Newton solver is built with (NewtonSettings'
    default; the torch solver reads every value), and for ``roundoff_accept=False`` (the compiled
    solver always applies its round-off rule)."""
    wrong = [f"{f}={getattr(settings, f)!r} (compiled: {getattr(NewtonSettings, f)!r})" for f in COMPILED_RULES
             if getattr(settings, f) != getattr(NewtonSettings, f)]
    if not settings.roundoff_accept:
        wrong.append("roundoff_accept=False (compiled: always True)")
    if wrong:
        raise ValueError("the compiled Newton solver is built with NewtonSettings' defaults of these fields; got "
                         + ", ".join(wrong))


def newton_all(kind, X, XI, prm, theta0, settings, *, threads: int, a=0.0):
    """Fit every simulation: ``X (S, N, D)``, ``XI (S, N, K, D)`` noise base, ``prm`` the
    simulations' constants (``eps (S,)`` for CNCE; :func:`nce_params` for NCE), ``theta0 (S, P)``
    (float64 numpy; for NCE the last parameter is ``c``), ``settings`` a
    :class:`~cnce.options.NewtonSettings` (the fields :func:`cnce.optim.newton` reads mean the
    same here; ``progressive``, ``stage_tol``, ``hess_last``, ``reuse_h``, ``carry_h``,
    ``h_cost``, ``noise_t``, ``sim_block_pairs`` and ``layout_block_pairs`` are the kernels'
    own, documented there).
    Returns a dict of numpy arrays like :class:`cnce.optim.OptimResult`, and ``passes (S, 3)``:
    the passes over the data per simulation (a pass over a progressive stage's share of the
    data counts as that share): loss only (the start and rejected line-search trials), loss and
    gradient, and loss, gradient and Gauss-Newton matrix."""
    st = settings
    check_compiled_rules(st)
    S, N, _ = X.shape
    K = XI.shape[2]
    theta = np.array(theta0, dtype=np.float64, order="C", copy=True)
    out = dict(init_loss=np.empty(S), loss=np.empty(S), grad_norm=np.empty(S), n_iter=np.empty(S, np.int64),
               converged=np.empty(S, np.bool_), passes=np.zeros((S, 3)))
    stages = default_stages(N, K, st.progressive)
    hess_last = st.hess_points if st.hess_last is None else st.hess_last
    _over_sims(_newton_all, S, threads, kind, X, XI, _prm(prm), theta, stages, float(a), int(st.hess_points),
               int(st.block_pairs), int(st.max_iter), float(st.tol), float(st.stage_tol), float(st.ftol),
               int(st.patience), float(st.c1), int(st.max_halvings), bool(st.reuse_h), out["init_loss"], out["loss"],
               out["grad_norm"], out["n_iter"], out["converged"], out["passes"], int(hess_last), bool(st.carry_h),
               bool(st.noise_t), float(st.h_cost), float(st.alpha_grow))
    out["psi"] = theta
    return out


def loss_all(kind, X, XI, prm, theta, *, threads: int, block_pairs: int | None = None, a=0.0, sims=None, n_data=None):
    """The loss of every simulation at ``theta (S, P)`` (for CNCE ``J`` of Eq. 8, what the
    epsilon heuristic evaluates at each candidate eps; ``prm`` as in :func:`newton_all`).
    ``sims``: only these simulations (indices; the result has one entry per index), e.g. those
    the heuristic is still searching for. ``n_data``: the loss of the first ``n_data`` data
    points (with their noise) only, normalised by that number; default all."""
    N = X.shape[1]
    n_data = N if n_data is None else int(n_data)
    if not 1 <= n_data <= N:
        raise ValueError(f"n_data must be in [1, {N}]; got {n_data}")
    sims = np.arange(X.shape[0]) if sims is None else np.ascontiguousarray(sims, dtype=np.int64)
    out = np.empty(sims.shape[0])
    _over_sims(_loss_all, sims.shape[0], threads, kind, X, XI, _prm(prm), np.ascontiguousarray(theta, dtype=np.float64),
               float(a), _block_pairs(block_pairs), sims, n_data, out)
    return out
