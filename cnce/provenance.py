"""Shared infrastructure of everything that writes results: the repository root, seed
derivation, atomic writes and provenance (git state, source hash, library versions, machine).

One place for what :mod:`cnce.experiments` (tables of the synthetic studies) and
:mod:`cnce.images` (training state of the image model) both need, so that a results file
says in the same way which code, seed and machine produced it.
"""
from __future__ import annotations

import errno
import hashlib
import os
import platform
import socket
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path
from typing import Callable

import numpy as np
from .errors import InputError, StorageError

__all__ = ["PACKAGE_ROOT", "derive_seed", "int_seed", "generator", "atomic_write", "atomic_write_text",
           "atomic_torch_save", "git", "git_object", "git_state", "source_hash", "package_source_hash",
           "environment_record"]

#: the package directory ``cnce/``
PACKAGE_ROOT = Path(__file__).resolve().parent
#: the folder that holds the package: source files are named relative to it in hashes
#: (``cnce/fit.py``). Git runs in the checkout that holds the package, if any (its code's commit);
#: no data location is derived from either (:mod:`cnce.locations`)
_SOURCE_BASE = PACKAGE_ROOT.parent


# --------------------------------------------------------------------------- seeds
def derive_seed(seed: int, *keys) -> int:
    """A 63-bit seed from the experiment ``seed`` and string/int ``keys`` (stable across runs,
    machines and Python versions: CRC-32 of each key's text, mixed by numpy's SeedSequence)."""
    entropy = [int(seed)] + [zlib.crc32(str(k).encode("utf-8")) for k in keys]
    state = np.random.SeedSequence(entropy).generate_state(2, dtype=np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1])) & ((1 << 63) - 1)


def int_seed(seed: int, *keys: int) -> int:
    """A 32-bit seed from the integer ``seed`` and integer ``keys``: the first word of numpy's
    ``SeedSequence([seed, *keys])`` (the image trainer's scheme, with which its committed runs
    were drawn; :func:`derive_seed` for keys that are names)."""
    return int(np.random.SeedSequence([int(seed), *map(int, keys)]).generate_state(1)[0])


def generator(seed: int, *keys, device=None):
    """A ``torch.Generator`` (on ``device``; default the CPU) seeded with :func:`derive_seed`
    ``(seed, *keys)``."""
    import torch

    g = torch.Generator() if device is None else torch.Generator(device=device)
    g.manual_seed(derive_seed(seed, *keys))
    return g


# --------------------------------------------------------------------------- atomic writes
def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, write: Callable, *, binary: bool = False) -> None:
    """Write ``path`` through ``write(fh)`` on a temporary file in the same directory, flushed
    to disk and renamed over ``path`` (``os.replace``): the file is always the old or the new
    complete version; on an error the temporary file is removed and the old file kept. A folder
    that cannot be written, a full disk or a path through a file raise
    :class:`~cnce.errors.StorageError` (an ``OSError``) naming ``path``."""
    path = Path(path)
    try:
        if path.parent.exists() and not path.parent.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(path.parent))
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise storage_error(exc, path) from exc
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="")) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
            raise storage_error(exc, path) from exc
        raise


#: the errnos of a disk or folder that cannot take a write
STORAGE_ERRNOS = frozenset(getattr(errno, n) for n in ("ENOSPC", "EROFS", "EACCES", "EPERM", "ENOTDIR", "EISDIR",
                                                       "EEXIST", "EDQUOT", "EFBIG") if hasattr(errno, n))


def storage_error(exc: OSError, path) -> "StorageError":
    """A :class:`~cnce.errors.StorageError` for ``exc`` met while writing ``path``: one line
    naming the file, the cause and what to do."""
    cause = {errno.ENOSPC: "no space left on the device", errno.EROFS: "the file system is read-only",
             errno.EACCES: "permission denied", errno.ENOTDIR: "a part of the path is not a folder",
             errno.EEXIST: "a part of the path is a file, not a folder"}.get(exc.errno, exc.strerror or str(exc))
    where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(path) else ""
    err = StorageError(f"cannot write {path}: {cause}{where}; nothing stored before is lost: free space or choose "
                       "another, writable folder (--results-dir / --out)")
    return err


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (:func:`atomic_write`)."""
    atomic_write(path, lambda fh: fh.write(text))


def atomic_torch_save(obj, path: str | os.PathLike) -> None:
    """``torch.save(obj, path)`` atomically (:func:`atomic_write`)."""
    import torch

    atomic_write(path, lambda fh: torch.save(obj, fh), binary=True)


# --------------------------------------------------------------------------- provenance
def git(*args) -> str | None:
    """Output of ``git args`` in the repository, or ``None`` (no git, not a checkout)."""
    try:
        out = subprocess.run(["git", *args], cwd=_SOURCE_BASE, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_dirty(*paths: str) -> bool | None:
    """Whether ``paths`` (default: ``cnce``) have uncommitted changes; ``None`` without git."""
    out = git("status", "--porcelain", "--", *(paths or ("cnce",)))
    return bool(out) if out is not None else None


def git_object(rev: str = "HEAD", path: str = "cnce") -> str | None:
    """``git rev-parse rev`` (a commit, or a tree such as ``"HEAD:cnce/images"``) with ``+dirty``
    appended when ``path`` has uncommitted changes; ``None`` without git. A tree hash survives a
    rebase onto a base that does not change ``path``."""
    name = git("rev-parse", rev)
    if not name:
        return None
    return name + ("+dirty" if git_dirty(path) else "")


def git_state(*paths: str) -> dict:
    """``{"git_commit": HEAD or None, "git_dirty_package": whether paths (default cnce/) have
    uncommitted changes}``."""
    return {"git_commit": git("rev-parse", "HEAD"), "git_dirty_package": git_dirty(*paths)}


def _source_name(f: Path, root: Path) -> str:
    for base in (root, _SOURCE_BASE):
        try:
            return str(f.relative_to(base))
        except ValueError:
            pass
    return f.name


def source_hash(*paths, root: str | os.PathLike = PACKAGE_ROOT, exclude: tuple[str, ...] = ()) -> str:
    """SHA-256 over files (name and content): each of ``paths`` is a file (any kind: a driver
    script, a config) or a directory (its ``.py`` files, recursively, except those under a
    directory named in ``exclude``). Names are relative to ``root`` (else to the repository),
    so the hash does not depend on where the checkout lies; files are taken in sorted order."""
    root = Path(root).resolve()
    files = []
    for p in paths:
        p = Path(p).resolve()
        if p.is_dir():
            files += [f for f in p.rglob("*.py") if not set(f.relative_to(p).parts) & set(exclude)]
        elif p.is_file():
            files.append(p)
        else:
            raise InputError(f"paths must name existing files or directories; got {str(p)!r}")
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: Path(_source_name(f, root)).parts):
        h.update(_source_name(f, root).encode())
        h.update(b"\0")
        h.update(f.read_bytes())
    return h.hexdigest()


def package_source_hash(exclude: tuple[str, ...] = ("images",), extra=()) -> str:
    """:func:`source_hash` of the package's ``.py`` files, except the subpackages in ``exclude``,
    and of the ``extra`` files (a driver script, a config): identifies the code that computed
    a result even when it was not committed."""
    return source_hash(PACKAGE_ROOT, *extra, exclude=exclude)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment_record(device) -> dict:
    """Package version, git state, source hash, library versions, machine and device of this process."""
    import pandas as pd
    import scipy
    import torch

    from ._version import __version__

    return {
        "package_version": __version__,
        **git_state(),
        "package_source_sha256": package_source_hash(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "scipy": scipy.__version__,
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
    }
