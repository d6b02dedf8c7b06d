"""Do rerun results match the committed ones? Compares the result tables of two folders study by
study, row by row (matched on method, N, kappa, sim and, where present, eps_setting).

    python scripts/compare_results.py NEW_DIR data/results/paper gaussian ica ... [--json OUT]

Prints, per study, how many rows have identical error / eps / loss (as stored: 9 significant
digits), the largest relative difference of each, and the largest relative difference of the
median error over the (method, N, kappa) cells. Used for the "results do not move" checks of
code changes that must not change results (a refactoring of the runner or the solvers).
"""
import json
import sys

import numpy as np
import pandas as pd


def compare(new_dir: str, old_dir: str, study: str) -> dict:
    a, b = pd.read_csv(f"{old_dir}/{study}.csv"), pd.read_csv(f"{new_dir}/{study}.csv")
    key = [c for c in ("method", "N", "kappa", "sim", "eps_setting") if c in a.columns and c in b.columns]
    m = a.merge(b, on=key, suffixes=("_old", "_new"))
    out = {"rows_old": len(a), "rows_new": len(b), "matched": len(m)}
    for c in ("error", "eps", "loss"):
        o, n = m[c + "_old"].to_numpy(float), m[c + "_new"].to_numpy(float)
        both_nan = np.isnan(o) & np.isnan(n)  # eps of MLE / score matching
        rel = np.abs(n - o) / np.maximum(np.abs(o), 1e-300)
        out[c + "_identical_rows"] = int(((rel == 0) | both_nan).sum())
        out[c + "_max_rel"] = float(np.nanmax(rel)) if (~both_nan).any() else 0.0
    med = m.groupby([k for k in key if k != "sim"])[["error_old", "error_new"]].median()
    out["median_error_max_rel"] = float((np.abs(med.error_new - med.error_old) / med.error_old).max())
    return out


if __name__ == "__main__":
    argv = sys.argv[1:]
    out_json = None
    if "--json" in argv:
        i = argv.index("--json")
        out_json = argv[i + 1]
        del argv[i:i + 2]
    new_dir, old_dir, *studies = argv
    found = {}
    for st in studies:
        found[st] = compare(new_dir, old_dir, st)
        print(st, json.dumps(found[st]), flush=True)
    if out_json:
        with open(out_json, "w") as f:
            json.dump(dict(new=new_dir, old=old_dir, studies=found), f, indent=1)
