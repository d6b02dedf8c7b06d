"""Loss + gradient throughput of the compiled kernels and of the torch path's problem classes,
against the machine's memory bandwidth measured in the same run.

    .venv/bin/python -m benchmarks.throughput [--tp-sims 100] [--tp-N 20000] [--repeats 3]

Writes ``benchmarks/results/throughput<tag>.json``.
"""
from __future__ import annotations

if __name__ == "__main__":  # as a command: one BLAS/OpenMP thread unless the caller's environment names a count
    from benchmarks.machine import single_thread_env

    single_thread_env()

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.common import median, parser, problem, run_suite, timed  # noqa: E402
from cnce.models import ICA, Gaussian  # noqa: E402
from cnce.options import NewtonSettings  # noqa: E402


def bandwidth(repeats, nbytes=1 << 29):
    """Streaming bandwidth: copy between two preallocated buffers (read + write) and a sum (read)."""
    a = torch.ones(nbytes // 4, dtype=torch.float32)
    b = torch.empty_like(a)
    b.copy_(a)
    tc, _ = timed(lambda: b.copy_(a), repeats)
    ts, _ = timed(lambda: a.sum(), repeats)
    return dict(copy_GBps=2 * nbytes / median(tc) / 1e9, read_GBps=nbytes / median(ts) / 1e9, buffer_MiB=nbytes >> 20)


def bench_throughput(args):
    """Loss + gradient (one pass, no Gauss-Newton matrix) of the fused CPU kernels, which stream
    the data and the noise base (float64) and form noise, features and margins on the fly; and
    of the torch path's problem classes for comparison (float32 features for the Gaussian,
    float64 points for ICA)."""
    from cnce import _fused
    from cnce.backends.projection import AbsProjectionLogistic
    from cnce.optim import LinearLogistic

    S, N, kappa = args.tp_sims, args.tp_N, args.tp_kappa
    chunk = args.tp_chunk
    bw = bandwidth(args.repeats)
    rows = []
    for name in ("gaussian", "ica"):
        model = Gaussian() if name == "gaussian" else ICA()
        kind = _fused.GAUSSIAN if name == "gaussian" else _fused.ICA
        a = 0.0 if name == "gaussian" else float(model.abs_projection_coef)
        for backend in ("fused", "torch"):
            times, bw_rep, bytes_in = [], [], 0
            for s0 in range(0, S, chunk):
                Sc = min(chunk, S - s0)
                th, th0, x, base = problem(model, Sc, N, kappa, seed=100 + s0)
                eps = 0.3
                if backend == "fused":
                    X, XI, T = x.numpy(), base.numpy(), th.numpy()
                    P = T.shape[1]
                    g, H = np.empty(P), np.empty((P, P))
                    prm = np.array([eps])
                    if name == "gaussian":
                        # as cnce.fit runs it: the noise steps eps xi laid out once per simulation
                        # (D x N kappa, like the torch path's features, formed once per noise draw)
                        # and streamed by every pass in blocks of 128 pairs
                        buf = _fused._buffers(kappa, model.dim, P, NewtonSettings.layout_block_pairs)
                        ZT = [np.empty((model.dim, N * kappa)) for _ in range(Sc)]
                        for s in range(Sc):
                            _fused._noise_t(XI[s], eps, N, ZT[s])
                    else:
                        buf = _fused._buffers(kappa, model.dim, P, NewtonSettings.sim_block_pairs)
                        ZT = [np.empty((model.dim, 0)) for _ in range(Sc)]

                    def run_once():
                        for s in range(Sc):
                            _fused._pass(kind, X[s], XI[s], prm, T[s], N, kappa, a, True, 1 << 62, g, H, buf, ZT[s])

                    run_once()  # compile
                    nbytes = X.nbytes + (sum(z.nbytes for z in ZT) if name == "gaussian" else XI.nbytes)
                else:
                    y = (x.unsqueeze(2) + eps * base).reshape(Sc, N * kappa, model.dim)
                    scale = 2.0 / (N * kappa)
                    if name == "gaussian":
                        Tx, _ = model.features_t(x, torch.float32)
                        Ty, _ = model.features_t(y, torch.float32)
                        P = model.n_params
                        Ft = Ty.view(Sc, P, N, kappa).neg_().add_(Tx.unsqueeze(-1)).view(Sc, P, N * kappa)
                        prob = LinearLogistic(None, None, scale, Ft=Ft, dtype=torch.float64)
                        nbytes = Ft.numel() * Ft.element_size()
                        del Tx, Ty
                    else:
                        prob = AbsProjectionLogistic(x, y, model.abs_projection_coef, scale, kappa=kappa, hess_points=None)
                        nbytes = (prob.x.numel() + prob.y.numel()) * prob.y.element_size()
                    psi = th.clone()

                    def run_once():
                        prob.loss_grad(psi)
                # a bandwidth probe right before every timed evaluation: the ratio compares the
                # two under the same momentary load
                ts = []
                for _ in range(args.repeats):
                    bw_rep.append(bandwidth(1)["read_GBps"])
                    t0 = time.perf_counter()
                    run_once()
                    ts.append(time.perf_counter() - t0)
                times.append(ts)
                bytes_in += nbytes
                del x, base
            per_rep = [sum(t[i] for t in times) for i in range(args.repeats)]
            t = median(per_rep)
            pts = S * N * kappa
            gbps = bytes_in / t / 1e9
            row = dict(model=name, backend=backend, S=S, N=N, kappa=kappa, seconds=t, points_per_s=pts / t,
                       ns_per_pair=t / pts * 1e9, input_GB=bytes_in / 1e9, effective_GBps=gbps,
                       read_bound_GBps=median(bw_rep), copy_GBps=bw["copy_GBps"], read_bound_start_GBps=bw["read_GBps"],
                       ratio_to_bound=median(bw_rep) / gbps, sim_chunk=chunk,
                       inputs=("data + noise base, float64" if backend == "fused" else
                               ("features F (S, 15, n), float32" if name == "gaussian" else "data + noise points, float64")))
            rows.append(row)
            print(f"throughput {name} ({backend}): {pts/t/1e6:.1f} M pairs/s ({t/pts*1e9:.1f} ns/pair), {gbps:.2f} GB/s "
                  f"effective; read bound {median(bw_rep):.2f} GB/s; {row['ratio_to_bound']:.2f}x the bound", flush=True)
    return dict(bandwidth=bw, rows=rows)


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--tp-sims", type=int, default=100)
    p.add_argument("--tp-N", type=int, default=20000)
    p.add_argument("--tp-kappa", type=int, default=20)
    p.add_argument("--tp-chunk", type=int, default=10, help="simulations per chunk (memory)")
    run_suite("throughput", bench_throughput, p, argv)


if __name__ == "__main__":
    main()
