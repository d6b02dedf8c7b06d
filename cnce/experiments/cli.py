"""``python -m cnce list``, ``python -m cnce models`` and ``python -m cnce run <experiment|all> --scale quick|paper``."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..errors import InputError
from .configs import FIGURES, SCALES, get_config

__all__ = ["register"]


def _cmd_list(args) -> int:
    from .runner import missing_cells
    from .store import CorruptResultsError, ResultStore, default_results_dir

    scales = [args.scale] if args.scale else list(SCALES)
    if args.results_dir is not None and not Path(args.results_dir).is_dir():
        what = "is not a folder" if Path(args.results_dir).exists() else "does not exist"
        raise InputError(f"--results-dir {args.results_dir!r} {what}; give the folder a run wrote (default: "
                         "data/results/<scale>)")
    print(f"{'experiment':<15}{'figure':<14}{'scale':<7}{'sims':>5}{'cells':>7}{'stored':>8}  studies")
    for name, fig in FIGURES.items():
        for scale in scales:
            cfg = get_config(name, scale, args.seed)
            store = ResultStore(args.results_dir or default_results_dir(scale, args.seed))
            try:
                stored = str(len(cfg.cells) - len(missing_cells(cfg, store)))
            except CorruptResultsError:
                stored = "corrupt"
            print(f"{name:<15}{fig.figure:<14}{scale:<7}{cfg.n_sims:>5}{len(cfg.cells):>7}{stored:>8}  {', '.join(fig.studies)}")
    return 0


def _cmd_models(args) -> int:
    """The model registry (:func:`cnce.models.registered`): what each model declares."""
    from ..models import registered

    print(f"{'model':<11}{'class':<11}{'linear':<8}{'discrete':<10}{'projection':<12}{'methods':<18}compiled kernels")
    for name, cls in registered().items():
        try:
            methods = ",".join(cls().methods)
        except TypeError:  # a model whose constructor needs arguments
            methods = "?"
        kernels = ", ".join(f"{m}:{k}" for m, k in dict(cls.compiled_kernels).items()) or "-"
        print(f"{name:<11}{cls.__name__:<11}{str(cls.linear):<8}{str(cls.discrete):<10}"
              f"{str(cls.abs_projection_coef is not None):<12}{methods:<18}{kernels}")
    return 0


def _cmd_run(args) -> int:
    import torch

    from .runner import run

    if args.threads < 1:
        raise InputError(f"--threads must be >= 1; got {args.threads}")
    torch.set_num_threads(args.threads)
    names = list(FIGURES) if args.experiment == "all" else [args.experiment]
    total = 0.0
    for name in names:
        studies = None
        if args.study:
            studies = [s for s in args.study if s in FIGURES[name].studies]
            if not studies:
                if args.experiment != "all":
                    raise InputError(f"--study must be one of {list(FIGURES[name].studies)} for {name}; got {args.study}")
                continue
        summary = run(name, args.scale, args.seed, results_dir=args.results_dir, device=args.device,
                      progress=not args.no_progress, studies=studies)
        total += summary["wall_seconds"]
        print(json.dumps(summary))
    if len(names) > 1:
        print(f"total wall time: {total:.1f} s")
    return 0


def register(subparsers) -> None:
    """Add the ``list`` and ``run`` sub-commands to the ``python -m cnce`` parser."""
    p = subparsers.add_parser("list", help="list the experiments (figures), their grids and how many cells are stored")
    p.add_argument("--scale", choices=sorted(SCALES), default=None, help="only this scale (default: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results-dir", default=None, help="default: data/results/<scale>")
    p.set_defaults(func=_cmd_list)

    p = subparsers.add_parser("models", help="list the registered models and what each declares (linear, kernels, ...)")
    p.set_defaults(func=_cmd_models)

    p = subparsers.add_parser(
        "run",
        help="run an experiment (skips cells already stored; resumes after an interruption)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("experiment", choices=sorted(FIGURES) + ["all"])
    p.add_argument("--scale", choices=sorted(SCALES), default="quick")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--results-dir", default=None, help="default: data/results/<scale> (data/results/<scale>-seed<k> for seed k != 0)")
    p.add_argument("--device", default="cpu", help="'cpu', 'cuda' or 'auto'")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads; 1 is fastest on a busy 2-core machine (many small batched ops)")
    p.add_argument("--study", action="append", default=None,
                   help="run only this study of the experiment (repeatable), e.g. --study gaussian")
    p.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    p.set_defaults(func=_cmd_run)
