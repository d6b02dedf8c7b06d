"""Drawing a noise base: ``cnce.noise.draw_streams`` (what ``cnce.fit`` uses when no base is
given) against ``torch.randn`` of the same shape (what the experiments' ``draw_base``
uses), alternating in one process; ``draw_streams`` with 1 and 2
threads (the numbers are the same).

    .venv/bin/python -m benchmarks.noise_draw [REPEATS] [OUT_JSON]
"""
import json
import statistics
import sys
import time

import torch

from cnce.noise import draw_streams
from benchmarks.machine import machine_info

REP = int(sys.argv[1]) if len(sys.argv) > 1 else 5
OUT = sys.argv[2] if len(sys.argv) > 2 else "benchmarks/results/noise-draw.json"
torch.set_num_threads(1)
machine = machine_info(1)
S, N, K, D = 100, 5000, 10, 5
g = torch.Generator().manual_seed(0)
ways = {"torch.randn": lambda: torch.randn(S, N, K, D, generator=g, dtype=torch.float64),
        "draw_streams, 1 thread": lambda: draw_streams(S, N, K, D, key=1, threads=1),
        "draw_streams, 2 threads": lambda: draw_streams(S, N, K, D, key=1, threads=2)}
same = bool(torch.equal(ways["draw_streams, 1 thread"](), ways["draw_streams, 2 threads"]()))
ts = {w: [] for w in ways}
for _ in range(REP):
    for w, f in ways.items():
        t0 = time.perf_counter()
        f()
        ts[w].append(time.perf_counter() - t0)
base = statistics.median(ts["torch.randn"])
rows = [dict(way=w, shape=[S, N, K, D], seconds=statistics.median(v), ns_per_number=statistics.median(v) / (S * N * K * D) * 1e9,
             speedup_vs_torch_randn=base / statistics.median(v)) for w, v in ts.items()]
for r in rows:
    print(json.dumps(r), flush=True)
json.dump(dict(machine=machine, repeats=REP, same_numbers_1_and_2_threads=same, rows=rows), open(OUT, "w"), indent=1)
