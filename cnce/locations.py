"""Where results and weights are read and written by default: one data folder, chosen by the user.

The library holds no repository path. Every function that reads or writes stored results takes
its folder as an argument (``root=``, ``out=``); when it is not given, the folder is under
:func:`data_dir`:

1. the folder set by :func:`set_data_dir` (process-wide) or :func:`data_dir_context` (this block);
2. else the ``data-dir`` of the ``[tool.cnce]`` table of the nearest ``pyproject.toml`` at or
   above the current working directory (relative to that file's folder): a project declares
   its data folder once, as other tools read their settings from ``pyproject.toml``;
3. else ``./cnce-data`` in the current working directory.

Under it, the experiments' tables live in ``results/<scale>[-seed<k>]/`` and the image model's
runs in ``weights/``. The companion (``python -m companion ...``) sets the repository's folder.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

__all__ = ["data_dir", "set_data_dir", "data_dir_context", "DEFAULT_NAME"]

#: the folder used when nothing is configured, in the current working directory
DEFAULT_NAME = "cnce-data"

_chosen: Path | None = None


def _checked(path: str | os.PathLike) -> Path:
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise TypeError(f"data_dir must be a path (str or os.PathLike); got {path!r}")
    return Path(path).expanduser().resolve()


def _from_pyproject(start: Path) -> Path | None:
    try:
        import tomllib
    except ImportError:  # pragma: no cover (Python 3.10)
        return None
    for folder in (start, *start.parents):
        f = folder / "pyproject.toml"
        if f.is_file():
            try:
                table = tomllib.loads(f.read_text()).get("tool", {}).get("cnce", {})
            except (OSError, tomllib.TOMLDecodeError):
                return None
            value = table.get("data-dir")
            return (folder / value).resolve() if isinstance(value, str) and value else None
    return None


def data_dir() -> Path:
    """The data folder (see the module's docstring for how it is chosen)."""
    if _chosen is not None:
        return _chosen
    cwd = Path.cwd()
    return _from_pyproject(cwd) or cwd / DEFAULT_NAME


def set_data_dir(path: str | os.PathLike | None) -> None:
    """Choose the data folder for this process (``None``: back to the default)."""
    global _chosen
    _chosen = None if path is None else _checked(path)


@contextlib.contextmanager
def data_dir_context(path: str | os.PathLike) -> Iterator[Path]:
    """Use ``path`` as the data folder inside the block; the previous choice is restored after."""
    global _chosen
    before, _chosen = _chosen, _checked(path)
    try:
        yield _chosen
    finally:
        _chosen = before
