"""The image model of Section 4 on the CPU: seconds per first-layer meta-iteration (trained for
real for the minibatch configurations; estimated from one timed loss + gradient for the
full-batch L-BFGS ones unless ``--image-full-lbfgs``).

    .venv/bin/python -m benchmarks.images [--image-configs quick paper] [--threads 1]

Writes ``benchmarks/results/images<tag>.json``.
"""
from __future__ import annotations

if __name__ == "__main__":  # as a command: one BLAS/OpenMP thread unless the caller's environment names a count
    from benchmarks.machine import single_thread_env

    single_thread_env()

import tempfile  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from benchmarks.common import median, parser, run_suite, timed  # noqa: E402


def bench_images(args):
    from dataclasses import replace

    from cnce.images import get_config
    from cnce.images.train import train

    rows = []
    for name in args.image_configs:
        cfg = get_config(name)
        meta = args.image_meta
        if cfg.optimizer == "lbfgs" and not args.image_full_lbfgs:
            rows.append(_image_eval_estimate(cfg, args))
            continue
        cfg = replace(cfg, name=f"{cfg.name}-bench", meta_iters=(meta,) + tuple(cfg.meta_iters[1:]))
        with tempfile.TemporaryDirectory(prefix="cnce-img-") as out:
            t0 = time.perf_counter()
            state = train(cfg, out=out, layers=(1,), device="cpu", progress=False, threads=args.threads)
            total = time.perf_counter() - t0
        secs = state.get("seconds", {})
        per = secs.get(1, secs.get("1"))
        rows.append(dict(config=name, meta_iterations=meta, wall_s=total, seconds_record=per,
                         n_patches=cfg.n_patches[0], K1=cfg.K1, optimizer=cfg.optimizer, device="cpu"))
        print(f"image {name}: {meta} meta-iteration(s) of layer 1 in {total:.1f} s (recorded: {per})", flush=True)
    return rows


def _image_eval_estimate(cfg, args):
    """Full-batch configurations (``paper``: 200k patches, 10 L-BFGS line-search steps per
    meta-iteration) take far too long to train for a benchmark on this CPU: time one CNCE
    loss + gradient of layer 1 (the cost unit of a line-search step) on a subsample of the
    patches, scale it linearly to ``n_patches`` (the cost is linear in the number of
    points), and report seconds per evaluation and per meta-iteration for 11-20 evaluations
    (L-BFGS with a strong-Wolfe line search needs at least one per step plus the first)."""
    from cnce.images import ImageNetwork
    from cnce.losses import cnce_loss

    g = torch.Generator().manual_seed(0)
    net = ImageNetwork(**cfg.network_kwargs())
    n = min(args.image_sub, cfg.n_patches[0])
    u = torch.randn(n, cfg.D, generator=g)
    u = u / u.norm(dim=-1, keepdim=True) * (cfg.D - 1) ** 0.5
    y = u[:, None, :] + 0.5 * torch.randn(n, cfg.kappa, cfg.D, generator=g)

    def one():
        net.zero_grad(set_to_none=True)
        total = 0.0
        for i in range(0, n, cfg.chunk):
            hx = net.layer_input(u[i:i + cfg.chunk], 1)
            hy = net.layer_input(y[i:i + cfg.chunk], 1)
            loss = cnce_loss(net.layer_log_phi(hx, 1), net.layer_log_phi(hy, 1)) * (hx.shape[0] / n)
            loss.backward()
            total += float(loss.detach())
        return total

    ts, _ = timed(one, args.repeats)
    per_eval = median(ts) * cfg.n_patches[0] / n
    row = dict(config=cfg.name, estimated=True, subsample=n, n_patches=cfg.n_patches[0], K1=cfg.K1, optimizer=cfg.optimizer,
               device="cpu", seconds_per_eval_measured=median(ts), seconds_per_eval_full=per_eval,
               meta_iteration_s_low=11 * per_eval, meta_iteration_s_high=20 * per_eval, meta_iterations=None, wall_s=None)
    print(f"image {cfg.name}: one layer-1 loss+gradient on {n} patches {median(ts):.2f} s -> {per_eval:.0f} s at "
          f"{cfg.n_patches[0]} patches; a meta-iteration (11-20 evaluations) {11*per_eval:.0f}-{20*per_eval:.0f} s (estimate)", flush=True)
    return row


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--image-configs", nargs="*", default=["quick", "paper"])
    p.add_argument("--image-meta", type=int, default=1)
    p.add_argument("--image-sub", type=int, default=10000, help="patches for the per-evaluation estimate of full-batch configs")
    p.add_argument("--image-full-lbfgs", action="store_true", help="train full-batch (L-BFGS) configs for real instead of estimating")
    run_suite("images", bench_images, p, argv)


if __name__ == "__main__":
    main()
