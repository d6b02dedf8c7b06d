"""Batch reruns of the book's notebooks (papermill) and the nbval golden notebooks.

Command line (registered into ``python -m cnce``):

* ``python -m companion batch [NOTEBOOK ...] --scale quick|paper -p KEY VALUE --out DIR``
  reruns every notebook (or the chosen ones) with papermill and writes the executed
  ``.ipynb`` files plus ``summary.csv`` / ``summary.json`` (notebook, status, wall time,
  parameters) to a run folder. A failing notebook does not stop the others; the command
  exits with status 1 and names the failures.
* ``python -m companion goldens [NOTEBOOK ...]`` regenerates the executed golden notebooks under
  ``tests/golden/`` that the nbval regression tests compare against (quick scale, seed 0,
  one torch thread, progress bars off).

The notebooks are Jupytext percent-format ``.py`` files under ``notebooks/``; everything here
is generic over whichever notebooks exist there. The environment the kernels run under
(threads, a fixed hash seed) comes from :mod:`companion.process_env`; the book build is :mod:`companion.book`.
"""
from __future__ import annotations

import argparse
import ast
import csv
import datetime as _dt
import json
import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from cnce.constraints import Integer, validate
from cnce.errors import InputError, RunError, RunInterrupted
from .process_env import GOLDEN_ENV, deterministic_env, thread_env
from .paths import REPO_ROOT

__all__ = [
    "SCALES",
    "default_notebooks_dir",
    "default_golden_dir",
    "find_notebooks",
    "read_notebook",
    "notebook_parameters",
    "parse_parameter",
    "code_cells",
    "BatchResult",
    "run_batch",
    "regenerate_goldens",
    "register",
]

#: The scales every notebook understands through its ``scale`` parameter.
SCALES = ("quick", "paper")


#: Golden notebooks are executed with the notebook's own default parameters except these.
GOLDEN_PARAMETERS: dict[str, Any] = {"scale": "quick", "seed": 0}


# --------------------------------------------------------------------------- locations
def default_notebooks_dir() -> Path:
    """``notebooks/`` of the repository, else of the current directory."""
    here = REPO_ROOT / "notebooks"
    return here if here.is_dir() else Path.cwd() / "notebooks"


def default_golden_dir() -> Path:
    return REPO_ROOT / "tests" / "golden"


def find_notebooks(names: Sequence[str] | None = None, notebooks_dir: str | Path | None = None) -> list[Path]:
    """The Jupytext notebooks to run, in file-name order.

    ``names`` picks some: a file path, a file name (``02_consistency.py``), a stem
    (``02_consistency``), a number (``06``: the notebook ``06_*``, before ``06a_*``) or a
    unique prefix (``06a``). ``None`` or empty means all of them.
    Raises :class:`~cnce.errors.InputError` naming the argument when a name matches no notebook or several.
    """
    nb_dir = Path(notebooks_dir) if notebooks_dir is not None else default_notebooks_dir()
    if not nb_dir.is_dir():
        raise InputError(f"notebooks_dir {str(nb_dir)!r} is not a directory")
    available = sorted(p for p in nb_dir.glob("*.py") if not p.name.startswith(("_", ".")))
    if not names:
        if not available:
            raise InputError(f"no notebooks (*.py) found in {str(nb_dir)!r}")
        return available
    chosen: list[Path] = []
    for name in names:
        if not isinstance(name, (str, os.PathLike)) or not str(name).strip():
            raise InputError(f"notebook names must be non-empty strings; got {name!r}")
        p = Path(name)
        if p.suffix == ".py" and p.is_file():
            match = [p.resolve()]
        else:
            stem = p.name[:-3] if p.name.endswith(".py") else p.name
            exact = [a for a in available if a.stem == stem]
            # "06" is notebook 06_..., not also the appendix 06a_...: a number before its "_" first
            numbered = [a for a in available if a.stem.startswith(stem + "_")]
            match = exact or numbered or [a for a in available if a.stem.startswith(stem)]
        if len(match) != 1:
            known = ", ".join(a.stem for a in available) or "none"
            what = "matches no notebook" if not match else f"is ambiguous ({', '.join(m.stem for m in match)})"
            raise InputError(f"notebook {str(name)!r} {what}; available: {known}")
        if match[0] not in chosen:
            chosen.append(match[0])
    return chosen


# --------------------------------------------------------------------------- notebook content
def read_notebook(path: str | Path):
    """Read a Jupytext ``.py`` (percent format) or an ``.ipynb`` file as an nbformat notebook."""
    import jupytext
    import nbformat

    path = Path(path)
    if path.suffix == ".ipynb":
        return nbformat.read(path, as_version=4)
    return jupytext.read(path, fmt="py:percent")


def code_cells(nb) -> list[str]:
    """Source of each code cell (trailing whitespace stripped), skipping papermill's injected
    parameters cell; what the golden-match test compares."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        if "injected-parameters" in cell.get("metadata", {}).get("tags", []):
            continue
        out.append(cell.source.rstrip())
    return out


def notebook_parameters(nb) -> dict[str, Any]:
    """Names and default values assigned in the cell tagged ``parameters``.

    Values that are not literals are reported as their source text.
    Raises ``ValueError`` when the notebook has no such cell.
    """
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            params: dict[str, Any] = {}
            for node in ast.parse(cell.source).body:
                targets = []
                if isinstance(node, ast.Assign):
                    targets, value = node.targets, node.value
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets, value = [node.target], node.value
                for t in targets:
                    if isinstance(t, ast.Name):
                        try:
                            params[t.id] = ast.literal_eval(value)
                        except ValueError:
                            params[t.id] = ast.unparse(value)
            return params
    raise ValueError("notebook has no code cell tagged 'parameters'")


def parse_parameter(text: str) -> Any:
    """A command-line parameter value: a Python literal (``3``, ``0.5``, ``[1, 2]``,
    ``True``), ``true``/``false``/``none`` in any case, else the string itself."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        low = text.strip().lower()
        if low in ("true", "false"):
            return low == "true"
        if low in ("none", "null"):
            return None
        return text


# --------------------------------------------------------------------------- batch
@dataclass
class BatchResult:
    """One notebook's outcome in a batch run."""

    notebook: str
    status: str  # "ok" or "failed"
    wall_s: float
    parameters: dict[str, Any] = field(default_factory=dict)
    ignored_parameters: dict[str, Any] = field(default_factory=dict)
    output: str = ""
    error: str = ""


def _timestamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")


def _short_error(exc: BaseException) -> str:
    """A one-line description of a failure (papermill's errors carry the cell's exception)."""
    ename = getattr(exc, "ename", None) or type(exc).__name__
    evalue = getattr(exc, "evalue", None) or str(exc)
    line = f"{ename}: {evalue}".strip().splitlines()
    return line[0][:500] if line else ename


def _execute_with_papermill(nb, out_path: Path, parameters: dict, cwd: Path, timeout: float | None, kernel_name: str):
    import papermill as pm

    return pm.execute_notebook(
        nb,
        str(out_path),
        parameters=parameters,
        cwd=str(cwd),
        kernel_name=kernel_name,
        language="python",
        progress_bar=False,
        log_output=False,
        execution_timeout=timeout,
    )


def run_batch(
    notebooks: Sequence[str] | None = None,
    *,
    scale: str = "quick",
    parameters: Mapping[str, Any] | None = None,
    out: str | Path | None = None,
    notebooks_dir: str | Path | None = None,
    threads: int | None = None,
    timeout: float | None = None,
    kernel_name: str = "python3",
    progress: bool = True,
) -> tuple[Path, list[BatchResult]]:
    """Rerun notebooks with papermill; return the run folder and one result per notebook.

    Each notebook gets ``scale`` and those of ``parameters`` that its ``parameters`` cell
    declares (the others are recorded as ignored for that notebook). Executed notebooks
    go to ``out/<name>.ipynb``; ``out/summary.csv`` and ``out/summary.json`` list notebook,
    status, wall time, parameters and error. A failing notebook is recorded and the batch
    goes on. ``threads`` fixes the number of CPU threads of each kernel (via
    ``OMP_NUM_THREADS``), which makes floating-point results reproducible.
    """
    if scale not in SCALES:
        raise InputError(f"scale must be one of {SCALES}; got {scale!r}")
    if threads is not None:
        threads = int(validate(threads, Integer(lo=1), "threads"))
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        raise InputError(f"timeout must be a positive number of seconds; got {timeout!r}")
    parameters = dict(parameters or {})
    if "scale" in parameters:
        raise InputError("give the scale with scale=..., not as a parameter")
    paths = find_notebooks(notebooks, notebooks_dir)
    declared_by = {}
    for path in paths:
        try:
            declared_by[path.stem] = notebook_parameters(read_notebook(path))
        except ValueError:
            declared_by[path.stem] = {}
    unknown = [k for k in parameters if not any(k in d for d in declared_by.values())]
    if unknown:
        known = sorted({k for d in declared_by.values() for k in d} - {"scale"})
        raise InputError(f"parameter(s) {unknown} are declared by none of the chosen notebooks "
                         f"({', '.join(p.stem for p in paths)}); their parameters are {known}")
    out_dir = Path(out) if out is not None else Path("runs") / f"batch-{_timestamp()}"
    out_dir.mkdir(parents=True, exist_ok=True)

    env = {}
    if threads is not None:
        env.update(thread_env(threads))
    env.setdefault("PYTHONHASHSEED", "0")

    from tqdm.auto import tqdm

    results: list[BatchResult] = []
    bar = tqdm(paths, desc="notebooks", unit="nb", disable=not progress, file=sys.stderr)
    with deterministic_env(env):
        for path in bar:
            bar.set_postfix_str(path.stem)
            nb = read_notebook(path)
            nb.metadata.setdefault("kernelspec", {"name": kernel_name, "display_name": "Python 3", "language": "python"})
            wanted = {"scale": scale, **parameters}
            try:
                declared = notebook_parameters(nb)
            except ValueError:
                declared = {}
            applied = {k: v for k, v in wanted.items() if k in declared}
            ignored = {k: v for k, v in wanted.items() if k not in declared}
            out_path = out_dir / f"{path.stem}.ipynb"
            t0 = time.perf_counter()
            try:
                _execute_with_papermill(nb, out_path, applied, path.parent, timeout, kernel_name)
                status, error = "ok", ""
            except KeyboardInterrupt:  # the summary says what ran, then the run stops
                results.append(BatchResult(path.stem, "interrupted", round(time.perf_counter() - t0, 2), applied,
                                           ignored, str(out_path), "interrupted (Ctrl-C)"))
                _write_summary(out_dir, results, scale)
                bar.close()
                raise RunInterrupted(f"batch interrupted during {path.stem}; the summary of the {len(results) - 1} "
                                     f"notebook(s) before it is in {out_dir / 'summary.csv'}") from None
            except Exception as exc:  # noqa: BLE001 - every failure is recorded, the batch goes on
                status, error = "failed", _short_error(exc)
                if not out_path.exists():
                    (out_dir / f"{path.stem}.error.txt").write_text(traceback.format_exc())
            wall = time.perf_counter() - t0
            results.append(
                BatchResult(path.stem, status, round(wall, 2), applied, ignored, str(out_path), error)
            )
            bar.write(f"[batch] {path.stem}: {status} in {wall:.1f} s" + (f" - {error}" if error else ""))
            _write_summary(out_dir, results, scale)
    bar.close()
    return out_dir, results


def _write_summary(out_dir: Path, results: list[BatchResult], scale: str) -> None:
    rows = [asdict(r) for r in results]
    with open(out_dir / "summary.json", "w") as f:
        json.dump({"scale": scale, "created_utc": _timestamp(), "python": sys.version.split()[0],
                   "notebooks": rows}, f, indent=2, default=str)
    with open(out_dir / "summary.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["notebook", "status", "wall_s", "parameters", "ignored_parameters", "output", "error"])
        for r in rows:
            w.writerow([r["notebook"], r["status"], r["wall_s"], json.dumps(r["parameters"], default=str),
                        json.dumps(r["ignored_parameters"], default=str), r["output"], r["error"]])


# --------------------------------------------------------------------------- goldens
def _strip_volatile(nb) -> None:
    """Drop what changes between identical runs or only bloats the repository: execution
    timestamps, stderr streams (warnings, progress bars; the nbval set-up ignores them),
    image payloads (nbval skips images anyway), widget state."""
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("papermill", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
        if "outputs" in cell:
            cell.outputs = [o for o in cell.outputs if not (o.get("output_type") == "stream" and o.get("name") == "stderr")]
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data:
                for mime in [m for m in data if m.startswith("image/")]:
                    del data[mime]
            if isinstance(output.get("metadata"), dict):
                output["metadata"].clear()


def regenerate_goldens(
    notebooks: Sequence[str] | None = None,
    *,
    golden_dir: str | Path | None = None,
    notebooks_dir: str | Path | None = None,
    timeout: float = 1800,
    kernel_name: str = "python3",
    progress: bool = True,
) -> list[Path]:
    """Execute notebooks at quick scale (seed 0, one thread) and store them as goldens.

    The golden is the notebook itself (same code cells, the default ``parameters`` cell
    set to quick scale and seed 0), executed with :data:`GOLDEN_ENV` in ``notebooks/``;
    images and timestamps are removed. When every notebook is regenerated, goldens whose
    notebook no longer exists are deleted. Raises :class:`~cnce.errors.RunError` naming the notebooks
    that failed (the others are still written).
    """
    import nbformat
    from nbclient import NotebookClient
    from tqdm.auto import tqdm

    gdir = Path(golden_dir) if golden_dir is not None else default_golden_dir()
    gdir.mkdir(parents=True, exist_ok=True)
    paths = find_notebooks(notebooks, notebooks_dir)
    written, failed = [], []
    with deterministic_env(GOLDEN_ENV):
        for path in tqdm(paths, desc="goldens", unit="nb", disable=not progress, file=sys.stderr):
            nb = read_notebook(path)
            declared = notebook_parameters(nb)
            missing = [k for k in GOLDEN_PARAMETERS if k not in declared]
            if missing:
                failed.append(f"{path.stem} (parameters cell lacks {missing})")
                continue
            if any(declared[k] != v for k, v in GOLDEN_PARAMETERS.items()):
                failed.append(f"{path.stem} (defaults must be scale='quick', seed=0 for goldens)")
                continue
            nb.metadata["kernelspec"] = {"name": kernel_name, "display_name": "Python 3", "language": "python"}
            client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name,
                                    resources={"metadata": {"path": str(path.parent)}})
            try:
                client.execute()
            except Exception as exc:  # noqa: BLE001
                failed.append(f"{path.stem} ({_short_error(exc)})")
                continue
            _strip_volatile(nb)
            target = gdir / f"{path.stem}.ipynb"
            nbformat.write(nb, target)
            written.append(target)
    if not notebooks:
        keep = {p.stem for p in paths}
        for stale in gdir.glob("*.ipynb"):
            if stale.stem not in keep:
                stale.unlink()
    if failed:
        raise RunError("golden regeneration failed for: " + "; ".join(failed))
    return written


# --------------------------------------------------------------------------- command line
class _ParamAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        key, value = values
        if not key.isidentifier():
            parser.error(f"-p/--parameter name must be a Python identifier; got {key!r}")
        params = dict(getattr(namespace, self.dest) or {})
        params[key] = parse_parameter(value)
        setattr(namespace, self.dest, params)


def _cmd_batch(args) -> int:
    out_dir, results = run_batch(
        args.notebooks, scale=args.scale, parameters=args.parameters, out=args.out,
        notebooks_dir=args.notebooks_dir, threads=args.threads, timeout=args.timeout,
    )
    failed = [r for r in results if r.status != "ok"]
    total = sum(r.wall_s for r in results)
    print(f"[batch] {len(results) - len(failed)}/{len(results)} notebooks ok in {total:.1f} s; "
          f"summary: {out_dir / 'summary.csv'}")
    if failed:
        print("[batch] FAILED: " + ", ".join(f"{r.notebook} ({r.error})" for r in failed), file=sys.stderr)
        return 1
    return 0


def _cmd_goldens(args) -> int:
    written = regenerate_goldens(args.notebooks, golden_dir=args.golden_dir,
                                 notebooks_dir=args.notebooks_dir, timeout=args.timeout)
    for p in written:
        print(f"[goldens] wrote {p}")
    return 0


def register(subparsers) -> None:
    """Add the ``batch`` and ``goldens`` sub-commands to ``python -m cnce`` (``book``: :mod:`companion.book`)."""
    p = subparsers.add_parser(
        "batch", help="rerun notebooks with papermill and write a summary",
        description="Rerun every notebook (or the named ones) with papermill at a chosen scale "
                    "and parameters; write executed notebooks and summary.csv/json to a run folder. "
                    "Exits 1 naming the notebooks that failed.",
    )
    p.add_argument("notebooks", nargs="*", metavar="NOTEBOOK",
                   help="notebook file, name or number prefix (e.g. 02); default: all")
    p.add_argument("--scale", choices=SCALES, default="quick", help="experiment scale (default: quick)")
    p.add_argument("-p", "--parameter", dest="parameters", nargs=2, metavar=("KEY", "VALUE"),
                   action=_ParamAction, default={},
                   help="set a notebook parameter (repeatable), e.g. -p seed 1 -p device cuda")
    p.add_argument("--out", default=None, help="run folder (default: runs/batch-<UTC timestamp>)")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads per kernel (OMP_NUM_THREADS); fix it for reproducible numbers")
    p.add_argument("--timeout", type=float, default=None, help="per-cell timeout in seconds (default: none)")
    p.add_argument("--notebooks-dir", default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=_cmd_batch)

    g = subparsers.add_parser(
        "goldens", help="regenerate the nbval golden notebooks under tests/golden/",
        description="Execute notebooks at quick scale (seed 0, one thread) and store them under "
                    "tests/golden/ for the nbval regression tests.",
    )
    g.add_argument("notebooks", nargs="*", metavar="NOTEBOOK", help="default: all")
    g.add_argument("--golden-dir", default=None, help="default: tests/golden")
    g.add_argument("--timeout", type=float, default=1800, help="per-cell timeout in seconds")
    g.add_argument("--notebooks-dir", default=None, help=argparse.SUPPRESS)
    g.set_defaults(func=_cmd_goldens)

