"""The book build: ``python -m companion book`` builds the Jupyter Book into ``_build/html`` at quick
scale, with every notebook executed through the execution cache (two at a time, largest first,
:func:`prefill_execution_cache`) under the goldens' environment (:data:`companion.process_env.GOLDEN_ENV`),
and knows whether a built book is current (:func:`book_is_current`).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Iterable

from cnce.constraints import Integer, validate
from .process_env import GOLDEN_ENV, deterministic_env, thread_env
from .paths import REPO_ROOT

__all__ = ["book_sources_hash", "book_is_current", "build_book", "prefill_execution_cache", "register"]


#: Sources whose content decides whether a built book is current.
_BOOK_SOURCES = ("_config.yml", "_toc.yml", "book", "notebooks")
#: Sources whose change makes cached notebook executions stale (the execution cache keys on
#: the notebooks' code cells only, so a change in the package would otherwise be missed): the
#: library, the companion the pages call (the ledger's rendering), and every committed input the
#: pages read (results, the claims ledger, checks, image-model runs).
_EXECUTION_SOURCES = ("cnce", "companion", "data/results", "data/claims", "data/checks", "data/weights")
_BUILD_STAMP = "_build/html/.cnce-build.json"
_CACHE_STAMP = ".jupyter_cache/.cnce-execution-sources"


def _tree_hash(root: Path, entries: Iterable[str], suffixes: tuple[str, ...] | None = None) -> str:
    import hashlib

    h = hashlib.sha256()
    for entry in entries:
        base = root / entry
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for f in files:
            rel = f.relative_to(root)
            if "__pycache__" in f.parts or (suffixes and f.suffix not in suffixes):
                continue
            # what the book never reads: hidden files and folders (.ipynb_checkpoints) and the
            # outputs JupyterLab keeps beside each notebook (notebooks/*.ipynb, see notebooks/jupytext.toml)
            if any(part.startswith(".") for part in rel.parts) or (rel.parts[0] == "notebooks" and f.suffix == ".ipynb"):
                continue
            h.update(str(rel).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def book_sources_hash(root: str | Path | None = None) -> str:
    """Hash of the sources the built book depends on: book pages, notebooks, configuration
    and the package. Stored results are left out on purpose: notebooks may add results while
    they run (the nbval tests do), which must not make a just-built book look stale."""
    root = Path(root) if root is not None else REPO_ROOT
    return _tree_hash(root, _BOOK_SOURCES + ("cnce",))


def book_is_current(root: str | Path | None = None) -> bool:
    """Whether ``_build/html`` was built by :func:`build_book` from the current sources."""
    root = Path(root) if root is not None else REPO_ROOT
    stamp = root / _BUILD_STAMP
    if not stamp.is_file() or not (root / "_build/html/index.html").is_file():
        return False
    try:
        return json.loads(stamp.read_text()).get("sources") == book_sources_hash(root)
    except (ValueError, OSError):
        return False


def _book_notebooks(root: Path) -> list[Path]:
    """The executable pages of the book at ``root``: the Jupytext ``.py`` files that ``_toc.yml``
    names (``file:`` entries with a ``.py`` beside them, and ``glob:`` entries), in its order."""
    import yaml

    toc = yaml.safe_load((root / "_toc.yml").read_text())
    found: list[Path] = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("file"), str) and (root / f"{node['file']}.py").is_file():
                found.append(root / f"{node['file']}.py")
            if isinstance(node.get("glob"), str):
                found.extend(sorted(p for p in root.glob(f"{node['glob']}.py") if p.is_file()))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    if isinstance(toc.get("root"), str) and (root / f"{toc['root']}.py").is_file():
        found.insert(0, root / f"{toc['root']}.py")
    return list(dict.fromkeys(p.resolve() for p in found))


def _read_like_the_book(path: Path):
    """A notebook as the book's build reads it (``nb_custom_formats`` in ``_config.yml``)."""
    import jupytext

    return jupytext.reads(path.read_text(encoding="utf-8"), fmt="py:percent")


def _execute_for_cache(path: str, timeout: int) -> tuple[str, str | None, float]:
    """Execute one notebook the way the book's build does (working directory: its folder, no
    errors allowed); returns ``(path, executed notebook as JSON or None on failure, seconds)``."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    nb = _read_like_the_book(Path(path))
    result = single_nb_execution(nb, cwd=str(Path(path).parent), allow_errors=False, timeout=timeout,
                                 meta_override=True)
    return path, (None if result.err is not None else nbformat.writes(nb)), result.time


def prefill_execution_cache(root: Path, jobs: int, *, timeout: int = 1800, log=None) -> list[str]:
    """Execute the book's notebooks that the execution cache lacks, ``jobs`` at a time, into the
    cache the build then reads.

    The build (myst-nb's cache mode) looks each notebook up by its code cells and kernel and
    executes the ones it does not find, one after another; a notebook executed here, in the same
    way (its folder as working directory, the caller's environment, no errors allowed), is found
    and used as it is. The largest files start first (a proxy for the longest executions). A
    notebook that fails here is not cached: the build executes it again and reports the error.
    Returns the paths of the notebooks executed."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    import nbformat
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(str(root / ".jupyter_cache"))
    todo = []
    for path in _book_notebooks(root):
        try:
            cache.match_cache_notebook(_read_like_the_book(path))
        except KeyError:
            todo.append(path)
    todo.sort(key=lambda p: p.stat().st_size, reverse=True)
    done = []
    if not todo:
        return done
    with ProcessPoolExecutor(max_workers=min(jobs, len(todo))) as pool:
        futures = [pool.submit(_execute_for_cache, str(p), timeout) for p in todo]
        for fut in as_completed(futures):
            path, executed, seconds = fut.result()
            name = Path(path).relative_to(root)
            if executed is None:
                if log:
                    log(f"[book] {name} failed; the build executes it again and reports the error")
                continue
            cache.cache_notebook_bundle(CacheBundleIn(nbformat.reads(executed, as_version=4), path,
                                                      data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            done.append(path)
            if log:
                log(f"[book] executed {name} in {seconds:.1f} s")
    return done


def build_book(
    *,
    root: str | Path | None = None,
    strict: bool = True,
    clean: bool = False,
    threads: int = 1,
    jobs: int = 1,
) -> float:
    """Build the Jupyter Book into ``_build/html``; return the wall time in seconds.

    ``strict`` turns every Sphinx warning and every failing cell into a build failure
    (``-W -n --keep-going``). ``clean`` deletes ``_build`` and the execution cache first.
    Notebooks execute with :data:`GOLDEN_ENV` and ``threads`` CPU threads, so the book shows
    the same numbers as the golden notebooks; ``jobs`` notebooks execute at a time
    (:func:`prefill_execution_cache`; one thread each, so the numbers do not depend on it).
    Cached executions are dropped when the package or the stored results changed since they
    were made. Raises ``RuntimeError`` when the build fails.
    """
    import shutil
    import subprocess

    import yaml

    threads = int(validate(threads, Integer(lo=1), "threads"))
    jobs = int(validate(jobs, Integer(lo=1), "jobs"))
    root = Path(root) if root is not None else REPO_ROOT
    if not (root / "_config.yml").is_file():
        raise ValueError(f"root {str(root)!r} has no _config.yml")
    if clean:
        shutil.rmtree(root / "_build", ignore_errors=True)
        shutil.rmtree(root / ".jupyter_cache", ignore_errors=True)
    exec_hash = _tree_hash(root, _EXECUTION_SOURCES)
    cache_stamp = root / _CACHE_STAMP
    if cache_stamp.is_file() and cache_stamp.read_text().strip() != exec_hash:
        print("[book] the package or stored results changed: re-executing every notebook", file=sys.stderr)
        shutil.rmtree(root / ".jupyter_cache", ignore_errors=True)
    (root / _BUILD_STAMP).unlink(missing_ok=True)
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb) if jb.exists() else "jupyter-book", "build", "--all", "."]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    # the book's Sphinx extension and the notebooks' kernels import the companion from this repository
    path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**GOLDEN_ENV, **thread_env(threads), "PYTHONPATH": path}
    t0 = time.perf_counter()
    with deterministic_env(env):
        if jobs > 1:
            execute = yaml.safe_load((root / "_config.yml").read_text()).get("execute") or {}
            prefill_execution_cache(root, jobs, timeout=int(execute.get("timeout", 1800)),
                                    log=lambda line: print(line, file=sys.stderr, flush=True))
        proc = subprocess.run(cmd, cwd=root)
    wall = time.perf_counter() - t0
    reports = sorted((root / "_build/html/reports").glob("*.err.log")) if (root / "_build/html/reports").is_dir() else []
    if proc.returncode != 0 or reports:
        names = ", ".join(r.name for r in reports)
        raise RuntimeError(f"book build failed (exit {proc.returncode})" + (f"; failing notebooks: {names}" if names else ""))
    (root / ".jupyter_cache").mkdir(exist_ok=True)
    # hash again: a notebook may have written results during the build
    cache_stamp.write_text(_tree_hash(root, _EXECUTION_SOURCES) + "\n")
    (root / _BUILD_STAMP).write_text(json.dumps({"sources": book_sources_hash(root), "wall_s": round(wall, 1),
                                                 "strict": strict, "threads": threads, "jobs": jobs}))
    return wall


def _cmd_book(args) -> int:
    wall = build_book(strict=not args.no_strict, clean=args.clean, threads=args.threads, jobs=args.jobs)
    print(f"[book] built _build/html in {wall:.1f} s")
    return 0


def register(subparsers) -> None:
    """Add the ``book`` sub-command to ``python -m cnce``."""
    b = subparsers.add_parser("book", help="build the Jupyter Book into _build/html (quick scale)",
                              description="Build the book with the notebooks executed through the execution cache; "
                                          "warnings and failing cells fail the build unless --no-strict.")
    b.add_argument("--clean", action="store_true", help="delete _build and the execution cache first")
    b.add_argument("--no-strict", action="store_true", help="do not turn warnings into errors")
    b.add_argument("--threads", type=int, default=1,
                   help="CPU threads per notebook kernel (default 1)")
    b.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="notebooks executed at a time (default 2, or 1 on a one-core machine)")
    b.set_defaults(func=_cmd_book)
