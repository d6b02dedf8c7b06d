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
* ``photos/paper.pt``: the authors' recipe, layer 1, on the photo pack (the first GPU call).

The second GPU call (``scripts/gpu_section4.py`` at its commit; ``call2/results.json`` holds every
meta-iteration's record, the jobs' times and the call):

* ``paper-seed2/``: a third seed of the four-layer run on the bundled photographs
  (``paper-l3-ensemble``, the configuration of ``paper/`` and ``paper-seed1/``);
* ``photos/paper-seed<k>/`` (k = 0, 1, 2): the ``paper`` recipe, all four layers, on the photo pack,
  with the authors' layer-3 input;
* ``pca/paper.pt``: the test of the earlier failure, layer 1 of the L-BFGS main-set cell with PCA
  fitted on 50,000 or 400,000 patches (``runs["50k/s0"]``...: final ``W1`` in float16 and the
  whitener, or a reference to the committed run that has the same one, see :func:`whitener_of`);
* ``d2/paper.pt``: ``compare-seed1.pt`` and ``compare-seed2.pt`` now hold every meta-iteration's
  first-layer weights and a whitener reference too.

The third GPU call (``--round l3-input``; ``call3/results.json``): ``l3/paper.pt`` holds layers 3-4
trained again on the finished layers 1-2 of the four-layer runs with the other layer-3 input
(``runs["pack-ensemble/s<k>"]``: the ensemble-centred input on the photo pack;
``runs["bundled-sample/s<k>"]``: the authors' input on the bundled photographs), as the upper
layers' weights and a reference to the parent (:func:`network_from_branch`).
"""
from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import TypedDict

import torch

from cnce import provenance
from cnce.errors import DirtyTreeError
from cnce.locations import data_dir
from cnce.report import t_interval
from cnce.images.data import Whitener
from cnce.images.network import ImageNetwork

STATE_FILE = "state.pt"


class RunState(TypedDict, total=False):
    """What ``<out>/state.pt`` of an image-model run holds (:func:`cnce.images.train.train` writes it
    after every meta-iteration; saved as a plain dict so that every committed run loads)."""

    config: dict  # ImageConfig.to_dict()
    sizes: dict  # D, K1, K2, D3, K3, K4
    method: str  # "cnce" or "nce"
    seed: int
    history: dict  # layer ("1".."4") -> one record per meta-iteration (eps, the losses, the monitor's numbers)
    seconds: dict  # layer -> wall seconds
    snapshots: dict  # meta-iteration -> float16 W1 (Supp. D.2)
    opt: dict  # layer -> Adam state (unfinished layers only)
    data: str  # description of the images
    whitener: dict  # Whitener.state_dict()
    network: dict  # ImageNetwork.state_dict()
    nce_c: dict  # layer -> NCE's log-normaliser c
    wh2_retained: float  # variance kept by the layer-3 PCA
    device: str
    torch: str
    package: str
    git_commit: str
    sessions: list  # one record per invocation: commit, source and driver hashes, device, threads
    branched_from: dict  # branch_state: the parent run, the layer and the parent's sessions
#: the folders of the second and third GPU calls' results (``results.json``)
CALL2, CALL3 = "call2", "call3"

__all__ = ["RunState", "write_provenance", "writes_dirty_weights", "DirtyTreeError", "git_commit", "cnce_tree",
           "driver_record", "lent_machine_session", "weights_dir", "load_checkpoint", "load_state", "find_weights", "network_from_state", "STATE_FILE", "load_results", "load_pt", "ablation_records", "ablation_table", "d2_records",
           "whitener_of", "load_call2",
           "network_from_branch", "same_recipe",
           "OPT_NAMES", "SCHEDULE_NAMES"]

OPT_NAMES = {"cg": "their CG", "lbfgs": "L-BFGS", "adam": "Adam"}
SCHEDULE_NAMES = {"main": "their main sets", "fresh": "fresh patches"}


def weights_dir() -> Path:
    """``weights/`` under the data folder (:func:`cnce.locations.data_dir`; ``data/weights`` in the
    repository)."""
    return data_dir() / "weights"


def load_checkpoint(path: str | os.PathLike):
    """A file the trainer or the GPU driver saved, loaded with ``weights_only=True``: tensors,
    containers, numbers and strings only (no code runs on load); the torch version string that
    runs record is the one class allowed besides."""
    from torch.torch_version import TorchVersion

    with torch.serialization.safe_globals([TorchVersion]):
        return torch.load(path, map_location="cpu", weights_only=True)


def load_state(out: str | os.PathLike) -> dict:
    """The training state saved in ``<out>/state.pt`` (raises ``ValueError`` if absent)."""
    p = Path(out) / STATE_FILE
    if not p.is_file():
        raise ValueError(f"out={str(out)!r} holds no {STATE_FILE}; train first (python -m cnce image-train)")
    return load_checkpoint(p)

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
            st = load_checkpoint(p)
            if all(len(st["history"].get(str(L), [])) >= n for L, n in zip((1, 2, 3, 4), st["config"]["meta_iters"])):
                return p.parent
    return None

def same_recipe(a: dict, b: dict) -> bool:
    """Whether two saved configs (``state["config"]``) are the same recipe: equal as
    :class:`~cnce.images.configs.ImageConfig` after the defaults of options newer than a saved
    config are filled in, whatever their names (``paper`` saved before the layer-3 option and
    ``paper-l3-ensemble`` are one recipe)."""
    from dataclasses import replace

    from cnce.images.configs import ImageConfig

    def build(d):
        d = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items() if k in ImageConfig.__dataclass_fields__}
        return replace(ImageConfig(**{**d, "name": "x"}), name="x")

    return build(a) == build(b)


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


def load_call2(root: str | os.PathLike | None = None) -> dict:
    """``call2/results.json``: the runs of the second GPU call (the third seed of ``paper``, the photo
    pack, the PCA test, D.2 seeds 1-2): ``{"runs": {name: {history, config, seed, sessions}}, "jobs", "calls"}``."""
    p = Path(root or weights_dir()) / CALL2 / "results.json"
    if not p.is_file():
        raise ValueError(f"no results of the second GPU call at {p}")
    return json.loads(p.read_text())


def load_pt(rel: str, root: str | os.PathLike | None = None):
    """A committed ``.pt`` file under ``data/weights`` (``"ablation/paper.pt"``, ``"d2/paper.pt"``...)."""
    p = Path(root or weights_dir()) / rel
    if not p.is_file():
        raise ValueError(f"no committed file {rel!r} under {p.parent}")
    return load_checkpoint(p)


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
            m, lo, hi = t_interval(g[c])
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


# -- provenance of a run --------------------------------------------------------------------------


def git_commit() -> str | None:
    """HEAD of the repository holding this package, with ``+dirty`` when ``cnce/`` has
    uncommitted changes (the run then used code that is not in that commit)."""
    return provenance.git_object("HEAD", "cnce")


def cnce_tree(sub: str = "cnce") -> str | None:
    """The git tree hash of ``sub`` (``cnce`` or ``cnce/images``) at HEAD (``+dirty`` as in
    :func:`git_commit`). Unlike a commit hash it survives a rebase onto a base that does not
    change ``sub``, so ``cnce/images`` names the image code of a run after a branch is merged."""
    return provenance.git_object(f"HEAD:{sub}", sub)



def driver_record(driver: str | os.PathLike) -> dict:
    """``{"path": <relative to the repository>, "sha256": <of its source>}`` of a driver script."""
    import hashlib

    p = Path(driver).resolve()
    if not p.is_file():
        raise ValueError(f"driver={str(driver)!r} is not a file")
    try:
        rel = p.relative_to(provenance._SOURCE_BASE).as_posix()
    except ValueError:
        rel = str(p)
    return {"path": rel, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}



def lent_machine_session(commit: str | None, driver: str | os.PathLike | None):
    """The ``on_session`` of :func:`cnce.images.train.train` for a run on a lent machine, whose
    copy of the tree carries a stale ``.git``: ``commit`` (the commit the code came from) replaces
    what git says, and the ``driver`` script that chose the config, seed and data is recorded
    (:func:`driver_record`: its path and SHA-256, checked against the commit on adoption)."""
    def on_session(session: dict) -> None:
        if commit:
            session.update(git_commit=commit, cnce_tree=None, images_tree=None, code_commit=commit)
        if driver is not None:
            session["driver"] = driver_record(driver)

    return on_session


def writes_dirty_weights(out: Path) -> str:
    """The uncommitted changes of ``cnce/`` (``git status --porcelain``) when ``out`` lies under
    ``data/weights/`` of this repository; ``""`` otherwise or without git."""
    try:
        Path(out).resolve().relative_to(weights_dir().resolve())
    except ValueError:
        return ""
    status = provenance.git("status", "--porcelain", "--", "cnce")
    return " ".join(status.split()[:6]) if status else ""


def write_provenance(state: dict, out: Path) -> None:
    import numpy
    import scipy

    try:
        import skimage

        skv = skimage.__version__
    except ImportError:  # pragma: no cover
        skv = None
    prov = {
        "package": "cnce " + state["package"],
        "git_commit": state["git_commit"],
        "sessions": state.get("sessions", []),
        "config": state["config"],
        "method": state["method"],
        "seed": state["seed"],
        "device": state["device"],
        "data": state["data"],
        "pca_retained_variance": round(Whitener.from_state_dict(state["whitener"]).retained, 4),
        "layer2_whitening_retained_variance": state["wh2_retained"],
        "meta_iterations_done": {k: len(v) for k, v in state["history"].items()},
        "wall_seconds_per_layer": {k: round(v, 1) for k, v in state["seconds"].items()},
        "final_eps": {k: round(v[-1]["eps"], 4) for k, v in state["history"].items() if v},
        "final_loss": {k: round(v[-1]["loss"], 5) for k, v in state["history"].items() if v},
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
                     "scipy": scipy.__version__, "scikit-image": skv},
        "machine": platform.machine(),
    }
    if state.get("branched_from"):
        b = state["branched_from"]
        prov["branched_from"] = {k: b.get(k) for k in ("run", "at_layer", "git_commit")}
    provenance.atomic_write_text(out / "provenance.json", json.dumps(prov, indent=2) + "\n")



def whitener_of(entry: dict, root: str | os.PathLike | None = None) -> Whitener:
    """The whitener of a packed run: its state dict, or ``{"ref": <state.pt under data/weights>}``
    for a run that shares the whitener of a committed four-layer run (same images, seed and PCA
    sample: the lent GPU draws the same patches for the same seed)."""
    w = entry["whitener"]
    if "ref" in w:
        return Whitener.from_state_dict(load_pt(w["ref"], root)["whitener"])
    return Whitener.from_state_dict(w)


def network_from_branch(entry: dict, root: str | os.PathLike | None = None) -> tuple[ImageNetwork, Whitener, dict]:
    """The network of a run of ``l3/paper.pt``: its parent's layers 1-2 and whitener with the
    branch's own layers 3-4 and layer-3 input. Returns ``(net, whitener, parent_state)``."""
    parent = load_pt(entry["parent"], root)
    state = dict(parent, config=entry["config"], network={**parent["network"], **entry["upper"]})
    net, wh = network_from_state(state)
    return net, wh, parent
