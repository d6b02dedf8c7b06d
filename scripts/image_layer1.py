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

Results go to ``--out`` (:func:`cnce.images.claims.save_measured`, written atomically, with the
commit; the per-seed tables beside). Refuses to run on a working tree whose ``cnce/`` or
``scripts/`` differ from the commit, unless ``--allow-dirty`` (the file then says so).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from cnce import provenance
from cnce.images import claims, layer_claims, measures, runs

#: data group -> its runs under data/weights
GROUPS = {"bundled photographs": ["paper", "paper-seed1", "paper-seed2"],
          "photo pack": [f"photos/paper-seed{k}" for k in range(3)]}


def _dirty() -> bool:
    out = provenance.git("status", "--porcelain", "--", "cnce", "scripts")
    return bool(out) if out is not None else True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/checks/image-layer1.json")
    ap.add_argument("--seed", type=int, default=0, help="seed of the reference sets")
    ap.add_argument("--allow-dirty", action="store_true")
    a = ap.parse_args(argv)
    dirty = _dirty()
    if dirty and not a.allow_dirty:
        ap.error("cnce/ or scripts/ have uncommitted changes: commit first (or pass --allow-dirty for a trial)")
    torch.set_num_threads(2)
    out = Path(a.out)
    meta = dict(git=provenance.git_state(), dirty_cnce_or_scripts=dirty, source_hash=provenance.package_source_hash(()),
                args=vars(a), seconds={}, groups=GROUPS, settings=measures.GABOR_SETTINGS,
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
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
