"""Command line: ``python -m cnce <command> ...`` (also installed as ``cnce``).

Sub-commands are contributed by the package's parts; each part exposes
``register(subparsers)`` that adds its commands with ``set_defaults(func=...)``.

Errors are reported here, once for every command: a ``ValueError`` (bad input) exits 2 and a
``RuntimeError`` or ``FileNotFoundError`` (a run that could not finish) exits 1, each with the
one line ``error: <message>`` on stderr and no traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from .errors import CnceError, exit_code

# Modules that contribute sub-commands. A part that is not installed is skipped only when
# the missing module is that part itself (a broken import inside it still fails loudly).
_PARTS = ["cnce.experiments.cli", "cnce.precompile", "cnce.images.cli", "cnce.images.pack",
          "cnce.nn.cli"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m cnce", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _PARTS:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and name.startswith(exc.name):
                continue
            raise
        mod.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        rc = args.func(args)
    except (CnceError, ValueError, RuntimeError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = exit_code(exc)
        return code if code is not None else 2 if isinstance(exc, ValueError) else 1
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
