"""The papermill batch command and the golden machinery, on tiny notebooks made here."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from companion import book
from companion import reruns as batch
from companion.paths import REPO_ROOT
from companion.cli import main

OK_NB = '''# %% [markdown]
# # A notebook that works

# %% tags=["parameters"]
scale = "quick"
seed = 0
alpha = 1.5

# %%
print("scale", scale, "seed", seed, "alpha", alpha)
'''

BAD_NB = '''# %% [markdown]
# # A notebook that fails

# %% tags=["parameters"]
scale = "quick"
seed = 0

# %%
raise ZeroDivisionError("on purpose")
'''


@pytest.fixture
def nb_dir(tmp_path):
    d = tmp_path / "notebooks"
    d.mkdir()
    (d / "01_ok.py").write_text(OK_NB)
    (d / "02_bad.py").write_text(BAD_NB)
    return d


def test_find_notebooks_by_prefix_stem_and_file(nb_dir):
    assert [p.name for p in batch.find_notebooks(None, nb_dir)] == ["01_ok.py", "02_bad.py"]
    assert [p.name for p in batch.find_notebooks(["02"], nb_dir)] == ["02_bad.py"]
    assert [p.name for p in batch.find_notebooks(["01_ok", "01_ok.py"], nb_dir)] == ["01_ok.py"]
    assert [p.name for p in batch.find_notebooks([str(nb_dir / "02_bad.py")], nb_dir)] == ["02_bad.py"]


def test_find_notebooks_rejects_unknown_and_ambiguous_names(nb_dir):
    with pytest.raises(ValueError, match="matches no notebook.*available: 01_ok, 02_bad"):
        batch.find_notebooks(["99"], nb_dir)
    with pytest.raises(ValueError, match="ambiguous"):
        batch.find_notebooks(["0"], nb_dir)
    with pytest.raises(ValueError, match="notebooks_dir"):
        batch.find_notebooks(None, nb_dir / "missing")


def test_parse_parameter():
    assert batch.parse_parameter("3") == 3
    assert batch.parse_parameter("0.5") == 0.5
    assert batch.parse_parameter("[1, 2]") == [1, 2]
    assert batch.parse_parameter("true") is True
    assert batch.parse_parameter("None") is None
    assert batch.parse_parameter("cuda") == "cuda"


def test_notebook_parameters(nb_dir):
    nb = batch.read_notebook(nb_dir / "01_ok.py")
    assert batch.notebook_parameters(nb) == {"scale": "quick", "seed": 0, "alpha": 1.5}


def test_run_batch_validates_arguments(nb_dir, tmp_path):
    with pytest.raises(ValueError, match="scale"):
        batch.run_batch(scale="huge", notebooks_dir=nb_dir, out=tmp_path / "o")
    with pytest.raises(ValueError, match="threads"):
        batch.run_batch(threads=0, notebooks_dir=nb_dir, out=tmp_path / "o")


def test_batch_command_runs_all_records_failures_and_exits_nonzero(nb_dir, tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["batch", "--notebooks-dir", str(nb_dir), "--out", str(out), "--threads", "1",
               "-p", "alpha", "2.5"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "FAILED: 02_bad" in err and "ZeroDivisionError" in err
    summary = json.loads((out / "summary.json").read_text())
    rows = {r["notebook"]: r for r in summary["notebooks"]}
    assert rows["01_ok"]["status"] == "ok" and rows["02_bad"]["status"] == "failed"
    assert rows["01_ok"]["parameters"] == {"scale": "quick", "alpha": 2.5}
    assert rows["01_ok"]["ignored_parameters"] == {} and rows["02_bad"]["ignored_parameters"] == {"alpha": 2.5}
    assert rows["01_ok"]["wall_s"] > 0
    assert (out / "summary.csv").read_text().splitlines()[0].startswith("notebook,status,wall_s,parameters")
    executed = json.loads((out / "01_ok.ipynb").read_text())
    text = "".join("".join(o.get("text", "")) for c in executed["cells"] for o in c.get("outputs", []))
    assert "alpha 2.5" in text
    assert (out / "02_bad.ipynb").exists()  # papermill keeps the partly executed notebook


def test_batch_command_succeeds_on_chosen_notebook(nb_dir, tmp_path):
    out = tmp_path / "run"
    assert main(["batch", "01", "--notebooks-dir", str(nb_dir), "--out", str(out), "--scale", "paper"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scale"] == "paper"
    assert [r["notebook"] for r in summary["notebooks"]] == ["01_ok"]


def test_batch_command_rejects_unknown_notebook(nb_dir, tmp_path, capsys):
    assert main(["batch", "nope", "--notebooks-dir", str(nb_dir), "--out", str(tmp_path / "o")]) == 2
    assert "matches no notebook" in capsys.readouterr().err


def test_goldens_command_writes_goldens_without_images(nb_dir, tmp_path):
    gdir = tmp_path / "golden"
    (nb_dir / "02_bad.py").unlink()
    assert main(["goldens", "--notebooks-dir", str(nb_dir), "--golden-dir", str(gdir)]) == 0
    golden = batch.read_notebook(gdir / "01_ok.ipynb")
    assert batch.code_cells(golden) == batch.code_cells(batch.read_notebook(nb_dir / "01_ok.py"))
    outputs = [o for c in golden.cells if c.cell_type == "code" for o in c.outputs]
    assert any("alpha 1.5" in o.get("text", "") for o in outputs)


def test_batch_command_rejects_a_parameter_no_notebook_declares(nb_dir, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["batch", "--notebooks-dir", str(nb_dir), "--out", str(out), "-p", "nonexist", "1"]) == 2
    err = capsys.readouterr().err
    assert "error: parameter(s) ['nonexist'] are declared by none of the chosen notebooks" in err
    assert "['alpha', 'seed']" in err and not out.exists()  # nothing ran


def test_interrupted_batch_writes_its_summary(nb_dir, tmp_path, capsys, monkeypatch):
    real = batch._execute_with_papermill

    def interrupt_second(nb, out_path, *a, **kw):
        if "02_bad" in str(out_path):
            raise KeyboardInterrupt
        return real(nb, out_path, *a, **kw)

    monkeypatch.setattr(batch, "_execute_with_papermill", interrupt_second)
    out = tmp_path / "run"
    assert main(["batch", "--notebooks-dir", str(nb_dir), "--out", str(out)]) == 1
    assert "error: batch interrupted during 02_bad" in capsys.readouterr().err
    rows = {r["notebook"]: r["status"] for r in json.loads((out / "summary.json").read_text())["notebooks"]}
    assert rows == {"01_ok": "ok", "02_bad": "interrupted"}


def test_goldens_command_names_failures(nb_dir, tmp_path, capsys):
    assert main(["goldens", "--notebooks-dir", str(nb_dir), "--golden-dir", str(tmp_path / "g")]) == 1
    assert "02_bad" in capsys.readouterr().err


# --------------------------------------------------------------------------- book build
def _tiny_book(root: Path, notebook: str, page: str = "# Intro\n\nHello.\n") -> Path:
    """A copy of the real book configuration with one page and one notebook."""
    real = REPO_ROOT
    (root / "book").mkdir(parents=True)
    (root / "notebooks").mkdir()
    (root / "_config.yml").write_text((real / "_config.yml").read_text())
    (root / "book" / "references.bib").write_text((real / "book" / "references.bib").read_text())
    (root / "book" / "_ext").mkdir()
    (root / "book" / "_ext" / "cnce_book.py").write_text((real / "book" / "_ext" / "cnce_book.py").read_text())
    (root / "book" / "intro.md").write_text(page)
    (root / "notebooks" / "01_nb.py").write_text(notebook)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\nchapters:\n  - glob: notebooks/*\n")
    return root


def test_book_build_succeeds_and_is_current(tmp_path):
    """Two notebooks executed side by side (``jobs=2``) into the cache the build then uses."""
    from jupyter_cache import get_cache

    root = _tiny_book(tmp_path / "b", OK_NB)
    (root / "notebooks" / "02_nb.py").write_text(OK_NB.replace("alpha = 1.5", "alpha = 2.5"))
    (root / "book" / "extra.py").write_text(OK_NB)  # not in the table of contents: not executed
    assert book._book_notebooks(root) == [(root / "notebooks" / f"0{i}_nb.py").resolve() for i in (1, 2)]
    assert not book.book_is_current(root)
    done = book.prefill_execution_cache(root, 2)
    assert sorted(Path(p).name for p in done) == ["01_nb.py", "02_nb.py"]
    assert book.prefill_execution_cache(root, 2) == []  # both are in the cache now

    def records():
        return sorted((r.pk, r.created) for r in get_cache(str(root / ".jupyter_cache")).list_cache_records())

    before = records()
    book.build_book(root=root, jobs=2)
    assert records() == before  # the build used them and executed nothing again
    assert "alpha 2.5" in (root / "_build/html/notebooks/02_nb.html").read_text()
    assert book.book_is_current(root)
    (root / "book" / "intro.md").write_text("# Intro\n\nEdited.\n")
    assert not book.book_is_current(root)


def test_book_sources_hash_ignores_jupyterlab_outputs(tmp_path):
    """Opening a notebook in JupyterLab (scripts/lab.sh) writes a paired notebooks/NN.ipynb and
    .ipynb_checkpoints/, which the book never reads: they must not make a built book stale."""
    root = _tiny_book(tmp_path / "b", OK_NB)
    before = book.book_sources_hash(root)
    (root / "notebooks" / "01_nb.ipynb").write_text("{}")
    (root / "notebooks" / ".ipynb_checkpoints").mkdir()
    (root / "notebooks" / ".ipynb_checkpoints" / "01_nb-checkpoint.py").write_text("# x\n")
    assert book.book_sources_hash(root) == before
    (root / "notebooks" / "01_nb.py").write_text(OK_NB + "\n# %%\n1\n")
    assert book.book_sources_hash(root) != before


def test_book_build_fails_loudly_on_a_failing_cell(tmp_path):
    root = _tiny_book(tmp_path / "b", BAD_NB)
    assert book.prefill_execution_cache(root, 2) == []  # a failure is not cached: the build executes it again
    with pytest.raises(RuntimeError, match="book build failed"):
        book.build_book(root=root)
    assert not book.book_is_current(root)


def test_book_build_fails_on_a_warning(tmp_path):
    root = _tiny_book(tmp_path / "b", OK_NB, page="# Intro\n\nSee {doc}`no-such-page`.\n")
    with pytest.raises(RuntimeError, match="book build failed"):
        book.build_book(root=root)
    book.build_book(root=root, strict=False)  # drafting mode keeps going


def test_build_book_validates_arguments(tmp_path):
    with pytest.raises(ValueError, match="threads"):
        book.build_book(root=tmp_path, threads=0)
    with pytest.raises(ValueError, match="jobs"):
        book.build_book(root=tmp_path, jobs=0)
    with pytest.raises(ValueError, match="_config.yml"):
        book.build_book(root=tmp_path)


def test_a_page_number_names_its_notebook_before_an_appendix(tmp_path):
    for n in ("06_image_model", "06a_image_appendix", "07_x"):
        (tmp_path / f"{n}.py").write_text("x = 1\n")
    assert [p.stem for p in batch.find_notebooks(["06"], tmp_path)] == ["06_image_model"]
    assert [p.stem for p in batch.find_notebooks(["06a"], tmp_path)] == ["06a_image_appendix"]
