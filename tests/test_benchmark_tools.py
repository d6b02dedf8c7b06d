"""The tools behind the book's "the rerun reproduces the committed results" sentence and the
suite's per-study times: ``scripts/compare_results.py`` and ``benchmarks.e2e.study_seconds``, on
inputs whose answers are known."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _table(errors):
    return pd.DataFrame(dict(method="cnce", N=100, kappa=2, sim=range(len(errors)), error=errors, eps=0.5, loss=1.0))


def test_compare_results_counts_the_rows_that_moved(tmp_path):
    cmp = _load("scripts/compare_results.py", "compare_results")
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    _table([1.0, 2.0, 3.0, 4.0]).to_csv(old / "s.csv", index=False)
    _table([1.0, 2.0, 3.0, 4.0 * (1 + 1e-6)]).to_csv(new / "s.csv", index=False)
    out = cmp.compare(str(new), str(old), "s")
    assert out["matched"] == 4 and out["error_identical_rows"] == 3
    assert out["error_max_rel"] == pytest.approx(1e-6, rel=1e-6)
    assert out["median_error_max_rel"] == 0.0  # the median (2.5) did not move
    assert out["loss_identical_rows"] == 4
    same = cmp.compare(str(old), str(old), "s")
    assert same["error_identical_rows"] == 4 and same["error_max_rel"] == 0.0


def test_study_seconds_sums_one_experiments_runs(tmp_path):
    from benchmarks.e2e import study_seconds

    runs = [dict(experiment="consistency", compute_seconds=1.5), dict(experiment="nce", compute_seconds=2.0),
            dict(experiment="consistency", compute_seconds=0.25)]
    (tmp_path / "ica.provenance.json").write_text(json.dumps(dict(study="ica", runs=runs)))
    (tmp_path / "gaussian.provenance.json").write_text(json.dumps(dict(study="gaussian", runs=runs[1:2])))
    assert study_seconds(tmp_path, "consistency") == {"ica": 1.75}
    assert study_seconds(tmp_path, "nce") == {"gaussian": 2.0, "ica": 2.0}
    assert study_seconds(tmp_path, "ring") == {}
