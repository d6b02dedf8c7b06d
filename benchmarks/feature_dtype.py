"""Speed cost of exact (float64) feature storage on the torch path on a CPU (cnce.FitOptions.feature_dtype):
the Gaussian model, backend="torch", float64 and float32 alternating in one process, medians of 3.
Run: OMP_NUM_THREADS=1 .venv/bin/python -m benchmarks.feature_dtype"""
import time
import statistics
import json
import torch
import cnce
from cnce.models import Gaussian
from cnce.noise import draw_base
torch.set_num_threads(1)
rows = []
for S, N, K in ((10, 5000, 10),):
    m = Gaussian()
    g = torch.Generator().manual_seed(0)
    th = m.random_params(S, g); x = m.sample(th, N, g); base = draw_base(m, S, N, K, generator=g); th0 = m.init_params(S, g)
    eps = cnce.fit(m, x, kappa=K, theta0=th0, noise_base=base, max_iter=1).eps
    res, t = {}, {"float64": [], "float32": []}
    for r in range(3):
        for dt in ("float64", "float32"):
            with cnce.option_context(feature_dtype=dt):
                t0 = time.perf_counter()
                res[dt] = cnce.fit(m, x, kappa=K, eps=eps, theta0=th0, noise_base=base, backend="torch")
                t[dt].append(time.perf_counter() - t0)
    from cnce.losses import cnce_loss
    y = x.unsqueeze(2) + eps.view(-1, 1, 1, 1) * base
    ref = cnce_loss(m.log_phi(x, th0), m.log_phi(y.reshape(S, -1, 5), th0).reshape(S, N, K))
    row = dict(S=S, N=N, kappa=K, float64_s=statistics.median(t["float64"]), float32_s=statistics.median(t["float32"]),
               ratio_64_over_32=statistics.median(t["float64"]) / statistics.median(t["float32"]),
               init_loss_err_float64=float(((res["float64"].init_loss - ref).abs() / ref).max()),
               init_loss_err_float32=float(((res["float32"].init_loss - ref).abs() / ref).max()),
               theta_rel_diff=float(((res["float64"].theta - res["float32"].theta).norm(dim=1) / res["float64"].theta.norm(dim=1)).max()),
               iters64=float(res["float64"].n_iter.double().mean()), iters32=float(res["float32"].n_iter.double().mean()))
    rows.append(row); print(json.dumps(row), flush=True)
print(json.dumps(rows, indent=1))
