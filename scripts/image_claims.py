"""The Section 4 claim measures of the committed image runs, for notebook 06 (CPU, a few minutes).

    .venv/bin/python scripts/image_claims.py [--out data/checks/image-claims.json] [--runs paper paper-seed1]

For every four-layer run named (folders under ``data/weights``; each a seed of one
configuration) the measures of :func:`cnce.images.layer_claims.claims_from_networks` (layer 2
pools by position, orientation and frequency; layer 3 contour-like units, after their positive
control inside the network; layer 4 pools one orientation across frequencies, and corner-like
units), probed with the authors' Gabor probe (:class:`cnce.images.probes.AuthorsProbe`; keys
without a suffix) and with its extended range, 0.05-0.45 cycles/pixel (keys ending in
``_extended``); and for the Supp. D.2 runs (``d2/paper.pt``) the measures of
:mod:`cnce.images.d2`. The first-layer units are described by their receptive fields (the
pixel filters they apply; their frequency is the unit's tuning).

The results are written to ``--out`` with :func:`cnce.images.claims.save_measured`, after each
measure (atomically), with the commit they were computed at; a rerun at the same commit
skips the measures already there (resume). It refuses to run on a working tree whose
``cnce/`` or ``scripts/`` differ from the commit, unless ``--allow-dirty`` (then the file says
so and the page shows it).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from cnce import provenance
from cnce.images import claims, d2, layer_claims, probes, runs
from cnce.images import data as imdata


def _dirty() -> bool:
    out = provenance.git("status", "--porcelain", "--", "cnce", "scripts")
    return bool(out) if out is not None else True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/checks/image-claims.json")
    ap.add_argument("--runs", nargs="+", default=["paper", "paper-seed1"])
    ap.add_argument("--d2", default="d2/paper.pt", help="the Supp. D.2 runs under data/weights ('' to skip)")
    ap.add_argument("--n-random", type=int, default=200, help="random sets per pooling unit")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--allow-dirty", action="store_true")
    a = ap.parse_args(argv)
    if a.n_random < 20:
        ap.error(f"--n-random must be at least 20; got {a.n_random}")
    dirty = _dirty()
    if dirty and not a.allow_dirty:
        ap.error("cnce/ or scripts/ have uncommitted changes: commit first (or pass --allow-dirty for a trial)")
    torch.set_num_threads(2)
    out = Path(a.out)
    meta = dict(git=provenance.git_state(), dirty_cnce_or_scripts=dirty, source_hash=provenance.package_source_hash(()),
                args=vars(a), seconds={})
    measured, tables = {}, {}
    if out.is_file():  # resume: keep what the same commit and arguments computed
        old_m, old_t, old_meta = claims.load_measured(out)
        if old_meta.get("git") == meta["git"] and old_meta.get("args") == json.loads(json.dumps(vars(a))):
            measured, tables, meta["seconds"] = old_m, old_t, old_meta.get("seconds", {})

    def save(key, value, t0):
        (tables if hasattr(value, "to_dict") else measured)[key] = value
        meta["seconds"][key] = round(time.time() - t0, 1)
        provenance.atomic_write_text(out, claims.save_measured(measured, tables, meta))
        print(f"{key}: {time.time() - t0:.0f} s", flush=True)

    def todo(*keys):
        return any(k not in measured and k not in tables for k in keys)

    keys = {"layer 2 position": "layer2_position", "layer 2 orientation": "layer2_orientation",
            "layer 2 frequency": "layer2_frequency", "layer 3 contours": "layer3_contours",
            "layer 4 orientation across frequencies": "layer4_orientation_across_frequency",
            "layer 4 corners": "layer4_corners"}
    nets = None
    for suffix, make in (("", probes.AuthorsProbe), ("_extended", probes.AuthorsProbe.extended)):
        if not todo(*(k + suffix for k in keys.values())):
            continue
        t0 = time.time()
        nets = nets or [runs.network_from_state(runs.load_state(runs.weights_dir() / r)) for r in a.runs]
        side = int(round(np.sqrt(nets[0][1].V.shape[0])))
        got = layer_claims.claims_from_networks(nets, make(size=side), picture="receptive fields",
                                                n_random=a.n_random, seed=a.seed)["results"]
        for name, key in keys.items():
            save(key + suffix, got[name], t0)
    if a.d2 and todo("d2_faster", "d2_similar", "d2_table", "d2_seed_table"):
        t0 = time.time()
        runs_d2 = runs.load_pt(a.d2)
        snap = next(r for r in runs_d2.values() if "snapshots" in r)
        ica = runs.load_pt("ica/paper.pt")  # the whitening of seed 0, which the D.2 runs of seed 0 share
        wh = imdata.Whitener.from_state_dict(ica["whitener"])
        save("d2_seed_table", d2.d2_seed_table(runs_d2), t0)
        save("d2_faster", d2.faster_claim(runs_d2), t0)
        t0 = time.time()
        table = d2.d2_table(snap["snapshots"], wh, seed=a.seed)
        save("d2_table", table, t0)
        t0 = time.time()
        save("d2_similar", d2.similar_claim(table), t0)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
