"""Before/after of a change to the compiled passes, in one process: an old copy of
``cnce/_fused.py`` (path as the first argument, e.g. ``git show b72c667:cnce/_fused.py >
/tmp/old_fused.py``) and the current ``cnce._fused`` on identical inputs, timed alternately, one
thread. Used for the pass redesign of issue 12 (step 4; ``redesign-passes.json``) and for the
tiled Gauss-Newton sums of issue 17 (``gn-tiles-passes.json``). Per kernel: one pass (loss; loss + gradient; + Gauss-Newton) at N = 20000, kappa = 10,
and ``newton_all`` end to end (4 simulations, N = 5000), with whether the outputs are bitwise
equal. ``CASES`` / ``E2E`` (comma lists) pick kernels; ``NO_E2E=1`` skips the end-to-end part.

    OLD_LABEL="cnce/_fused.py at b72c667" python benchmarks/old_vs_new_passes.py /tmp/old_fused.py 9 benchmarks/results/redesign-passes.json
"""
import importlib.util, sys, time, statistics, json
import numpy as np, torch
import cnce
import os
from cnce import _fused as new
if os.environ.get("NEW_PATH"):
    _s = importlib.util.spec_from_file_location("new_fused", os.environ["NEW_PATH"])
    new = importlib.util.module_from_spec(_s); sys.modules["new_fused"] = new
    _s.loader.exec_module(new)
from cnce.backends.compiled import KERNEL_SETTINGS
from cnce.models import Gaussian, ICA, Ring, LogNormal
from cnce.noise import draw_base, NCEGaussianNoise

spec = importlib.util.spec_from_file_location("old_fused", sys.argv[1])
old = importlib.util.module_from_spec(spec); sys.modules["old_fused"] = old  # numba's cache re-imports it by name
spec.loader.exec_module(old)
import numba
numba.set_num_threads(1)
REP = int(sys.argv[2]) if len(sys.argv) > 2 else 7
rows = []

def data(model, S, N, K, seed=0):
    g = torch.Generator().manual_seed(seed)
    th = model.random_params(S, g); x = model.sample(th, N, generator=g); base = draw_base(model, S, N, K, generator=g)
    th0 = model.init_params(S, g)
    return th, th0, x, base

def prm_for(name, model, x, K, eps=0.3):
    S = x.shape[0]
    if name.startswith("nce"):
        pn = NCEGaussianNoise.fit(x)
        p = new.nce_params(pn.mean.numpy(), pn.chol.numpy(), K)
    else:
        p = np.full((S, 1), eps)
    c = model.sim_constants(S, x)
    return p if c is None else np.concatenate([p, c.numpy()], 1)

cases = [c for c in [("gaussian", Gaussian()), ("ica", ICA()), ("nce_gaussian", Gaussian()), ("nce_ica", ICA()),
         ("lognormal", LogNormal()), ("ring", Ring(dim=5, mu=7.0)), ("nce_ring", Ring(dim=5, mu=7.0))] if c[0] in os.environ.get("CASES", "gaussian,ica,nce_gaussian,nce_ica,lognormal,ring,nce_ring").split(",")]
N, K = 20000, 10
for name, model in cases:
    kind = new.KERNELS[name]
    th, th0, x, base = data(model, 1, N, K)
    X, XI = x.numpy()[0], base.numpy()[0]
    prm = prm_for(name, model, x, K)[0]
    a = float(model.abs_projection_coef or 0.0)
    T = th.numpy()[0]
    if name.startswith("nce"):
        T = np.concatenate([T, [0.1]])
    P = T.shape[0]
    g, H = np.empty(P), np.empty((P, P))
    bp = 128 if name == "gaussian" else new.BLOCK_PAIRS
    R = K + 1 if name.startswith("nce") else K
    buf_o = old._buffers(R, model.dim, P, bp); buf_n = new._buffers(R, model.dim, P, bp)
    if name == "gaussian":
        zt = np.empty((model.dim, N * K)); new._noise_t(XI, prm[0], N, zt)
    else:
        zt = np.empty((model.dim, 0))
    zo = zt if name == "gaussian" else None
    res = {}
    for want, hb, label in ((True, 1 << 62, "loss+grad"), (True, 1, "loss+grad+GN"), (False, 1, "loss")):
        if hasattr(old, "_pass_z"):  # the module before the redesign
            f_old = lambda: old._pass_z(kind, X, XI, prm, T, N, K, a, want, hb, g, H, buf_o, zo)
        else:
            f_old = lambda: old._pass(kind, X, XI, prm, T, N, K, a, want, hb, g, H, buf_o, zt)
        f_new = lambda: new._pass(kind, X, XI, prm, T, N, K, a, want, hb, g, H, buf_n, zt)
        lo, go, Ho = f_old()[0], g.copy(), H.copy()
        ln, gn, Hn = f_new()[0], g.copy(), H.copy()
        same = lo == ln and (not want or (np.array_equal(go, gn) and np.array_equal(Ho, Hn)))
        to, tn = [], []
        for r in range(REP):
            t0 = time.perf_counter(); f_old(); to.append(time.perf_counter() - t0)
            t0 = time.perf_counter(); f_new(); tn.append(time.perf_counter() - t0)
        mo, mn = statistics.median(to), statistics.median(tn)
        row = dict(kernel=name, what=label, old_ms=mo * 1e3, new_ms=mn * 1e3, new_over_old=mn / mo, bitwise_equal=bool(same),
                   loss_rel_diff=abs(ln - lo) / abs(lo))
        rows.append(row)
        print(json.dumps(row), flush=True)

if os.environ.get("NO_E2E"): sys.exit(0)
# end to end: newton_all, 4 simulations, 1 thread
for name, model in [c for c in (("gaussian", Gaussian()), ("ica", ICA()), ("nce_gaussian", Gaussian()), ("nce_ica", ICA()), ("lognormal", LogNormal()), ("ring", Ring(dim=5, mu=7.0))) if c[0] in os.environ.get("E2E", "gaussian,ica,nce_gaussian,lognormal,ring").split(",")]:
    S, N2 = 4, 5000
    kind = new.KERNELS[name]
    th, th0, x, base = data(model, S, N2, K, seed=1)
    X, XI = x.numpy(), base.numpy()
    prm = prm_for(name, model, x, K)
    a = float(model.abs_projection_coef or 0.0)
    theta0 = th0.numpy()
    if name.startswith("nce"):
        theta0 = np.concatenate([theta0, np.zeros((S, 1))], 1)
    st = dict(KERNEL_SETTINGS[name][0]); st.setdefault("hess_points", 32768 if name.endswith("ica") else 4096)
    if name.endswith("ica"):
        st["ftol"] = 1e-5 * 16 / N2
    f_old = lambda: old.newton_all(kind, X, XI, prm, theta0, a=a, threads=1, **st)
    f_new = lambda: new.newton_all(kind, X, XI, prm, theta0, a=a, threads=1, **st)
    oo, on = f_old(), f_new()
    same = np.array_equal(oo["psi"], on["psi"])
    maxrel = float(np.max(np.abs(oo["psi"] - on["psi"]) / np.maximum(np.abs(oo["psi"]), 1e-300)))
    to, tn = [], []
    for r in range(max(3, REP // 2)):
        t0 = time.perf_counter(); f_old(); to.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); f_new(); tn.append(time.perf_counter() - t0)
    mo, mn = statistics.median(to), statistics.median(tn)
    row = dict(kernel=name, what=f"newton_all S={S} N={N2} K={K}", old_ms=mo * 1e3, new_ms=mn * 1e3, new_over_old=mn / mo,
               bitwise_equal=bool(same), psi_max_rel_diff=maxrel, iters_old=oo["n_iter"].tolist(), iters_new=on["n_iter"].tolist())
    rows.append(row)
    print(json.dumps(row), flush=True)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import machine_info  # noqa: E402  (benchmarks/run.py)

json.dump(dict(machine=machine_info(1), old=os.environ.get("OLD_LABEL", sys.argv[1]), repeats=REP, rows=rows),
          open(sys.argv[3] if len(sys.argv) > 3 else "benchmarks/results/redesign-passes.json", "w"), indent=1)
