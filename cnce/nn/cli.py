"""``python -m cnce nn-study``: the study of notebook 08 (:func:`cnce.nn.study.write_study`; resumable)."""
from __future__ import annotations

import argparse

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    import sys

    import torch

    from cnce.nn.study import write_study

    torch.set_num_threads(1)  # the study's numbers are stated for one CPU thread
    write_study(args.settings, args.name, out=args.out, limit_seconds=args.limit_seconds, allow_dirty=args.allow_dirty,
                log=lambda line: print(line, flush=True), progress=not args.no_progress and sys.stderr.isatty())
    return 0


def register(subparsers) -> None:
    """Add the ``nn-study`` sub-command to ``python -m cnce``."""
    from cnce.nn.study import SETTINGS

    p = subparsers.add_parser(
        "nn-study", help="run the eps-rule and tuned-baseline study of the energy networks (notebook 08; resumable)",
        description="Train every run of the energy-network study (one CPU thread) into "
                    "<out>/<name>.csv with its provenance <name>.json; rerunning resumes.")
    p.add_argument("--settings", choices=sorted(SETTINGS), default="paper")
    p.add_argument("--name", default="nn-study", help="table name in the --out folder (default nn-study)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="folder to write into (default data/results/paper for --settings paper, where the committed "
                        "study lives; data/results/quick, ignored by git, for other settings)")
    p.add_argument("--limit-seconds", type=float, default=None, help="stop (resumably) after this long")
    p.add_argument("--allow-dirty", action="store_true", help="for trying the code out only")
    p.add_argument("--no-progress", action="store_true",
                   help="no bar over the cells (it is shown only on a terminal; each finished run prints a line)")
    p.set_defaults(func=_run)
