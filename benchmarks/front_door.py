"""The front door: wall time of ``python -m cnce --help`` (and of ``import cnce``, of
``python -m companion --help``) as a ratio to ``python -c pass``, the interpreter's own start, in
one run, alternating, each command started ``--repeats`` times; the median of each.

    .venv/bin/python -m benchmarks.front_door [--repeats 15] [--against COMMIT] [--out FILE]

``--against COMMIT`` adds the same commands run in a ``git worktree`` of ``COMMIT`` (the
package as it was), so that before and after sit side by side in one run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import ROOT, git, machine_info

COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import cnce'": ["-c", "import cnce"],
    "python -m cnce --help": ["-m", "cnce", "--help"],
    "python -m companion --help": ["-m", "companion", "--help"],
}


def _time(args, cwd: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--against", default=None, help="a commit to measure beside the working tree")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "front-door.json"))
    args = ap.parse_args(argv)
    trees = {"now": ROOT}
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            old = Path(tmp) / "old"
            subprocess.run(["git", "worktree", "add", "--detach", str(old), args.against], cwd=ROOT, check=True,
                           capture_output=True)
            trees[args.against[:7]] = old
        try:
            times: dict = {t: {c: [] for c in COMMANDS} for t in trees}
            for _ in range(args.repeats):  # alternating: a slow moment of the machine hits every command
                for t, cwd in trees.items():
                    for c, a in COMMANDS.items():
                        if "companion" in c and not (cwd / "companion").is_dir():
                            continue  # a tree from before the companion
                        times[t][c].append(_time(a, cwd))
        finally:
            if args.against:
                subprocess.run(["git", "worktree", "remove", "--force", str(trees[args.against[:7]])], cwd=ROOT,
                               capture_output=True)
    rows = []
    for t in trees:
        base = statistics.median(times[t]["python -c pass"])
        for c in COMMANDS:
            if not times[t][c]:
                continue
            m = statistics.median(times[t][c])
            rows.append({"tree": t, "command": c, "median_s": round(m, 4), "ratio_to_python": round(m / base, 2),
                         "min_s": round(min(times[t][c]), 4), "max_s": round(max(times[t][c]), 4)})
            print(f"{t:>8}  {c:<30} {m:7.3f} s  x{m / base:6.1f}")
    out = {"suite": "front-door", "git_commit": git("rev-parse", "HEAD"), "repeats": args.repeats,
           "machine": machine_info(1), "rows": rows}
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
