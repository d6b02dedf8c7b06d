"""cnce.nn beside torchebm at equal budgets: steps per second and held-out log-likelihood per second.

    .venv/bin/python -m benchmarks.nn_torchebm            # writes benchmarks/results/nn-torchebm.json

torchebm (https://pypi.org/project/torchebm/) is an optional benchmark dependency, not one of
the package's: ``pip install --no-deps torchebm`` (its pinned dependencies are torch and
numpy, which the project has). Every run trains **the same network** (``cnce.nn.MLPEnergy``,
the same initial weights), on the same data, with Adam at the same learning rate, batch size
and number of steps, on one CPU thread:

* cnce.nn: CNCE (``eps="auto"``), NCE, DSM and SSM, ``kappa`` random draws per data point;
* torchebm 0.8.9: DenoisingScoreMatching (the same sigma as cnce's DSM), SlicedScoreMatching
  (``kappa`` Gaussian projections) and ContrastiveDivergence (Langevin sampler, ``k_steps``
  steps per update, torchebm's defaults otherwise). torchebm's models are energies, so the
  network is wrapped as ``E = -log phi``.

Each run is scored by the held-out log-likelihood of the same test points, with
:func:`cnce.nn.held_out_log_likelihood` (torchebm has no likelihood): quadrature in 2-D, AIS
with its reverse bracket in 10-D (NaN where the estimator refuses). ``curve`` holds the
held-out log-likelihood after each quarter of the steps against the training seconds so far:
likelihood per wall-clock second. A second section measures one training step of CNCE at 1
and 2 torch threads (the advice of :func:`cnce.nn.train`'s ``threads``).
"""
from __future__ import annotations

from benchmarks.machine import single_thread_env

single_thread_env()

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

import cnce.nn as cnn  # noqa: E402
from benchmarks.common import RESULTS  # noqa: E402
from benchmarks.machine import machine_info  # noqa: E402

SUITE = "nn-torchebm"


def mixture10(n, g, D=10, K=8):
    """A 10-D mixture of 8 unequal isotropic Gaussians (fixed means, weights and widths)."""
    h = torch.Generator().manual_seed(123)
    w = torch.rand(K, generator=h, dtype=torch.float64) + 0.2
    w = w / w.sum()
    mu = 2 * torch.randn(K, D, generator=h, dtype=torch.float64)
    sd = 0.4 + 0.6 * torch.rand(K, generator=h, dtype=torch.float64)
    comp = torch.multinomial(w, n, replacement=True, generator=g)
    return mu[comp] + sd[comp, None] * torch.randn(n, D, generator=g, dtype=torch.float64)


def data(case, seed):
    g = torch.Generator().manual_seed(seed)
    if case == "mixture3":
        x = cnn.sample_toy("mixture3", 6000, generator=g)
    else:
        x = mixture10(6000, g)
    x = x.float()
    return x[:4000], x[4000:]


def score(net, x_test, x_train):
    """Held-out log-likelihood (NaN where the estimator refuses), its half error bar, and
    (AIS) the stochastic upper bound ``mean log phi - forward log Z`` that stands when the
    bracket is refused."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ll = cnn.held_out_log_likelihood(net, x_test, x_train, on_fail="warn")
    lz = ll.normaliser
    mean = ll.value + lz.log_z if lz.ok else float("nan")
    if not lz.ok and lz.method == "ais" and math.isfinite(lz.forward):
        with torch.no_grad():
            mean = float(net(x_test.to(next(net.parameters()).dtype)).double().mean())
    upper = mean - lz.forward if lz.method == "ais" else ll.value
    return ll.value, (ll.hi - ll.lo) / 2, upper


def make_step(lib, method, net, x_train, kappa, seed):
    """A function ``step(xb) -> loss`` (one update's loss) and the parameters the optimiser trains."""
    if lib == "cnce.nn":
        loss = {"cnce": lambda: cnn.CNCELoss(kappa, eps="auto", seed=seed),
                "nce": lambda: cnn.NCELoss(kappa, data=x_train, seed=seed),
                "dsm": lambda: cnn.DSMLoss(kappa, seed=seed),
                "ssm": lambda: cnn.SSMLoss(kappa, seed=seed)}[method]()
        return (lambda xb: loss(net, xb)), list(net.parameters()) + list(loss.parameters())
    from torchebm.core import BaseModel
    from torchebm.losses import ContrastiveDivergence, DenoisingScoreMatching, SlicedScoreMatching
    from torchebm.samplers import LangevinDynamics

    class Energy(BaseModel):
        def __init__(self):
            super().__init__()
            self.inner = net

        def forward(self, u):
            return -self.inner(u)

    model = Energy()
    unit = float(x_train.double().std(0).mean())
    if method == "dsm":  # kappa perturbations per point, as cnce's DSM draws
        dsm = DenoisingScoreMatching(model, noise_scale=cnn.DSM_SIGMA * unit)
        fn = lambda xb: dsm(xb.repeat_interleave(kappa, 0))  # noqa: E731
    elif method == "ssm":
        fn = SlicedScoreMatching(model, n_projections=kappa, projection_type="gaussian")
    else:
        sampler = LangevinDynamics(model, step_size=1e-2)
        fn = ContrastiveDivergence(model, sampler, k_steps=10)

    def step(xb):
        out = fn(xb)
        return out[0] if isinstance(out, tuple) else out

    return step, list(net.parameters())


def run(case, lib, method, sc, seed):
    x_train, x_test = data(case, seed)
    D = x_train.shape[1]
    net = cnn.MLPEnergy(D, sc.hidden, sc.layers, seed=seed)
    torch.manual_seed(seed)
    step, params = make_step(lib, method, net, x_train, sc.kappa, seed)
    opt = torch.optim.Adam(params, lr=sc.lr)
    batches = torch.Generator().manual_seed(seed)
    times, curve, t_total = [], [], 0.0
    marks = {round(sc.steps * q) for q in (0.5, 1.0)}
    for t in range(sc.steps):
        xb = x_train[torch.randint(0, len(x_train), (sc.batch,), generator=batches)]
        t0 = time.perf_counter()
        opt.zero_grad()
        value = step(xb)
        value.backward()
        opt.step()
        dt = time.perf_counter() - t0
        t_total += dt
        times.append(dt)
        if not math.isfinite(float(value.detach())):
            break
        if t + 1 in marks:
            ll, err, upper = score(net, x_test, x_train)
            curve.append({"step": t + 1, "seconds": round(t_total, 3), "ll": ll, "err": err, "ll_upper": upper})
    per = statistics.median(times[10:] or times)
    final = curve[-1] if curve else {"ll": float("nan"), "err": float("nan"), "ll_upper": float("nan")}
    return dict(case=case, D=D, library=lib, method=method, steps=sc.steps, steps_per_second=1.0 / per,
                ms_per_step=1e3 * per, train_seconds=round(t_total, 2), ll=final["ll"], ll_err=final["err"],
                ll_upper=final["ll_upper"], curve=curve)


def thread_steps(threads, sc, repeats=60):
    """Median milliseconds of one CNCE training step (the 2-D case's network) at ``threads``."""
    x_train, _ = data("mixture3", 0)
    net = cnn.MLPEnergy(2, sc.hidden, sc.layers, seed=0)
    loss = cnn.CNCELoss(sc.kappa, eps="auto", seed=0)
    opt = torch.optim.Adam(net.parameters(), lr=sc.lr)
    g = torch.Generator().manual_seed(0)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    ts = []
    try:
        for _ in range(repeats):
            xb = x_train[torch.randint(0, len(x_train), (sc.batch,), generator=g)]
            t0 = time.perf_counter()
            opt.zero_grad()
            loss(net, xb).backward()
            opt.step()
            ts.append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(before)
    return 1e3 * statistics.median(ts[5:])


class Settings(argparse.Namespace):
    pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--kappa", type=int, default=10)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", default="mixture3,mixture10")
    ap.add_argument("--tag", default="")
    sc = ap.parse_args(argv, namespace=Settings())
    torch.set_num_threads(1)
    import torchebm

    machine = machine_info(1)  # the commit the runs come from, recorded before they start
    rows = []
    for case in sc.cases.split(","):
        for lib, methods in (("cnce.nn", ("cnce", "nce", "dsm", "ssm")), ("torchebm", ("dsm", "ssm", "cd"))):
            for m in methods:
                r = run(case, lib, m, sc, sc.seed)
                rows.append(r)
                print(f"{case:>9} {lib:>8} {m:>4}: {r['steps_per_second']:7.1f} steps/s, held-out log-lik "
                      f"{r['ll']:.3f} +- {r['ll_err']:.3f} (upper bound {r['ll_upper']:.3f}) after "
                      f"{r['train_seconds']:.1f} s", flush=True)
    threads = {str(n): round(thread_steps(n, sc), 3) for n in (1, 2)}
    print("CNCE step (ms) by torch threads:", threads)
    out = dict(suite=SUITE, settings={k: v for k, v in vars(sc).items()}, torchebm=torchebm.__version__,
               rows=rows, thread_ms=threads, machine=machine,
               load_average_end=list(__import__('os').getloadavg()))
    path = RESULTS / f"{SUITE}{sc.tag}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
