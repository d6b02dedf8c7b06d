"""Measures of what the image model learned, each reported beside a baseline that shows what
chance gives (paper Sec. 4.2 and Supp. D.2-D.4).

Layer 1 (:func:`filter_properties`, :func:`layer1_table`):
    From the Fourier power of a filter (zero-padded, within the band ``1/n <= |f| <= 1/2`` that
    an ``n x n`` patch can represent): the *orientation-selectivity index* (OSI)
    ``|sum P(f) exp(2i angle f)| / sum P(f)`` (0 for an isotropic filter, 1 for a grating), the
    *preferred orientation* (half the angle of that sum; the direction of the wave vector, as in
    :func:`cnce.images.probes.gabor`), the *preferred frequency* (the peak of the power, in
    cycles/pixel) and the *position* (centroid of the filter's energy). Measured both on the
    receptive fields (whitened-space weights as pixel filters, :meth:`Whitener.filters`) and
    on the dewhitened features (:meth:`Whitener.dewhiten`, what the paper's figure shows).
    Baselines (:func:`baseline_weights`): localised white noise and isotropic differences of
    Gaussians, projected into the same whitened space, so that they pass through the same
    band limits as the learned units.

Pooling layers 2 and 4 (:func:`pooling_coherence`):
    For each pooling unit, the spread in orientation, frequency and position of the units it
    pools (at most ten, or fewer holding 90 % of its weight, as the paper's Fig. 5 selects
    them), against random sets of the same size; and the share of its largest weight.

Layers 3 and 4 (:func:`so_rf_properties`):
    Coherence of the space-orientation receptive fields measured with
    :func:`cnce.images.probes.probe_layer`: how consistent the preferred orientation is over
    the field, how concentrated it is on one probe frequency and in space. The baseline is
    the same network with that layer's weights random (:func:`random_layer`).

The measures that match the paper's own sentences about layers 2-4, each beside its baselines
with an interval and a verdict, are in :mod:`cnce.images.layer_claims` (pooling, contours,
corners; the contour tracing itself in :mod:`cnce.images.contours`), those of Supp. D.2 in
:mod:`cnce.images.d2`; they return :class:`cnce.images.verdicts.Measured`. The authors' probe is
:class:`cnce.images.probes.AuthorsProbe`.

The share of oriented units after every meta-iteration of a training run comes from
:class:`Layer1Monitor`. Every function returns numbers; the sentences are the notebook's.
The committed runs themselves are found and loaded by :mod:`cnce.images.runs`.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch

from cnce.images.data import Whitener
from cnce.images.network import ImageNetwork
from cnce.constraints import Integer, validate

__all__ = [
    "grating_tuning",
    "grating_threshold",
    "ORIENTATION_MEASURES",
    "GRATING_FREQS",
    "ANALYSIS_SIZES",
    "pooling_table",
    "above_chance",
    "border_share",
    "layer1_summary",
    "analysis_sizes",
    "fourier_power",
    "filter_properties",
    "octave_spread",
    "unit_images",
    "localised_noise",
    "difference_of_gaussians",
    "grating",
    "project_to_whitened",
    "baseline_weights",
    "summarise_filters",
    "layer1_table",
    "osi_threshold",
    "oriented_share",
    "Layer1Monitor",
    "GABOR_SETTINGS",
    "GABOR_PARTS",
    "localisation_index",
    "bandpass_index",
    "gabor_parts",
    "gabor_thresholds",
    "gabor_like",
    "white_noise",
    "gaussian_blobs",
    "gabor_bank",
    "gabor_baselines",
    "gabor_table",
    "pooled_sets",
    "pooling_coherence",
    "so_rf_properties",
    "so_rf_table",
    "random_layer",
    "initial_network",
]

# -- what the image notebook analyses at each scale -------------------------------------------

#: Per notebook scale: ``n_gabor`` units fitted with Gabor functions, ``n_top`` patches searched
#: for the maximal responses, ``n_l4`` fourth-layer units drawn (at most; all 30 of the paper's
#: sizes), ``n_ica`` patches and at most
#: ``k_ica`` filters of the FastICA reference (complete, ``k_ica = D``, where the PCA dimension
#: allows), ``n_random`` random sets per pooling unit.
ANALYSIS_SIZES: dict[str, dict[str, int]] = {
    "quick": dict(n_gabor=40, n_top=20_000, n_l4=30, n_ica=20_000, k_ica=200, n_random=200),
    "demo": dict(n_gabor=200, n_top=50_000, n_l4=30, n_ica=40_000, k_ica=600, n_random=500),
    "paper": dict(n_gabor=600, n_top=100_000, n_l4=30, n_ica=100_000, k_ica=600, n_random=1000),
}


def analysis_sizes(scale: str) -> dict[str, int]:
    """How much the image notebook analyses at ``scale`` (``quick``, ``demo``, ``paper``)."""
    if scale not in ANALYSIS_SIZES:
        raise ValueError(f"scale must be one of {sorted(ANALYSIS_SIZES)}; got {scale!r}")
    return dict(ANALYSIS_SIZES[scale])


# -- layer 1: Fourier measures -----------------------------------------------------------------


def _as_stack(filters) -> np.ndarray:
    f = np.asarray(filters, dtype=float)
    if f.ndim == 2:
        f = f[None]
    if f.ndim != 3 or f.shape[1] != f.shape[2]:
        raise ValueError(f"filters must be square images of shape (n, n) or (K, n, n); got shape {f.shape}")
    return f


def fourier_power(filters, pad: int = 4) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Power spectrum of each mean-free filter in ``filters (K, n, n)``, zero-padded to
    ``pad * n``: returns ``P (K, m, m)``, the radial frequency ``|f| (m, m)`` in cycles/pixel
    and the angle of the wave vector ``(m, m)`` in ``[0, pi)``."""
    f = _as_stack(filters)
    validate(pad, Integer(lo=1), "pad")
    n = f.shape[-1]
    m = pad * n
    f = f - f.mean(axis=(1, 2), keepdims=True)
    P = np.abs(np.fft.fft2(f, s=(m, m))) ** 2
    k = np.fft.fftfreq(m)
    fy, fx = np.meshgrid(k, k, indexing="ij")
    return P, np.hypot(fx, fy), np.mod(np.arctan2(fy, fx), np.pi)


def _half_plane_power(f: np.ndarray, pad: int):
    """Power on the half plane ``fx >= 0`` (the other half mirrors it), with each bin's weight
    (1/2 on the columns ``fx = 0`` and ``fx = 1/2``, whose mirror images are in the half plane
    too), radial frequency and wave-vector angle."""
    import scipy.fft

    n = f.shape[-1]
    m = pad * n
    f = f - f.mean(axis=(1, 2), keepdims=True)
    P = np.abs(scipy.fft.rfft2(f, s=(m, m))) ** 2
    fy, fx = np.meshgrid(np.fft.fftfreq(m), np.fft.rfftfreq(m), indexing="ij")
    w = np.ones(fx.shape)
    w[:, 0] = 0.5
    if m % 2 == 0:
        w[:, -1] = 0.5
    return P, w, np.hypot(fx, fy), np.mod(np.arctan2(fy, fx), np.pi)


@dataclass(frozen=True)
class FilterProperties:
    """Per-filter measures (arrays of length K); see :func:`filter_properties`."""

    osi: np.ndarray  # orientation-selectivity index in [0, 1]
    orientation: np.ndarray  # preferred orientation of the wave vector, radians in [0, pi)
    frequency: np.ndarray  # preferred spatial frequency, cycles/pixel (peak of the power)
    x: np.ndarray  # energy centroid, pixels
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.osi)

    def subset(self, idx) -> "FilterProperties":
        return FilterProperties(*(getattr(self, k)[idx] for k in ("osi", "orientation", "frequency", "x", "y")))


def filter_properties(filters, pad: int = 4) -> FilterProperties:
    """Orientation-selectivity index, preferred orientation, preferred frequency and position of
    each filter in ``filters (K, n, n)`` (or one ``(n, n)`` filter).

    The Fourier power ``P`` is taken within the annulus ``1/n <= |f| <= 1/2``: below one cycle
    per patch nothing is resolved, and the annulus keeps the measure isotropic on the square
    frequency grid. ``osi = |sum P exp(2i angle)| / sum P`` is 1 for a single orientation (a
    grating), near 0 for an isotropic filter (a difference of Gaussians) and in between for
    white noise (a finite sample of an isotropic spectrum). The preferred frequency is where
    ``P`` peaks in the annulus.
    """
    f = _as_stack(filters)
    n = f.shape[-1]
    validate(pad, Integer(lo=1), "pad")
    P, w, rad, ang = _half_plane_power(f, pad)
    band = (rad >= 1.0 / n - 1e-12) & (rad <= 0.5 + 1e-12)
    Pb = P[:, band] * w[band]
    tot = np.maximum(Pb.sum(1), 1e-300)
    vec = (Pb * np.exp(2j * ang[band])).sum(1) / tot
    osi = np.abs(vec)
    orientation = np.mod(np.angle(vec) / 2, np.pi)
    frequency = rad[band][np.argmax(Pb, axis=1)]
    E = f**2
    Es = np.maximum(E.sum(axis=(1, 2)), 1e-300)
    yy, xx = np.mgrid[0:n, 0:n]
    x = (E * xx).sum(axis=(1, 2)) / Es
    y = (E * yy).sum(axis=(1, 2)) / Es
    return FilterProperties(osi=osi, orientation=orientation, frequency=frequency, x=x, y=y)


def octave_spread(freqs, lo: float = 10, hi: float = 90) -> float:
    """Spread of preferred frequencies in octaves: ``log2`` of the ratio of the ``hi``-th to the
    ``lo``-th percentile."""
    f = np.asarray(freqs, dtype=float)
    if f.size == 0 or np.any(f <= 0):
        raise ValueError(f"freqs must be a non-empty array of positive frequencies; got {f.size} values, min {f.min() if f.size else None}")
    return float(np.log2(np.percentile(f, hi) / np.percentile(f, lo)))


def unit_images(W, whitener: Whitener) -> dict[str, np.ndarray]:
    """The two pixel-space pictures of whitened-space weight vectors ``W (K, D)``:
    ``"receptive fields"`` (:meth:`Whitener.filters`: ``rf . (x - mean) = w . u``) and
    ``"features"`` (:meth:`Whitener.dewhiten`, what the paper's Fig. 5 and the authors'
    plotting code show), each ``(K, n, n)``."""
    W = torch.as_tensor(W).detach().float().cpu()
    n = int(round(math.sqrt(whitener.V.shape[0])))
    return {"receptive fields": whitener.filters(W).reshape(-1, n, n).double().numpy(),
            "features": whitener.dewhiten(W).reshape(-1, n, n).double().numpy()}


# -- synthetic filters with known answers, and baselines ---------------------------------------


def _centres(rng, K, size, margin):
    return rng.uniform(margin, size - 1 - margin, size=(K, 2))


def localised_noise(size: int, K: int, *, sigma=(1.5, 4.0), seed: int = 0) -> np.ndarray:
    """``K`` patches ``(K, size, size)`` of white noise under a Gaussian envelope of width drawn
    uniformly from ``sigma`` (pixels), at random centres: localised, but of no orientation."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(*sigma, size=K)
    c = _centres(rng, K, size, min(size / 4, 2 * max(sigma)))
    yy, xx = np.mgrid[0:size, 0:size].astype(float)
    env = np.exp(-0.5 * ((xx - c[:, 0, None, None]) ** 2 + (yy - c[:, 1, None, None]) ** 2) / s[:, None, None] ** 2)
    return env * rng.standard_normal((K, size, size))


def difference_of_gaussians(size: int, K: int, *, sigma=(1.0, 3.0), ratio: float = 1.6, seed: int = 0) -> np.ndarray:
    """``K`` isotropic differences of Gaussians ``(K, size, size)`` (centre width drawn from
    ``sigma``, surround ``ratio`` times wider, zero total weight) at random centres: localised
    and band-pass, but of no orientation."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(*sigma, size=K)[:, None, None]
    c = _centres(rng, K, size, min(size / 4, 2 * ratio * max(sigma)))
    yy, xx = np.mgrid[0:size, 0:size].astype(float)
    r2 = (xx - c[:, 0, None, None]) ** 2 + (yy - c[:, 1, None, None]) ** 2
    g1 = np.exp(-0.5 * r2 / s**2) / s**2
    g2 = np.exp(-0.5 * r2 / (ratio * s) ** 2) / (ratio * s) ** 2
    return g1 - g2


def grating(size: int, theta: float, freq: float, phase: float = 0.0) -> np.ndarray:
    """A full-patch cosine grating of ``freq`` cycles/pixel, wave vector at angle ``theta``."""
    yy, xx = np.mgrid[0:size, 0:size].astype(float)
    return np.cos(2 * np.pi * freq * (xx * np.cos(theta) + yy * np.sin(theta)) + phase)


def project_to_whitened(patterns, whitener: Whitener) -> torch.Tensor:
    """Weight vectors ``W (K, D)`` whose receptive fields (:meth:`Whitener.filters`) are the
    pixel ``patterns (K, n, n)`` projected onto the retained PCA components: a pattern passed
    through the same whitening as the learned units."""
    X = torch.as_tensor(np.asarray(patterns).reshape(len(patterns), -1), dtype=torch.float32)
    return (X @ whitener.V) * whitener.lam.sqrt()


def baseline_weights(whitener: Whitener, K: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Baselines for the layer-1 measures, as whitened-space weights ``(K, D)``: localised white
    noise and isotropic differences of Gaussians (:func:`localised_noise`,
    :func:`difference_of_gaussians`) passed through the whitening
    (:func:`project_to_whitened`)."""
    n = int(round(math.sqrt(whitener.V.shape[0])))
    return {"localised noise": project_to_whitened(localised_noise(n, K, seed=seed), whitener),
            "isotropic DoG": project_to_whitened(difference_of_gaussians(n, K, seed=seed + 1), whitener)}


def summarise_filters(props: FilterProperties, oriented: float | None = None) -> dict[str, float]:
    """Medians and spreads of :func:`filter_properties`: median OSI, the share of filters with an
    OSI above ``oriented`` (when given), the 10th/50th/90th percentiles of the preferred
    frequency and their spread in octaves."""
    out = {"n": len(props), "osi_median": float(np.median(props.osi))}
    if oriented is not None:
        out["oriented_share"] = float(np.mean(props.osi > oriented))
    for q in (10, 50, 90):
        out[f"freq_p{q}"] = float(np.percentile(props.frequency, q))
    out["octaves"] = octave_spread(props.frequency)
    return out


def layer1_table(weights: dict[str, torch.Tensor], whitener: Whitener, *, reference: str = "localised noise",
                 quantile: float = 0.95):
    """Layer-1 measures of several sets of whitened-space weights ``{name: W (K, D)}`` (the
    learned units, FastICA, the baselines), on receptive fields and on features.

    A unit counts as *oriented* when its OSI exceeds the ``quantile`` of the OSI of the
    ``reference`` set (by default: 95 % of localised noise does less), computed separately
    for receptive fields and features. Returns ``(table, props)``: a pandas DataFrame with one
    row per (set, picture) and the :class:`FilterProperties` per (set, picture).
    """
    import pandas as pd

    if reference not in weights:
        raise ValueError(f"reference must name one of the weight sets {list(weights)}; got {reference!r}")
    props = {}
    for name, W in weights.items():
        for pic, imgs in unit_images(W, whitener).items():
            props[name, pic] = filter_properties(imgs)
    rows = []
    for pic in ("receptive fields", "features"):
        thr = float(np.quantile(props[reference, pic].osi, quantile))
        for name in weights:
            s = summarise_filters(props[name, pic], oriented=thr)
            rows.append({"units": name, "picture": pic, **s, "osi_threshold": thr})
    return pd.DataFrame(rows).set_index(["picture", "units"]), props


def osi_threshold(whitener: Whitener, *, K: int = 600, quantile: float = 0.95, seed: int = 0,
                  picture: str = "receptive fields") -> float:
    """The OSI above which a unit counts as oriented: the ``quantile`` of the OSI of ``K``
    localised-noise patterns passed through ``whitener`` (as :func:`layer1_table` computes it)."""
    n = int(round(math.sqrt(whitener.V.shape[0])))
    W = project_to_whitened(localised_noise(n, K, seed=seed), whitener)
    return float(np.quantile(filter_properties(unit_images(W, whitener)[picture]).osi, quantile))


def oriented_share(W, whitener: Whitener, threshold: float, picture: str = "receptive fields") -> float:
    """The share of the units ``W (K, D)`` whose OSI exceeds ``threshold`` (:func:`osi_threshold`)."""
    return float(np.mean(filter_properties(unit_images(W, whitener)[picture]).osi > threshold))


# -- layer 1: Gabor-like = localised AND oriented AND band-pass --------------------------------

#: The two settings of the localised and band-pass measures (:func:`gabor_parts`): the disc's
#: radius as a fraction of the patch side and the width in octaves of the frequency band around
#: the peak; ``f_max`` is the highest peak frequency (cycles/pixel) that counts as away from
#: Nyquist (0.5), 90 % of it in both. The layer-1 verdict is computed under both
#: (:func:`cnce.images.layer_claims.gabor_claim`).
GABOR_SETTINGS: dict[str, dict[str, float]] = {
    "disc radius n/8, 1-octave band": dict(radius=1 / 8, octaves=1.0, f_max=0.45),
    "disc radius 3n/16, 1.5-octave band": dict(radius=3 / 16, octaves=1.5, f_max=0.45),
}
#: the parts of Gabor-like, in the order the tables print them
GABOR_PARTS = ("localised", "oriented", "band-pass")


def localisation_index(filters, radius: float = 1 / 8) -> np.ndarray:
    """How localised each filter in ``filters (K, n, n)`` is: the largest share of its energy
    (squared values) inside a disc of radius ``radius * n`` pixels, over all disc centres in the
    patch. 1 for a filter inside one such disc, about the disc's share of the patch area
    (``pi radius**2``: 5 % for ``radius = 1/8``) for a plane wave or white noise."""
    import scipy.fft

    f = _as_stack(filters)
    if not (0 < radius < 0.5):
        raise ValueError(f"radius must be a fraction of the patch side in (0, 0.5); got {radius!r}")
    n = f.shape[-1]
    r = radius * n
    k = int(math.ceil(r))
    yy, xx = np.mgrid[-k:k + 1, -k:k + 1]
    disc = (xx**2 + yy**2 <= r**2 + 1e-9).astype(float)
    E = f**2
    E = E / np.maximum(E.sum(axis=(1, 2), keepdims=True), 1e-300)
    L = n + 2 * k  # the full convolution, no wrap-around; disc centres on the patch's pixels
    full = scipy.fft.irfft2(scipy.fft.rfft2(E, s=(L, L)) * scipy.fft.rfft2(disc, s=(L, L)), s=(L, L))
    inside = full[:, k:k + n, k:k + n]
    return np.clip(inside.reshape(len(f), -1).max(1), 0.0, 1.0)


def bandpass_index(filters, octaves: float = 1.0, pad: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Where each filter's Fourier power peaks and how much of it lies near that peak.

    The power of each filter in ``filters (K, n, n)`` (its mean kept, so that a low-pass filter
    peaks at DC), zero-padded to ``pad * n``, on the half plane (:func:`_half_plane_power`).
    Returns ``(peak, share)``: the radial frequency of the largest power (cycles/pixel; 0 for a
    low-pass filter) and the share of the power within the band of ``octaves`` octaves centred
    (in log frequency) on that peak, ``peak * 2**(-octaves/2) <= |f| <= peak * 2**(octaves/2)``
    (0 when the peak is at DC). Near 1 for a grating or a Gabor whose bandwidth is under
    ``octaves``; lower for broadband filters (white noise spreads its power over the whole
    plane)."""
    import scipy.fft

    f = _as_stack(filters)
    if not (0 < octaves <= 4):
        raise ValueError(f"octaves must lie in (0, 4]; got {octaves!r}")
    if isinstance(pad, bool) or not isinstance(pad, int) or pad < 1:
        raise ValueError(f"pad must be an int >= 1; got {pad!r}")
    m = pad * f.shape[-1]
    P = (np.abs(scipy.fft.rfft2(f, s=(m, m))) ** 2).reshape(len(f), -1)
    fy, fx = np.meshgrid(np.fft.fftfreq(m), np.fft.rfftfreq(m), indexing="ij")
    w = np.ones(fx.shape)
    w[:, 0] = 0.5
    if m % 2 == 0:
        w[:, -1] = 0.5
    rad = np.hypot(fx, fy).ravel()
    Pw = P * w.ravel()
    peak = rad[np.argmax(P, axis=1)]
    lo, hi = peak * 2 ** (-octaves / 2), peak * 2 ** (octaves / 2)
    order = np.argsort(rad, kind="stable")
    rs = rad[order]
    C = np.concatenate([np.zeros((len(f), 1)), np.cumsum(Pw[:, order], axis=1)], axis=1)
    a = np.searchsorted(rs, lo - 1e-12, side="left")
    b = np.searchsorted(rs, hi + 1e-12, side="right")
    rows = np.arange(len(f))
    share = (C[rows, b] - C[rows, a]) / np.maximum(C[:, -1], 1e-300)
    return peak, np.where(peak > 0, share, 0.0)


def gabor_parts(filters, *, radius: float = 1 / 8, octaves: float = 1.0, pad: int = 4) -> dict[str, np.ndarray]:
    """The three measures behind *Gabor-like* for each filter in ``filters (K, n, n)``:
    ``localisation`` (:func:`localisation_index`), ``osi`` (the Fourier orientation-selectivity
    index of :func:`filter_properties`), ``peak`` and ``band_share``
    (:func:`bandpass_index`)."""
    f = _as_stack(filters)
    peak, share = bandpass_index(f, octaves, pad)
    return {"localisation": localisation_index(f, radius), "osi": filter_properties(f, pad).osi, "peak": peak,
            "band_share": share}


def gabor_thresholds(nulls: dict[str, dict[str, np.ndarray]], *, quantile: float = 0.95) -> dict[str, float]:
    """The thresholds of :func:`gabor_like` from null distributions (:func:`gabor_parts` of
    noise): *localised* above the ``quantile`` of the localisation of ``nulls["white noise"]``
    (noise spread over the whole patch); *oriented* and *band-pass* above the ``quantile`` of the
    OSI and band share of ``nulls["localised noise"]`` (localised, of no orientation, broadband),
    as :func:`layer1_table` does for the OSI."""
    missing = {"white noise", "localised noise"} - set(nulls)
    if missing:
        raise ValueError(f"nulls must hold 'white noise' and 'localised noise'; missing {sorted(missing)}")
    return {"localisation": float(np.quantile(nulls["white noise"]["localisation"], quantile)),
            "osi": float(np.quantile(nulls["localised noise"]["osi"], quantile)),
            "band_share": float(np.quantile(nulls["localised noise"]["band_share"], quantile))}


def gabor_like(parts: dict[str, np.ndarray], thresholds: dict[str, float], *, size: int,
               f_max: float = 0.45) -> dict[str, np.ndarray]:
    """Per filter (boolean arrays): ``localised`` (localisation above its threshold),
    ``oriented`` (OSI above its threshold), ``band-pass`` (the power peaks away from DC, at
    least one cycle per patch ``1 / size``, and away from Nyquist, at most ``f_max``
    cycles/pixel, and the band share is above its threshold) and ``Gabor-like`` (all three)."""
    if not (0 < f_max <= 0.5):
        raise ValueError(f"f_max must lie in (0, 0.5] cycles/pixel; got {f_max!r}")
    out = {"localised": parts["localisation"] > thresholds["localisation"],
           "oriented": parts["osi"] > thresholds["osi"],
           "band-pass": ((parts["peak"] >= 1.0 / size - 1e-12) & (parts["peak"] <= f_max + 1e-12)
                         & (parts["band_share"] > thresholds["band_share"]))}
    out["Gabor-like"] = out["localised"] & out["oriented"] & out["band-pass"]
    return out


def white_noise(size: int, K: int, *, seed: int = 0) -> np.ndarray:
    """``K`` patches ``(K, size, size)`` of white noise: not localised, not oriented, broadband."""
    return np.random.default_rng(seed).standard_normal((K, size, size))


def gaussian_blobs(size: int, K: int, *, sigma=(1.5, 4.0), seed: int = 0) -> np.ndarray:
    """``K`` Gaussian blobs ``(K, size, size)`` of width drawn from ``sigma`` at random centres:
    localised, of no orientation and low-pass (their power peaks at DC)."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(*sigma, size=K)[:, None, None]
    c = _centres(rng, K, size, min(size / 4, 2 * max(sigma)))
    yy, xx = np.mgrid[0:size, 0:size].astype(float)
    return np.exp(-0.5 * ((xx - c[:, 0, None, None]) ** 2 + (yy - c[:, 1, None, None]) ** 2) / s**2)


def gabor_bank(size: int, K: int, *, sigma=(2.0, 3.5), cycles=(0.6, 1.2), f_range=(0.06, 0.30),
               seed: int = 0) -> np.ndarray:
    """``K`` Gabor functions ``(K, size, size)`` (:func:`cnce.images.probes.gabor`) at random
    centres, orientations and phases: envelope width ``sigma`` drawn from ``sigma`` (pixels),
    frequency ``cycles / sigma`` with ``cycles`` drawn from ``cycles`` (so that the bandwidth is
    about one to two octaves, as for simple cells), clipped to ``f_range`` (cycles/pixel): the
    positive control of :func:`gabor_like` (localised, oriented, band-pass)."""
    from cnce.images.probes import gabor

    rng = np.random.default_rng(seed)
    s = rng.uniform(*sigma, size=K)
    f = np.clip(rng.uniform(*cycles, size=K) / s, *f_range)
    c = _centres(rng, K, size, min(size / 4, 2 * max(sigma)))
    return gabor(size, c[:, 0], c[:, 1], rng.uniform(0, np.pi, K), f, rng.uniform(0, 2 * np.pi, K), s)


def gabor_baselines(whitener: Whitener, K: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """The reference sets of the Gabor-like test as whitened-space weights ``(K, D)``, each
    passed through the same whitening (:func:`project_to_whitened`): the nulls ``white noise``
    and ``localised noise``, the positive control ``Gabor bank`` (:func:`gabor_bank`), and the
    negative controls ``isotropic DoG`` (localised, band-pass, not oriented) and ``Gaussian
    blobs`` (localised, low-pass, not oriented)."""
    n = int(round(math.sqrt(whitener.V.shape[0])))
    return {"white noise": project_to_whitened(white_noise(n, K, seed=seed + 2), whitener),
            **baseline_weights(whitener, K, seed=seed),
            "Gaussian blobs": project_to_whitened(gaussian_blobs(n, K, seed=seed + 3), whitener),
            "Gabor bank": project_to_whitened(gabor_bank(n, K, seed=seed + 4), whitener)}


def gabor_table(weights: dict[str, torch.Tensor], whitener: Whitener, *, settings: dict | None = None,
                picture: str = "receptive fields", quantile: float = 0.95):
    """The Gabor-like test of several sets of whitened-space weights ``{name: W (K, D)}`` (the
    learned units, controls, and the nulls ``white noise`` and ``localised noise``, e.g. from
    :func:`gabor_baselines`) under each of ``settings`` (default :data:`GABOR_SETTINGS`), in
    ``picture`` (:func:`unit_images`).

    Returns ``(table, flags)``: a pandas DataFrame indexed by (setting, units) with the share of
    units ``localised``, ``oriented``, ``band-pass`` and ``Gabor-like`` and the three thresholds
    (each the ``quantile`` of its null, :func:`gabor_thresholds`), and the per-unit boolean flags
    ``flags[setting, name]`` (:func:`gabor_like`)."""
    import pandas as pd

    settings = GABOR_SETTINGS if settings is None else settings
    imgs = {name: unit_images(W, whitener)[picture] for name, W in weights.items()}
    n = next(iter(imgs.values())).shape[-1]
    rows, flags = [], {}
    for sname, s in settings.items():
        parts = {name: gabor_parts(im, radius=s["radius"], octaves=s["octaves"]) for name, im in imgs.items()}
        thr = gabor_thresholds(parts, quantile=quantile)
        for name in weights:
            fl = gabor_like(parts[name], thr, size=n, f_max=s["f_max"])
            flags[sname, name] = fl
            rows.append({"setting": sname, "units": name, **{k: float(v.mean()) for k, v in fl.items()},
                         **{f"threshold {k}": v for k, v in thr.items()}})
    return pd.DataFrame(rows).set_index(["setting", "units"]), flags


#: The two orientation measures of first-layer units: the Fourier index over all frequencies
#: (:func:`filter_properties` of the receptive fields) and the grating index at each unit's best
#: frequency (:func:`grating_tuning`).
ORIENTATION_MEASURES = ("fourier", "grating")
#: Grating frequencies (cycles/pixel) of :func:`grating_tuning`.
GRATING_FREQS = tuple(np.round(np.arange(0.05, 0.5001, 0.025), 3))


def grating_tuning(W, whitener: Whitener, *, freqs=GRATING_FREQS, n_orient: int = 36) -> dict[str, np.ndarray]:
    """Orientation tuning of whitened-space units ``W (K, D)`` measured as the network sees
    gratings: full-patch gratings of each frequency in ``freqs`` and ``n_orient`` orientations,
    in two phases (cosine and sine), preprocessed as data patches (mean removed, whitened, gain
    control, Eq. 21); the response energy ``E(f, theta) = (w . u_cos)^2 + (w . u_sin)^2``.

    The unit's *best frequency* is where ``max_theta E`` peaks; at that frequency only,
    ``osi = |sum_theta E exp(2i theta)| / sum_theta E`` (1 for a unit that answers one
    orientation only, 0 for an isotropic one) and ``orientation`` (the wave vector's angle,
    radians in ``[0, pi)``). Unlike :func:`filter_properties`, power at other frequencies does
    not dilute the index. Returns ``{"osi", "orientation", "frequency"}`` (arrays of length K)."""
    from cnce.images.network import gain_control

    validate(n_orient, Integer(lo=4), "n_orient")
    freqs = np.asarray(freqs, dtype=float)
    if freqs.ndim != 1 or freqs.size == 0 or np.any(freqs <= 0) or np.any(freqs > 0.5):
        raise ValueError(f"freqs must be frequencies in (0, 0.5] cycles/pixel; got {freqs!r}")
    W = torch.as_tensor(W).detach().float().cpu()
    n = int(round(math.sqrt(whitener.V.shape[0])))
    th = np.arange(n_orient) * np.pi / n_orient
    X = np.stack([grating(n, t, f, ph) for f in freqs for t in th for ph in (0.0, np.pi / 2)]).reshape(-1, n * n)
    Xt = torch.as_tensor(X, dtype=torch.float32)
    u = gain_control(whitener.to("cpu").transform(Xt - Xt.mean(1, keepdim=True)))
    r = (u @ W.T).double().numpy().reshape(len(freqs), n_orient, 2, -1)
    E = (r**2).sum(2)  # (n_freq, n_orient, K)
    best = E.max(1).argmax(0)
    Eb = E[best, :, np.arange(E.shape[2])]  # (K, n_orient)
    vec = (Eb * np.exp(2j * th)[None]).sum(1) / np.maximum(Eb.sum(1), 1e-300)
    return {"osi": np.abs(vec), "orientation": np.mod(np.angle(vec) / 2, np.pi), "frequency": freqs[best]}


def grating_threshold(whitener: Whitener, *, K: int = 600, quantile: float = 0.95, seed: int = 0) -> float:
    """The grating OSI (:func:`grating_tuning`) above which a unit counts as oriented: the
    ``quantile`` of ``K`` localised-noise patterns passed through ``whitener``, as
    :func:`osi_threshold` does for the Fourier index."""
    n = int(round(math.sqrt(whitener.V.shape[0])))
    return float(np.quantile(grating_tuning(project_to_whitened(localised_noise(n, K, seed=seed), whitener), whitener)["osi"],
                             quantile))


class Layer1Monitor:
    """``monitor(net, layer, whitener) -> {"oriented": share, "osi_median": ...}`` for
    :func:`cnce.images.train.train`: after every layer-1 meta-iteration, the share of
    receptive fields more oriented than 95 % of localised noise (the threshold is computed once
    per whitener) and their median OSI; ``{}`` for other layers."""

    def __init__(self, K_noise: int = 600, quantile: float = 0.95):
        self.K_noise, self.quantile = K_noise, quantile
        self._thr: dict[int, float] = {}

    def __call__(self, net: ImageNetwork, layer: int, whitener: Whitener) -> dict[str, float]:
        if layer != 1:
            return {}
        key = id(whitener)
        if key not in self._thr:
            self._thr[key] = osi_threshold(whitener, K=self.K_noise, quantile=self.quantile)
        props = filter_properties(unit_images(net.W1.detach().float().cpu(), whitener)["receptive fields"])
        return {"oriented": float(np.mean(props.osi > self._thr[key])), "osi_median": float(np.median(props.osi)),
                "osi_threshold": self._thr[key]}


# -- pooling layers ------------------------------------------------------------------------------


def pooled_sets(q, max_units: int = 10, mass: float = 0.9) -> list[np.ndarray]:
    """For each row of non-negative pooling weights ``q (K, K_below)``: the indices of the largest
    weights, at most ``max_units`` of them, or fewer when they already hold ``mass`` of the
    row's total (the selection of the paper's Fig. 5)."""
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or np.any(q < 0):
        raise ValueError(f"q must be a 2-D array of non-negative weights; got shape {q.shape}")
    if not (0 < mass <= 1):
        raise ValueError(f"mass must be in (0, 1]; got {mass!r}")
    out = []
    for row in q:
        order = np.argsort(-row, kind="stable")
        cum = np.cumsum(row[order]) / max(row.sum(), 1e-300)
        k = min(max_units, int(np.searchsorted(cum, mass - 1e-12) + 1))
        out.append(order[:k])
    return out


def _pairwise_spreads(orient, logf, x, y) -> tuple[float, float, float]:
    """Mean over pairs of: orientation difference (degrees, in [0, 90]), |log2 frequency
    difference| (octaves), distance (pixels)."""
    i, j = np.triu_indices(len(orient), 1)
    d = np.abs(orient[i] - orient[j]) % np.pi
    d = np.minimum(d, np.pi - d)
    return (float(np.degrees(d).mean()), float(np.abs(logf[i] - logf[j]).mean()),
            float(np.hypot(x[i] - x[j], y[i] - y[j]).mean()))


SPREADS = ("orientation", "frequency", "position")


def pooling_coherence(q, orientation, frequency, x, y, *, max_units: int = 10, mass: float = 0.9,
                      n_random: int = 200, seed: int = 0):
    """How alike are the units that each pooling unit pools?

    ``q (K, K_below)`` are the pooling weights (``W**2``); ``orientation`` (radians),
    ``frequency`` (> 0) and position ``x``, ``y`` describe the ``K_below`` pooled units. For
    every pooling unit with at least two pooled units (:func:`pooled_sets`), the mean pairwise
    spread in orientation (degrees), frequency (octaves) and position (pixels) is compared with
    ``n_random`` random sets of the same size drawn from all ``K_below`` units.

    Returns a pandas DataFrame, one row per pooling unit: ``n_pooled``, ``top_share`` (largest
    weight / sum of weights), and per spread ``s`` the observed value ``s``, the mean of the
    random sets ``s_random`` and ``s_rank``, the fraction of random sets with a spread at most
    the observed one (small: more alike than chance; about uniform on [0, 1] when pooling
    ignores that property).
    """
    import pandas as pd

    q = np.asarray(q, dtype=float)
    props = [np.asarray(a, dtype=float) for a in (orientation, frequency, x, y)]
    if any(p.shape != (q.shape[1],) for p in props):
        raise ValueError(f"orientation, frequency, x, y must each have length K_below = {q.shape[1]}")
    if np.any(props[1] <= 0):
        raise ValueError("frequency must be positive")
    orient, logf, xx, yy = props[0], np.log2(props[1]), props[2], props[3]
    rng = np.random.default_rng(seed)
    rows = []
    for j, idx in enumerate(pooled_sets(q, max_units, mass)):
        row = {"unit": j, "n_pooled": len(idx), "top_share": float(q[j].max() / max(q[j].sum(), 1e-300))}
        if len(idx) >= 2:
            obs = _pairwise_spreads(orient[idx], logf[idx], xx[idx], yy[idx])
            rnd = np.array([_pairwise_spreads(orient[r], logf[r], xx[r], yy[r])
                            for r in (rng.choice(q.shape[1], size=len(idx), replace=False) for _ in range(n_random))])
            for k, name in enumerate(SPREADS):
                row[name] = obs[k]
                row[f"{name}_random"] = float(rnd[:, k].mean())
                row[f"{name}_rank"] = float(np.mean(rnd[:, k] <= obs[k]))
        rows.append(row)
    return pd.DataFrame(rows).set_index("unit")


def summarise_pooling(df) -> dict[str, float]:
    """Medians over pooling units of :func:`pooling_coherence`: the share of the top unit, the
    number of pooled units, each spread against its random sets, and the share of units whose
    spread is below that of 95 % of the random sets (5 % by chance)."""
    out = {"units": int(len(df)), "top_share_median": float(df["top_share"].median()),
           "n_pooled_median": float(df["n_pooled"].median()), "with_2_or_more": int((df["n_pooled"] >= 2).sum())}
    multi = df[df["n_pooled"] >= 2]
    for name in SPREADS:
        if len(multi):
            out[f"{name}_median"] = float(multi[name].median())
            out[f"{name}_random_median"] = float(multi[f"{name}_random"].median())
            out[f"{name}_coherent_share"] = float((multi[f"{name}_rank"] < 0.05).mean())
    return out


# -- layers 3 and 4: space-orientation receptive fields ----------------------------------------


def _normalise(resp: list[np.ndarray]) -> list[np.ndarray]:
    allr = np.concatenate([r.reshape(r.shape[0], -1) for r in resp], 1)
    med = np.median(allr, 1)
    top = np.maximum(allr.max(1) - med, 1e-300)
    return [np.clip((r - med[:, None, None]) / top[:, None, None], 0, 1) for r in resp]


def so_rf_properties(resp: list[np.ndarray], probe) -> dict[str, np.ndarray]:
    """Properties of space-orientation receptive fields from the probe responses ``resp[f]
    (K, n_pos, n_orient)`` of :func:`cnce.images.probes.probe_layer`.

    Responses are normalised per unit as in the figures (minus the unit's median response over
    all stimuli, divided by the largest excess, clipped at 0), giving weights ``r >= 0`` over
    (frequency, position, orientation). Per unit:

    * ``orientation_coherence``: ``|sum r exp(2i theta)| / sum r``, 1 when the unit prefers one
      orientation everywhere in its field (a straight contour), lower when the preferred
      orientation changes over the field or the tuning is broad;
    * ``orientation``: the preferred orientation (wave vector), half the angle of that sum;
    * ``frequency_share``: the largest of the per-frequency *mean* responses divided by their
      sum: 1 when the unit responds at one probe frequency only, ``1 / n_freq`` when equally;
      ``frequency``: the probe frequency with the largest mean response;
    * ``x``, ``y``: the response-weighted centre; ``extent``: the response-weighted RMS
      distance from it (pixels).
    """
    resp = [np.asarray(r, dtype=float) for r in resp]
    if len(resp) != len(probe.freqs):
        raise ValueError(f"resp must hold one array per probe frequency ({len(probe.freqs)}); got {len(resp)}")
    norm = _normalise(resp)
    K = norm[0].shape[0]
    th = probe.orientations
    vec = np.zeros(K, complex)
    mass = np.zeros(K)
    mx = np.zeros(K)
    my = np.zeros(K)
    for r, fr in zip(norm, probe.freqs):
        pos = probe.positions(fr)
        vec += (r * np.exp(2j * th)[None, None, :]).sum((1, 2))
        rp = r.sum(2)  # (K, n_pos)
        mass += rp.sum(1)
        mx += rp @ pos[:, 0]
        my += rp @ pos[:, 1]
    mass = np.maximum(mass, 1e-300)
    x, y = mx / mass, my / mass
    ext = np.zeros(K)
    for r, fr in zip(norm, probe.freqs):
        pos = probe.positions(fr)
        rp = r.sum(2)
        ext += (rp * ((pos[None, :, 0] - x[:, None]) ** 2 + (pos[None, :, 1] - y[:, None]) ** 2)).sum(1)
    fmean = np.stack([r.mean((1, 2)) for r in norm], 1)  # (K, n_freq)
    fshare = fmean.max(1) / np.maximum(fmean.sum(1), 1e-300)
    return {"orientation_coherence": np.abs(vec) / mass, "orientation": np.mod(np.angle(vec) / 2, np.pi),
            "frequency": np.asarray(probe.freqs, dtype=float)[fmean.argmax(1)], "frequency_share": fshare,
            "x": x, "y": y, "extent": np.sqrt(ext / mass)}


SO_MEASURES = ("orientation_coherence", "frequency_share", "extent")


def so_rf_table(named: dict[str, dict[str, np.ndarray]]):
    """Medians of :func:`so_rf_properties` for several networks ``{name: properties}`` (e.g.
    learned and random weights), one row each: orientation coherence, frequency share and
    spatial extent."""
    import pandas as pd

    return pd.DataFrame([{"network": k, **{m: float(np.median(v[m])) for m in SO_MEASURES}} for k, v in named.items()]
                        ).set_index("network")


@torch.no_grad()
def random_layer(net: ImageNetwork, layer: int, seed: int = 0) -> ImageNetwork:
    """A copy of ``net`` whose layer-``layer`` weights are random, as a baseline for the
    structure learned in that layer (everything else, including the thresholds, unchanged).

    Feature layers (1, 3): Gaussian rows with the learned rows' norms (random directions).
    Pooling layers (2, 4): each row's learned weights randomly permuted, so that every unit
    keeps its weight distribution (how many units carry most weight) but pools a random set.
    """
    if layer not in ImageNetwork.LAYERS:
        raise ValueError(f"layer must be one of {ImageNetwork.LAYERS}; got {layer!r}")
    out = copy.deepcopy(net).cpu()
    W = getattr(out, f"W{layer}")
    g = torch.Generator().manual_seed(int(seed))
    if layer in (1, 3):
        R = torch.randn(W.shape, generator=g, dtype=W.dtype)
        W.copy_(R / R.norm(dim=1, keepdim=True) * W.norm(dim=1, keepdim=True))
    else:
        perm = torch.argsort(torch.rand(W.shape, generator=g), dim=1)
        W.copy_(torch.gather(W, 1, perm))
    return out


# -- runs --------------------------------------------------------------------------------------


def initial_network(state: dict) -> ImageNetwork:
    """The network a saved training ``state`` started from (its sizes, initialisation options
    and seed, before any training): the baseline of the first-layer pictures.

    Runs saved before the initialisation became an option started from orthonormal rows
    (``init="orthonormal"``) and used the linear layer-3 unit; options that this version of
    :class:`ImageNetwork` does not know are left out.
    """
    import inspect

    cfg = state["config"]
    options = {"init": cfg.get("init", "orthonormal"), "init_scale": cfg.get("init_scale", 1.0),
               "b_init": cfg.get("b_init", -2.0), "l3_nonlinearity": cfg.get("l3_nonlinearity", "linear")}
    known = inspect.signature(ImageNetwork).parameters
    return ImageNetwork(**state["sizes"], seed=int(state["seed"]), **{k: v for k, v in options.items() if k in known})


def pooling_table(summary: dict):
    """The table of :func:`summarise_pooling` as printed on the image page: per property
    (orientation, frequency, position) the median spread of the pooled units, of the random
    sets, and the share of coherent units."""
    import pandas as pd

    return pd.DataFrame({k: {"pooled units": summary[f"{k}_median"], "random sets": summary[f"{k}_random_median"],
                             "coherent share": summary[f"{k}_coherent_share"]} for k in SPREADS}).T


def above_chance(share: float, n: int, chance: float = 0.05) -> float:
    """One-sided binomial p-value that ``share`` of ``n`` units exceeds what ``chance`` gives
    (the share of a baseline counted as coherent or oriented by construction)."""
    from scipy.stats import binomtest

    if not 0 <= share <= 1 or n < 1:
        raise ValueError(f"share must lie in [0, 1] and n >= 1; got share={share!r}, n={n!r}")
    return float(binomtest(int(round(share * n)), n, chance, alternative="greater").pvalue)


def border_share(props: FilterProperties, size: int, margin: float = 4.0) -> float:
    """Share of filters whose energy centroid lies within ``margin`` pixels of the patch border."""
    lo, hi = margin, size - 1 - margin
    return float(np.mean((props.x < lo) | (props.x > hi) | (props.y < lo) | (props.y > hi)))


def layer1_summary(table):
    """:func:`layer1_table` narrowed for the page: median OSI, oriented share, the 10th and 90th
    percentiles of the preferred frequency (cycles/pixel) and their spread in octaves."""
    cols = {"osi_median": "OSI", "oriented_share": "oriented", "freq_p10": "f p10", "freq_p90": "f p90",
            "octaves": "octaves"}
    return table[list(cols)].rename(columns=cols)
