"""Measures of exactly what the paper says about layers 2-4 (Sec. 4.2, Figs. 5-6), each beside
random-weight and shuffled baselines, with an interval over units and seeds, returned as
:class:`cnce.images.verdicts.Measured`.

The paper's words and the measure of each:

* Layer 2 "tends to pool these features according to frequency, orientation and locality"
  (:func:`pooling_claim` with ``prop`` = ``"frequency"``, ``"orientation"``, ``"position"``):
  for every second-layer unit, the units it pools (at most ten, or as many as hold 90 % of its
  weight, as Fig. 5 selects them) have a mean pairwise spread in that property; it is
  compared with ``n_random`` random sets of the same size (a permutation test of the pooling:
  the unit's weights given to random units). A unit is *coherent* when fewer than 5 % of the
  random sets are as alike. The value is the share of coherent units (5 % by chance).
  Baselines: the same measure with every row of the pooling weights randomly permuted
  (*random pooling*, the random-weight network of :func:`cnce.images.measures.random_layer`)
  and with the pooled units' properties shuffled among them (*shuffled properties*).
* Layer 3 units "detect longer straight or bended contours" (:func:`contour_claim`): the
  share of units whose space-orientation field is contour-like
  (:func:`cnce.images.contours.contour_properties`: one smooth curve holds at least 30 % of
  the response and spans at least three probe locations), with the straight and bent shares.
  Baselines: the same network with random layer-3 weights, and the learned fields with their
  locations shuffled (:func:`cnce.images.contours.shuffle_locations`). Positive control
  (:func:`contour_controls`): the layer-3 units of the same network fitted to ideal contour
  fields (straight lines and arcs) must score as contours first; if most do not, the measure
  cannot see contour units through this network's lower layers and the claim is not testable
  here.
* Layer 4 pools "3rd layer units that share the same spatial orientation preference but are
  tuned to different spatial frequencies" (:func:`orientation_across_frequency_claim`): a
  fourth-layer unit does when its pooled third-layer units are coherent in orientation (as
  above) and their best probe frequencies span at least half an octave. Baselines: random
  pooling and shuffled properties.
* Layer 4 has a "corner detector" (:func:`contour_claim` with ``kind="corner"``): the share of
  corner-like fourth-layer fields. Baselines: random (permuted) layer-4 weights and shuffled
  locations. Positive control (:func:`corner_controls`): layer-4 units pooling the learned
  layer-3 units, fitted to ideal L-shaped fields, must score as corners first.

Not testable here: a frequency claim needs the pooled units' preferred frequencies to spread:
when their 10th-90th percentile spans less than ``min_octaves`` (one octave), the claim is
reported as "not testable here" with that number (the same rule for layers 2 and 4).

Verdict rule (every claim): *supported* when the interval's lower end lies above every
baseline and, for each seed, a one-sided binomial test of the coherent (or contour-like) count
against the largest baseline share of that seed (and at least 5 %) gives ``p < alpha / n_tests`` (Bonferroni over the
``n_tests`` claims of that layer); otherwise *not supported*, with the numbers.
"""
from __future__ import annotations

import math

import numpy as np

from cnce.images import contours
from cnce.images.measures import SPREADS, octave_spread, pooled_sets, pooling_coherence
from cnce.images.verdicts import Measured, not_testable, unit_interval

__all__ = ["pooling_claim", "contour_claim", "orientation_across_frequency_claim", "layer3_unit_properties",
           "permute_rows", "coherent_units", "claims_from_networks", "pooling_claims", "contour_controls", "corner_controls",
           "CHANCE"]

#: A unit counts as coherent when fewer than this share of random sets are as alike: the share
#: of coherent units that random pooling gives.
CHANCE = 0.05


def permute_rows(q, seed: int = 0) -> np.ndarray:
    """Each row of the pooling weights ``q (K, K_below)`` randomly permuted: every unit keeps its
    weight distribution but pools a random set (random pooling)."""
    q = np.asarray(q, dtype=float)
    rng = np.random.default_rng(seed)
    return np.take_along_axis(q, np.argsort(rng.random(q.shape), axis=1), axis=1)


def coherent_units(q, props: dict, prop: str, *, n_random: int = 200, seed: int = 0, max_units: int = 10,
                   mass: float = 0.9) -> np.ndarray:
    """Per pooling unit with at least two pooled units: whether the pooled units are more alike in
    ``prop`` than 95 % of random sets of the same size (:func:`cnce.images.measures.pooling_coherence`).
    ``props`` holds ``orientation`` (radians), ``frequency`` (> 0), ``x``, ``y`` of the pooled
    layer's units."""
    if prop not in SPREADS:
        raise ValueError(f"prop must be one of {SPREADS}; got {prop!r}")
    df = pooling_coherence(q, props["orientation"], props["frequency"], props["x"], props["y"], n_random=n_random,
                           seed=seed, max_units=max_units, mass=mass)
    df = df[df["n_pooled"] >= 2]
    return (df[f"{prop}_rank"] < CHANCE).to_numpy()


def _shuffle_props(props: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(props["orientation"]))
    return {k: np.asarray(props[k])[perm] for k in ("orientation", "frequency", "x", "y")}


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _binom_p(units: np.ndarray, p0: float) -> float:
    from scipy.stats import binomtest

    n = len(units)
    if n == 0:
        return 1.0
    return float(binomtest(int(np.sum(units)), n, min(max(p0, 1e-9), 1 - 1e-9), alternative="greater").pvalue)


def _verdict(claim, measure, per_seed_units, baselines_per_seed, *, alpha, n_tests, extra=None, what="units") -> Measured:
    value, ci, rule, per_seed = unit_interval(per_seed_units, share=True)
    base = {k: float(np.mean(v)) for k, v in baselines_per_seed.items()}
    worst = max(base.values()) if base else 0.0
    ps = [_binom_p(np.asarray(u), max([CHANCE] + [baselines_per_seed[k][s] for k in base]))
          for s, u in enumerate(per_seed_units)]
    level = alpha / n_tests
    ok = ci[0] > worst and all(p < level for p in ps)
    text = (f"supported: {value:.2f} of {what} [{ci[0]:.2f}, {ci[1]:.2f}] against at most {worst:.2f} for the baselines; "
            f"binomial p per seed {', '.join(f'{p:.2g}' for p in ps)} (threshold {level:.3g})" if ok else
            f"not supported: {value:.2f} of {what} [{ci[0]:.2f}, {ci[1]:.2f}] against baselines "
            + ", ".join(f"{k} {v:.2f}" for k, v in base.items())
            + f"; binomial p per seed {', '.join(f'{p:.2g}' for p in ps)} (threshold {level:.3g})")
    ex = {"per_seed": per_seed, "p_per_seed": ps, "alpha": alpha, "n_tests": n_tests,
          "baselines_per_seed": {k: list(map(float, v)) for k, v in baselines_per_seed.items()}}
    ex.update(extra or {})
    return Measured(claim=claim, measure=measure, value=value, baselines=base, interval=ci, rule=rule, verdict=text,
                    n_units=int(sum(len(u) for u in per_seed_units)), n_seeds=len(per_seed_units), extra=ex)


def _frequency_spread_check(props_per_seed, min_octaves, layer_below) -> str | None:
    freqs = [np.asarray(p["frequency"], dtype=float) for p in props_per_seed]
    spreads = [octave_spread(f) for f in freqs]
    if min(spreads) < min_octaves:
        top = "; ".join(f"{int(np.sum(np.isclose(f, f.max())))} of {f.size} at the highest, {f.max():.2f} cycles/pixel"
                        for f in freqs)
        return (f"the layer-{layer_below} units' preferred frequencies span "
                + ", ".join(f"{s:.2f}" for s in spreads)
                + f" octaves (10th-90th percentile, per seed; {top}), under the {min_octaves:g} octave a frequency "
                  f"claim needs")
    return None


def pooling_claim(q, props, prop: str, *, layer: int = 2, n_random: int = 200, seed: int = 0, max_units: int = 10,
                  mass: float = 0.9, min_octaves: float = 1.0, alpha: float = 0.05, n_tests: int = 3) -> Measured:
    """Layer ``layer`` (2 or 4) pools by ``prop`` (``"orientation"``, ``"frequency"``,
    ``"position"``): see the module's docstring.

    ``q`` is the pooling weights ``W**2 (K, K_below)`` of one seed or a list (one per seed);
    ``props`` the matching dict (or list of dicts) of the pooled units' ``orientation``
    (radians), ``frequency`` (cycles/pixel), ``x``, ``y`` (pixels) (for layer 2, a
    :class:`cnce.images.measures.FilterProperties` of the first-layer units works too).
    :func:`pooling_claims` measures several properties at the cost of one."""
    if prop not in SPREADS:
        raise ValueError(f"prop must be one of {SPREADS}; got {prop!r}")
    return pooling_claims(q, props, (prop,), layer=layer, n_random=n_random, seed=seed, max_units=max_units, mass=mass,
                          min_octaves=min_octaves, alpha=alpha, n_tests=n_tests)[prop]


def pooling_claims(q, props, prop=SPREADS, *, layer: int = 2, n_random: int = 200, seed: int = 0, max_units: int = 10,
                   mass: float = 0.9, min_octaves: float = 1.0, alpha: float = 0.05, n_tests: int = 3) -> dict[str, Measured]:
    """:func:`pooling_claim` for each property in ``prop``, sharing the random sets:
    ``{prop: Measured}``."""
    props_to_test = tuple(prop)
    if not props_to_test or any(p not in SPREADS for p in props_to_test):
        raise ValueError(f"prop must be drawn from {SPREADS}; got {prop!r}")
    if layer not in (2, 4):
        raise ValueError(f"layer must be 2 or 4; got {layer!r}")
    qs = [np.asarray(x, dtype=float) for x in _as_list(q)]
    ps = [_props_dict(p) for p in _as_list(props)]
    if len(qs) != len(ps):
        raise ValueError(f"q and props must hold one entry per seed; got {len(qs)} and {len(ps)}")
    dfs = []
    for s, (qq, pp) in enumerate(zip(qs, ps)):
        kw = dict(n_random=n_random, seed=seed + s, max_units=max_units, mass=mass)
        one = lambda q_, p_: (lambda d: d[d["n_pooled"] >= 2])(  # noqa: E731
            pooling_coherence(q_, p_["orientation"], p_["frequency"], p_["x"], p_["y"], **kw))
        dfs.append((one(qq, pp), one(permute_rows(qq, seed + 1000 + s), pp), one(qq, _shuffle_props(pp, seed + 2000 + s))))
    out = {}
    for pr in props_to_test:
        words = {"position": "locality", "orientation": "orientation", "frequency": "frequency"}[pr]
        claim = f"layer {layer} pools by {words}"
        measure = f"share of layer-{layer} units whose pooled units are more alike in {pr} than 95 % of random sets"
        reason = _frequency_spread_check(ps, min_octaves, layer - 1) if pr == "frequency" else None
        if reason:
            out[pr] = not_testable(claim, measure, reason)
            continue
        coh = lambda d: (d[f"{pr}_rank"] < CHANCE).to_numpy()  # noqa: E731
        learned = [coh(d[0]) for d in dfs]
        rnd = [float(np.mean(coh(d[1]))) for d in dfs]
        shuf = [float(np.mean(coh(d[2]))) for d in dfs]
        ratio = [float(np.median(d[0][pr] / d[0][f"{pr}_random"])) for d in dfs]
        out[pr] = _verdict(claim, measure, learned,
                           {"chance": [CHANCE] * len(qs), "random pooling": rnd, "shuffled properties": shuf},
                           alpha=alpha, n_tests=n_tests, extra={"median spread / random spread per seed": ratio})
    return out


def _props_dict(p) -> dict:
    if isinstance(p, dict):
        return {k: np.asarray(p[k], dtype=float) for k in ("orientation", "frequency", "x", "y")}
    return {k: np.asarray(getattr(p, k), dtype=float) for k in ("orientation", "frequency", "x", "y")}


def layer3_unit_properties(resp3, probe) -> dict[str, np.ndarray]:
    """The properties of third-layer units that layer 4 may pool by, from their responses to
    ``probe``: ``orientation`` (wave-vector angle of the response-weighted orientation,
    :func:`cnce.images.measures.so_rf_properties`), ``frequency`` (best probe frequency, as the
    authors pick it, :func:`cnce.images.contours.best_frequency`), ``x``, ``y`` (response-weighted
    centre), and ``orientation_coherence``."""
    from cnce.images.measures import so_rf_properties

    so = so_rf_properties(resp3, probe)
    bf = np.asarray(probe.freqs, dtype=float)[contours.best_frequency(resp3)]
    return {"orientation": so["orientation"], "frequency": bf, "x": so["x"], "y": so["y"],
            "orientation_coherence": so["orientation_coherence"]}


def orientation_across_frequency_claim(q4, props3, *, n_random: int = 200, seed: int = 0, max_units: int = 10,
                                       mass: float = 0.9, min_octaves: float = 1.0, span_octaves: float = 0.5,
                                       alpha: float = 0.05, n_tests: int = 2) -> Measured:
    """Layer 4 pools third-layer units of one orientation across frequencies: see the module's
    docstring. ``q4 = W4**2 (K4, K3)`` (or a list per seed); ``props3`` from
    :func:`layer3_unit_properties` (or a list per seed)."""
    qs = [np.asarray(x, dtype=float) for x in _as_list(q4)]
    ps = [_props_dict(p) for p in _as_list(props3)]
    if len(qs) != len(ps):
        raise ValueError(f"q4 and props3 must hold one entry per seed; got {len(qs)} and {len(ps)}")
    claim = "layer 4 pools layer-3 units of one orientation across frequencies"
    measure = (f"share of layer-4 units whose pooled layer-3 units are coherent in orientation and span at least "
               f"{span_octaves:g} octave in best frequency")
    reason = _frequency_spread_check(ps, min_octaves, 3)
    if reason:
        return not_testable(claim, measure, reason)

    def units(q, p, s):
        kw = dict(n_random=n_random, seed=s, max_units=max_units, mass=mass)
        df = pooling_coherence(q, p["orientation"], p["frequency"], p["x"], p["y"], **kw)
        sets = pooled_sets(q, max_units, mass)
        keep = df["n_pooled"].to_numpy() >= 2
        span = np.array([np.log2(p["frequency"][i].max() / p["frequency"][i].min()) for i in sets])
        return ((df["orientation_rank"].to_numpy() < CHANCE) & (span >= span_octaves - 1e-9))[keep]

    learned, rnd, shuf = [], [], []
    for s, (q, p) in enumerate(zip(qs, ps)):
        learned.append(units(q, p, seed + s))
        rnd.append(float(np.mean(units(permute_rows(q, seed + 1000 + s), p, seed + s))))
        shuf.append(float(np.mean(units(q, _shuffle_props(p, seed + 2000 + s), seed + s))))
    return _verdict(claim, measure, learned, {"chance": [CHANCE] * len(qs), "random pooling": rnd, "shuffled properties": shuf},
                    alpha=alpha, n_tests=n_tests)


def contour_claim(resp, resp_random, probe, *, kind: str = "contour", layer: int | None = None, seed: int = 0,
                  alpha: float = 0.05, n_tests: int = 1, resp_control=None, control_min: float = 0.5,
                  **contour_kw) -> Measured:
    """Layer-3 contour-like units (``kind="contour"``) or layer-4 corner-like units
    (``kind="corner"``): see the module's docstring.

    ``resp`` are the learned layer's responses to ``probe`` (one list per frequency, or a list
    of those per seed), ``resp_random`` those of the network with that layer's weights random
    (same shape). ``contour_kw`` go to :func:`cnce.images.contours.contour_properties`.

    ``resp_control`` (optional, same shape): responses of hand-built units *of the same
    network* that are contour (or corner) detectors by construction (:func:`contour_controls`).
    The positive control must pass first: when fewer than ``control_min`` of them score as
    ``kind``, the claim is *not testable here* (the measure cannot see such units through this
    network's lower layers), with that number."""
    from scipy.stats import mannwhitneyu

    if kind not in ("contour", "corner"):
        raise ValueError(f"kind must be 'contour' or 'corner'; got {kind!r}")
    layer = layer or (3 if kind == "contour" else 4)
    control = None
    if resp_control is not None:
        seeds_c = resp_control if isinstance(resp_control[0], (list, tuple)) else [resp_control]
        pc = [contours.contour_properties(r, probe, **contour_kw) for r in seeds_c]
        passed = np.concatenate([c[kind] for c in pc])
        shares = np.concatenate([c["share"] for c in pc])
        control = {"passed": float(passed.mean()), "n": int(passed.size), "median curve share": float(np.median(shares))}
        if control["passed"] < control_min:
            words = "contour" if kind == "contour" else "corner"
            how = ("layer-3 weights fitted to ideal fields along lines and arcs" if kind == "contour"
                   else "layer-4 pooling of the learned layer-3 units fitted to ideal L-shaped fields")
            reason = (f"the positive control fails: {int(passed.sum())} of {passed.size} hand-built {words} units of this "
                      f"network ({how}) score as {words}-like "
                      f"(median curve share {control['median curve share']:.2f}; {contour_kw.get('share_min', 0.3):g} "
                      f"needed), under the {control_min:g} the measure needs to see such units here")
            claim = ("layer 3 detects longer straight or bent contours" if kind == "contour"
                     else f"layer {layer} has corner detectors")
            return not_testable(claim, f"share of layer-{layer} units with a {words}-like field", reason,
                                **{"positive control": control})
    seeds = resp if isinstance(resp[0], (list, tuple)) else [resp]
    seeds_r = resp_random if isinstance(resp_random[0], (list, tuple)) else [resp_random]
    if len(seeds) != len(seeds_r):
        raise ValueError(f"resp and resp_random must hold one entry per seed; got {len(seeds)} and {len(seeds_r)}")
    learned, rnd, shuf = [], [], []
    extra = {"straight share": [], "bent share": [], "median curve share": [], "median curve share, random": [],
             "median curve share, shuffled": [], "median length (wavelengths)": [], "median length, random": [],
             "curve share above random, rank-sum p": []}
    for s, (r, rr) in enumerate(zip(seeds, seeds_r)):
        p = contours.contour_properties(r, probe, **contour_kw)
        pr = contours.contour_properties(rr, probe, **contour_kw)
        ps = contours.contour_properties(contours.shuffle_locations(r, seed + s), probe, **contour_kw)
        learned.append(p[kind])
        rnd.append(float(np.mean(pr[kind])))
        shuf.append(float(np.mean(ps[kind])))
        extra["straight share"].append(float(np.mean(p["straight"])))
        extra["bent share"].append(float(np.mean(p["bent"])))
        extra["median curve share"].append(float(np.median(p["share"])))
        extra["median curve share, random"].append(float(np.median(pr["share"])))
        extra["median curve share, shuffled"].append(float(np.median(ps["share"])))
        extra["median length (wavelengths)"].append(float(np.median(p["length_wavelengths"])))
        extra["median length, random"].append(float(np.median(pr["length_wavelengths"])))
        extra["curve share above random, rank-sum p"].append(float(mannwhitneyu(p["share"], pr["share"], alternative="greater").pvalue))
    if kind == "contour":
        claim, measure = "layer 3 detects longer straight or bent contours", "share of layer-3 units with a contour-like field"
    else:
        claim, measure = f"layer {layer} has corner detectors", f"share of layer-{layer} units with a corner-like field"
    base_name = "random layer-3 weights" if layer == 3 else f"random layer-{layer} weights"
    if control is not None:
        extra["positive control"] = control
    return _verdict(claim, measure, learned, {base_name: rnd, "shuffled locations": shuf}, alpha=alpha, n_tests=n_tests,
                    extra=extra)


def _curve_target(probe, pts, tang, kappa: float) -> np.ndarray:
    """The ideal space-orientation field of a curve through ``pts`` with tangents ``tang``, over
    every probe stimulus (frequency, location, orientation flattened in probe order)."""
    edges = np.asarray(probe.edge_angles)
    T = []
    for f in probe.freqs:
        pos = probe.positions(f)
        delta = probe.grid(f)[1]
        d = np.hypot(*(pos[:, None, :] - pts[None]).transpose(2, 0, 1))
        near = d.argmin(1)
        T.append((np.exp(-0.5 * (d.min(1) / (0.5 * delta)) ** 2)[:, None]
                  * np.exp(kappa * (np.cos(2 * (edges[None, :] - tang[near][:, None])) - 1))).ravel())
    return np.concatenate(T)


def _layer3_inputs(net, whitener, probe, chunk: int) -> list[np.ndarray]:
    """``u3`` (the layer-3 input) for every stimulus of ``probe``: one array ``(D3, n_pos,
    n_orient)`` per frequency."""
    import torch

    from cnce.images.probes import _as_u, probe_function

    net = net.cpu()
    with torch.no_grad():
        return probe_function(lambda X: net.u3(net.z2(net.z1(_as_u(X.numpy(), whitener)))).numpy(), probe, chunk=chunk)


def _flat(per_freq) -> np.ndarray:
    return np.concatenate([x.reshape(x.shape[0], -1) for x in per_freq], 1).T.astype(float)  # (n_stimuli, dim)


def _unflat(Z: np.ndarray, probe) -> list[np.ndarray]:
    out, i = [], 0
    for f in probe.freqs:
        n = len(probe.positions(f)) * probe.n_orient
        out.append(Z[i:i + n].T.reshape(Z.shape[1], -1, probe.n_orient).astype(np.float32))
        i += n
    return out


def contour_controls(net, whitener, probe=None, *, n_lines: int = 6, n_arcs: int = 2, kappa: float = 2.0,
                     chunk: int = 4096):
    """Positive controls for the layer-3 contour measure, built inside ``net``: the layer-3
    units that come closest to ideal contour detectors given this network's layers 1-2.

    For each target curve (``n_lines`` straight lines through the patch centre at evenly spread
    angles, three quarters of the patch long, and ``n_arcs`` arcs of 120 degrees bending either
    way) the ideal space-orientation field is
    ``T(location, orientation) = exp(-d^2 / (2 (delta/2)^2)) exp(kappa (cos 2(edge - tangent) - 1))``
    at every probe frequency (``d`` the location's distance from the curve, ``delta`` the grid
    step, ``tangent`` the curve's direction at its nearest point). The unit's weights ``w`` are
    the least-squares fit of ``w . u3`` to ``T`` over all probe stimuli (``u3`` the layer-3
    input), scaled to the mean norm of the learned layer-3 rows; its responses to the probe are
    then ``max(w . u3, 0)``, as the learned units' are (or ``w . u3`` with the linear unit).

    Returns ``(resp3, r2)``: the control units' responses to ``probe`` (one array per
    frequency) and the fraction of the target's variance each linear fit explains."""
    size = int(round(math.sqrt(whitener.V.shape[0])))
    probe = probe or _default_probe(size)
    A = _flat(_layer3_inputs(net, whitener, probe, chunk))  # (n_stimuli, D3)
    c = np.array([(size - 1) / 2, (size - 1) / 2])
    curves = [contours.line_points(c, a, 0.75 * size, 1.0) for a in np.arange(n_lines) * np.pi / max(n_lines, 1)]
    rad = 0.45 * size
    for b in range(n_arcs):
        sgn = 1.0 if b % 2 == 0 else -1.0
        mid = -sgn * np.pi / 2  # the arc's middle lies at the patch centre, bending up or down
        curves.append(contours.arc_points(c - rad * np.array([math.cos(mid), math.sin(mid)]), rad,
                                          mid - np.pi / 3, mid + np.pi / 3, 1.0))
    T = np.stack([(lambda t: t - t.mean())(_curve_target(probe, pts, tang, kappa)) for pts, tang in curves], 1)
    Wt = np.linalg.lstsq(A, T, rcond=None)[0]  # one least-squares solve for all curves
    r2 = [float(v) for v in 1 - np.var(T - A @ Wt, axis=0) / np.var(T, axis=0)]
    W = Wt.T / np.maximum(np.linalg.norm(Wt.T, axis=1, keepdims=True), 1e-12) * float(net.W3.detach().norm(dim=1).mean())
    Z = A @ W.T  # z3 = w . u3 on every stimulus, thresholded as the learned units are
    return _unflat(np.maximum(Z, 0) if net.l3_nonlinearity == "max" else Z, probe), r2


def corner_controls(net, whitener, probe=None, *, n_corners: int = 4, kappa: float = 2.0, chunk: int = 4096):
    """Positive controls for the layer-4 corner measure, built inside ``net``: layer-4 units
    whose non-negative pooling weights ``q`` over the *learned* layer-3 units (``z4 = q . z3``,
    Eq. 24) come closest to ideal corner fields, fitted by non-negative least squares
    (``scipy.optimize.nnls``, with a free constant) over all probe stimuli.

    The targets are L-shaped: two straight arms, each three eighths of the patch long, meeting at
    a right angle at the patch centre, in ``n_corners`` rotations; the field of each arm is as
    in :func:`contour_controls`. Returns ``(resp4, r2)`` as :func:`contour_controls` does."""
    from scipy.optimize import nnls

    size = int(round(math.sqrt(whitener.V.shape[0])))
    probe = probe or _default_probe(size)
    U = _flat(_layer3_inputs(net, whitener, probe, chunk))
    Z3 = U @ net.W3.detach().double().cpu().numpy().T  # linear z3, which layer 4 pools
    c = np.array([(size - 1) / 2, (size - 1) / 2])
    arm = 0.375 * size
    n = max(2, int(round(arm)) + 1)
    resp, r2 = [], []
    B = np.concatenate([Z3, np.ones((len(Z3), 1)), -np.ones((len(Z3), 1))], 1)
    for k in range(n_corners):
        a = k * np.pi / 2
        parts = []
        for b in (a, a + np.pi / 2):
            d = np.array([math.cos(b), math.sin(b)])
            pts = c + np.linspace(0, arm, n)[:, None] * d
            parts.append(_curve_target(probe, pts, np.full(n, b % np.pi), kappa))
        T = np.maximum(parts[0], parts[1])
        q, _ = nnls(B, T, maxiter=50 * B.shape[1])
        fit = B @ q
        r2.append(float(1 - np.var(T - fit) / np.var(T)))
        resp.append(Z3 @ q[:-2])
    return _unflat(np.stack(resp, 1), probe), r2


def _default_probe(size: int):
    from cnce.images.probes import AuthorsProbe

    return AuthorsProbe(size=size)


def claims_from_networks(networks, probe=None, *, picture: str = "receptive fields", n_random: int = 200, seed: int = 0,
                         chunk: int = 4096, controls: bool = True) -> dict:
    """Every layer claim for trained networks, one per seed: ``networks`` is a list of
    ``(ImageNetwork, Whitener)`` (e.g. from :func:`cnce.images.runs.network_from_state` of
    ``data/weights/paper`` and ``paper-seed1``).

    Probes each network, its copy with random layer-3 weights and its copy with permuted
    layer-4 weights (:func:`cnce.images.measures.random_layer`, seeded by ``seed``) with
    ``probe`` (default :class:`cnce.images.probes.AuthorsProbe`; pass
    ``AuthorsProbe.extended()`` for 0.05-0.45 cycles/pixel), and describes the first-layer units
    by :func:`cnce.images.measures.filter_properties` of their ``picture``. With ``controls``,
    the layer-3 and layer-4 contour and corner claims first check their positive controls
    inside each network (:func:`contour_controls`, :func:`corner_controls`).

    Returns ``{"results": {name: Measured}, "responses": {"layer 3": [...], "layer 3 random":
    [...], "layer 4": [...], "layer 4 random": [...], "layer 3 control": [...], "layer 4 control":
    [...]} (one entry per seed), "probe": probe}``;
    names: ``"layer 2 position"``, ``"layer 2 orientation"``, ``"layer 2 frequency"``,
    ``"layer 3 contours"``, ``"layer 4 orientation across frequencies"``, ``"layer 4 corners"``.
    """
    from cnce.images.measures import filter_properties, random_layer, unit_images
    from cnce.images.probes import AuthorsProbe, probe_layers

    if not networks:
        raise ValueError("networks must hold at least one (network, whitener) pair")
    q2, p1, q4, p3 = [], [], [], []
    resp = {"layer 3": [], "layer 3 random": [], "layer 4": [], "layer 4 random": [], "layer 3 control": [],
            "layer 4 control": []}
    for net, wh in networks:
        size = int(round(math.sqrt(wh.V.shape[0])))
        probe = probe or AuthorsProbe(size=size)
        p1.append(filter_properties(unit_images(net.W1.detach().float().cpu(), wh)[picture]))
        q2.append((net.W2.detach().double() ** 2).cpu().numpy())
        q4.append((net.W4.detach().double() ** 2).cpu().numpy())
        r = probe_layers(net, wh, probe, layers=(3, 4), chunk=chunk)
        if controls:
            resp["layer 3 control"].append(contour_controls(net, wh, probe, chunk=chunk)[0])
            resp["layer 4 control"].append(corner_controls(net, wh, probe, chunk=chunk)[0])
        resp["layer 3"].append(r[3])
        resp["layer 4"].append(r[4])
        resp["layer 3 random"].append(probe_layers(random_layer(net, 3, seed=seed), wh, probe, layers=(3,), chunk=chunk)[3])
        resp["layer 4 random"].append(probe_layers(random_layer(net, 4, seed=seed), wh, probe, layers=(4,), chunk=chunk)[4])
        p3.append(layer3_unit_properties(r[3], probe))
    results = {f"layer 2 {k}": v for k, v in pooling_claims(q2, p1, n_random=n_random, seed=seed).items()}
    results["layer 3 contours"] = contour_claim(resp["layer 3"], resp["layer 3 random"], probe, seed=seed,
                                                resp_control=resp["layer 3 control"] if controls else None)
    results["layer 4 orientation across frequencies"] = orientation_across_frequency_claim(q4, p3, n_random=n_random, seed=seed)
    results["layer 4 corners"] = contour_claim(resp["layer 4"], resp["layer 4 random"], probe, kind="corner", seed=seed, n_tests=2,
                                               resp_control=resp["layer 4 control"] if controls else None)
    return {"results": results, "responses": resp, "probe": probe}
