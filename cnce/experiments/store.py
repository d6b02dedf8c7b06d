"""The results store: one tidy CSV table and one provenance record per study.

Layout under a results directory (default ``data/results/<scale>/``)::

    <study>.csv               one row per simulation x N x kappa x method
    <study>.provenance.json   seed, grids, and one entry per run (package version, git
                              commit, library versions, device, wall time)

A study is a :class:`cnce.jobs.Job` (:meth:`ResultStore.job`): its table is the checkpoint and
``.<study>.lock`` its lock. Every write goes to a temporary file in the same directory followed by
``os.replace`` (:func:`cnce.provenance.atomic_write`), so a
file on disk is always either the old or the new complete version: an interrupted run
loses at most the cell it was computing. Reading checks the table (whole rows, columns,
types, whole cells) and raises :class:`CorruptResultsError` (a ``ValueError``) naming the file,
the problem and what to do; a folder that cannot be written raises
:class:`~cnce.errors.StorageError`.
"""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import CorruptResultsError
from ..locations import data_dir
from ..provenance import atomic_write_text

__all__ = ["COLUMNS", "CorruptResultsError", "ResultStore", "atomic_write_text", "default_results_dir"]

#: Column -> dtype of the tidy table. ``kappa`` is missing (<NA>) for MLE.
COLUMNS: dict[str, str] = {
    "study": "string",
    "model": "string",
    "method": "string",
    "N": "int64",
    "kappa": "Int64",
    "sim": "int64",
    "error": "float64",
    "eps": "float64",
    "loss": "float64",
    "init_loss": "float64",
    "iterations": "int64",
    "converged": "bool",
    "grad_norm": "float64",
    "theta_true_0": "float64",
    "theta_hat_0": "float64",
    "seconds": "float64",
    "cell_seconds": "float64",
    "eps_setting": "string",
}

#: Optional columns: a table written without one (every table before the eps experiment)
#: reads with this value, and a table whose column holds only this value is written without
#: it, so the tables of the other experiments keep their form.
OPTIONAL = {"eps_setting": "default"}

#: The columns that identify a cell.
CELL_KEYS = ["study", "method", "N", "kappa", "eps_setting"]



def default_results_dir(scale: str, seed: int = 0) -> Path:
    """``results/<scale>`` under the data folder (:func:`cnce.locations.data_dir`) for the default
    seed 0, ``results/<scale>-seed<k>`` otherwise."""
    base = data_dir() / "results"
    return base / (scale if seed == 0 else f"{scale}-seed{seed}")


class ResultStore:
    """Tidy results of the studies of one scale and seed, kept in ``root``."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._cache: dict[str, tuple[tuple, pd.DataFrame]] = {}

    def _signature(self, path: Path):
        st = path.stat()
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def __repr__(self) -> str:
        return f"ResultStore({str(self.root)!r})"

    # -------------------------------------------------------------- paths
    def path(self, study: str) -> Path:
        return self.root / f"{study}.csv"

    def provenance_path(self, study: str) -> Path:
        return self.root / f"{study}.provenance.json"

    def job(self, study: str, *, n_sims: int | None = None):
        """The study's :class:`cnce.jobs.Job`: its table is the checkpoint (read by :meth:`load`,
        written whole and atomically in the store's format by :meth:`write`), its lock
        ``.<study>.lock`` in the folder. A second process running the same study waits for the
        first (a line on stderr says so) and then finds the cells the first one stored."""
        from ..jobs import Job

        return Job(self.root, self.path(study).name, kind="text", loader=lambda _: self.load(study, n_sims=n_sims),
                   saver=lambda df, fh: df.to_csv(fh, index=False, float_format="%.9g"), lock_file=f".{study}.lock",
                   wait=True)

    def studies(self) -> list[str]:
        return sorted(p.name[: -len(".csv")] for p in self.root.glob("*.csv"))

    # -------------------------------------------------------------- table
    @staticmethod
    def empty() -> pd.DataFrame:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in COLUMNS.items()})

    @staticmethod
    def coerce(df: pd.DataFrame, *, source: str = "rows") -> pd.DataFrame:
        """Order and type the columns of ``df``; raise ``CorruptResultsError`` if impossible."""
        absent = {c: v for c, v in OPTIONAL.items() if c not in df.columns}
        if absent:
            df = df.assign(**absent)
        missing = [c for c in COLUMNS if c not in df.columns]
        if missing:
            raise CorruptResultsError(f"{source}: missing column(s) {missing}; expected {list(COLUMNS)}")
        out = {}
        for c, t in COLUMNS.items():
            col = df[c]
            try:
                if t == "bool":
                    if col.dtype == bool:
                        out[c] = col
                    else:
                        mapped = col.astype("string").str.strip().str.lower().map({"true": True, "false": False, "1": True, "0": False})
                        if mapped.isna().any():
                            raise ValueError(f"non-boolean value {col[mapped.isna()].iloc[0]!r}")
                        out[c] = mapped.astype(bool)
                elif t == "string":
                    if col.isna().any():
                        raise ValueError("empty value")
                    out[c] = col.astype("string")
                elif t == "Int64":
                    num = pd.to_numeric(col, errors="raise")
                    if (num.dropna() % 1 != 0).any():
                        raise ValueError("non-integer value")
                    out[c] = num.astype("Int64")
                elif t == "int64":
                    num = pd.to_numeric(col, errors="raise")
                    if num.isna().any() or (num % 1 != 0).any():
                        raise ValueError("missing or non-integer value")
                    out[c] = num.astype("int64")
                else:
                    out[c] = pd.to_numeric(col, errors="raise").astype("float64")
            except (ValueError, TypeError) as exc:
                raise CorruptResultsError(f"{source}: column {c!r} cannot be read as {t}: {exc}") from exc
        return pd.DataFrame(out, index=range(len(df)))

    def load(self, study: str, *, n_sims: int | None = None) -> pd.DataFrame:
        """The study's table (empty if there is no file yet).

        Raises :class:`CorruptResultsError` naming the file when it cannot be parsed, lacks
        columns, holds values of the wrong type, or holds a cell without exactly ``n_sims``
        distinct simulations.
        """
        path = self.path(study)
        if not path.exists():
            return self.empty()
        cached = self._cache.get(study)
        if cached is not None and cached[0] == self._signature(path):
            df = cached[1]
            self.check_cells(df, n_sims=n_sims, source=f"results file {path}")
            return df.copy()
        hint = (f"restore it (`git checkout -- {path}` for a committed table), or move it aside and run again to "
                "recompute its cells")
        try:
            text = path.read_text(encoding="utf-8")
            self.check_rows_whole(text, source=f"results file {path}")
            raw = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[""])
        except CorruptResultsError as exc:
            raise CorruptResultsError(f"{exc}; {hint}") from exc
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
            raise CorruptResultsError(f"results file {path} is corrupt ({type(exc).__name__}: {exc}); {hint}") from exc
        try:
            df = self.coerce(raw, source=f"results file {path}")
            self.check_cells(df, n_sims=n_sims, source=f"results file {path}")
        except CorruptResultsError as exc:
            raise CorruptResultsError(f"{exc}; {hint}") from exc
        if (df["study"] != study).any():
            raise CorruptResultsError(f"results file {path} holds rows of another study ({df['study'].unique().tolist()}); {hint}")
        self._cache[study] = (self._signature(path), df)
        return df.copy()

    @staticmethod
    def check_rows_whole(text: str, *, source: str = "rows") -> None:
        """Refuse a truncated or damaged table: every row must have as many fields as the header
        and the file must end with a newline (the store always writes one), so a row cut short
        by a crash or a bad copy is an error, not NaN in its last columns."""
        if not text:
            raise CorruptResultsError(f"{source} is empty (not even a header)")
        if not text.endswith("\n"):
            raise CorruptResultsError(f"{source} does not end with a newline: its last row is truncated")
        rows = csv.reader(io.StringIO(text))
        header = next(rows, None) or []
        for i, row in enumerate(rows, start=2):
            if len(row) != len(header):
                raise CorruptResultsError(f"{source}: line {i} has {len(row)} fields but the header has {len(header)} "
                                          "(a truncated or damaged row)")

    @staticmethod
    def check_cells(df: pd.DataFrame, *, n_sims: int | None = None, source: str = "rows") -> None:
        if df.empty:
            return
        keys = CELL_KEYS
        g = df.assign(kappa=df["kappa"].fillna(-1)).groupby(keys, sort=False)["sim"]
        sizes, uniq = g.size(), g.nunique()
        bad = sizes[(sizes != uniq) | ((sizes != n_sims) if n_sims is not None else False)]
        if len(bad):
            key = bad.index[0]
            raise CorruptResultsError(
                f"{source}: cell {dict(zip(keys, key))} has {int(bad.iloc[0])} rows "
                f"({int(uniq.loc[key])} distinct simulations); expected {n_sims if n_sims is not None else 'one per simulation'}"
            )

    def done_cells(self, study: str, *, n_sims: int | None = None) -> set[tuple]:
        """``{(method, N, kappa)}`` of the cells already stored (kappa ``None`` for MLE), with the eps
        setting as a fourth entry where it is not ``"default"`` (:meth:`cnce.experiments.configs.Cell.key`)."""
        df = self.load(study, n_sims=n_sims)
        out = set()
        for m, n, k, e in df[["method", "N", "kappa", "eps_setting"]].drop_duplicates().itertuples(index=False):
            key = (str(m), int(n), None if pd.isna(k) else int(k))
            out.add(key if e == "default" else key + (str(e),))
        return out

    def append(self, study: str, rows: pd.DataFrame, *, n_sims: int | None = None) -> pd.DataFrame:
        """Add ``rows`` (whole cells) to the study's table and write it atomically."""
        new = self.coerce(rows, source="new rows")
        old = self.load(study, n_sims=n_sims)
        df = new if old.empty else pd.concat([old, new], ignore_index=True)
        self.check_cells(df, n_sims=n_sims, source=f"results for {study}")
        df = df.sort_values(["method", "kappa", "N", "eps_setting", "sim"], na_position="first", kind="stable").reset_index(drop=True)
        self.write(study, df)
        return df

    def write(self, study: str, df: pd.DataFrame) -> None:
        df = self.coerce(df, source="table")
        for c, v in OPTIONAL.items():
            if (df[c] == v).all():
                df = df.drop(columns=c)
        self._cache.pop(study, None)
        self.job(study).save(df)

    # -------------------------------------------------------------- provenance
    def read_provenance(self, study: str) -> dict | None:
        path = self.provenance_path(study)
        if not path.exists():
            return None
        try:
            prov = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise CorruptResultsError(f"provenance file {path} is not valid JSON ({exc}); restore it (`git checkout -- {path}` "
                                      "for a committed run), or move it and the table beside it aside and run again") from exc
        if not isinstance(prov, dict):
            raise CorruptResultsError(f"provenance file {path} must hold a JSON object; got {type(prov).__name__}")
        return prov

    def write_provenance(self, study: str, prov: dict) -> None:
        atomic_write_text(self.provenance_path(study), json.dumps(prov, indent=2, sort_keys=False, default=_json_default) + "\n")


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
