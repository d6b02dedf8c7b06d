"""Compute every declared claim into ``data/claims/ledger.json``, and read it back.

:func:`compute` runs each claim's ``compute(ctx)`` with one shared :class:`Context` (the
committed results loaded once, shared computations cached); :func:`write` stores the records
atomically with provenance: the commit, whether the tree was clean, :func:`code_hash` (the
claims code and the library measures it calls) and :func:`input_hash` (the committed results,
claim measures and weights it reads). :func:`load` reads the ledger; :func:`stale` says why a
ledger no longer matches the code or the inputs (the test of ``tests/test_ledger.py``).

The ledger's JSON: ``{"format": 1, "provenance": {...}, "claims": [{<declaration fields>,
"record": {<Record fields>}}, ...]}``, the claims in the book's order.
"""
from __future__ import annotations

import json
from pathlib import Path

from cnce import provenance

from ..paths import REPO_ROOT

from . import Claim, Record, claims

__all__ = ["LEDGER", "Context", "compute", "write", "load", "code_hash", "input_hash", "stale",
           "records", "record"]

ROOT = REPO_ROOT  # the repository (the companion knows it; the library does not)
#: the ledger, relative to the repository
LEDGER = Path("data") / "claims" / "ledger.json"
FORMAT = 1

#: the code whose change can change a record (besides this package): the library measures
CODE = ("companion/claims", "cnce/experiments/claims.py", "cnce/experiments/eps_sweep.py", "cnce/experiments/analysis.py",
        "cnce/theory.py", "cnce/images/claims.py", "cnce/images/layer_claims.py", "cnce/images/verdicts.py",
        "cnce/images/d2.py", "cnce/images/attribution.py", "cnce/images/measures.py", "companion/coverage.py")
#: the inputs the records read (folders: every file in them)
INPUTS = ("data/results/paper", "data/results/asymptotics", "data/checks/image-claims.json",
          "data/checks/image-settings.json", "data/checks/image-layer1.json", "data/weights")


class Context:
    """What the claims' ``compute`` functions share: ``seed`` and ``n_boot`` of the bootstraps,
    the committed ``results`` (``{study: DataFrame}``; loaded on first use unless given, as
    tests do with constructed tables) and :meth:`cached`."""

    def __init__(self, *, seed: int = 0, n_boot: int = 2000, results: dict | None = None):
        if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 2:
            raise ValueError(f"n_boot must be an integer >= 2; got {n_boot!r}")
        self.seed, self.n_boot = seed, n_boot
        self._results = results
        self.runs: list[str] = []
        self._cache: dict = {}

    @property
    def results(self) -> dict:
        if self._results is None:
            from cnce.experiments.claims import committed_results

            self._results, self.runs = committed_results(self.seed)
        return self._results

    def cached(self, key, fn):
        """``fn()``, computed once per ``key`` in this context."""
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]


def compute(ctx: Context | None = None, only=None) -> list[tuple[Claim, Record]]:
    """``(claim, record)`` for every declared claim (``only``: these ids), in the book's order."""
    ctx = ctx or Context()
    out = []
    for c in claims():
        if only is not None and c.id not in only:
            continue
        out.append((c, c.check(c.compute(ctx))))
    return out


def _hash_paths(paths, suffixes=None) -> str:
    import hashlib

    h = hashlib.sha256()
    files = []
    for p in paths:
        p = ROOT / p
        if p.is_dir():
            files += [f for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts
                      and (suffixes is None or f.suffix in suffixes)]
        elif p.is_file():
            files.append(p)
    for f in sorted(files):
        h.update(str(f.relative_to(ROOT)).encode() + b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()


def code_hash() -> str:
    """SHA-256 of the claims code: this package and the library measures it calls (:data:`CODE`)."""
    return _hash_paths(CODE, suffixes={".py"})


def input_hash() -> str:
    """SHA-256 of what the records read: the committed results, claim measures and weights (:data:`INPUTS`)."""
    return _hash_paths(INPUTS)


def write(path=None, ctx: Context | None = None) -> Path:
    """Compute every claim and write the ledger to ``path`` (default :data:`LEDGER` under the
    repository) atomically. Returns the path."""
    ctx = ctx or Context()
    rows = compute(ctx)
    dirty = provenance.git_dirty("cnce", "companion", "data/results", "data/checks", "data/weights")
    doc = {"format": FORMAT,
           "provenance": {"git_commit": provenance.git("rev-parse", "HEAD"), "dirty": dirty,
                          "code_hash": code_hash(), "input_hash": input_hash(), "seed": ctx.seed, "n_boot": ctx.n_boot,
                          "runs": ctx.runs},
           "claims": [{**c.as_dict(), "record": r.as_dict()} for c, r in rows]}
    p = Path(path) if path is not None else ROOT / LEDGER
    p.parent.mkdir(parents=True, exist_ok=True)
    provenance.atomic_write_text(p, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return p


_LOADED: dict = {}


def load(path=None) -> dict:
    """The ledger's JSON (default :data:`LEDGER`); ``ValueError`` naming the command when absent."""
    p = Path(path) if path is not None else ROOT / LEDGER
    if not p.is_file():
        raise ValueError(f"the claims ledger {str(p)!r} is missing: write it with python -m companion claims")
    key = (str(p), p.stat().st_mtime_ns)
    if key not in _LOADED:
        doc = json.loads(p.read_text())
        if doc.get("format") != FORMAT:
            raise ValueError(f"the claims ledger {str(p)!r} has format {doc.get('format')!r}, not {FORMAT}: "
                             "rewrite it with python -m companion claims")
        _LOADED[key] = doc
    return _LOADED[key]


def records(page: str | None = None, path=None) -> list[dict]:
    """The ledger's rows (declaration fields plus ``record``), those of ``page`` when given."""
    return [r for r in load(path)["claims"] if page is None or r["page"] == page]


def record(id: str, path=None) -> dict:
    """The ledger's row of claim ``id``; ``ValueError`` naming the known ids otherwise."""
    rows = {r["id"]: r for r in load(path)["claims"]}
    if id not in rows:
        raise ValueError(f"claim id must be one of {sorted(rows)}; got {id!r}")
    return rows[id]


def stale(path=None) -> list[str]:
    """Why the ledger does not match the declarations, the code or the inputs (``[]``: it does)."""
    doc = load(path)
    why = []
    declared = [c.as_dict() for c in claims()]
    stored = [{k: r[k] for k in declared[0]} for r in doc["claims"]] if declared else []
    if stored != declared:
        ids = {c["id"] for c in declared} ^ {r["id"] for r in doc["claims"]}
        why.append("the declarations changed" + (f" (ids added or removed: {sorted(ids)})" if ids else ""))
    pv = doc["provenance"]
    if pv.get("code_hash") != code_hash():
        why.append("the claims code changed")
    if pv.get("input_hash") != input_hash():
        why.append("the committed results, measures or weights changed")
    return why
