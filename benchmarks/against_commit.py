"""``cnce.fit`` now against ``cnce.fit`` at another commit, in one process: the same problems,
alternating old and new calls (each first in every other repeat), one thread (``--threads``: the
fit's threads; torch and BLAS keep one); the median time of each and their ratio, and
whether the estimates are bitwise equal. For changes that must not move results or speed
(a refactoring of the fit's plumbing, say).

    .venv/bin/python -m benchmarks.against_commit REV [--repeats 5] [--threads 1] [--cases gaussian ica ...] [--out FILE.json]

The package at ``REV`` is extracted with ``git archive`` into ``/tmp/cnce-at-<REV>/`` and
imported from there under the name ``cnce_at_<REV>`` (:func:`package_at`: an import from an
explicit location, so ``sys.path`` stays as it is and ``cnce`` stays the working tree's; the
package's own imports are relative, so the old modules import each other). Its numba kernels
compile once there, not timed.
"""
from __future__ import annotations

if __name__ == "__main__":  # as a command: one BLAS/OpenMP thread unless the caller's environment names a count
    from benchmarks.machine import single_thread_env

    single_thread_env()

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

import cnce  # noqa: E402
from benchmarks.machine import ROOT, git, machine_info  # noqa: E402

#: name -> (model class, model kwargs, method, S, N, kappa, eps)
CASES = {
    "gaussian": ("Gaussian", {}, "cnce", 20, 5000, 10, 0.5),
    "gaussian-auto": ("Gaussian", {}, "cnce", 20, 5000, 10, "auto"),
    "nce-gaussian": ("Gaussian", {}, "nce", 20, 5000, 10, None),
    "ica": ("ICA", {}, "cnce", 10, 5000, 10, 0.5),
    "nce-ica": ("ICA", {}, "nce", 10, 2000, 10, None),
    "mle-ica": ("ICA", {}, "mle", 10, 5000, None, None),
    "ring": ("Ring", {"dim": 5, "mu": 7.0}, "cnce", 20, 5000, 10, "auto"),
    "lognormal": ("LogNormal", {}, "cnce", 20, 5000, 10, "auto"),
    "bernoulli-torch": ("Bernoulli", {}, "cnce", 20, 5000, 10, "auto"),
    "gaussian-torch": ("Gaussian", {}, "cnce", 5, 2000, 10, 0.5),
}


def package_at(rev: str):
    """The ``cnce`` package of commit ``rev``, imported under another name from its extracted
    copy (registered in ``sys.modules`` under that name: its relative imports and numba's cache
    find it there)."""
    sha = git("rev-parse", "--short", rev)
    name = f"cnce_at_{sha}"
    dest = Path(f"/tmp/cnce-at-{sha}")
    if not (dest / name).exists():
        dest.mkdir(parents=True, exist_ok=True)
        tar = subprocess.run(["git", "archive", sha, "cnce"], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
        (dest / "cnce").rename(dest / name)
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, dest / name / "__init__.py",
                                                      submodule_search_locations=[str(dest / name)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name], sha


def run_case(pkg_new, pkg_old, case, repeats, threads=1):
    cls, mkw, method, S, N, kappa, eps = CASES[case]
    g = torch.Generator().manual_seed(0)
    m_new = getattr(pkg_new.models, cls)(**mkw)
    m_old = getattr(pkg_old.models, cls)(**mkw)
    x = m_new.sample(m_new.random_params(S, generator=g), N, generator=g)
    th0 = m_new.init_params(S, generator=g)
    kw = dict(theta0=th0, seed=3, threads=threads)
    if kappa is not None:
        kw["kappa"] = kappa
    if eps is not None:
        kw["eps"] = eps
    if case.endswith("-torch"):
        kw["backend"] = "torch"
    calls = {"old": lambda: pkg_old.fit(m_old, x, method, **kw), "new": lambda: pkg_new.fit(m_new, x, method, **kw)}
    res = {k: f() for k, f in calls.items()}  # warm-up (and the compiled kernels' first call)
    ts = {"old": [], "new": []}
    for i in range(repeats):  # old first, then new first, ...: neither side always runs on the other's warm cache
        for k in ("old", "new") if i % 2 == 0 else ("new", "old"):
            t0 = time.perf_counter()
            res[k] = calls[k]()
            ts[k].append(time.perf_counter() - t0)
    old, new = res["old"], res["new"]
    row = dict(case=case, threads=threads, model=cls, method=method, S=S, N=N, kappa=kappa, eps=str(eps), backend=new.info["backend"],
               old_s=statistics.median(ts["old"]), new_s=statistics.median(ts["new"]),
               theta_bitwise_equal=bool(torch.equal(old.theta, new.theta)),
               eps_bitwise_equal=bool(torch.equal(old.eps, new.eps) or (old.eps.isnan().all() and new.eps.isnan().all())),
               n_iter_equal=bool(torch.equal(old.n_iter, new.n_iter)),
               theta_max_rel=float(((old.theta - new.theta).abs() / old.theta.abs().clamp_min(1e-300)).max()))
    row["new_over_old"] = row["new_s"] / row["old_s"]
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rev")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="threads of each fit (default 1)")
    p.add_argument("--cases", nargs="*", default=list(CASES))
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    old, sha = package_at(args.rev)
    info = machine_info(1)
    rows = []
    for case in args.cases:
        row = run_case(cnce, old, case, args.repeats, args.threads)
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = dict(machine=info, old=sha, new=git("rev-parse", "--short", "HEAD"), repeats=args.repeats, rows=rows,
               note="the working tree is 'new' (uncommitted changes included)")
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
