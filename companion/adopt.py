"""Taking runs made on a lent GPU into the repository with checked provenance: the output of the
GPU driver (``scripts/gpu_section4.py``: ``results.json`` and ``runs-<i>.tar``) is checked against
the commit it ran (hashes of the package source and of the driver) and placed under
``data/weights`` in the layout of :mod:`cnce.images.runs`.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import torch

from cnce import provenance
from cnce.images.runs import CALL2, CALL3, STATE_FILE, load_checkpoint, write_provenance

from .paths import DATA, REPO_ROOT

#: the driver of the GPU runs, whose hash every run records
DRIVER = "scripts/gpu_section4.py"

__all__ = ["DRIVER", "adopt_device_runs", "commit_source_hash", "commit_driver_hash", "check_file_state"]


def check_file_state(ap, allow_dirty: bool = False) -> dict:
    """The state of the tree that a committed check file (``data/checks/*.json``, written by the
    ``scripts/image_*.py`` measures) records: ``git`` (:func:`cnce.provenance.git_state`),
    ``dirty_cnce_or_scripts`` and ``source_hash``. ``ap.error`` (the script's argument parser)
    refuses uncommitted changes under ``cnce/`` or ``scripts/`` unless ``allow_dirty`` (a trial);
    without git nothing proves the tree clean, so it counts as dirty."""
    dirty = provenance.git_dirty("cnce", "scripts") is not False
    if dirty and not allow_dirty:
        ap.error("cnce/ or scripts/ have uncommitted changes: commit first (or pass --allow-dirty for a trial, "
                 "where the command offers it)")
    return dict(git=provenance.git_state(), dirty_cnce_or_scripts=dirty, source_hash=provenance.package_source_hash(()))


# -- taking GPU runs into the repository ---------------------------------------------------------


def commit_source_hash(commit: str) -> str:
    """:func:`cnce.provenance.package_source_hash` (nothing excluded) of ``cnce/`` at ``commit``,
    computed from ``git archive`` of that commit in a fresh interpreter."""
    data = subprocess.run(["git", "archive", "--format=tar", commit, "cnce"], cwd=REPO_ROOT,
                          capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(tmp, filter="data")
        # cnce.provenance of that commit, without running the package's __init__ (an empty package
        # stands in for it, so provenance's relative imports, e.g. of cnce.errors, resolve there)
        code = ("import sys, types; pkg = types.ModuleType('cnce'); pkg.__path__ = ['cnce']; sys.modules['cnce'] = pkg; "
                "import cnce.provenance as m; print(m.package_source_hash(exclude=()))")
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


def commit_driver_hash(commit: str, path: str = DRIVER) -> str:
    """SHA-256 of the driver script ``path`` as committed at ``commit``."""
    data = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=REPO_ROOT, capture_output=True,
                          check=True).stdout
    return hashlib.sha256(data).hexdigest()


def _shared_whitener(wh: dict, seed: int, root: Path) -> dict:
    """``{"ref": ...}`` when a committed four-layer run on the bundled photographs of seed ``seed``
    has exactly this whitener, else ``wh`` itself."""
    for rel in ("paper/state.pt" if seed == 0 else f"paper-seed{seed}/state.pt",):
        p = root / rel
        if p.is_file():
            other = load_checkpoint(p)["whitener"]
            if all(torch.equal(wh[k], other[k]) for k in ("mean", "V", "lam")):
                return {"ref": rel}
    return wh


def adopt_device_runs(src: str | os.PathLike, commit: str, *, root: str | os.PathLike | None = None) -> dict:
    """Take the output of ``scripts/gpu_section4.py`` (``results.json`` and ``runs-<i>.tar``) into
    ``data/weights`` (the layout of this module's docstring). Returns ``{run: destination}``.

    Every call and every session records the hash of the package source and of the driver it ran
    with; both are checked against ``commit`` (``git archive`` and ``git show``), and a
    ``ValueError`` is raised when one differs. The lent machine's copy of the tree carries the
    ``.git`` of the session's starting checkout, so what git said there is replaced by
    ``commit`` once the hashes have been checked.
    """
    src = Path(src)
    root = Path(root or DATA / "weights")
    want, want_driver = commit_source_hash(commit), commit_driver_hash(commit)
    results = json.loads((src / "results.json").read_text())
    got = {(c.get("source_hash"), c.get("driver_hash")) for c in results["calls"]}
    if got != {(want, want_driver)}:
        raise ValueError(f"the calls' (source, driver) hashes {sorted(got)} differ from commit {commit}'s "
                         f"{(want, want_driver)}")
    tree = {p: provenance.git("rev-parse", f"{commit}:{p}") for p in ("cnce", "cnce/images")}

    def clean(sessions):
        for s in sessions or []:  # (D.2's sessions name no driver: the call's hash covers them)
            if s.get("source_hash") != want or s.get("driver", {"sha256": want_driver})["sha256"] != want_driver:
                raise ValueError(f"a session's source or driver hash differs from commit {commit}'s")
        return _clean_sessions(sessions, commit, tree)

    for run in results["runs"].values():
        run["sessions"] = clean(run.get("sessions"))
    for c in results["calls"]:
        c["commit"] = commit
    placed: dict = {}
    pca: dict = {"runs": {}}
    branches: dict = {"runs": {}}
    d2_path = root / "d2" / "paper.pt"
    d2 = load_checkpoint(d2_path) if d2_path.is_file() else {}
    with tempfile.TemporaryDirectory() as tmp:
        for t in sorted(src.glob("runs-*.tar")):
            with tarfile.open(t) as tar:
                tar.extractall(tmp, filter="data")
        # the four-layer runs first: the others may share their whiteners
        for p in sorted(Path(tmp).iterdir(), key=lambda q: (not q.is_dir() or q.name.startswith("pca"), q.name)):
            if p.suffix == ".pt" and p.name.startswith("d2-s"):  # Supp. D.2, one seed
                c = load_checkpoint(p)
                c["sessions"] = clean(c.get("sessions"))
                c["whitener"] = _shared_whitener(c["whitener"], int(c["seed"]), root)
                d2[f"compare-seed{c['seed']}.pt"] = c
                placed[p.stem] = d2_path
                continue
            st = load_checkpoint(p / STATE_FILE)
            st["git_commit"] = commit
            st["sessions"] = clean(st.get("sessions"))
            kind, seed = p.name.split("-")[0], int(st["seed"])
            if kind == "l3":  # layers 3-4 on a committed run's layers 1-2: the upper layers only
                variant = p.name[3:].rsplit("-s", 1)[0]
                parent = st["branched_from"]["run"]
                if not (root / parent / STATE_FILE).is_file():
                    raise ValueError(f"{p.name}: its parent run {parent!r} is not under {root}")
                upper = {k: v for k, v in st["network"].items() if k[1:] in ("3", "4") or k.startswith("wh2")}
                branches["runs"][f"{variant}/s{seed}"] = dict(
                    parent=f"{parent}/{STATE_FILE}", upper=upper, config=st["config"], seed=seed,
                    wh2_retained=st["wh2_retained"], sessions=st["sessions"], data=st["data"],
                    history={k: v for k, v in st["history"].items() if int(k) >= 3},
                    seconds={k: v for k, v in st["seconds"].items() if int(k) >= 3})
                placed[p.name] = root / "l3" / "paper.pt"
                continue
            if kind == "pca":  # layer 1 only: the final weights and the whitener
                n = p.name.split("-")[1]
                pca["runs"][f"{n}/s{seed}"] = dict(W1=st["network"]["W1"].half(), config=st["config"], seed=seed,
                                                   whitener=_shared_whitener(st["whitener"], seed, root),
                                                   sessions=st["sessions"], data=st["data"])
                placed[p.name] = root / "pca" / "paper.pt"
                continue
            out = root / {"shown": f"paper-seed{seed}", "photos": f"photos/paper-seed{seed}"}[kind]
            out.mkdir(parents=True, exist_ok=True)
            provenance.atomic_torch_save(st, out / STATE_FILE)
            write_provenance(st, out)
            placed[p.name] = out
    if pca["runs"]:
        (root / "pca").mkdir(parents=True, exist_ok=True)
        provenance.atomic_torch_save(pca, root / "pca" / "paper.pt")
    if branches["runs"]:
        (root / "l3").mkdir(parents=True, exist_ok=True)
        provenance.atomic_torch_save(branches, root / "l3" / "paper.pt")
    if any(k.startswith("d2-") for k in placed):
        d2_path.parent.mkdir(parents=True, exist_ok=True)
        provenance.atomic_torch_save(d2, d2_path)
    dest = root / (CALL2 if not branches["runs"] else CALL3) / "results.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    provenance.atomic_write_text(dest, json.dumps(results) + "\n")
    placed["results.json"] = dest
    return placed
