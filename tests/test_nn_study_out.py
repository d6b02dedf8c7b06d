"""``python -m cnce nn-study --out DIR``: the study writes where the user says; a folder holding
another study is refused without a word about deleting it (issue 44). The study's training is
replaced by a one-row stand-in: what is tested is where and how it is written."""
import subprocess

import pandas as pd
import pytest

from cnce.cli import main
from cnce.errors import WrongScaleError
from cnce.locations import data_dir
from cnce.nn import study
from cnce.nn.train import _read_checkpoint


@pytest.fixture
def fake_study(monkeypatch):
    calls = []

    def run_study(settings, *, stored=None, save=None, log=None, limit_seconds=None, progress=False):
        calls.append(settings)
        df = pd.DataFrame([dict(seed=0, arch="mlp", dataset="ring", variant="x", ll_val=-1.0, ll_test=-1.1,
                                error="")])
        if save:
            save(df)
        return df

    monkeypatch.setattr(study, "run_study", run_study)
    return calls


def test_out_folder_is_where_it_writes(tmp_path, fake_study, capsys):
    paper = study.results_path("nn-study-out-test", study.default_out("paper"))
    assert main(["nn-study", "--settings", "tiny", "--name", "nn-study-out-test", "--out", str(tmp_path),
                 "--allow-dirty"]) == 0
    assert (tmp_path / "nn-study-out-test.csv").is_file() and (tmp_path / "nn-study-out-test.json").is_file()
    assert not paper.exists()
    rows, prov = study.load("nn-study-out-test", tmp_path)
    assert len(rows) == 1 and prov["settings_name"] == "tiny"


def test_default_folder_of_other_settings_is_ignored_by_git():
    assert study.default_out("paper") == data_dir() / "results" / "paper"
    quick = study.default_out("tiny")
    r = subprocess.run(["git", "check-ignore", "-q", str(quick / "nn-study.csv")], cwd=data_dir().parent)
    assert r.returncode == 0, f"{quick} is not ignored by git"


def test_a_folder_with_another_study_is_refused_without_delete(tmp_path, fake_study, capsys):
    study.write_study("tiny", "s", out=tmp_path, allow_dirty=True, log=lambda line: None)
    before = (tmp_path / "s.csv").read_bytes()
    with pytest.raises(WrongScaleError) as e:
        study.write_study("paper", "s", out=tmp_path, allow_dirty=True, log=lambda line: None)
    msg = str(e.value)
    assert "--out" in msg and "kept" in msg and "delete" not in msg.lower()
    assert (tmp_path / "s.csv").read_bytes() == before
    assert main(["nn-study", "--settings", "paper", "--name", "s", "--out", str(tmp_path), "--allow-dirty"]) == 1
    assert capsys.readouterr().err.startswith("error: ")
    assert fake_study == ["tiny"]  # nothing ran for the refused calls


@pytest.mark.parametrize("bad", ["", "a/b", ".hidden"])
def test_bad_name_is_refused(bad):
    with pytest.raises(ValueError, match="name"):
        study.results_path(bad)


def test_unreadable_checkpoint_message_does_not_say_delete(tmp_path):
    p = tmp_path / "not-a-checkpoint.pt"
    p.write_text("my own notes")
    with pytest.raises(ValueError) as e:
        _read_checkpoint(p, "cpu")
    assert "another checkpoint path" in str(e.value) and "delete" not in str(e.value).lower()
    assert p.read_text() == "my own notes"


def test_other_architecture_message_does_not_say_delete(tmp_path):
    import torch

    from cnce.nn.train import _same_architecture

    with pytest.raises(ValueError) as e:
        _same_architecture({"w": torch.zeros(2)}, {"w": torch.zeros(3)}, tmp_path / "c.pt")
    assert "another checkpoint path" in str(e.value) and "delete" not in str(e.value).lower()


def test_a_table_another_run_holds_is_refused_and_the_lock_is_released(tmp_path, fake_study):
    """The study is a cnce.jobs.Job: its lock .<name>.lock refuses a second run of the same table (and
    not a study of another name in the same folder); the lock is gone when the run ends."""
    from cnce.jobs import JobLockedError

    with study._job("s", tmp_path):
        with pytest.raises(JobLockedError, match="in use by another run"):
            study.write_study("tiny", "s", out=tmp_path, allow_dirty=True, log=lambda line: None)
        study.write_study("tiny", "t", out=tmp_path, allow_dirty=True, log=lambda line: None)
    assert fake_study == ["tiny"]
    study.write_study("tiny", "s", out=tmp_path, allow_dirty=True, log=lambda line: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.csv", "s.json", "t.csv", "t.json"]


def test_ctrl_c_while_a_cell_is_written_stores_it_whole_then_stops(tmp_path, fake_study, monkeypatch):
    """Ctrl-C that comes while the table and its provenance are written is held until both are
    written, then the run stops with RunInterrupted (the CLI's one-line interruption)."""
    import os
    import signal

    from cnce.errors import RunInterrupted

    real = study._write_study

    def write_then_ctrl_c(job, *a):
        save = job.save

        def save_and_interrupt(df):
            os.kill(os.getpid(), signal.SIGINT)  # arrives while the table is being written
            save(df)

        job.save = save_and_interrupt
        return real(job, *a)

    monkeypatch.setattr(study, "_write_study", write_then_ctrl_c)
    with pytest.raises(RunInterrupted, match="every finished cell .*stored"):
        study.write_study("tiny", "s", out=tmp_path, allow_dirty=True, log=lambda line: None)
    rows, prov = study.load("s", tmp_path)
    assert len(rows) == 1 and prov["runs"][-1]["rows_total"] == 1
