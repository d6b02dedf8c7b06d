"""The data folder (cnce.locations): chosen by the user, never the repository's by construction."""
from __future__ import annotations

import pytest

from cnce import locations
from cnce.experiments.store import default_results_dir
from cnce.images.runs import weights_dir


def test_default_is_a_folder_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert locations.data_dir() == tmp_path / locations.DEFAULT_NAME
    assert default_results_dir("paper", 2) == tmp_path / "cnce-data" / "results" / "paper-seed2"
    assert weights_dir() == tmp_path / "cnce-data" / "weights"


def test_a_project_declares_its_folder_in_pyproject(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text('[tool.cnce]\ndata-dir = "store"\n')
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # found from a subfolder, relative to the file
    assert locations.data_dir() == (tmp_path / "store").resolve()
    (tmp_path / "notebooks" / "pyproject.toml").write_text('[project]\nname = "x"\n')  # nearest wins: no table
    assert locations.data_dir() == tmp_path / "notebooks" / "cnce-data"


def test_set_and_context_choose_and_restore(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with locations.data_dir_context(tmp_path / "a") as d:
        assert locations.data_dir() == d == (tmp_path / "a").resolve()
        with locations.data_dir_context(tmp_path / "b"):
            assert weights_dir() == (tmp_path / "b" / "weights").resolve()
        assert locations.data_dir() == d
    assert locations.data_dir() == tmp_path / "cnce-data"
    try:
        locations.set_data_dir(tmp_path / "c")
        assert locations.data_dir() == (tmp_path / "c").resolve()
    finally:
        locations.set_data_dir(None)
    assert locations.data_dir() == tmp_path / "cnce-data"


@pytest.mark.parametrize("bad", [3, "", None])
def test_a_bad_folder_is_named(bad):
    with pytest.raises(TypeError, match="data_dir must be a path"):
        with locations.data_dir_context(bad):
            pass


def test_the_repository_declares_data():
    from companion.paths import DATA, REPO_ROOT

    assert locations._from_pyproject(REPO_ROOT) == DATA.resolve()
