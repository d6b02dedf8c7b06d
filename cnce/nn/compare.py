"""The comparison of notebook 08: CNCE, NCE, DSM and SSM on the four 2-D toys, equal budgets.

Every method trains the same MLP (:class:`~cnce.nn.toys.MLPEnergy`, same initial weights per
seed) with Adam for the same number of steps, batch size and ``kappa`` random draws per data
point; each run is scored by the exact held-out log-likelihood (grid normalisation,
:func:`~cnce.nn.toys.log_likelihood`) on fresh test points. A second study trains CNCE with
fixed eps (multiples of the data scale) and with the heuristic run once at initialisation,
against the default (heuristic re-run every ``steps // 10`` steps).

``python -m cnce.nn.compare --scale paper [--device cuda]`` computes the paper-scale run and
writes ``data/results/paper/nn-toys.csv`` (one row per toy x method x seed), its provenance
``nn-toys.json`` and the seed-0 networks ``nn-toys-nets.pt`` (for the page's figure).
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass

import torch

from ..provenance import REPO_ROOT, atomic_torch_save, atomic_write_text, derive_seed, environment_record
from .toys import TOYS, MLPEnergy, log_likelihood, sample_toy
from .train import METHODS, train

__all__ = ["Scale", "SCALES", "run_comparison", "summarise", "results_path", "load_paper", "EPS_VARIANTS", "paired", "verdict_text", "verdict_items", "t_interval"]

#: CNCE variants of the eps study: name -> (eps, eps_every); eps a multiple of the data scale
EPS_VARIANTS = {"auto": ("auto", None), "auto-once": ("auto", "once"), "fixed 0.1": (0.1, None),
                "fixed 1": (1.0, None)}


@dataclass(frozen=True)
class Scale:
    seeds: int
    steps: int
    eps_seeds: int
    batch_size: int = 128
    kappa: int = 10
    lr: float = 5e-3
    hidden: int = 64
    layers: int = 3
    n_train: int = 20000
    n_test: int = 5000
    grid: int = 300
    #: data points on which the eps heuristic evaluates J (``cnce.nn.train``'s ``eps_n``)
    eps_n: int = 1024
    #: the networks' dtype: float64 at the quick scale, whose printed table the golden
    #: notebooks compare across CPUs and thread counts (in float32 an SSM run on the rings toy
    #: ended at -4.29 on one and -3.63 on another); the committed paper scale ran in float32
    dtype: str = "float32"


#: ``quick`` is the run every book build and the golden notebook compute on one CPU core: the
#: same code at a size that shows it runs, not one that decides between the methods (every
#: network is far from trained). Its comparison takes about 19 s on one core at 50 steps with the
#: eps heuristic on 256 points, against 24 s on 1024 points and 38 s at 100 steps (measured on the
#: project's 2-core machine); notebook 08 took about 234 s at 300 steps and batch 128
SCALES = {"quick": Scale(seeds=2, steps=50, eps_seeds=1, batch_size=64, grid=150, dtype="float64", eps_n=256),
          "paper": Scale(seeds=6, steps=2000, eps_seeds=2)}


def results_path(name: str = "nn-toys"):
    return REPO_ROOT / "data" / "results" / "paper" / f"{name}.csv"


def _one(toy, method, seed, sc: Scale, xtr, xte, device, eps="auto", eps_every=None, keep=None):
    net = MLPEnergy(2, sc.hidden, sc.layers, seed=derive_seed(seed, "net", toy), dtype=getattr(torch, sc.dtype))
    scale = float(xtr.std(0).mean())
    if eps_every == "once":
        eps_every = sc.steps
    e = eps if isinstance(eps, str) else eps * scale
    res = train(net, xtr, method, kappa=sc.kappa, eps=e, steps=sc.steps, batch_size=sc.batch_size, lr=sc.lr,
                seed=derive_seed(seed, "train", toy), device=device, eps_every=eps_every, eps_n=sc.eps_n, progress=False)
    ll = log_likelihood(net.cpu(), xte, n=sc.grid)
    if keep is not None:
        keep[(toy, method)] = {k: v.detach().cpu() for k, v in net.state_dict().items()}
    return dict(toy=toy, method=method, seed=seed, loglik=ll, final_loss=res.history["loss"][-1], eps=res.eps,
                eps_mean=float(torch.tensor(res.history["eps"]).nanmean()) if method == "cnce" else float("nan"),
                seconds_per_step=res.seconds_per_step, steps=sc.steps, kappa=sc.kappa, batch_size=sc.batch_size)


def run_comparison(scale: str | Scale = "quick", *, seed: int = 0, device="cpu", toys=TOYS, methods=METHODS,
                   eps_study: bool = True, keep_nets: bool = True, log=None, stored=None):
    """Run the page's two studies; returns ``(table, eps_table, nets)``: pandas frames with one
    row per toy x method (or eps variant) x seed, and the seed-``seed`` networks' state dicts
    keyed by ``(toy, method)``. Seeds are ``seed, seed + 1, ...``; data are drawn per toy
    from ``seed`` (the same data for every method and network seed)."""
    import pandas as pd

    sc = SCALES[scale] if isinstance(scale, str) else scale
    rows, eps_rows, nets = [], [], {}
    for toy in toys:
        g = torch.Generator().manual_seed(derive_seed(seed, "data", toy))
        xtr = sample_toy(toy, sc.n_train, generator=g).float()
        xte = sample_toy(toy, sc.n_test, generator=g).float()
        for s in range(seed, seed + sc.seeds):
            for m in methods:
                old = _stored_row(stored, 0, toy=toy, method=m, seed=s)
                r = old or _one(toy, m, s, sc, xtr, xte, device, keep=nets if (keep_nets and s == seed) else None)
                rows.append(r)
                if log:
                    log(f"{toy} {m} seed {s}: log-lik {r['loglik']:.3f}")
        if eps_study:
            for s in range(seed, seed + sc.eps_seeds):
                for name, (eps, every) in EPS_VARIANTS.items():
                    if name == "auto":
                        r = next(dict(r) for r in rows if r["toy"] == toy and r["method"] == "cnce" and r["seed"] == s)
                    else:
                        r = (_stored_row(stored, 1, toy=toy, variant=name, seed=s)
                             or _one(toy, "cnce", s, sc, xtr, xte, device, eps=eps, eps_every=every))
                    r["variant"] = name
                    eps_rows.append(r)
                    if log:
                        log(f"{toy} cnce {name} seed {s}: log-lik {r['loglik']:.3f}")
    return pd.DataFrame(rows), pd.DataFrame(eps_rows), nets


def _stored_row(stored, which, **key):
    if stored is None or stored[which] is None:
        return None
    d = stored[which]
    for k, v in key.items():
        d = d[d[k] == v]
    return d.iloc[0].to_dict() if len(d) else None


def t_interval(values, level: float = 0.95):
    """Mean and the ``level`` Student-t interval of the mean over seeds (NaN for one value)."""
    import numpy as np
    from scipy import stats

    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return m, float("nan"), float("nan")
    h = float(stats.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return m, m - h, m + h


def summarise(df, by="method", level: float = 0.95):
    """Per toy and ``by``: mean held-out log-likelihood, its t-interval over seeds, seeds, and
    the mean seconds per step."""
    import pandas as pd

    out = []
    for (toy, key), d in df.groupby(["toy", by], sort=False):
        m, lo, hi = t_interval(d.loglik, level)
        out.append({"toy": toy, by: key, "mean": m, "lo": lo, "hi": hi, "seeds": len(d),
                    "ms_per_step": 1000 * d.seconds_per_step.mean()})
    return pd.DataFrame(out)


def paired(df, method: str = "cnce", level: float = 0.95):
    """Per toy and other method: the mean over seeds of ``method``'s held-out log-likelihood
    minus the other's (same seed: same initial network, data and test points), its Student-t
    interval, and the outcome: ``"wins"`` (interval above 0), ``"loses"`` (below) or ``"ties"``."""
    import pandas as pd

    out = []
    for toy, d in df.groupby("toy", sort=False):
        me = d[d.method == method].set_index("seed").loglik
        for other in [m for m in d.method.unique() if m != method]:
            o = d[d.method == other].set_index("seed").loglik
            diff = (me - o).dropna()
            m, lo, hi = t_interval(diff, level)
            out.append({"toy": toy, "other": other, "diff": m, "lo": lo, "hi": hi, "seeds": len(diff),
                        "outcome": "wins" if lo > 0 else ("loses" if hi < 0 else "ties")})
    return pd.DataFrame(out)


def verdict_items(df, method: str = "cnce", labels=None) -> list:
    """Per other method, ``(label, statement)`` from :func:`paired`: where ``method`` wins, ties
    and loses, and the range of the mean differences (nats)."""
    lab = (lambda m: (labels or {}).get(m, m.upper()))
    p = paired(df, method)
    n_toys = p.toy.nunique()
    out = []
    for other, d in p.groupby("other", sort=False):
        bits = []
        for outcome in ("wins", "ties", "loses"):
            toys = d[d.outcome == outcome].toy.tolist()
            if toys:
                bits.append(f"{outcome} on {'all toys' if len(toys) == n_toys else ', '.join(toys)}")
        out.append((f"{lab(method)} against {lab(other)}",
                    f"{' and '.join(bits)} (mean difference {d['diff'].min():+.2f} to {d['diff'].max():+.2f} nats)"))
    return out


def verdict_text(df, method: str = "cnce", labels=None) -> str:
    """One sentence from :func:`paired`: per other method, the toys where ``method`` wins,
    ties and loses."""
    lab = (lambda m: (labels or {}).get(m, m.upper()))
    p = paired(df, method)
    n_toys = p.toy.nunique()
    parts = []
    for other, d in p.groupby("other", sort=False):
        bits = []
        for outcome in ("wins", "ties", "loses"):
            toys = d[d.outcome == outcome].toy.tolist()
            if toys:
                where = "all toys" if len(toys) == n_toys else ", ".join(toys)
                bits.append(f"{outcome} on {where}")
        parts.append(f"against {lab(other)} it " + " and ".join(bits))
    return f"{lab(method)}: " + "; ".join(parts)


def load_paper(name: str = "nn-toys"):
    """The committed paper-scale tables and networks, or ``None`` when they are not stored."""
    import pandas as pd

    p = results_path(name)
    if not p.exists():
        return None
    eps = p.with_name(f"{name}-eps.csv")
    nets = p.with_name(f"{name}-nets.pt")
    prov = json.loads(p.with_suffix(".json").read_text()) if p.with_suffix(".json").exists() else {}
    return (pd.read_csv(p), pd.read_csv(eps) if eps.exists() else None,
            torch.load(nets, weights_only=False) if nets.exists() else {}, prov)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m cnce.nn.compare", description=__doc__.split("\n")[0])
    ap.add_argument("--scale", choices=sorted(SCALES), default="paper")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu", help="'cpu', 'cuda' or 'auto'")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads (the committed run: 1)")
    ap.add_argument("--name", default="nn-toys", help="file stem under data/results/paper/")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    t0 = time.time()
    env = environment_record(a.device)  # at the start: the code that runs
    p = results_path(a.name)
    old = load_paper(a.name) if p.exists() else None
    prov_old = old[3] if old else {}
    if old and {"dtype": "float32", "eps_n": 1024} | prov_old.get("settings", {}) | {"seeds": 0, "eps_seeds": 0} != asdict(SCALES[a.scale]) | {"seeds": 0, "eps_seeds": 0}:
        raise SystemExit(f"{p} holds a run with other settings; move it away first")
    if old:
        print(f"reusing the {len(old[0])} + {len(old[1])} rows stored in {p}", flush=True)
    df, eps_df, nets = run_comparison(a.scale, seed=a.seed, device=a.device, log=lambda s: print(s, flush=True),
                                      stored=None if old is None else old[:2])
    if old:
        nets = {**old[2], **nets}
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(p, df.to_csv(index=False))
    atomic_write_text(p.with_name(f"{a.name}-eps.csv"), eps_df.to_csv(index=False))
    atomic_torch_save(nets, p.with_name(f"{a.name}-nets.pt"))
    runs = prov_old.get("runs", []) + [dict(wall_seconds=time.time() - t0, threads=a.threads, environment=env,
                                            rows_computed=len(df) + len(eps_df) - (len(old[0]) + len(old[1]) if old else 0))]
    prov = dict(scale=a.scale, seed=a.seed, settings=asdict(SCALES[a.scale]), runs=runs,
                wall_seconds=sum(r["wall_seconds"] for r in runs), threads=a.threads, environment=env)
    atomic_write_text(p.with_suffix(".json"), json.dumps(prov, indent=1, default=str))
    print(f"wrote {p} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
