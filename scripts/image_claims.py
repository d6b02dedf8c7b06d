"""The Section 4 claim measures of the committed image runs, for notebook 06 (CPU, a few minutes).

    .venv/bin/python scripts/image_claims.py [--out data/checks/image-claims.json] [--groups '' photos/ ...]

For every group of four-layer runs (:data:`GROUPS`: one configuration over its seeds) the measures of :func:`cnce.images.layer_claims.claims_from_networks` (layer 2
pools by position, orientation and frequency; layer 3 contour-like units, after their positive
control inside the network; layer 4 pools one orientation across frequencies, and corner-like
units), probed with the authors' Gabor probe (:class:`cnce.images.probes.AuthorsProbe`; keys
without a suffix) and with its extended range, 0.05-0.45 cycles/pixel (keys ending in
``_extended``), keys prefixed with the group's name; and for the Supp. D.2 runs
(``d2/paper.pt``) the measures of :mod:`cnce.images.d2`, per seed that kept every meta-iteration's
weights (keys ending in ``_s<k>`` for seeds other than 0). The first-layer units are described by their receptive fields (the
pixel filters they apply; their frequency is the unit's tuning).

The results are written to ``--out`` with :func:`cnce.images.claims.save_measured`, after each
measure (atomically), with the commit they were computed at; a rerun at the same commit
skips the measures already there (resume). It refuses to run on a working tree whose
``cnce/`` or ``scripts/`` differ from the commit, unless ``--allow-dirty`` (then the file says
so and the page shows it).

    .venv/bin/python scripts/image_claims.py --adopt FILE [--out data/checks/image-claims.json]

merges ``FILE`` (written by this script at a clean commit, e.g. for ``--groups ''`` alone) into
``--out`` instead of measuring: its keys replace those of ``--out``, and the keys it lacks are
kept with the commit, source hash and arguments that computed them (``meta["kept"]``, one entry
per earlier commit), so that every key names where it came from.
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

from companion.adopt import check_file_state


#: the groups of runs measured, each one configuration over its seeds: ``prefix -> (description,
#: runs)``; a run is a folder under ``data/weights`` or ``l3:<name>`` (a run of ``l3/paper.pt``:
#: layers 3-4 again on a finished run's layers 1-2, :func:`cnce.images.runs.network_from_branch`).
#: Keys of the group ``""`` carry no prefix (the run the page has shown from the start).
GROUPS = {
    "": ("the bundled photographs, the earlier layer-3 input", ["paper", "paper-seed1", "paper-seed2"]),
    "photos/": ("the photo pack, the authors' layer-3 input", [f"photos/paper-seed{k}" for k in range(3)]),
    "photos-l3-ensemble/": ("the photo pack's layers 1-2, the earlier layer-3 input",
                            [f"l3:pack-ensemble/s{k}" for k in range(3)]),
    "bundled-l3-sample/": ("the bundled photographs' layers 1-2, the authors' layer-3 input",
                           [f"l3:bundled-sample/s{k}" for k in range(3)]),
}
KEYS = {"layer 2 position": "layer2_position", "layer 2 orientation": "layer2_orientation",
        "layer 2 frequency": "layer2_frequency", "layer 3 contours": "layer3_contours",
        "layer 4 orientation across frequencies": "layer4_orientation_across_frequency",
        "layer 4 corners": "layer4_corners"}


def network(run: str):
    """``(net, whitener)`` of a group's run."""
    if run.startswith("l3:"):
        net, wh, _ = runs.network_from_branch(runs.load_pt("l3/paper.pt")["runs"][run[3:]])
        return net, wh
    return runs.network_from_state(runs.load_state(runs.weights_dir() / run))


def adopt(src: Path, out: Path, ap) -> int:
    """Merge ``src`` into ``out`` (see the module's docstring); refuses a ``src`` measured on a
    dirty tree, and runs only on a clean one."""
    check_file_state(ap)
    new_m, new_t, new_meta = claims.load_measured(src)
    if new_meta.get("dirty_cnce_or_scripts") or new_meta.get("args", {}).get("allow_dirty"):
        ap.error(f"--adopt {src}: it was measured on a dirty tree")
    old_m, old_t, old_meta = claims.load_measured(out)
    own = [k for k in list(old_m) + list(old_t) if not any(k in e["keys"] for e in old_meta.get("kept", []))]
    earlier = old_meta.get("kept", []) + [{**{k: old_meta[k] for k in ("git", "source_hash", "args")}, "keys": own}]
    kept = []
    for e in earlier:  # each earlier commit keeps the keys that the adopted file does not replace
        keys = [k for k in e["keys"] if k not in new_m and k not in new_t]
        if keys:
            kept.append({**{k: e[k] for k in ("git", "source_hash", "args")}, "keys": keys})
    meta = dict(new_meta)
    meta["kept"] = kept
    meta["adopted"] = {"from": str(src), "at": provenance.git_state()}
    measured = {k: new_m.get(k, old_m.get(k)) for k in list(old_m) + [k for k in new_m if k not in old_m]}
    tables = {k: new_t.get(k, old_t.get(k)) for k in list(old_t) + [k for k in new_t if k not in old_t]}
    provenance.atomic_write_text(out, claims.save_measured(measured, tables, meta))
    print(f"adopted {len(new_m) + len(new_t)} keys from {src} into {out}; kept {sum(len(e['keys']) for e in kept)} "
          f"from {len(kept)} earlier commit(s)")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/checks/image-claims.json")
    ap.add_argument("--groups", nargs="+", default=list(GROUPS), metavar="PREFIX",
                    help=f"groups of runs to measure (prefixes of {list(GROUPS)}; '' is the run shown)")
    ap.add_argument("--d2", default="d2/paper.pt", help="the Supp. D.2 runs under data/weights ('' to skip)")
    ap.add_argument("--n-random", type=int, default=200, help="random sets per pooling unit")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--allow-dirty", action="store_true")
    ap.add_argument("--adopt", metavar="FILE", help="merge FILE (this script's output at a clean commit) into --out")
    a = ap.parse_args(argv)
    if a.adopt:
        return adopt(Path(a.adopt), Path(a.out), ap)
    if a.n_random < 20:
        ap.error(f"--n-random must be at least 20; got {a.n_random}")
    bad = [g for g in a.groups if g not in GROUPS]
    if bad:
        ap.error(f"--groups must be drawn from {list(GROUPS)}; got {bad}")
    state = check_file_state(ap, a.allow_dirty)
    torch.set_num_threads(2)
    out = Path(a.out)
    git = state["git"]
    meta = dict(**state, args={k: v for k, v in vars(a).items() if k != "groups"}, seconds={},
                groups={g: {"description": d, "runs": r} for g, (d, r) in GROUPS.items()})
    measured, tables = {}, {}
    if out.is_file():  # resume: keep what the same commit and arguments computed, key by key
        old_m, old_t, old_meta = claims.load_measured(out)
        if old_meta.get("git") == git and old_meta.get("args") == json.loads(json.dumps(meta["args"])):
            measured, tables, meta["seconds"] = old_m, old_t, old_meta.get("seconds", {})

    def save(key, value, t0):
        (tables if hasattr(value, "to_dict") else measured)[key] = value
        meta["seconds"][key] = round(time.time() - t0, 1)
        provenance.atomic_write_text(out, claims.save_measured(measured, tables, meta))
        print(f"{key}: {time.time() - t0:.0f} s", flush=True)

    def todo(*keys):
        return any(k not in measured and k not in tables for k in keys)

    for group in a.groups:
        nets = None
        for suffix, make in (("", probes.AuthorsProbe), ("_extended", probes.AuthorsProbe.extended)):
            if not todo(*(group + k + suffix for k in KEYS.values())):
                continue
            t0 = time.time()
            nets = nets or [network(r) for r in GROUPS[group][1]]
            side = int(round(np.sqrt(nets[0][1].V.shape[0])))
            got = layer_claims.claims_from_networks(nets, make(size=side), picture="receptive fields",
                                                    n_random=a.n_random, seed=a.seed)["results"]
            for name, key in KEYS.items():
                save(group + key + suffix, got[name], t0)
    if a.d2:
        runs_d2 = runs.load_pt(a.d2)
        if todo("d2_seed_table", "d2_faster"):
            t0 = time.time()
            save("d2_seed_table", d2.d2_seed_table(runs_d2), t0)
            save("d2_faster", d2.faster_claim(runs_d2), t0)
        # per seed with every meta-iteration's weights: the measures of each meta-iteration
        for name, run in sorted(runs_d2.items(), key=lambda kv: int(kv[1]["seed"])):
            if "snapshots" not in run:
                continue
            k = int(run["seed"])
            sfx = "" if k == 0 else f"_s{k}"  # seed 0 keeps the keys the page has read from the start
            if todo("d2_table" + sfx, "d2_similar" + sfx):
                t0 = time.time()
                table = d2.d2_table(run["snapshots"], runs.whitener_of(run), seed=a.seed)
                save("d2_table" + sfx, table, t0)
                save("d2_similar" + sfx, d2.similar_claim(table), time.time())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
