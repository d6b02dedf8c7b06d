"""Contours and corners in space-orientation receptive fields (paper Sec. 4.2, Fig. 6).

The paper says that third-layer units "detect longer straight or bended contours" and that a
fourth-layer unit (its unit 19) is "a low-frequency corner detector". A unit's
space-orientation receptive field (:func:`cnce.images.probes.probe_layers`) is its response
``r(location, orientation)`` to Gabor stimuli. A contour detector responds along one smooth
curve of locations, at each to the orientation *tangent* to the curve; a corner detector along
a curve (or two touching curves) whose tangent turns by a large angle.

:func:`trace_curve` follows the strongest such curve through a normalised response map:
from the strongest (location, orientation) it steps to a neighbouring location (at most 1.5
grid steps away) that lies ahead along the tangent (the step's direction within ``max_dir`` of
the tangent before and after it), whose preferred orientation there turns by at most
``max_turn``, and whose response is at least ``floor``; it goes both ways until no step is
left. It reports the curve's *share* (the response mass within ``tol`` of the curve's
orientation at the curve's locations, over the map's whole mass), its *length* in pixels and
its *turning* (the tangent's total change along it, signed).

:func:`contour_properties` applies it per unit at the unit's best probe frequency (the
frequency with the largest response, as the authors draw it), after normalising the map
(:func:`normalise_map`: minus the unit's median response, over its peak excess, clipped to
``[0, 1]``). A unit is *contour-like* when its curve holds at least ``share_min`` of the mass
and spans at least ``min_steps`` grid steps (three probe locations: longer than one
first-layer feature, whose envelope spans about one grid step); *straight* when it turns by
less than ``bent_deg`` degrees, *bent* otherwise. ``share_min = 0.3`` is set from known
answers only: the hand-built detectors of the tests score about 0.5, hand-built random units
at most about 0.26, and layer-3 units fitted to ideal contour fields inside a trained network
(:func:`cnce.images.layer_claims.contour_controls`, the positive control, whose lower layers
blur orientation) about 0.3-0.45. A unit is *corner-like* when its curve, or
its curve and a second curve traced after removing the first that touches it, turns by at
least ``corner_deg`` degrees and together hold ``share_min`` of the mass (two arms: each
holds at least a third of ``share_min``, and together they span at least ``2 min_steps + 1``
locations, two contours of ``min_steps`` steps meeting at one).

Known answers (tests/test_image_contours.py): hand-built energy detectors of Gabor filters
along a straight line and along an arc, probed with the authors' probe, are contour-like
(straight and bent); an L-shaped detector is corner-like; random and blob-like units are not.
Baselines: :func:`shuffle_locations` (each unit's orientation tunings moved to random
locations) and networks with random weights (:func:`cnce.images.measures.random_layer`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["Curve", "normalise_map", "trace_curve", "contour_properties", "shuffle_locations", "best_frequency",
           "energy_detector", "arc_points", "line_points"]


def _angdiff(a, b):
    """Smallest difference of two axial angles (mod pi), in [0, pi/2]."""
    d = np.mod(np.asarray(a) - np.asarray(b), np.pi)
    return np.minimum(d, np.pi - d)


def _wrap_half(d):
    """An axial angle difference wrapped to (-pi/2, pi/2]."""
    return (d + np.pi / 2) % np.pi - np.pi / 2


@dataclass(frozen=True)
class Curve:
    """A traced curve: its locations and orientation indices in order along it, and its
    ``share`` of the map's mass, ``length`` (pixels) and signed ``turning`` (radians)."""

    locations: tuple
    orientations: tuple
    share: float
    length: float
    turning: float

    @property
    def steps(self) -> int:
        return len(self.locations) - 1


def normalise_map(r: np.ndarray) -> np.ndarray:
    """A unit's responses ``r (..., n_pos, n_orient)`` minus their median, divided by the peak
    excess and clipped to ``[0, 1]`` (per leading index)."""
    r = np.asarray(r, dtype=float)
    flat = r.reshape(r.shape[:-2] + (-1,))
    med = np.median(flat, -1)[..., None, None]
    top = np.maximum(flat.max(-1)[..., None, None] - med, 1e-300)
    return np.clip((r - med) / top, 0.0, 1.0)


def _neighbours(pos: np.ndarray, delta: float) -> list[np.ndarray]:
    d = np.hypot(*(pos[:, None, :] - pos[None, :, :]).transpose(2, 0, 1))
    return [np.flatnonzero((d[i] > 1e-9) & (d[i] <= 1.5 * delta + 1e-9)) for i in range(len(pos))]


def trace_curve(R: np.ndarray, pos: np.ndarray, edges: np.ndarray, delta: float, *, floor: float = 0.3,
                max_turn: float = math.radians(45), max_dir: float = math.radians(50), tol: float = math.radians(30),
                neighbours=None) -> Curve:
    """Trace the strongest smooth curve through a normalised map ``R (n_pos, n_orient)`` (values in
    ``[0, 1]``) over locations ``pos (n_pos, 2)`` (pixels, a grid ``delta`` pixels apart) and
    orientations whose edge (tangent) angles are ``edges (n_orient,)`` radians in ``[0, pi)``.
    See the module's docstring for the rule. ``neighbours`` may pass the precomputed neighbour
    lists of ``pos``."""
    R = np.asarray(R, dtype=float)
    if R.shape != (len(pos), len(edges)):
        raise ValueError(f"R must have shape (n_pos, n_orient) = {(len(pos), len(edges))}; got {R.shape}")
    nb = neighbours if neighbours is not None else _neighbours(pos, delta)
    i0, k0 = np.unravel_index(int(np.argmax(R)), R.shape)
    visited = {int(i0)}
    ends = []
    for s in (1.0, -1.0):
        i, eps = int(i0), float(edges[k0])
        t = s * np.array([math.cos(eps), math.sin(eps)])
        path = []
        while True:
            best = None
            for j in nb[i]:
                if int(j) in visited:
                    continue
                c = pos[j] - pos[i]
                cn = c / np.linalg.norm(c)
                if math.acos(min(1.0, float(cn @ t))) > max_dir:
                    continue
                ok = np.flatnonzero(_angdiff(edges, eps) <= max_turn + 1e-9)
                k = int(ok[np.argmax(R[j, ok])])
                tj = np.array([math.cos(edges[k]), math.sin(edges[k])])
                tj = tj if tj @ t >= 0 else -tj
                if math.acos(min(1.0, float(cn @ tj))) > max_dir or R[j, k] < floor:
                    continue
                if best is None or R[j, k] > best[2]:
                    best = (int(j), k, float(R[j, k]), tj)
            if best is None:
                break
            j, k, _, tj = best
            visited.add(j)
            path.append((j, k))
            i, eps, t = j, float(edges[k]), tj
        ends.append(path)
    order = ends[1][::-1] + [(int(i0), int(k0))] + ends[0]
    locs = tuple(p for p, _ in order)
    oris = tuple(k for _, k in order)
    length = float(sum(np.linalg.norm(pos[a] - pos[b]) for a, b in zip(locs[:-1], locs[1:])))
    ang = edges[list(oris)]
    turning = float(np.sum(_wrap_half(np.diff(ang)))) if len(ang) > 1 else 0.0
    on = sum(R[i, _angdiff(edges, edges[k]) <= tol].sum() for i, k in order)
    return Curve(locs, oris, float(on / max(R.sum(), 1e-300)), length, turning)


def _remove(R, curve: Curve, edges, tol):
    R = R.copy()
    for i, k in zip(curve.locations, curve.orientations):
        R[i, _angdiff(edges, edges[k]) <= tol] = 0.0
    return R


def _touch(pos, a: Curve, b: Curve, delta) -> bool:
    pa, pb = pos[list(a.locations)], pos[list(b.locations)]
    return bool(np.min(np.hypot(*(pa[:, None, :] - pb[None, :, :]).transpose(2, 0, 1))) <= 1.5 * delta + 1e-9)


def best_frequency(resp: list[np.ndarray]) -> np.ndarray:
    """Per unit the index of the probe frequency with the largest response (the authors'
    ``getBestFreq.m``), from ``resp[f] (K, n_pos, n_orient)``."""
    return np.argmax(np.stack([np.asarray(r).reshape(r.shape[0], -1).max(1) for r in resp], 1), 1)


def contour_properties(resp: list[np.ndarray], probe, *, share_min: float = 0.3, min_steps: int = 2,
                       bent_deg: float = 30.0, corner_deg: float = 60.0, floor: float = 0.3,
                       tol_deg: float = 30.0, max_turn_deg: float = 45.0) -> dict[str, np.ndarray]:
    """Contour and corner measures of every unit's space-orientation receptive field.

    ``resp[f] (K, n_pos, n_orient)`` are the responses to ``probe`` (an
    :class:`cnce.images.probes.AuthorsProbe`, or any probe with ``freqs``, ``positions(f)``,
    ``grid(f)`` and ``edge_angles``). Per unit: ``freq`` (best frequency, cycles/pixel),
    ``share``, ``length`` (pixels), ``length_wavelengths``, ``steps``, ``turning`` (degrees,
    signed), ``contour``, ``straight``, ``bent``, ``corner`` (booleans) and ``share2`` (the
    share of the second curve). See the module's docstring for the rules."""
    if len(resp) != len(probe.freqs):
        raise ValueError(f"resp must hold one array per probe frequency ({len(probe.freqs)}); got {len(resp)}")
    edges = np.asarray(probe.edge_angles, dtype=float)
    tol, max_turn = math.radians(tol_deg), math.radians(max_turn_deg)
    bf = best_frequency(resp)
    K = len(bf)
    keys = ("freq", "share", "length", "length_wavelengths", "steps", "turning", "share2")
    out = {k: np.zeros(K) for k in keys}
    for k in ("contour", "straight", "bent", "corner"):
        out[k] = np.zeros(K, bool)
    cache = {}
    for u in range(K):
        fi = int(bf[u])
        fr = probe.freqs[fi]
        if fi not in cache:
            pos = probe.positions(fr)
            delta = probe.grid(fr)[1]
            cache[fi] = (pos, delta, _neighbours(pos, delta))
        pos, delta, nb = cache[fi]
        R = normalise_map(np.asarray(resp[fi][u], dtype=float))
        kw = dict(floor=floor, max_turn=max_turn, tol=tol, neighbours=nb)
        c1 = trace_curve(R, pos, edges, delta, **kw)
        is_contour = c1.share >= share_min and c1.steps >= min_steps
        R2 = _remove(R, c1, edges, tol)
        c2 = trace_curve(R2, pos, edges, delta, **kw) if R2.max() > 0 else None
        share2 = c2.share * R2.sum() / max(R.sum(), 1e-300) if c2 is not None else 0.0
        corner = is_contour and abs(math.degrees(c1.turning)) >= corner_deg
        arms = (c2 is not None and len(set(c1.locations) | set(c2.locations)) >= 2 * min_steps + 1
                and min(c1.share, share2) >= share_min / 3 and c1.share + share2 >= share_min)
        if not corner and arms:
            a1 = np.angle(np.exp(2j * edges[list(c1.orientations)]).mean()) / 2
            a2 = np.angle(np.exp(2j * edges[list(c2.orientations)]).mean()) / 2
            corner = bool(math.degrees(_angdiff(a1, a2)) >= corner_deg and _touch(pos, c1, c2, delta))
        out["freq"][u] = fr
        out["share"][u] = c1.share
        out["length"][u] = c1.length
        out["length_wavelengths"][u] = c1.length * fr
        out["steps"][u] = c1.steps
        out["turning"][u] = math.degrees(c1.turning)
        out["share2"][u] = share2
        out["contour"][u] = is_contour
        out["straight"][u] = is_contour and abs(math.degrees(c1.turning)) < bent_deg
        out["bent"][u] = is_contour and abs(math.degrees(c1.turning)) >= bent_deg
        out["corner"][u] = corner
    return out


def shuffle_locations(resp: list[np.ndarray], seed: int = 0) -> list[np.ndarray]:
    """The shuffled baseline: for every unit and frequency, the orientation tunings of its
    locations moved to a random permutation of the locations (what each location responds to
    is kept; where it lies is not)."""
    rng = np.random.default_rng(seed)
    out = []
    for r in resp:
        r = np.asarray(r)
        perm = np.argsort(rng.random(r.shape[:2]), axis=1)
        out.append(np.take_along_axis(r, perm[:, :, None], axis=1))
    return out


# -- hand-built units with known answers ---------------------------------------------------------


def line_points(centre, edge_angle: float, length: float, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Points ``step`` pixels apart along a straight segment of ``length`` pixels through
    ``centre`` at edge angle ``edge_angle``, and the tangent (edge) angle at each."""
    n = max(1, int(round(length / step)) + 1)
    s = (np.arange(n) - (n - 1) / 2) * step
    d = np.array([math.cos(edge_angle), math.sin(edge_angle)])
    return np.asarray(centre, float) + s[:, None] * d, np.full(n, float(edge_angle) % np.pi)


def arc_points(centre, radius: float, start: float, stop: float, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Points about ``step`` pixels apart on a circular arc (angles ``start`` to ``stop``, radians)
    around ``centre``, and the tangent (edge) angle at each."""
    n = max(2, int(round(abs(stop - start) * radius / step)) + 1)
    a = np.linspace(start, stop, n)
    pts = np.asarray(centre, float) + radius * np.stack([np.cos(a), np.sin(a)], 1)
    return pts, np.mod(a + np.pi / 2, np.pi)


def energy_detector(size: int, points, edge_angles, freq: float, sigma: float | None = None):
    """A hand-built unit as a function of pixel patches: the summed energy of quadrature pairs of
    Gabor filters (frequency ``freq``, envelope ``sigma``, default ``0.42 / freq``) at
    ``points (n, 2)`` (pixels), each with its stripes along ``edge_angles`` (the wave vector
    perpendicular). Returns ``fn(X (m, size*size)) -> (m, 1)`` for
    :func:`cnce.images.probes.probe_function`."""
    from cnce.images.probes import gabor

    pts = np.asarray(points, dtype=float)
    th = np.asarray(edge_angles, dtype=float) + np.pi / 2  # wave-vector angle
    s = 0.42 / freq if sigma is None else sigma
    G = np.concatenate([gabor(size, pts[:, 0], pts[:, 1], th, freq, ph, s).reshape(len(pts), -1)
                        for ph in (0.0, np.pi / 2)])
    Gt = torch.as_tensor(G.T, dtype=torch.float32)

    def fn(X):
        X = X - X.mean(1, keepdim=True)
        return ((X @ Gt) ** 2).sum(1, keepdim=True).numpy()

    return fn
