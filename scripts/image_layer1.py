"""Layer 1 "Gabor-like" (localised AND oriented AND band-pass) on the committed runs, under the
two settings of :data:`cnce.images.measures.GABOR_SETTINGS` (CPU, about three minutes).

    .venv/bin/python scripts/image_layer1.py [--out data/checks/image-layer1.json]

For the bundled-photograph runs (``paper``, ``paper-seed1``, ``paper-seed2``: the runs the page
shows and the layer-1 claim has always read) and the photo-pack runs (``photos/paper-seed0`` ...
``paper-seed2``), each seed's first-layer receptive fields are measured beside the references
of :func:`cnce.images.measures.gabor_baselines` (nulls: white and localised noise; positive
control: Gabor functions; negative controls: isotropic differences of Gaussians, Gaussian
blobs) and the run's initialisation, all through that run's whitening; FastICA
(``ica/paper.pt``, fitted with the first bundled run's whitening) is a second positive control
there. :func:`cnce.images.layer_claims.gabor_claim` gives each setting's verdict,
:func:`cnce.images.layer_claims.over_settings` combines the settings of each group.

The same file answers whether the bundled group's first layer is "single-scale" in both
pictures of a unit: per group, picture (receptive fields, features) and seed, the spread of the
preferred frequencies in octaves (:func:`cnce.images.measures.octave_spread`, 10th to 90th
percentile), and for the bundled group the layer-2 pooling claims
(:func:`cnce.images.layer_claims.pooling_claims`, ``--n-perm`` draws per null and seed) under
both pictures, as ``scripts/image_settings.py`` measures them on the photo pack (seconds).

Results go to ``--out`` (:func:`cnce.images.claims.save_measured`, written atomically, with the
commit; the per-seed tables beside). Refuses to run on a working tree whose ``cnce/`` or
``scripts/`` differ from the commit, unless ``--allow-dirty`` (the file then says so).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import torch

from cnce import provenance
from cnce.images import claims, layer_claims, measures, runs

from companion.adopt import check_file_state

#: data group -> its runs under data/weights
GROUPS = {"bundled photographs": ["paper", "paper-seed1", "paper-seed2"],
          "photo pack": [f"photos/paper-seed{k}" for k in range(3)]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/checks/image-layer1.json")
    ap.add_argument("--seed", type=int, default=0, help="seed of the reference sets")
    ap.add_argument("--n-perm", type=int, default=layer_claims.N_PERM, help="draws of every null distribution per seed")
    ap.add_argument("--n-random", type=int, default=layer_claims.N_REFERENCE,
                    help="random sets per set size in the coherence test's reference")
    ap.add_argument("--allow-dirty", action="store_true")
    a = ap.parse_args(argv)
    state = check_file_state(ap, a.allow_dirty)
    torch.set_num_threads(2)
    out = Path(a.out)
    meta = dict(**state, args=vars(a), seconds={}, groups=GROUPS, settings=measures.GABOR_SETTINGS,
                picture="receptive fields")
    measured, tables = {}, {}
    ica = runs.load_pt("ica/paper.pt")
    for group, names in GROUPS.items():
        t0 = time.time()
        per_seed, n_units = [], 0
        for name in names:
            st = runs.load_state(runs.weights_dir() / name)
            net, wh = runs.network_from_state(st)
            W1 = net.W1.detach()
            n_units = len(W1)
            sets = {"learned": W1, "initialisation": measures.initial_network(st).W1.detach(),
                    **measures.gabor_baselines(wh, len(W1), seed=a.seed)}
            if name == "paper":
                sets["FastICA"] = ica["W"]
            t, _ = measures.gabor_table(sets, wh)
            per_seed.append(t)
            tables[f"{group} | {name}"] = t.reset_index().set_index("setting")
        by = {}
        for setting in measures.GABOR_SETTINGS:
            m = layer_claims.gabor_claim(per_seed, setting, n_units=n_units, data=group)
            by[setting] = m
            measured[f"layer1_gabor | {group} | {setting}"] = m
        measured[f"layer1_gabor | {group}"] = layer_claims.over_settings(by)
        meta["seconds"][group] = round(time.time() - t0, 1)
        provenance.atomic_write_text(out, claims.save_measured(measured, tables, meta))
        print(f"{group}: {measured[f'layer1_gabor | {group}'].verdict.split(':')[0]} ({time.time() - t0:.0f} s)", flush=True)
    # single-scale? the octave spread of layer 1 per picture, and the bundled layer 2 under both pictures
    t0 = time.time()
    octaves, bundled = [], {}
    for group, names in GROUPS.items():
        nets = [runs.network_from_state(runs.load_state(runs.weights_dir() / name)) for name in names]
        for pic in ("receptive fields", "features"):
            p1 = [measures.filter_properties(measures.unit_images(n.W1.detach().float(), w)[pic]) for n, w in nets]
            octaves += [{"group": group, "picture": pic, "run": name, "octaves": measures.octave_spread(p.frequency)}
                        for name, p in zip(names, p1)]
            if group == "bundled photographs":
                q2 = [(n.W2.detach().double() ** 2).numpy() for n, _ in nets]
                got = layer_claims.pooling_claims(q2, p1, n_random=a.n_random, n_perm=a.n_perm, seed=a.seed)
                for prop, m in got.items():
                    bundled.setdefault(prop, {})[f"layer-1 {pic}"] = m
                    measured[f"bundled layer2_{prop} | layer-1 {pic}"] = m
    for prop, by in bundled.items():
        measured[f"bundled layer2_{prop}"] = layer_claims.over_settings(
            by, why="the picture sets how far the first layer's preferred frequencies spread" if prop == "frequency" else "")
    tables["layer-1 octaves"] = pd.DataFrame(octaves).set_index("group")
    meta["seconds"]["single-scale"] = round(time.time() - t0, 1)
    provenance.atomic_write_text(out, claims.save_measured(measured, tables, meta))
    print(f"single-scale: {time.time() - t0:.0f} s; bundled layer 2 frequency: "
          f"{measured['bundled layer2_frequency'].verdict.split(':')[0]}", flush=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
