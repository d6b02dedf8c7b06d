"""Probing the trained network: Gabor fits of first-layer features, Gabor-stimulus responses of
third-layer units (space-orientation receptive fields, Sec. 4.2 and Supp. D.3), and the image
patches that drive a unit most (Fig. 6, Supp. D.4).

Two probes: :class:`AuthorsProbe` is the authors' (one phase, 121 orientations, 0.10-0.25
cycles/pixel; :meth:`AuthorsProbe.extended` 0.05-0.45), probed for layers 2-4 at once by
:func:`probe_layers`. :class:`GaborProbe` is the project's earlier probe (phase-averaged, 12
orientations, three octave-spaced frequencies), kept for the page's earlier figures.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from cnce.images.data import Whitener
from cnce.images.network import ImageNetwork
from cnce.constraints import Integer, validate
from cnce.errors import InputError

__all__ = ["gabor", "gabor_jacobian", "fit_gabor", "fit_gabors", "gabor_like", "gabor_summary", "fastica", "GaborProbe",
           "probe_layer", "top_patches", "AUTHORS_FREQS", "EXTENDED_FREQS", "AuthorsProbe", "probe_function", "probe_layers"]


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


# -- the authors' probe (space-orientation receptive fields as their code draws them) ----------

#: Frequencies (cycles/pixel) of the authors' probe: 0.10 to 0.25 in steps of 0.05.
AUTHORS_FREQS = (0.10, 0.15, 0.20, 0.25)
#: The extended range, 0.05 to 0.45 in steps of 0.05: one octave below and almost one above the
#: authors' range, so that multi-scale tuning can show (0.45 lies below the 0.5 Nyquist limit).
EXTENDED_FREQS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45)


def _bandwidth_sigma(freq, b: float):
    """Envelope width (pixels) of a Gabor of half-response spatial-frequency bandwidth ``b``
    octaves: ``sigma = sqrt(ln 2 / 2) (2^b + 1) / (pi freq (2^b - 1))``; ``b = 1.4`` gives
    ``0.416`` wavelengths."""
    return np.sqrt(np.log(2) / 2) * (2**b + 1) / (np.pi * np.asarray(freq, dtype=float) * (2**b - 1))


@dataclass(frozen=True)
class AuthorsProbe:
    """The Gabor probe of the authors' space-orientation receptive fields.

    Values from the authors' public MATLAB code, repository ``ciwanceylan/CNCE-matlab`` (commit
    ``3bd1eecfdc13a6577456726e116d8306df63836e``), folder
    ``matlab/natural_images/bin/visualisation/space_orientation_receptive_fields/``: files
    ``responseSetup.m`` (frequencies 0.1:0.05:0.25, bandwidth ``b = 1.4``, phase ``pi/2``,
    ``M = 120`` steps giving 121 orientations ``(0:M)/M * 2 pi``), ``getRadiusAndDelta.m`` (the
    envelope width ``sigma`` from the bandwidth, and per frequency an ``N x N`` grid of
    locations from ``sigma`` to ``size - sigma`` with ``N = max(2, ceil(size / (2 sigma)))``),
    ``createSmoothLocalGrating.m`` (the stimulus) and ``spaceOrRF.m`` (the loop over
    frequencies, locations and orientations). Re-implemented here from their description; no
    code is copied.

    A stimulus at location ``(x0, y0)``, orientation ``theta`` and frequency ``f`` is, in the
    authors' 1-based pixel coordinates ``X, Y = 1..size``,
    ``sin(2 pi f (sin(theta) X + cos(theta) Y) + pi/2) exp(-|(X, Y) - (x0, y0)|^2 / (2 sigma^2))``
    with ``sigma = 0.416 / f`` (``b = 1.4`` octaves; "about 0.42 wavelength"): the grating's
    phase is fixed to the patch, not to the location. ``theta = 0`` gives horizontal stripes.
    Their code also scales each stimulus affinely to ``[-100, 100]``; the network's input
    preprocessing (per-patch mean removal, as for data patches, then the gain control of Eq. 21)
    makes layers 2-4 blind to that scale and to the sign, so it is left out.

    Because the phase is ``pi/2`` (an even cosine) the stimuli at ``theta`` and ``theta + pi``
    are the same image: of the 121 orientations only ``n_orient = 60`` are distinct, and the
    responses are computed once for each (:func:`probe_layers`). In this class ``orientations``
    are those distinct stimuli's *wave-vector angles* in the project's convention (image
    coordinates, ``y`` down, as in :func:`gabor` and :mod:`cnce.images.measures`): for the
    authors' ``theta`` the wave vector ``(sin theta, cos theta)`` has angle ``pi/2 - theta``.
    :meth:`full_turn` expands responses to the authors' 121 orientations for their drawing.

    ``positions(freq)`` are in 0-based pixel coordinates (the authors' location minus one),
    ordered as their arrays ``resp(x, y, ...)`` flatten in C order: ``x`` slow, ``y`` fast.
    """

    size: int = 32
    freqs: tuple[float, ...] = AUTHORS_FREQS
    bandwidth: float = 1.4  # b, octaves
    steps: int = 120  # M: the orientations (0..M)/M * 2 pi over a full turn
    phase: float = np.pi / 2

    def __post_init__(self):
        validate(self.size, Integer(lo=4), "size")
        if not self.freqs or any(not (0 < f < 0.5) for f in self.freqs):
            raise ValueError(f"freqs must be a non-empty tuple of frequencies in (0, 0.5) cycles/pixel; got {self.freqs!r}")
        note = ", even (theta and theta + pi give the same stimulus)"
        if validate(self.steps, Integer(lo=2), "steps", note=note) % 2:
            raise InputError(f"steps must be an integer >= 2{note}; got {self.steps!r}")
        if not self.bandwidth > 0:
            raise ValueError(f"bandwidth must be > 0 octaves; got {self.bandwidth!r}")

    @classmethod
    def extended(cls, size: int = 32) -> "AuthorsProbe":
        """The authors' probe over :data:`EXTENDED_FREQS` (0.05-0.45 cycles/pixel)."""
        return cls(size=size, freqs=EXTENDED_FREQS)

    def sigma(self, freq: float) -> float:
        """Envelope width in pixels (the radius of the circles in the authors' drawing)."""
        return float(_bandwidth_sigma(freq, self.bandwidth))

    def grid(self, freq: float) -> tuple[int, float]:
        """``(N, delta)``: the grid is ``N x N`` locations ``delta`` pixels apart."""
        r = self.sigma(freq)
        n = max(2, math.ceil(self.size / (2 * r)))
        return n, (self.size - 2 * r) / (n - 1)

    def positions(self, freq: float) -> np.ndarray:
        """``(N * N, 2)`` locations ``(x, y)`` in 0-based pixels, ``x`` varying slowest."""
        n, delta = self.grid(freq)
        c = self.sigma(freq) + delta * np.arange(n) - 1.0
        X, Y = np.meshgrid(c, c, indexing="ij")
        return np.stack([X.ravel(), Y.ravel()], 1)

    @property
    def n_orient(self) -> int:
        """Number of distinct stimuli per location and frequency (half of ``steps``)."""
        return self.steps // 2

    @property
    def theta(self) -> np.ndarray:
        """The authors' ``steps + 1`` orientations ``(0..steps) / steps * 2 pi`` (full turn)."""
        return np.arange(self.steps + 1) * 2 * np.pi / self.steps

    @property
    def orientations(self) -> np.ndarray:
        """Wave-vector angles in ``[0, pi)`` (project convention) of the ``n_orient`` distinct
        stimuli, which are the authors' ``theta[:n_orient]``."""
        return np.mod(np.pi / 2 - self.theta[: self.n_orient], np.pi)

    @property
    def edge_angles(self) -> np.ndarray:
        """Direction of the stripes (the edge a stimulus stands for) in ``[0, pi)``, image
        coordinates: the wave-vector angle plus ``pi/2``."""
        return np.mod(self.orientations + np.pi / 2, np.pi)

    def full_turn(self, resp: np.ndarray) -> np.ndarray:
        """Responses over the ``n_orient`` distinct stimuli (last axis) expanded to the authors'
        ``steps + 1`` orientations over a full turn (``theta`` and ``theta + pi`` equal)."""
        resp = np.asarray(resp)
        if resp.shape[-1] != self.n_orient:
            raise ValueError(f"resp's last axis must hold the {self.n_orient} distinct orientations; got shape {resp.shape}")
        return resp[..., np.arange(self.steps + 1) % self.n_orient]

    def n_stimuli(self) -> int:
        return sum(len(self.positions(f)) for f in self.freqs) * self.n_orient

    def stimuli(self, freq: float, index: np.ndarray | None = None) -> np.ndarray:
        """The stimuli at ``freq``: ``(n_pos * n_orient, size, size)`` (position slow,
        orientation fast), or only the flat indices ``index`` of that order."""
        pos = self.positions(freq)
        n_or = self.n_orient
        idx = np.arange(len(pos) * n_or) if index is None else np.asarray(index)
        p, k = idx // n_or, idx % n_or
        th = self.theta[k][:, None, None]
        yy, xx = np.mgrid[1:self.size + 1, 1:self.size + 1].astype(float)  # the authors' 1-based X, Y
        x0, y0 = pos[p, 0, None, None] + 1.0, pos[p, 1, None, None] + 1.0
        s = self.sigma(freq)
        grating = np.sin(2 * np.pi * freq * (np.sin(th) * xx + np.cos(th) * yy) + self.phase)
        return grating * np.exp(-0.5 * ((xx - x0) ** 2 + (yy - y0) ** 2) / s**2)


def probe_function(fn, probe, *, chunk: int = 4096) -> list:
    """Responses of a function of pixel patches to every stimulus of ``probe``.

    ``fn(X)`` maps a batch of patches ``X (n, size * size)`` (float32 tensor) to responses
    ``(n, K)`` or to a dict of such arrays (one per layer). Stimuli are made and evaluated
    ``chunk`` at a time, so memory stays bounded on a CPU. Returns one array per probe
    frequency of shape ``(K, n_pos, n_orient)`` (or a dict of such lists)."""
    validate(chunk, Integer(lo=1), "chunk")
    per_freq = []
    for fr in probe.freqs:
        n_pos = len(probe.positions(fr))
        n = n_pos * probe.n_orient
        parts = []
        for i in range(0, n, chunk):
            S = probe.stimuli(fr, np.arange(i, min(n, i + chunk)))
            X = torch.as_tensor(S.reshape(len(S), -1), dtype=torch.float32)
            parts.append(fn(X))
        if isinstance(parts[0], dict):
            per_freq.append({k: _assemble([p[k] for p in parts], n_pos, probe.n_orient) for k in parts[0]})
        else:
            per_freq.append(_assemble(parts, n_pos, probe.n_orient))
    if isinstance(per_freq[0], dict):
        return {k: [f[k] for f in per_freq] for k in per_freq[0]}
    return per_freq


def _assemble(parts, n_pos: int, n_orient: int) -> np.ndarray:
    z = np.concatenate([np.asarray(p, dtype=np.float32) for p in parts], 0)
    return np.ascontiguousarray(z.reshape(n_pos, n_orient, -1).transpose(2, 0, 1))


@torch.no_grad()
def probe_layers(net: ImageNetwork, whitener: Whitener, probe: AuthorsProbe | None = None, *,
                 layers=(2, 3, 4), chunk: int = 4096, linear3: bool = False) -> dict[int, list[np.ndarray]]:
    """Responses of layers 2-4 (pre-threshold outputs, :meth:`ImageNetwork.layer_output`) to
    every stimulus of ``probe`` (default: :class:`AuthorsProbe` at the whitener's patch size),
    in one pass through the network per chunk of stimuli (on the CPU, float32).

    Returns ``{layer: [array (K_layer, n_pos, n_orient) per probe frequency]}``. The stimuli
    are preprocessed as data patches are (per-patch mean removed, then whitened); layer 3 is
    ``max(z3, 0)`` with the authors' "Max" unit, as their ``response.m`` computes it, or the
    linear ``z3`` with its sign when ``linear3`` (what their icons draw)."""
    if not layers or any(L not in (2, 3, 4) for L in layers):
        raise ValueError(f"layers must be drawn from (2, 3, 4); got {layers!r}")
    size = int(round(math.sqrt(whitener.V.shape[0])))
    probe = probe or AuthorsProbe(size=size)
    if probe.size != size:
        raise ValueError(f"probe.size must equal the whitener's patch size {size}; got {probe.size}")
    net = net.cpu()
    wh = whitener.to("cpu")

    def fn(X):
        u = _as_u(X.numpy(), wh)
        out, z1 = {}, net.z1(u)
        z2 = net.z2(z1)
        if 2 in layers:
            out[2] = z2.numpy()
        if 3 in layers or 4 in layers:
            z3 = net.z3(net.u3(z2))
            if 3 in layers:
                out[3] = (torch.relu(z3) if net.l3_nonlinearity == "max" and not linear3 else z3).numpy()
            if 4 in layers:
                out[4] = net.z4(z3).numpy()
        return out

    return probe_function(fn, probe, chunk=chunk)
