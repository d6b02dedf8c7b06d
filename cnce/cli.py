"""Command line: ``python -m cnce <command> ...`` (also installed as ``cnce``).

Sub-commands are contributed by the package's parts; each part exposes
``register(subparsers)`` that adds its commands with ``set_defaults(func=...)``.

Errors are reported here, once for every command (:mod:`cnce.errors`): an input error exits 2, a
results or run error exits 1, each with the one line ``error: <message>`` on stderr and no
traceback. Ctrl-C is a :class:`~cnce.errors.RunInterrupted` (exit 1; what finished is kept). An
``OSError`` that says the disk is full or a folder cannot be written (``ENOSPC``, ``EROFS``,
``EACCES``, ``ENOTDIR``, ...) is a :class:`~cnce.errors.StorageError`, and a missing file a run
needs exits 1 naming it. Anything else -- a plain ``ValueError`` from torch included -- is a bug:
its traceback is shown.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import sys

from .errors import CnceError, RunInterrupted, StorageError, exit_code

#: the errnos of a disk or folder that cannot take a write: a storage error, not a bug
STORAGE_ERRNOS = frozenset(getattr(errno, n) for n in ("ENOSPC", "EROFS", "EACCES", "EPERM", "ENOTDIR", "EISDIR",
                                                       "EDQUOT", "EFBIG", "ENXIO", "EINVAL") if hasattr(errno, n))

# Modules that contribute sub-commands. A part that is not installed is skipped only when
# the missing module is that part itself (a broken import inside it still fails loudly).
_PARTS = ["cnce.experiments.cli", "cnce.precompile", "cnce.images.cli", "cnce.images.pack",
          "cnce.nn.cli"]

#: Every command, the part that registers it and its one-line help. ``python -m cnce --help``
#: lists them from here without importing any part (no torch: it answers at once); the part of the
#: chosen command builds that command's parser. tests/test_cli_front_door.py checks this table
#: against the parts' own parsers.
COMMANDS: dict[str, tuple[str, str]] = {
    "list": ("cnce.experiments.cli", "list the experiments (figures), their grids and how many cells are stored"),
    "models": ("cnce.experiments.cli", "list the registered models and what each declares (linear, kernels, ...)"),
    "run": ("cnce.experiments.cli", "run an experiment (skips cells already stored; resumes after an interruption)"),
    "compile": ("cnce.precompile", "compile the CPU kernels into numba's cache now (a fresh clone otherwise compiles "
                                   "them during its first fits, in every process that starts before the cache exists)"),
    "image-train": ("cnce.images.cli", "train the four-layer neural image model (Sec. 4) with CNCE"),
    "image-pack": ("cnce.images.pack", "build the Debian-wallpaper image pack (second natural-image set, Sec. 4)"),
    "nn-study": ("cnce.nn.cli", "run the eps-rule and tuned-baseline study of the energy networks (notebook 08; "
                                "resumable)"),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command (``command=None``: every part is imported), or of the parts
    that register ``command`` only, beside a one-line entry for each other command."""
    parser = argparse.ArgumentParser(prog="python -m cnce", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parts = _PARTS if command is None else [COMMANDS[command][0]] if command in COMMANDS else []
    for name in parts:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue
            raise
        mod.register(sub)
    if command is not None:
        for name, (_, help_) in COMMANDS.items():
            if name not in sub.choices:
                sub.add_parser(name, help=help_, add_help=False)
    return parser


def _command_of(argv: list[str]) -> str:
    """The command named in ``argv`` (its first word that is not an option), or ``""``."""
    return next((a for a in argv if not a.startswith("-")), "")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        rc = args.func(args)
    except KeyboardInterrupt:
        exc = RunInterrupted("interrupted; every finished result is stored: run the same command again to resume")
        print(f"error: {exc}", file=sys.stderr)
        return exit_code(exc)
    except CnceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exit_code(exc)
    except FileNotFoundError as exc:
        print(f"error: {_os_message(exc)}", file=sys.stderr)
        return 1
    except OSError as exc:
        if exc.errno not in STORAGE_ERRNOS:
            raise
        err = StorageError(f"cannot write: {_os_message(exc)} (choose a writable folder with free space, e.g. with "
                           "--results-dir or --out)")
        print(f"error: {err}", file=sys.stderr)
        return exit_code(err)
    return int(rc or 0)


def _os_message(exc: OSError) -> str:
    where = exc.filename if exc.filename is not None else ""
    return f"{where}: {exc.strerror or exc}" if where else str(exc.strerror or exc)


def entry() -> None:  # pragma: no cover - the process's own exit
    """The console entry point (``cnce`` and ``python -m cnce``): :func:`main`, then exit. After
    Ctrl-C abandoned a cell still computing in a worker thread (a compiled kernel cannot be
    stopped), the process ends at once instead of waiting for that kernel's threads."""
    import os
    import threading

    code = main()
    if any(t.name == "cnce-cell" and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
