"""``python -m cnce image-train``: greedy CNCE training of the neural image model (resumable)."""
from __future__ import annotations

import argparse

from cnce.images.configs import CONFIGS

__all__ = ["register", "parse_layers"]


def parse_layers(text: str) -> tuple[int, ...]:
    """``"1-4"`` -> ``(1, 2, 3, 4)``; ``"1,2"`` -> ``(1, 2)``; ``"3"`` -> ``(3,)``."""
    try:
        if "-" in text:
            a, b = (int(t) for t in text.split("-"))
            out = tuple(range(a, b + 1))
        else:
            out = tuple(int(t) for t in text.split(","))
    except ValueError as exc:
        raise ValueError(f"layers must look like '1-4' or '1,2'; got {text!r}") from exc
    if not out or any(l not in (1, 2, 3, 4) for l in out):
        raise ValueError(f"layers must be within 1-4; got {text!r}")
    return out


def _run(args: argparse.Namespace) -> int:
    from cnce.images.train import train

    out = args.out or f"data/weights/{args.config}"
    layers = parse_layers(args.layers)
    train(args.config, out=out, layers=layers, device=args.device, seed=args.seed, images=args.images,
          threads=args.threads, progress=not args.no_progress)
    if args.compare:
        from cnce.images.train import train_comparison

        train_comparison(args.config, out=out, work=args.work or f"runs/images/{args.config}", seed=args.seed,
                         device=args.device, images=args.images, threads=args.threads, progress=not args.no_progress)
    print(f"state and provenance written to {out}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("image-train", help="train the four-layer neural image model (Sec. 4) with CNCE",
                              description=__doc__)
    p.add_argument("--config", default="quick", choices=sorted(CONFIGS))
    p.add_argument("--layers", default="1-4", help="layers to train, e.g. 1-4 or 1,2 (default 1-4)")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="output folder (default data/weights/<config>); resumes from it")
    p.add_argument("--images", default=None, help="folder of images (.iml or ordinary files); default: bundled photographs")
    p.add_argument("--compare", action="store_true", help="also train the CNCE/NCE first-layer comparison (Supp. D.2)")
    p.add_argument("--work", default=None, help="folder for the comparison runs (default runs/images/<config>)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_run)
