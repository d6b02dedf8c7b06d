"""The torch backend of cnce.fit on CUDA against the same problems on the CPU.

    python scripts/cuda-fit-check.py OUT.json

Fits Gaussian (CNCE, NCE, MLE) and ICA (CNCE, NCE) problems with ``backend="torch"`` on
``device="cpu"`` and ``device="cuda"`` (float64 both), and records the largest difference in
theta and the wall time of each. Needs a CUDA GPU.
"""
import json
import sys
import time

import torch

import cnce
from cnce.models import ICA, Gaussian

out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
for model, methods in ((Gaussian(dim=5), ("cnce", "nce", "mle")), (ICA(dim=4), ("cnce", "nce"))):
    g = torch.Generator().manual_seed(0)
    theta_true = model.random_params(8, generator=g)
    x = model.sample(theta_true, 5000, generator=g)
    for method in methods:
        r = {}
        for dev in ("cpu", "cuda", "cuda"):  # the second cuda call is warm
            t = time.perf_counter()
            res = cnce.fit(model, x, method=method, seed=0, device=dev, backend="torch")  # kappa: the default 10
            r[dev] = (res.theta.detach().cpu().double(), time.perf_counter() - t,
                      float(model.error(res.theta.cpu(), theta_true).median()))
        d = float((r["cpu"][0] - r["cuda"][0]).abs().max())
        key = f"{type(model).__name__}-{method}"
        out[key] = dict(max_abs_theta_diff=d, cpu_s=r["cpu"][1], cuda_warm_s=r["cuda"][1],
                        median_sq_error_cpu=r["cpu"][2], median_sq_error_cuda=r["cuda"][2])
        print(key, json.dumps(out[key]), flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
