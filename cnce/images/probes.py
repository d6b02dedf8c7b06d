"""Probing the trained network: Gabor fits of first-layer features, Gabor-stimulus responses of
third-layer units (space-orientation receptive fields, Sec. 4.2 and Supp. D.3), and the image
patches that drive a unit most (Fig. 6, Supp. D.4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from cnce.images.data import Whitener
from cnce.images.network import ImageNetwork

__all__ = ["gabor", "gabor_jacobian", "fit_gabor", "fit_gabors", "gabor_like", "gabor_summary", "fastica", "GaborProbe",
           "probe_layer", "top_patches"]


def gabor(size: int, x0, y0, theta, freq, phase, sigma, gamma=1.0, amp=1.0) -> np.ndarray:
    """A ``size x size`` Gabor function: a cosine grating of ``freq`` cycles/pixel, orientation
    ``theta`` (direction of the wave vector, radians) and ``phase``, under a Gaussian envelope
    centred at ``(x0, y0)`` with width ``sigma`` along the wave and ``sigma * gamma`` across it.

    Array arguments broadcast; the output has shape ``broadcast_shape + (size, size)``.
    """
    args = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (x0, y0, theta, freq, phase, sigma, gamma, amp)))
    x0, y0, theta, freq, phase, sigma, gamma, amp = (a[..., None, None] for a in args)
    xr, _, env = _gabor_frame(size, x0, y0, theta, sigma, gamma)
    return amp * env * np.cos(2 * np.pi * freq * xr + phase)


def _gabor_frame(size: int, x0, y0, theta, sigma, gamma):
    """The pixel grid in :func:`gabor`'s rotated coordinates ``xr`` (along the wave vector) and
    ``yr`` (across it), and its Gaussian envelope."""
    yy, xx = np.mgrid[0:size, 0:size].astype(float)
    xr = (xx - x0) * np.cos(theta) + (yy - y0) * np.sin(theta)
    yr = -(xx - x0) * np.sin(theta) + (yy - y0) * np.cos(theta)
    env = np.exp(-0.5 * (xr**2 / sigma**2 + yr**2 / (sigma * gamma) ** 2))
    return xr, yr, env


def gabor_jacobian(size: int, p) -> np.ndarray:
    """The derivatives of :func:`gabor` at scalar parameters ``p = (x0, y0, theta, freq, phase,
    sigma, gamma, amp)``: an array ``(size * size, 8)``, one column per parameter, rows in the
    order of ``gabor(size, *p).ravel()``. Analytic: with ``xr, yr`` the rotated coordinates,
    ``env`` the envelope and ``phi = 2 pi freq xr + phase``, the value is ``amp env cos(phi)``."""
    x0, y0, theta, freq, phase, sigma, gamma, amp = (float(v) for v in p)
    xr, yr, env = _gabor_frame(size, x0, y0, theta, sigma, gamma)
    c, s = math.cos(theta), math.sin(theta)
    sy2 = (sigma * gamma) ** 2
    phi = 2 * np.pi * freq * xr + phase
    ec, es = env * np.cos(phi), env * np.sin(phi)
    g_xr = amp * (-ec * xr / sigma**2 - 2 * np.pi * freq * es)  # d value / d xr, at fixed yr
    g_yr = -amp * ec * yr / sy2
    J = np.stack([
        -c * g_xr + s * g_yr,  # x0: d xr = -c, d yr = s
        -s * g_xr - c * g_yr,  # y0: d xr = -s, d yr = -c
        yr * g_xr - xr * g_yr,  # theta: d xr = yr, d yr = -xr
        -amp * es * 2 * np.pi * xr,  # freq
        -amp * es,  # phase
        amp * ec * (xr**2 / sigma**3 + yr**2 / (sigma * sy2)),  # sigma
        amp * ec * yr**2 / (sy2 * gamma),  # gamma
        ec,  # amp
    ], axis=-1)
    return J.reshape(size * size, 8)


@dataclass
class GaborFit:
    """Fitted parameters of one feature and the fraction of its variance the fit explains."""

    x0: float
    y0: float
    theta: float  # orientation of the wave vector, in [0, pi)
    freq: float  # cycles per pixel
    phase: float
    sigma: float
    gamma: float
    amp: float
    r2: float


def fit_gabor(feature: np.ndarray) -> GaborFit:
    """Least-squares fit of :func:`gabor` to one square ``feature``; returns a :class:`GaborFit`.

    The start comes from the feature itself: frequency and orientation from the peak of its
    Fourier amplitude, the centre from its energy-weighted centroid; two phases are tried.
    scipy's trust-region search gets the analytic derivatives (:func:`gabor_jacobian`).
    ``r2`` is the explained variance ``1 - SSE / sum((f - mean f)^2)``.
    """
    from scipy.optimize import least_squares

    f = np.asarray(feature, dtype=float)
    if f.ndim != 2 or f.shape[0] != f.shape[1]:
        raise ValueError(f"feature must be a square 2-D array; got shape {f.shape}")
    n = f.shape[0]
    F = np.abs(np.fft.fft2(f - f.mean()))
    F[0, 0] = 0
    ky, kx = np.unravel_index(np.argmax(F), F.shape)
    fx = (kx if kx <= n // 2 else kx - n) / n
    fy = (ky if ky <= n // 2 else ky - n) / n
    freq0 = max(math.hypot(fx, fy), 1.0 / n)
    theta0 = math.atan2(fy, fx)
    E = f**2 / max((f**2).sum(), 1e-12)
    yy, xx = np.mgrid[0:n, 0:n]
    x0, y0 = float((E * xx).sum()), float((E * yy).sum())
    sig0 = max(2.0, 0.5 / freq0)
    tot = ((f - f.mean()) ** 2).sum()
    best = None
    lower = [-2, -2, -10, 0.5 / n, -10, 1.0, 0.2, -np.inf]
    upper = [n + 1, n + 1, 10, 0.5, 10, n, 5.0, np.inf]
    for ph in (0.0, np.pi / 2):
        p0 = np.clip([x0, y0, theta0, freq0, ph, sig0, 1.0, f.std() * 3 + 1e-9], np.array(lower) + 1e-6, np.array(upper) - 1e-6)

        r = least_squares(lambda p: (gabor(n, *p) - f).ravel(), p0, jac=lambda p: gabor_jacobian(n, p),
                          bounds=(lower, upper), max_nfev=100)
        if best is None or r.cost < best.cost:
            best = r
    x0, y0, th, fr, ph, sg, gm, amp = best.x
    if amp < 0:  # a negative amplitude is a phase shift by pi
        amp, ph = -amp, ph + np.pi
    th = th % (2 * np.pi)
    if th >= np.pi:  # (theta + pi, -phase) is the same Gabor
        th, ph = th - np.pi, -ph
    r2 = 1.0 - 2 * best.cost / tot if tot > 0 else 0.0
    return GaborFit(x0, y0, th, fr, (ph + np.pi) % (2 * np.pi) - np.pi, sg, gm, amp, float(r2))


def fit_gabors(features: np.ndarray) -> dict[str, np.ndarray]:
    """Fit every feature of ``features (K, n, n)``; returns arrays of the fitted parameters."""
    fits = [fit_gabor(f) for f in np.asarray(features)]
    keys = GaborFit.__dataclass_fields__.keys()
    return {k: np.array([getattr(g, k) for g in fits]) for k in keys}


def gabor_like(fits: dict[str, np.ndarray], size: int, r2_min: float = 0.5) -> np.ndarray:
    """Which fitted features count as *localised, oriented* Gabors: the fit explains at least
    ``r2_min`` of the variance, the envelope is narrower than a quarter of the patch
    (``sigma`` and ``sigma * gamma`` at most ``size / 4``) and it holds at least one cycle
    within two standard deviations (``4 sigma freq >= 1``). A smooth blob or a global grating
    can reach a high ``r2`` but fails the last two tests."""
    width = np.maximum(fits["sigma"], fits["sigma"] * fits["gamma"])
    return (fits["r2"] >= r2_min) & (width <= size / 4) & (4 * fits["sigma"] * fits["freq"] >= 1)


def gabor_summary(fits: dict[str, np.ndarray], size: int, r2_min: float = 0.5) -> dict[str, float]:
    """Summary of :func:`fit_gabors` output: the fraction of localised, oriented Gabors
    (:func:`gabor_like`), the median explained variance, and among the Gabor-like features the
    fraction in each of four orientation bins (0, 45, 90 and 135 degrees, +-22.5; the angle of
    the wave vector) and the quartiles of the frequency (cycles/pixel) and envelope width."""
    good = gabor_like(fits, size, r2_min)
    out = {"n": int(good.size), "gabor_like": float(good.mean()), "median_r2": float(np.median(fits["r2"]))}
    if good.any():
        ang = np.degrees(fits["theta"][good]) % 180
        bins = np.floor((ang + 22.5) / 45).astype(int) % 4
        for b, deg in enumerate((0, 45, 90, 135)):
            out[f"orient_{deg}"] = float((bins == b).mean())
        for q in (25, 50, 75):
            out[f"freq_q{q}"] = float(np.percentile(fits["freq"][good], q))
            out[f"sigma_q{q}"] = float(np.percentile(fits["sigma"][good], q))
    return out


def fastica(U: torch.Tensor, K: int, *, iters: int = 200, tol: float = 1e-5, seed: int = 0,
            info: dict | None = None) -> torch.Tensor:
    """Symmetric FastICA (log-cosh contrast) of whitened data ``U (N, D)``: ``K <= D`` filters
    ``(K, D)`` with orthonormal rows in the whitened space, on ``U``'s device.

    A reference for the image model: what a linear sparse-coding method finds in the same
    patches (Hyvarinen et al., 2009). Runs in float64; stops when no row turns by more than
    ``tol`` (``1 - |cos|``) in one iteration, or after ``iters`` iterations. ``info``, when
    given, receives ``iterations`` and the last ``turn`` (``converged`` when below ``tol``).
    """
    U = torch.as_tensor(U, dtype=torch.float64)
    N, D = U.shape
    if not (1 <= K <= D):
        raise ValueError(f"K must be in [1, {D}] for data of dimension {D}; got {K!r}")
    g = torch.Generator().manual_seed(int(seed))
    W = torch.linalg.qr(torch.randn(D, K, generator=g, dtype=torch.float64))[0].T.to(U.device)
    turn, it = float("inf"), 0
    for it in range(1, iters + 1):
        G = torch.tanh(U @ W.T)
        W_new = (G.T @ U) / N - (1 - G**2).mean(0)[:, None] * W
        P, _, Qt = torch.linalg.svd(W_new, full_matrices=False)  # symmetric orthonormalisation
        W_new = P @ Qt
        turn = float((1 - (W_new * W).sum(1).abs()).max())
        W = W_new
        if turn < tol:
            break
    if info is not None:
        info.update(iterations=it, turn=turn, converged=bool(turn < tol), N=N, D=D, K=K)
    return W.float()


@dataclass
class GaborProbe:
    """Gabor stimuli over position, orientation and frequency (Gutmann & Hyvarinen, 2013).

    For each frequency the positions lie on a grid with spacing ``1/freq`` pixels (coarser
    for lower frequencies, whose envelopes are larger); each stimulus is averaged over
    ``n_phase`` phases at the level of the unit responses.
    """

    size: int = 32
    freqs: tuple[float, ...] = (0.25, 0.125, 0.0625)
    n_orient: int = 12
    n_phase: int = 4
    cycles: float = 1.0  # envelope sigma in wavelengths

    def positions(self, freq: float) -> np.ndarray:
        step = 1.0 / freq
        n = max(1, int(round(self.size / step)) - 1)
        centre = (self.size - 1) / 2
        c = centre + (np.arange(n) - (n - 1) / 2) * step
        return np.array([(x, y) for y in c for x in c])

    @property
    def orientations(self) -> np.ndarray:
        return np.arange(self.n_orient) * np.pi / self.n_orient

    def stimuli(self, freq: float) -> np.ndarray:
        """``(n_pos, n_orient, n_phase, size, size)`` stimuli at frequency ``freq``."""
        pos = self.positions(freq)
        th = self.orientations
        ph = np.arange(self.n_phase) * 2 * np.pi / self.n_phase
        P, T, H = np.meshgrid(np.arange(len(pos)), th, ph, indexing="ij")
        return gabor(self.size, pos[P, 0], pos[P, 1], T, freq, H, self.cycles / freq)


def _as_u(patches: np.ndarray, whitener: Whitener) -> torch.Tensor:
    X = torch.as_tensor(patches.reshape(patches.shape[0], -1), dtype=torch.float32)
    X = X - X.mean(1, keepdim=True)  # DC removal, as for data patches
    return whitener.transform(X)


@torch.no_grad()
def probe_layer(net: ImageNetwork, whitener: Whitener, probe: GaborProbe | None = None, *, layer: int = 3) -> list[np.ndarray]:
    """Responses ``z^(layer)`` (pre-threshold) of every unit to the Gabor stimuli of ``probe``.

    Returns one array per probe frequency, of shape ``(K, n_pos, n_orient)`` (phase-averaged).
    """
    probe = probe or GaborProbe(size=int(round(math.sqrt(whitener.V.shape[0]))))
    out = []
    for fr in probe.freqs:
        S = probe.stimuli(fr)
        n_pos, n_or, n_ph = S.shape[:3]
        u = _as_u(S.reshape(-1, probe.size, probe.size), whitener)
        z = _layer_z(net, u, layer).reshape(n_pos, n_or, n_ph, -1).mean(2)
        out.append(z.permute(2, 0, 1).cpu().numpy())
    return out


def _layer_z(net: ImageNetwork, u: torch.Tensor, layer: int) -> torch.Tensor:
    net = net.cpu()
    h = net.layer_input(u, layer)
    return net.layer_output(h, layer)


@torch.no_grad()
def top_patches(net: ImageNetwork, patches: np.ndarray, whitener: Whitener, *, layer: int = 4, k: int = 8,
                chunk: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(K, k)`` of the ``k`` patches in ``patches (n, size*size)`` with the largest
    output of each unit of ``layer``, and those outputs."""
    z = torch.cat([_layer_z(net, _as_u(patches[i:i + chunk], whitener), layer) for i in range(0, len(patches), chunk)])
    val, idx = z.topk(k, dim=0)
    return idx.T.numpy(), val.T.numpy()
