"""Command line of the workshop: ``python -m companion <command> ...`` (run from the repository).

A registry of sub-commands like :mod:`cnce.cli`'s: each part named in :data:`PARTS` exposes
``register(subparsers)`` that adds its commands with ``set_defaults(func=...)``. The library's
own commands (``run``, ``fit``, ``compile``, ``image-train``, ...) stay ``python -m cnce``.
Errors are reported as :func:`cnce.cli.main` reports them (``error: <message>``, exit 2 for bad
input, 1 for a run that could not finish).
"""
from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

from cnce.errors import CnceError, exit_code

#: modules that contribute sub-commands (each has ``register(subparsers)``)
PARTS = ["companion.claims.command", "companion.reruns", "companion.book", "companion.cli"]


def _cmd_compile_generic(args) -> int:
    # numba reads its target CPU when it is imported: compile in a process started for it
    from .process_env import deterministic_env, generic_cpu_env

    with deterministic_env(generic_cpu_env()):
        return subprocess.run([sys.executable, "-m", "cnce", "compile"]).returncode


def register(subparsers) -> None:
    """Add ``compile-generic`` (the kernels of the goldens' check on another CPU)."""
    p = subparsers.add_parser(
        "compile-generic", help="compile the CPU kernels for a generic x86-64 into runs/numba-cache/generic: the "
                                "cache of the golden notebooks' check on another CPU (process_env.generic_cpu_env)")
    p.set_defaults(func=_cmd_compile_generic)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m companion", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in PARTS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from cnce.locations import data_dir_context

    from .paths import DATA

    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        # the repository's results and weights, wherever the command runs from (restored after,
        # so that a caller in the same process keeps its own choice)
        with data_dir_context(DATA):
            rc = args.func(args)
    except (CnceError, ValueError, RuntimeError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = exit_code(exc)
        return code if code is not None else 2 if isinstance(exc, ValueError) else 1
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
