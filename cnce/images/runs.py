"""The committed image-model runs: where they live, how they are loaded, and how runs made on a
lent GPU are taken into the repository with checked provenance.

Layout under ``data/weights/``:

* ``paper/``, ``paper-seed<k>/``: the four-layer network trained with the authors' recipe
  (``state.pt``, ``provenance.json``);
* ``ablation/paper.pt``, ``ablation/demo.pt``: final first-layer weights of every cell of the
  layer-1 ablation (optimiser x data schedule x seed) and the whitener of seed 0;
  ``ablation/results.json``: every meta-iteration's record of every GPU run (the ablation,
  Supp. D.2, the photo pack);
* ``d2/paper.pt``: Supp. D.2 as the authors ran it (snapshots of seed 0, histories of all seeds);
* ``ica/paper.pt``: the FastICA positive control at the paper's D;
* ``photos/paper.pt``: the authors' recipe, layer 1, on the photo pack.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
import torch

from cnce import provenance
from cnce.images.data import Whitener
from cnce.images.network import ImageNetwork

STATE_FILE = "state.pt"

__all__ = ["weights_dir", "load_state", "find_weights", "network_from_state", "STATE_FILE", "load_results", "load_pt", "ablation_records", "ablation_table", "d2_records",
           "interval", "adopt_device_runs", "commit_source_hash", "OPT_NAMES", "SCHEDULE_NAMES"]

OPT_NAMES = {"cg": "their CG", "lbfgs": "L-BFGS", "adam": "Adam"}
SCHEDULE_NAMES = {"main": "their main sets", "fresh": "fresh patches"}


def weights_dir() -> Path:
    """``data/weights`` of the repository that holds this package."""
    return provenance.REPO_ROOT / "data" / "weights"


def load_state(out: str | os.PathLike) -> dict:
    """The training state saved in ``<out>/state.pt`` (raises ``ValueError`` if absent)."""
    p = Path(out) / STATE_FILE
    if not p.is_file():
        raise ValueError(f"out={str(out)!r} holds no {STATE_FILE}; train first (python -m cnce image-train)")
    return torch.load(p, map_location="cpu", weights_only=False)

def find_weights(weights: str = "auto", root: str | os.PathLike | None = None) -> Path | None:
    """The folder of a finished, committed run: ``weights="auto"`` picks the first present of
    ``paper`` (the authors' recipe at the paper's sizes), ``demo``, ``quick`` whose every layer
    finished; a config name or a path selects one. Returns ``None`` when ``"auto"`` finds
    nothing."""
    root = Path(root) if root is not None else weights_dir()
    if weights != "auto":
        p = Path(weights) if Path(weights).is_dir() else root / weights
        if not (p / STATE_FILE).is_file():
            raise ValueError(f"weights={weights!r}: no {STATE_FILE} under {p}")
        return p
    for name in ("paper", "demo", "quick"):
        p = root / name / STATE_FILE
        if p.is_file():
            st = torch.load(p, map_location="cpu", weights_only=False)
            if all(len(st["history"].get(str(L), [])) >= n for L, n in zip((1, 2, 3, 4), st["config"]["meta_iters"])):
                return p.parent
    return None

def network_from_state(state: dict) -> tuple[ImageNetwork, Whitener]:
    """Rebuild the trained network and the input whitening from a saved state."""
    net = ImageNetwork(**state["sizes"], **_network_options(state["config"]))
    net.load_state_dict(state["network"])
    return net, Whitener.from_state_dict(state["whitener"])

def _network_options(config: dict) -> dict:
    """Initialisation and layer-3 options of a saved config (runs saved before these options
    existed used the orthonormal start, the linear z3 and the ensemble-centred layer-3 input)."""
    return dict(init=config.get("init", "orthonormal"), l3_nonlinearity=config.get("l3_nonlinearity", "linear"),
                l3_centre=config.get("l3_centre", "ensemble"))


def load_results(root: str | os.PathLike | None = None) -> dict:
    """``ablation/results.json``: ``{"runs": {name: {history, config, seed, sessions}}, "calls"}``."""
    p = Path(root or weights_dir()) / "ablation" / "results.json"
    if not p.is_file():
        raise ValueError(f"no GPU results at {p}: run scripts/gpu_section4.py on a GPU and adopt its output")
    return json.loads(p.read_text())


def load_pt(rel: str, root: str | os.PathLike | None = None):
    """A committed ``.pt`` file under ``data/weights`` (``"ablation/paper.pt"``, ``"d2/paper.pt"``...)."""
    p = Path(root or weights_dir()) / rel
    if not p.is_file():
        raise ValueError(f"no committed file {rel!r} under {p.parent}")
    return torch.load(p, map_location="cpu", weights_only=False)


def interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """Mean and a Student-t interval over seeds: ``(mean, lo, hi)`` (``lo = hi = mean`` for one
    value: no spread can be stated)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    if v.size == 0:
        raise ValueError("values must not be empty")
    m = float(v.mean())
    if v.size < 2:
        return m, m, m
    h = float(stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size))
    return m, m - h, m + h


def ablation_records(results: dict, size: str) -> list[dict]:
    """One row per (optimiser, schedule, seed) of the layer-1 ablation at ``size`` (``"paper"`` or
    ``"demo"``): the last meta-iteration's oriented share, J before the update (``J``), J on its
    training patches and noise, on the same patches with fresh noise, on unseen patches, and eps."""
    rows = []
    for name, run in results["runs"].items():
        parts = name.split("/")
        if len(parts) != 3 or parts[0] != size:
            continue
        opt, sched = parts[1].split("-")
        h = run["history"]["1"]
        last = h[-1]
        rows.append(dict(optimiser=opt, schedule=sched, seed=int(parts[2][1:]), metas=len(h),
                         oriented=last.get("oriented", float("nan")), J=last["loss"], J_train=last["train_loss"],
                         J_fresh_noise=last["loss_fresh_noise"], J_unseen=last["loss_unseen"], eps=last["eps"],
                         seconds=sum(r["seconds"] for r in h)))
    return sorted(rows, key=lambda r: (r["optimiser"], r["schedule"], r["seed"]))


def ablation_table(results: dict, size: str, columns=("oriented", "J_train", "J_unseen")):
    """The ablation grid at ``size``: per (optimiser, schedule) the number of seeds and, for each
    of ``columns``, the mean over seeds with a 95 % t interval (``mean``, ``lo``, ``hi``)."""
    import pandas as pd

    rows = ablation_records(results, size)
    if not rows:
        raise ValueError(f"no ablation runs of size {size!r} in the results")
    df = pd.DataFrame(rows)
    out = []
    for (opt, sched), g in df.groupby(["optimiser", "schedule"], sort=False):
        rec = {"optimiser": opt, "schedule": sched, "seeds": len(g)}
        for c in columns:
            m, lo, hi = interval(g[c])
            rec.update({f"{c}": m, f"{c}_lo": lo, f"{c}_hi": hi})
        out.append(rec)
    order = {k: i for i, k in enumerate(OPT_NAMES)}
    t = pd.DataFrame(out)
    t = t.sort_values(["schedule", "optimiser"], key=lambda s: s.map(order) if s.name == "optimiser" else s.map({"main": 0, "fresh": 1}))
    return t.set_index(["optimiser", "schedule"])


def d2_records(results: dict) -> list[dict]:
    """Supp. D.2 runs: one row per (variant, seed, meta-iteration) with the oriented share and J."""
    rows = []
    for name, run in results["runs"].items():
        parts = name.split("/")
        if parts[0] != "d2":
            continue
        for r in run["history"]["1"]:
            rows.append(dict(variant=parts[1], seed=int(parts[2][1:]), meta=r["meta"] + 1,
                             oriented=r.get("oriented", float("nan")), J_unseen=r["loss_unseen"], eps=r["eps"],
                             c=r.get("c", float("nan"))))
    return rows


# -- taking GPU runs into the repository ---------------------------------------------------------


def commit_source_hash(commit: str) -> str:
    """:func:`cnce.provenance.package_source_hash` (nothing excluded) of ``cnce/`` at ``commit``,
    computed from ``git archive`` of that commit in a fresh interpreter."""
    data = subprocess.run(["git", "archive", "--format=tar", commit, "cnce"], cwd=provenance.REPO_ROOT,
                          capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp, filter="data")
        code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('p', 'cnce/provenance.py'); "
                "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
                "print(m.package_source_hash(exclude=()))")
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _clean_sessions(sessions, commit: str, tree: dict) -> list:
    out = []
    for s in sessions or []:
        s = dict(s)
        s["git_commit"] = commit
        s["code_commit"] = commit
        s["cnce_tree"], s["images_tree"] = tree.get("cnce"), tree.get("cnce/images")
        s["source_hash_checked"] = True
        out.append(s)
    return out


def adopt_device_runs(src: str | os.PathLike, commit: str, *, root: str | os.PathLike | None = None) -> dict:
    """Take the output of ``scripts/gpu_section4.py`` (a folder of ``results.json``, ``full.tar``,
    ``ablation-*.pt``, ``d2.pt``, ``ica.pt``, ``photos.pt``) into ``data/weights``.

    Every run records the hash of the package source it ran with; this checks that hash against
    ``commit`` (``git archive``) and raises ``ValueError`` when they differ. The lent machine's
    copy of the tree carries the ``.git`` of the session's starting checkout, so what git said
    there is replaced by ``commit`` once the source hash has been checked. Returns
    ``{file: destination}``.
    """
    src = Path(src)
    root = Path(root or weights_dir())
    want = commit_source_hash(commit)
    results = json.loads((src / "results.json").read_text())
    got = {c["source_hash"] for c in results["calls"]}
    if got != {want}:
        raise ValueError(f"the runs' source hashes {sorted(got)} differ from commit {commit}'s {want}")
    tree = {p: provenance.git("rev-parse", f"{commit}:{p}") for p in ("cnce", "cnce/images")}
    for run in results["runs"].values():
        run["sessions"] = _clean_sessions(run.get("sessions"), commit, tree)
    for c in results["calls"]:
        c["commit"] = commit
    placed = {}
    dest = root / "ablation" / "results.json"
    provenance.atomic_write_text(dest, json.dumps(results) + "\n")
    placed["results.json"] = dest
    for name, rel in (("ablation-paper.pt", "ablation/paper.pt"), ("ablation-demo.pt", "ablation/demo.pt"),
                      ("ica.pt", "ica/paper.pt"), ("photos.pt", "photos/paper.pt")):
        if (src / name).is_file():
            obj = torch.load(src / name, map_location="cpu", weights_only=False)
            if isinstance(obj, dict) and "commit" in obj:
                obj["commit"] = commit
            if isinstance(obj, dict) and obj.get("data") == "given PatchSource":  # the photos job's source
                obj["data"] = "photo pack data/photos/pack.npz (scripts/photo-pack.sh; source built by scripts/gpu_section4.py)"
            provenance.atomic_torch_save(obj, root / rel)
            placed[name] = root / rel
    if (src / "d2.pt").is_file():
        d2 = torch.load(src / "d2.pt", map_location="cpu", weights_only=False)
        for c in d2.values():
            c["sessions"] = _clean_sessions(c.get("sessions"), commit, tree)
        provenance.atomic_torch_save(d2, root / "d2" / "paper.pt")
        placed["d2.pt"] = root / "d2" / "paper.pt"
    if (src / "full.tar").is_file():
        from cnce.images.train import _write_provenance

        with tempfile.TemporaryDirectory() as tmp, tarfile.open(src / "full.tar") as tar:
            tar.extractall(tmp, filter="data")
            for d in sorted(Path(tmp).iterdir()):
                st = torch.load(d / "state.pt", map_location="cpu", weights_only=False)
                if {s.get("source_hash") for s in st.get("sessions", [])} != {want}:
                    raise ValueError(f"{d.name}: a session's source hash differs from commit {commit}'s")
                st["git_commit"] = commit
                st["sessions"] = _clean_sessions(st.get("sessions"), commit, tree)
                if st.get("data") == "given PatchSource":  # the script built the source with make_source(None)
                    st["data"] = "skimage.data bundled photographs (source built by scripts/gpu_section4.py)"
                name = "paper" if st["seed"] == 0 else f"paper-seed{st['seed']}"
                out = root / name
                out.mkdir(parents=True, exist_ok=True)
                provenance.atomic_torch_save(st, out / "state.pt")
                _write_provenance(st, out)
                placed[f"full.tar:{d.name}"] = out
    return placed
