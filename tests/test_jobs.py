"""cnce.jobs: the shared runner's lock, atomic checkpoint and resume (cheap: no training)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cnce.errors import RunError
from cnce.jobs import LOCK_FILE, Job, JobLockedError


def test_a_second_run_on_the_folder_is_refused_and_the_lock_is_released(tmp_path):
    with Job(tmp_path / "run", "state.json", kind="json") as job:
        assert (tmp_path / "run" / LOCK_FILE).is_file()
        with pytest.raises(JobLockedError, match=r"in use by another run .*'pid': %d" % os.getpid()):
            Job(tmp_path / "run", "state.json", kind="json").acquire()
        assert isinstance(JobLockedError("x"), RunError)
        job.save({"done": 1})
    assert not (tmp_path / "run" / LOCK_FILE).exists()
    with pytest.raises(ZeroDivisionError):  # released when the run fails too
        with Job(tmp_path / "run", "state.json", kind="json"):
            1 / 0
    assert not (tmp_path / "run" / LOCK_FILE).exists()


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    import socket

    (tmp_path / LOCK_FILE).write_text(json.dumps({"host": socket.gethostname(), "pid": int(dead.stdout)}))
    with Job(tmp_path, "state.pt"):
        assert json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()


def test_checkpoint_resumes_and_writes_atomically(tmp_path, monkeypatch):
    import torch

    job = Job(tmp_path, "state.pt")
    assert job.load(lambda: {"n": 0}) == {"n": 0} and not job.exists()
    job.save({"n": 3, "w": torch.ones(2)})
    st = job.load(lambda: {"n": 0})
    assert st["n"] == 3 and torch.equal(st["w"], torch.ones(2))

    real_save = torch.save

    def broken(obj, fh):  # a write that fails half-way leaves the old checkpoint whole
        fh.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken)
    with pytest.raises(OSError):
        job.save({"n": 4})
    monkeypatch.setattr(torch, "save", real_save)
    assert job.load(lambda: None)["n"] == 3 and sorted(p.name for p in tmp_path.iterdir()) == ["state.pt"]
    with pytest.raises(ValueError, match="kind must be"):
        Job(tmp_path, "x", kind="pickle")


def test_the_image_trainer_holds_its_folder(tmp_path):
    """Two trainings into one folder would overwrite each other's checkpoint: the second is refused."""
    from cnce.images.train import train

    with Job(tmp_path / "run", "state.pt"):
        with pytest.raises(JobLockedError, match="in use by another run"):
            train("smoke", out=tmp_path / "run", layers=(1,), device="cpu", progress=False)
    assert not (tmp_path / "run" / "state.pt").exists()


def test_a_waiting_job_queues_and_a_lock_only_job_has_no_checkpoint(tmp_path, capsys):
    """``wait``: the second run waits for the first (one line on stderr, none when ``quiet``);
    ``state_file=None``: a lock the GPU driver's packers take in turn, with nothing to save."""
    import threading
    import time

    order = []

    def second(quiet):
        with Job(tmp_path, None, lock_file="pack.lock", wait=True, quiet=quiet):
            order.append("second")

    for quiet in (False, True):
        order.clear()
        with Job(tmp_path, None, lock_file="pack.lock") as job:
            t = threading.Thread(target=second, args=(quiet,))
            t.start()
            time.sleep(0.3)
            order.append("first")
            with pytest.raises(ValueError, match="only locks"):
                job.save({})
        t.join(5)
        assert order == ["first", "second"] and not (tmp_path / "pack.lock").exists()
        assert ("waiting for another run" in capsys.readouterr().err) is not quiet


def test_a_saver_keeps_the_runners_format_and_a_file_in_place_of_the_folder_is_a_storage_error(tmp_path):
    from cnce.errors import StorageError

    job = Job(tmp_path / "run", "table.csv", kind="text", saver=lambda rows, fh: fh.write("".join(f"{r}\n" for r in rows)))
    with job:
        job.save([1, 2])
    assert (tmp_path / "run" / "table.csv").read_text() == "1\n2\n" and job.load(lambda: "") == "1\n2\n"
    (tmp_path / "file").write_text("")
    with pytest.raises(StorageError, match="cannot write .*not a folder"):
        Job(tmp_path / "file", "x.json", kind="json").acquire()
