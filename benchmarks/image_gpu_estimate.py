"""How long would ``python -m cnce image-train --config paper --device cuda`` take on one GPU?

No GPU was lent when this was written, so the answer is an estimate from three pieces:

1. the FLOP count of the ``paper`` schedule (:func:`cnce.images.configs.estimate_flops`: matrix
   products of the frozen layers, the eps rule and the L-BFGS evaluations);
2. a measured CPU meta-iteration of the same code path (the ``paper`` recipe: main set,
   L-BFGS, the authors' eps rule) at a reduced batch, which gives the achieved CPU FLOP rate
   and checks that the FLOP model accounts for the time (time ~ FLOPs);
3. an assumed sustained FP32 rate on an H100 (TF32 off): ``--gpu-tflops`` (default 20, about
   40 % of the 51 TFLOP/s FP32 peak of an H100 PCIe and 30 % of the 67 of an SXM card), plus a
   per-meta-iteration overhead for the host work that does not scale with the batch.

Writes ``benchmarks/results/image_gpu_estimate.json``. Run::

    nice -n 10 .venv/bin/python -m benchmarks.image_gpu_estimate --threads 2
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batches", type=int, nargs="*", default=[2_000, 4_000], help="reduced layer-1 batches to time")
    p.add_argument("--gpu-tflops", type=float, default=20.0, help="assumed sustained FP32 TFLOP/s of the GPU")
    p.add_argument("--overhead-s", type=float, default=0.5, help="assumed fixed seconds per meta-iteration on the GPU")
    args = p.parse_args(argv)

    from cnce.images.configs import get_config
    from cnce.images.configs import estimate_flops
    from cnce.images.train import train

    torch.set_num_threads(args.threads)
    paper = get_config("paper")
    flops = estimate_flops(paper)
    rows = []
    for n in args.batches:
        cfg = replace(paper, name=f"paper-cpu-{n}", n_patches=(n,) + paper.n_patches[1:], main_set=(2 * n,) + paper.main_set[1:],
                      eps_n=n, meta_iters=(2,) + paper.meta_iters[1:], n_whiten=20_000)
        with tempfile.TemporaryDirectory(prefix="cnce-gpu-est-") as out:
            st = train(cfg, out=out, layers=(1,), device="cpu", progress=False, threads=args.threads)
        h = st["history"]["1"]
        # the second meta-iteration: no whitening fit, main set already drawn
        sec = h[1]["seconds"]
        n_eps = len(h[1]["eps_trace"])
        f = estimate_flops(replace(cfg, meta_iters=(1, 1, 1, 1)), eps_evals=n_eps)["per_layer"][1]
        rows.append(dict(batch=n, seconds_meta_iteration=round(sec, 2), eps_evaluations=n_eps, flops_meta_iteration=f,
                         cpu_gflops=round(f / sec / 1e9, 1)))
        print(f"paper layer 1 at batch {n}: {sec:.1f} s per meta-iteration on {args.threads} CPU threads, "
              f"{f / 1e12:.2f} TFLOP -> {f / sec / 1e9:.1f} GFLOP/s", flush=True)
    rate_cpu = rows[-1]["cpu_gflops"] * 1e9
    n_meta = sum(paper.meta_iters)
    gpu_s = flops["total"] / (args.gpu_tflops * 1e12) + n_meta * args.overhead_s
    per_layer_gpu = {L: round(f / (args.gpu_tflops * 1e12) + paper.meta_iters[L - 1] * args.overhead_s, 1)
                     for L, f in flops["per_layer"].items()}
    res = dict(
        schedule="paper (D=600, K1=600, K2=200, D3=196, K3=60, K4=30; batches 100k/100k/150k/100k of main sets "
                 "200k/200k/150k/100k; 40/20/20/20 meta-iterations of 10 L-BFGS iterations; kappa=6)",
        flops_total=flops["total"], flops_per_layer=flops["per_layer"], lbfgs_evaluations_per_meta=flops["evals_per_meta"],
        eps_evaluations_assumed=flops["eps_evals"],
        cpu_measured=rows, cpu_threads=args.threads, cpu=platform.processor() or platform.machine(),
        cpu_load_average_at_end=os.getloadavg()[0],
        cpu_estimate_paper_hours=round(flops["total"] / rate_cpu / 3600, 1),
        gpu_assumed_tflops=args.gpu_tflops, gpu_overhead_s_per_meta=args.overhead_s,
        gpu_estimate_s=round(gpu_s, 0), gpu_estimate_s_per_layer=per_layer_gpu,
        gpu_measured=None, note="no GPU was lent to the session that wrote this; gpu_* are estimates",
        torch=torch.__version__, date=time.strftime("%Y-%m-%d"),
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "image_gpu_estimate.json").write_text(json.dumps(res, indent=2) + "\n")
    print(f"paper schedule: {flops['total'] / 1e15:.2f} PFLOP; CPU ({args.threads} threads) about "
          f"{res['cpu_estimate_paper_hours']} h; GPU at {args.gpu_tflops} TFLOP/s about {gpu_s / 60:.1f} min", flush=True)
    return res


if __name__ == "__main__":
    main()
