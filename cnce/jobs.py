"""One resumable job runner: a folder, a lock, a checkpoint written atomically, resume, progress.

A long run (a study's cells, an image model's meta-iterations, a network study's seeds) keeps
its whole state in one checkpoint file in its folder and writes it atomically after every unit
of work, so that an interrupted run loses at most the unit in flight and a new invocation
resumes from the file. :class:`Job` holds what every such runner needs:

* a **lock** (``<folder>/.lock``, created exclusively, holding the owner's host and process id):
  a second run on the same folder is refused with :class:`JobLockedError` naming the holder; a
  lock left by a process that no longer exists on this host is taken over;
* the **checkpoint** (``<folder>/<state_file>``): :meth:`Job.load` reads it (with the runner's
  ``loader``, e.g. a ``weights_only`` torch load) or starts a new state, :meth:`Job.save`
  writes it atomically (a temporary file, then a rename: :mod:`cnce.provenance`);
* **interruption**: :func:`interruptible` computes a unit in a worker thread so that Ctrl-C is
  answered at once, :func:`interrupts_held` holds Ctrl-C while a finished unit is written;
* **progress**: :meth:`Job.progress` is a tqdm bar over the units still to do, starting at the
  units done.

The checkpoint is written by ``kind`` (``torch``, ``json``) or by the runner's own ``saver``
(a results table keeps its committed format: the experiments' CSV, the network study's CSV);
a runner that shares its folder with others names its own lock (``lock_file``), and one that
should queue behind another run rather than be refused asks to ``wait``.

Runners that use it: the image trainer (:class:`cnce.images.train.Trainer`), the network study
(:func:`cnce.nn.study.write_study`), the experiments' runner (:func:`cnce.experiments.runner.run`,
one job per study).
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from .errors import RunError

__all__ = ["Job", "JobLockedError", "LOCK_FILE", "interruptible", "interrupts_held"]

LOCK_FILE = ".lock"
#: an empty or unreadable lock file older than this (seconds) is taken over
STALE_EMPTY_SECONDS = 10.0


class JobLockedError(RunError):
    """Another run holds the job's folder (its lock names the host and process)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


class Job:
    """A resumable job in ``folder`` with its checkpoint ``state_file``.

    Args:
        folder: the job's folder (created).
        state_file: the checkpoint's name in ``folder`` (``None``: a job that only locks, e.g. the
            GPU driver's packing, which several workers take in turn).
        kind: ``"torch"`` (``torch.save``), ``"json"`` or ``"text"`` (a ``str``, or what
            ``saver`` writes): how :meth:`save` writes the state.
        loader: ``loader(path) -> state`` for :meth:`load` (default: ``torch.load`` with
            ``weights_only=True``, ``json.loads`` or the text).
        saver: ``saver(state, fh)`` writes the state to an open file (text, or binary for
            ``"torch"``) in place of the kind's writer; the write stays atomic.
        lock_file: the lock's name in ``folder`` (default ``.lock``; a folder shared by several
            jobs gives each its own).
        wait: when another live run holds the lock, wait for it (a line on stderr says so) instead
            of raising :class:`JobLockedError`.
        quiet: wait without the line on stderr (workers of one run taking turns).

    Use as a context manager (``with Job(...) as job:``), or :meth:`acquire` / :meth:`release`:
    the lock is held from acquiring to releasing, also when the run fails.
    """

    def __init__(self, folder, state_file: str | None, *, kind: str = "torch", loader=None, saver=None,
                 lock_file: str = LOCK_FILE, wait: bool = False, quiet: bool = False):
        if kind not in ("torch", "json", "text"):
            raise ValueError(f"kind must be 'torch', 'json' or 'text'; got {kind!r}")
        self.folder = Path(folder)
        self.path = None if state_file is None else self.folder / state_file
        self.kind, self.loader, self.saver = kind, loader, saver
        self.lock_file, self.wait, self.quiet = lock_file, wait, quiet
        self._held = False

    # ------------------------------------------------------------------------------ lock
    @property
    def lock_path(self) -> Path:
        return self.folder / self.lock_file

    def acquire(self) -> "Job":
        """Take the folder's lock (creating the folder); :class:`JobLockedError` if a live run holds
        it (or, with ``wait``, once it is free). A folder that cannot be written raises
        :class:`~cnce.errors.StorageError` naming it."""
        from .provenance import storage_error

        me = {"host": socket.gethostname(), "pid": os.getpid()}
        said = False
        while True:
            try:
                if self.folder.exists() and not self.folder.is_dir():
                    raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(self.folder))
                self.folder.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.lock_path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    holder = json.loads(self.lock_path.read_text())
                except (OSError, ValueError):
                    holder = {}
                stale = holder.get("host") == me["host"] and isinstance(holder.get("pid"), int) and not _alive(holder["pid"])
                if not holder:  # empty or unreadable: a lock of the older flock scheme, or a creator that died before
                    try:        # writing its name; not one being written right now (given a few seconds)
                        stale = time.time() - self.lock_path.stat().st_mtime > STALE_EMPTY_SECONDS
                    except OSError:
                        stale = True  # gone meanwhile: try again
                if stale:
                    self.lock_path.unlink(missing_ok=True)  # left by a process that no longer exists: take it over
                    continue
                if not self.wait:
                    raise JobLockedError(f"{str(self.folder)!r} is in use by another run ({holder or 'unreadable lock'}); "
                                         f"wait for it, or delete {str(self.lock_path)!r} if that run is gone") from None
                if not said and not self.quiet:  # a status line, on stderr: what a page prints must not depend on who ran first
                    print(f"waiting for another run that holds {str(self.lock_path)!r} ...", file=sys.stderr, flush=True)
                    said = True
                time.sleep(0.1)
                continue
            except OSError as exc:
                raise storage_error(exc, self.lock_path) from exc
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
            self._held = True
            return self

    def release(self) -> None:
        if self._held:
            self.lock_path.unlink(missing_ok=True)
            self._held = False

    def __enter__(self) -> "Job":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    # ------------------------------------------------------------------------- checkpoint
    def exists(self) -> bool:
        return self.path is not None and self.path.is_file()

    def load(self, new):
        """The checkpoint's state when the file exists (resume), else ``new()`` (a new run)."""
        if not self.exists():
            return new()
        if self.loader is not None:
            return self.loader(self.path)
        if self.kind == "json":
            return json.loads(self.path.read_text())
        if self.kind == "text":
            return self.path.read_text(encoding="utf-8")
        import torch

        return torch.load(self.path, map_location="cpu", weights_only=True)

    def save(self, state) -> None:
        """Write ``state`` atomically (the old file stays whole until the new one is complete)."""
        from . import provenance

        if self.path is None:
            raise ValueError(f"this job in {str(self.folder)!r} only locks: it has no checkpoint to save")
        if self.saver is not None:
            provenance.atomic_write(self.path, lambda fh: self.saver(state, fh), binary=self.kind == "torch")
        elif self.kind == "json":
            provenance.atomic_write_text(self.path, json.dumps(state, indent=1, sort_keys=True))
        elif self.kind == "text":
            provenance.atomic_write_text(self.path, state)
        else:
            provenance.atomic_torch_save(state, self.path)

    # --------------------------------------------------------------------------- progress
    @staticmethod
    def progress(done: int, total: int, *, desc: str = "", enabled: bool = True):
        """A tqdm bar over units ``done .. total - 1`` (started at ``done``)."""
        from tqdm.auto import tqdm

        return tqdm(range(done, total), desc=desc, disable=not enabled, initial=done, total=total)

    @staticmethod
    def bar(total: int, *, initial: int = 0, desc: str = "", unit: str = "it", leave: bool = True,
            enabled: bool = True):
        """A tqdm bar (on stderr) of ``total`` units, ``initial`` of them done, that the runner
        advances itself (``bar.update(n)``): for units spread over several jobs (the experiments'
        studies) or finer than the checkpoints (``cnce.nn.train``'s steps); ``None`` when not
        ``enabled``."""
        if not enabled:
            return None
        from tqdm.auto import tqdm

        return tqdm(total=total, initial=initial, desc=desc, unit=unit, leave=leave, dynamic_ncols=True, file=sys.stderr)


def interruptible(fn, *args, **kwargs):
    """``(fn(*args, **kwargs), interrupted)``, computed in a worker thread so that Ctrl-C is
    answered within a fraction of a second even while a compiled kernel (which does not look at
    signals) runs. On Ctrl-C: ``(result, True)`` when the work had finished anyway (it is then
    stored, never discarded), else ``(None, True)`` -- the unfinished unit is abandoned (its
    daemon thread is left to end on its own) and the caller raises
    :class:`~cnce.errors.RunInterrupted`. Off the main thread it simply calls ``fn``. (The
    experiments' runner computes each cell through it.)"""
    if threading.current_thread() is not threading.main_thread():
        return fn(*args, **kwargs), False
    box: dict = {}
    done = threading.Event()  # not Thread.is_alive: a join interrupted by Ctrl-C can misreport it

    def work():
        try:
            box["out"] = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["err"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="cnce-cell", daemon=True).start()
    try:
        while not done.wait(0.2):
            pass
    except KeyboardInterrupt:
        if not done.is_set():
            return None, True
        interrupted = True
    else:
        interrupted = False
    if "err" in box:
        raise box["err"]
    return box["out"], interrupted


@contextlib.contextmanager
def interrupts_held():
    """Hold Ctrl-C while a finished unit is written (a table and its provenance record together);
    yields a list that is non-empty afterwards if Ctrl-C came meanwhile (the caller then stops)."""
    late: list = []
    if threading.current_thread() is not threading.main_thread():
        yield late
        return
    previous = signal.signal(signal.SIGINT, lambda *_: late.append(True))
    try:
        yield late
    finally:
        signal.signal(signal.SIGINT, previous)
