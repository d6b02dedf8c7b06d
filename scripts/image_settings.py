"""The deciding image claims (photo-pack runs, Supp. D.2) under two measure settings each, with
null distributions as baselines (CPU, about ten minutes on two shared cores).

    .venv/bin/python scripts/image_settings.py [--out data/checks/image-settings.json] [--n-perm 200]

For the photo-pack runs (``data/weights/photos/paper-seed0`` ... ``paper-seed2``, the group
whose first layer spans the frequencies the frequency claims need):

* layer 2 pools by position, orientation, frequency: the first-layer units described by their
  receptive fields and by their features (the two pictures of a unit);
* layer 3 contour-like units, layer 4 one orientation across frequencies, layer 4 corners: the
  authors' probe range (0.10-0.25 cycles/pixel) and the extended range (0.05-0.45);
* every baseline a null distribution of ``--n-perm`` draws per seed
  (:mod:`cnce.images.layer_claims`);
* layer-2 sparsity (90 % and 50 % of a unit's weight) against the initialisation and random
  Gaussian weights; the variance PCA keeps at D = 600 (photo pack and bundled photographs)
  against the paper's 98 %;
* Supp. D.2 "CNCE learns faster" under the Fourier index and the best-frequency grating index.

Each claim's settings are combined by :func:`cnce.images.layer_claims.over_settings`. Results go
to ``--out`` (:func:`cnce.images.claims.save_measured`, written atomically after each claim, with
the commit). Refuses to run on a working tree whose ``cnce/`` or ``scripts/`` differ from the
commit, unless ``--allow-dirty`` (the file then says so).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from cnce import provenance
from cnce.images import claims, d2, layer_claims, measures, probes, runs

from companion.adopt import check_file_state

#: the deciding group: the photo pack, three seeds
PHOTO_RUNS = [f"photos/paper-seed{k}" for k in range(3)]
#: the runs the page has shown from the start (bundled photographs), for the PCA variance
BUNDLED_RUNS = ["paper", "paper-seed1", "paper-seed2"]
PROBES = {"authors' probe (0.10-0.25 cycles/pixel)": probes.AuthorsProbe,
          "extended probe (0.05-0.45 cycles/pixel)": probes.AuthorsProbe.extended}
PICTURES = {"receptive fields": "receptive fields", "features": "features"}
WHY = {"layer2_frequency": "the picture sets how far the first layer's preferred frequencies spread",
       "layer3_contours": "the extended range adds frequencies at which the measure's positive control fails",
       "layer4_orientation_across_frequency": "the probe range sets the layer-3 units' best frequencies"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/checks/image-settings.json")
    ap.add_argument("--n-perm", type=int, default=layer_claims.N_PERM, help="draws of every null distribution per seed")
    ap.add_argument("--n-random", type=int, default=layer_claims.N_REFERENCE,
                    help="random sets per set size in the coherence test's reference")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--d2", default="d2/paper.pt", help="the Supp. D.2 runs under data/weights ('' to skip)")
    ap.add_argument("--allow-dirty", action="store_true")
    a = ap.parse_args(argv)
    if a.n_perm < 100:
        ap.error(f"--n-perm must be at least 100; got {a.n_perm}")
    state = check_file_state(ap, a.allow_dirty)
    torch.set_num_threads(2)
    out = Path(a.out)
    meta = dict(**state, args=vars(a), seconds={}, runs=PHOTO_RUNS)
    measured, tables = {}, {}

    def save(key, value, t0):
        measured[key] = value
        meta["seconds"][key] = round(time.time() - t0, 1)
        provenance.atomic_write_text(out, claims.save_measured(measured, tables, meta))
        print(f"{key}: {time.time() - t0:.0f} s", flush=True)

    states = [runs.load_state(runs.weights_dir() / r) for r in PHOTO_RUNS]
    nets = [runs.network_from_state(st) for st in states]
    side = int(round(np.sqrt(nets[0][1].V.shape[0])))
    by = {}  # key -> {setting: Measured}
    for name, make in PROBES.items():
        t0 = time.time()
        got = layer_claims.claims_from_networks(nets, make(size=side), picture="receptive fields", n_random=a.n_random,
                                                seed=a.seed, n_perm=a.n_perm)["results"]
        for claim, key in (("layer 3 contours", "layer3_contours"),
                           ("layer 4 orientation across frequencies", "layer4_orientation_across_frequency"),
                           ("layer 4 corners", "layer4_corners")):
            by.setdefault(key, {})[name] = got[claim]
            save(f"{key} | {name}", got[claim], t0)
    for name, pic in PICTURES.items():
        t0 = time.time()
        p1 = [measures.filter_properties(measures.unit_images(n.W1.detach().float(), w)[pic]) for n, w in nets]
        q2 = [(n.W2.detach().double() ** 2).numpy() for n, _ in nets]
        got = layer_claims.pooling_claims(q2, p1, n_random=a.n_random, n_perm=a.n_perm, seed=a.seed)
        for prop, m in got.items():
            by.setdefault(f"layer2_{prop}", {})[f"layer-1 {name}"] = m
            save(f"layer2_{prop} | layer-1 {name}", m, t0)
    t0 = time.time()
    init = [(measures.initial_network(st).W2.detach().double() ** 2).numpy() for st in states]
    g = torch.Generator().manual_seed(a.seed)
    rnd = [(torch.randn(q.shape, generator=g, dtype=torch.float64) ** 2).numpy() for q in init]
    for mass in (0.9, 0.5):
        m = layer_claims.sparsity_claim([(n.W2.detach().double() ** 2).numpy() for n, _ in nets],
                                        {"initialisation": init, "random Gaussian weights": rnd}, mass=mass)
        by.setdefault("layer2_sparsity", {})[f"{100 * mass:.0f} % of the weight"] = m
        save(f"layer2_sparsity | {100 * mass:.0f} % of the weight", m, t0)
    t0 = time.time()
    pca = {"photo pack": [float(w.retained) for _, w in nets],
           "bundled photographs": [float(runs.network_from_state(runs.load_state(runs.weights_dir() / r))[1].retained)
                                   for r in BUNDLED_RUNS]}
    save("pca_variance", claims.pca_variance_claim(pca), t0)
    if a.d2:
        t0 = time.time()
        runs_d2 = runs.load_pt(a.d2)
        for name, mkey in (("Fourier index", "fourier"), ("best-frequency grating index", "grating")):
            m = d2.faster_claim(runs_d2, measure=mkey)
            by.setdefault("d2_faster", {})[name] = m
            save(f"d2_faster | {name}", m, t0)
    for key, settings in by.items():
        save(key, layer_claims.over_settings(settings, why=WHY.get(key, "")), time.time())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
