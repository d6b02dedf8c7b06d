"""Typed names (cnce.names): job names, ablation cells, the notebook registry."""
from __future__ import annotations

from pathlib import Path

import pytest

from cnce.names import AblationCell, JobName
from companion.pages import PAGES, page, page_of_experiment


@pytest.mark.parametrize("text", ["paper/cg-main/s0", "demo/adam-fresh/s12", "d2/s1", "d2/nce-reset/s0", "photos/paper/s0"])
def test_job_names_round_trip(text):
    assert str(JobName.parse(text)) == text


def test_job_name_parts_and_errors():
    j = JobName.parse("paper/cg-main/s3")
    assert (j.group, j.cell, j.seed) == ("paper", "cg-main", 3) and AblationCell.parse(j.cell) == AblationCell("cg", "main")
    assert AblationCell("lbfgs", "fresh").job("demo", 2) == JobName("demo", "lbfgs-fresh", 2)
    assert JobName.parse("d2/s1").cell is None and str(JobName("d2", None, 1).with_seed(4)) == "d2/s4"
    for bad in ("paper", "paper/cg-main", "a/b/c/s0", "paper/cg-main/x0", "paper//s0", "", None):
        with pytest.raises(ValueError, match="job name must read"):
            JobName.parse(bad)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        JobName("d2", None, -1)
    with pytest.raises(ValueError, match="ablation cell must read"):
        AblationCell.parse("cg")


def test_the_registry_names_every_notebook_once():
    stems = sorted(p.stem for p in (Path(__file__).parents[1] / "notebooks").glob("0[2-9]_*.py"))
    assert [p.name for p in PAGES] == stems
    assert page("notebooks/02_consistency.ipynb").experiment == "consistency"
    assert page_of_experiment("eps").name == "07_choosing_eps"
    with pytest.raises(ValueError, match="page must be one of"):
        page("99_nothing")
