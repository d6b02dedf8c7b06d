"""Wall time of the synthetic experiments end to end (``python -m cnce run``, one after the other
into one results folder, empty at the start) and, with ``--book``, of the quick-scale book build
from clean and cached.

    .venv/bin/python -m benchmarks.e2e --scale paper --threads 2
    .venv/bin/python -m benchmarks.e2e --book --experiments --tag _book      # the book build only

Writes ``benchmarks/results/e2e<tag>.json``.
"""
from __future__ import annotations

if __name__ == "__main__":  # as a command: one BLAS/OpenMP thread unless the caller's environment names a count
    from benchmarks.machine import single_thread_env

    single_thread_env()

import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from benchmarks.common import parser, run_suite  # noqa: E402
from benchmarks.machine import ROOT  # noqa: E402


def study_seconds(results_dir, experiment):
    """Compute seconds per study of one experiment's runs in ``results_dir`` (from the studies'
    provenance files): where the time of ``cnce run`` went, e.g. the ICA share."""
    out = {}
    for prov in sorted(Path(results_dir).glob("*.provenance.json")):
        p = json.loads(prov.read_text())
        secs = sum(r.get("compute_seconds", 0.0) for r in p.get("runs", []) if r.get("experiment") == experiment)
        if secs:
            out[p["study"]] = round(secs, 3)
    return out


def bench_e2e(args):
    rows = []
    keep = args.e2e_results_dir is not None
    tmp = Path(args.e2e_results_dir) if keep else Path(tempfile.mkdtemp(prefix="cnce-bench-"))
    exps = args.experiments
    for exp in exps:
        out = tmp / args.scale
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "cnce", "run", exp, "--scale", args.scale, "--results-dir", str(out),
                            "--threads", str(args.threads), "--no-progress"], cwd=ROOT, capture_output=True, text=True)
        secs = time.perf_counter() - t0
        # `cnce run` prints one JSON summary per experiment (wall seconds, cells run): keep them
        parts = []
        for line in r.stdout.splitlines():
            if line.startswith("{") and '"wall_seconds"' in line:
                try:
                    parts.append(json.loads(line))
                except ValueError:
                    pass
        rows.append(dict(experiment=exp, scale=args.scale, seconds=secs, returncode=r.returncode, threads=args.threads,
                         load_average=list(os.getloadavg()), stderr_tail=r.stderr[-2000:] if r.returncode else "",
                         parts=[dict(experiment=q.get("experiment"), wall_seconds=q.get("wall_seconds"), cells_run=q.get("cells_run"),
                                     study_seconds=study_seconds(out, q.get("experiment")))
                                for q in parts]))
        print(f"e2e {exp} at {args.scale}: {secs:.1f} s (rc {r.returncode})"
              + "".join(f"; {q.get('experiment')} {q.get('wall_seconds', 0):.0f} s" for q in parts), flush=True)
    if not keep:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.book:
        for mode, extra in (("clean", ["--clean"]), ("cached", [])):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "companion", "book", *extra], cwd=ROOT, capture_output=True, text=True)
            secs = time.perf_counter() - t0
            rows.append(dict(experiment=f"book ({mode})", scale="quick", seconds=secs, returncode=r.returncode,
                             load_average=list(os.getloadavg()), stderr_tail=r.stderr[-2000:] if r.returncode else ""))
            print(f"book build ({mode}): {secs:.1f} s (rc {r.returncode})", flush=True)
    return rows


def main(argv=None):
    p = parser(__doc__)
    p.add_argument("--scale", default="paper")
    p.add_argument("--experiments", nargs="*", default=["consistency", "nce", "ring", "supplementary", "eps"],
                   help="the experiments, timed one after the other into one results folder, empty at the start")
    p.add_argument("--e2e-results-dir", default=None, help="keep the results there (default: a temporary folder, removed)")
    p.add_argument("--book", action="store_true", help="time the quick-scale book build from clean and cached")
    run_suite("e2e", bench_e2e, p, argv)


if __name__ == "__main__":
    main()
