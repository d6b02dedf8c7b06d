"""The experiment runner: grid expansion, resume after an interruption, atomic writes,
clear errors for corrupt files. A tiny fake model and a fake (but deterministic) fit keep
these tests fast and independent of the estimator."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from cnce import models
from cnce.experiments import configs, runner, store as store_mod
from cnce.experiments.configs import Cell, ExperimentConfig, Study, get_config
from cnce.errors import IncompleteResultsError, MissingProvenanceError, RunInterrupted, StorageError, WrongScaleError
from cnce.experiments.store import CorruptResultsError, ResultStore
from cnce.models import UnnormalisedModel


# ----------------------------------------------------------------------------- fakes
class FakeModel(UnnormalisedModel):
    name = "fake"
    dim = 2
    n_params = 2

    def random_params(self, S, generator=None):
        return 1.0 + torch.rand(S, 2, generator=generator, dtype=torch.float64)

    def init_params(self, S, generator=None):
        return torch.rand(S, 2, generator=generator, dtype=torch.float64)

    def sample(self, theta, n, generator=None, shift=0.0):
        return theta[:, None, :] + shift + torch.randn(theta.shape[0], n, 2, generator=generator, dtype=torch.float64)

    def error(self, theta_hat, theta_true):
        return ((theta_hat - theta_true) ** 2).sum(-1)


def fake_draw_base(model, S, N, kappa, generator):
    return torch.randn(S, N, kappa, model.dim, generator=generator, dtype=torch.float64)


class FakeFit:
    """Deterministic in its inputs; optionally raises on the k-th call (an interruption)."""

    def __init__(self, fail_at=None):
        self.calls = []
        self.fail_at = fail_at

    def __call__(self, model, x, method="cnce", kappa=10, eps="auto", seed=0, theta0=None, noise_base=None, device="cpu", progress=False):
        self.calls.append((method, x.shape[1], kappa if noise_base is not None else None))
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            raise KeyboardInterrupt
        S = x.shape[0]
        theta = x.mean(1)
        if noise_base is not None:
            assert noise_base.shape == (S, x.shape[1], kappa, model.dim)
            theta = theta + 0.1 * noise_base.mean(dim=(1, 2))
        return SimpleNamespace(
            theta=theta, eps=torch.full((S,), 0.5), loss=torch.zeros(S), init_loss=torch.ones(S),
            n_iter=torch.full((S,), 7), converged=torch.ones(S, dtype=torch.bool), grad_norm=torch.full((S,), 1e-9),
            seconds=0.0, method=method, kappa=kappa,
        )


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(models._REGISTRY, "fake", FakeModel)
    monkeypatch.setitem(configs.STUDIES, "fake-a", Study("fake-a", "fake"))
    monkeypatch.setitem(configs.STUDIES, "fake-b", Study("fake-b", "fake", sample_kwargs=(("shift", 3.0),)))
    cells = tuple(sorted(
        [Cell(s, m, k, n) for s in ("fake-a", "fake-b") for m in ("cnce", "nce") for k in (2, 5) for n in (10, 40)]
        + [Cell(s, "mle", None, n) for s in ("fake-a", "fake-b") for n in (10, 40)],
        key=Cell.sort_key,
    ))
    return ExperimentConfig(name="fakefig", figure="Fig. 0", description="fake", scale="quick", seed=0, n_sims=4,
                            N_max=40, kappa_max=5, studies=("fake-a", "fake-b"), cells=cells)


def _run(cfg, path, fit):
    return runner.run(cfg, results_dir=path, fit=fit, draw_base=fake_draw_base, progress=False)


NUMERIC = ["error", "eps", "loss", "init_loss", "iterations", "grad_norm", "theta_true_0", "theta_hat_0"]


# ----------------------------------------------------------------------------- configs
def test_paper_grids_expand_to_the_papers_cells():
    cfg = get_config("consistency", "paper")
    assert cfg.n_sims == 100 and cfg.N_max == 20000
    Ns, kappas = (100, 500, 1000, 5000, 10000, 20000), (2, 6, 10, 20)
    want = {Cell(s, "cnce", k, n) for s in ("gaussian", "ica") for k in kappas for n in Ns}
    want |= {Cell(s, "mle", None, n) for s in ("gaussian", "ica") for n in Ns}
    assert set(cfg.cells) == want and len(cfg.cells) == 60

    nce = get_config("nce", "paper")
    sweep = {(c.method, c.kappa) for c in nce.cells if c.N == 5000 and c.study == "ica"}
    assert {("nce", k) for k in (2, 4, 6, 8, 10, 20, 40, 60)} <= sweep
    assert {("cnce", k) for k in (2, 4, 6, 8, 10, 20, 40, 60)} <= sweep
    assert len(set(nce.cells)) == len(nce.cells)  # shared cells (kappa grid at N = 5000) appear once

    ring = get_config("ring", "paper")
    assert {c.kappa for c in ring.cells if c.method != "mle"} == {10}
    assert {c.study for c in ring.cells} == {"ring-exact", "ring-authors"}
    assert {c.method for c in ring.cells} == {"cnce", "nce", "mle"}


def test_quick_scale_is_smaller_and_every_figure_resolves():
    for name in configs.FIGURES:
        q, p = get_config(name, "quick"), get_config(name, "paper")
        assert q.n_sims < p.n_sims and len(q.cells) <= len(p.cells)
        assert all(c.N <= q.N_max for c in q.cells)


@pytest.mark.parametrize("kw, arg", [({"name": "fig9"}, "name"), ({"scale": "huge"}, "scale"), ({"seed": -1}, "seed")])
def test_bad_config_arguments_name_themselves(kw, arg):
    args = {"name": "consistency", "scale": "quick", "seed": 0, **kw}
    with pytest.raises(ValueError, match=arg):
        get_config(**args)


def test_derived_seeds_are_stable_and_distinct():
    a = runner.derive_seed(0, "gaussian", "truth")
    assert a == runner.derive_seed(0, "gaussian", "truth")
    assert len({a, runner.derive_seed(1, "gaussian", "truth"), runner.derive_seed(0, "gaussian", "data"), runner.derive_seed(0, "ica", "truth")}) == 4
    assert 0 <= a < 2**63


# ----------------------------------------------------------------------------- runner
def test_run_writes_tidy_table_with_provenance_and_skips_done_cells(fake, tmp_path):
    fit = FakeFit()
    summary = _run(fake, tmp_path, fit)
    assert summary["cells_run"] == len(fake.cells) == len(fit.calls)
    df = runner.load_results(fake, results_dir=tmp_path)
    assert len(df) == len(fake.cells) * fake.n_sims
    assert list(df.columns) == list(store_mod.COLUMNS)
    assert df.loc[df.method == "mle", "kappa"].isna().all()
    assert df.loc[df.method != "mle", "kappa"].notna().all()
    prov = json.loads((tmp_path / "fake-a.provenance.json").read_text())
    assert prov["seed"] == 0 and prov["n_sims"] == 4 and prov["runs"][-1]["status"] == "complete"
    for key in ("package_version", "git_commit", "torch", "numpy", "device", "wall_seconds"):
        assert key in prov["runs"][-1]
    # a second run finds everything stored and fits nothing
    fit2 = FakeFit()
    assert _run(fake, tmp_path, fit2)["cells_run"] == 0 and fit2.calls == []


def test_interrupted_run_resumes_and_matches_an_uninterrupted_run(fake, tmp_path):
    full = tmp_path / "full"
    _run(fake, full, FakeFit())
    part = tmp_path / "part"
    with pytest.raises(KeyboardInterrupt):
        _run(fake, part, FakeFit(fail_at=4))
    store = ResultStore(part)
    assert len(runner.missing_cells(fake, store)) == len(fake.cells) - 3
    assert json.loads((part / "fake-a.provenance.json").read_text())["runs"][-1]["status"] == "interrupted"
    assert not [p for p in part.iterdir() if p.name.endswith(".tmp")]
    fit = FakeFit()
    _run(fake, part, fit)
    assert len(fit.calls) == len(fake.cells) - 3
    a = runner.load_results(fake, results_dir=full)
    b = runner.load_results(fake, results_dir=part)
    pd.testing.assert_frame_equal(a[NUMERIC], b[NUMERIC])


def test_noise_base_of_a_cell_is_a_prefix_of_the_studys_base(fake):
    prob = runner.build_problem("fake-a", 3, 40, seed=0, draw_base=fake_draw_base)
    small = prob.noise_base(10, 2).clone()
    big = prob.noise_base(40, 5)
    assert torch.equal(big[:, :10, :2], small)
    prob2 = runner.build_problem("fake-a", 3, 40, seed=0, draw_base=fake_draw_base)
    assert torch.equal(prob2.noise_base(40, 5), big)  # independent of the order of requests
    assert torch.equal(prob2.x, prob.x)
    other = runner.build_problem("fake-b", 3, 40, seed=0, draw_base=fake_draw_base)
    assert torch.equal(other.theta_true, prob.theta_true)  # same family: same truth
    assert not torch.equal(other.x - 3.0, prob.x)  # its own data


def test_study_sharing_data_with_a_fixed_eps(fake, monkeypatch):
    """``data_of`` shares another study's data (and, through the family, truth, start and
    noise); ``cnce_eps`` replaces the heuristic's ``eps="auto"`` for CNCE only."""
    monkeypatch.setitem(configs.STUDIES, "fake-a-eps", Study("fake-a-eps", "fake", data_of="fake-a", cnce_eps=0.2))
    a = runner.build_problem("fake-a", 3, 40, seed=0, draw_base=fake_draw_base)
    b = runner.build_problem("fake-a-eps", 3, 40, seed=0, draw_base=fake_draw_base)
    assert torch.equal(a.x, b.x) and torch.equal(a.theta0, b.theta0) and torch.equal(a.noise_base(40, 2), b.noise_base(40, 2))
    seen = []
    fit = lambda model, x, **kw: seen.append(kw.get("eps")) or FakeFit()(model, x, **kw)
    runner.run_cell(b, Cell("fake-a-eps", "cnce", 2, 10), fit=fit)
    runner.run_cell(a, Cell("fake-a", "cnce", 2, 10), fit=fit)
    runner.run_cell(b, Cell("fake-a-eps", "mle", None, 10), fit=fit)
    assert seen == [0.2, "auto", None]
    assert ("bernoulli-eps0.2" in get_config("supplementary", "paper").studies
            and configs.STUDIES["bernoulli-eps0.2"].data_of == "bernoulli")


def test_seed_mismatch_with_stored_results_is_refused(fake, tmp_path):
    _run(fake, tmp_path, FakeFit())
    other = ExperimentConfig(**{**fake.__dict__, "seed": 1})
    with pytest.raises(WrongScaleError, match=r"seed = 0 .*asks for seed = 1.*another folder with --results-dir") as info:
        _run(other, tmp_path, FakeFit())
    assert "delete" not in str(info.value)  # the stored table is valid for its own seed


def test_provenance_is_recorded_before_the_first_cell(fake, tmp_path):
    """A table never exists without its provenance (it would be refused): the record is written
    before the first cell is computed, so even a kill between the two writes leaves both."""
    with pytest.raises(KeyboardInterrupt):
        _run(fake, tmp_path, FakeFit(fail_at=1))
    assert (tmp_path / "fake-a.provenance.json").exists() and not (tmp_path / "fake-a.csv").exists()
    assert _run(fake, tmp_path, FakeFit())["cells_run"] == len(fake.cells)  # and is adopted by the resumed run


def test_truncated_last_row_is_rejected(fake, tmp_path):
    _run(fake, tmp_path, FakeFit())
    path = tmp_path / "fake-a.csv"
    text = path.read_text()
    cut = text[: text.rstrip("\n").rfind(",")]  # the last row cut inside its last fields, no newline
    path.write_text(cut)
    with pytest.raises(CorruptResultsError, match=r"does not end with a newline: its last row is truncated"):
        ResultStore(tmp_path).load("fake-a", n_sims=4)
    path.write_text(cut + "\n")  # cut, but with a newline: fewer fields than the header
    with pytest.raises(CorruptResultsError, match=r"line \d+ has \d+ fields but the header has \d+ \(a truncated") as info:
        ResultStore(tmp_path).load("fake-a", n_sims=4)
    assert "git checkout" in str(info.value) and "delete" not in str(info.value)


def test_table_without_provenance_is_refused_not_adopted(fake, tmp_path):
    _run(fake, tmp_path, FakeFit())
    (tmp_path / "fake-b.provenance.json").unlink()
    with pytest.raises(MissingProvenanceError, match=r"fake-b.csv has no provenance record .*--results-dir"):
        runner.load_results(fake, results_dir=tmp_path)
    with pytest.raises(MissingProvenanceError):
        _run(fake, tmp_path, FakeFit())


def test_for_display_never_falls_back_silently(fake, tmp_path, capsys):
    quick = pd.DataFrame({"x": [1]})
    # nothing stored at paper scale: the quick results, and a line that says so
    df, shown = runner.for_display(fake, quick, paper_dir=tmp_path / "none")
    assert shown == "quick" and df is quick and "no paper-scale results" in capsys.readouterr().out
    _run(fake, tmp_path, FakeFit())
    df, shown = runner.for_display(fake, quick, paper_dir=tmp_path)
    assert shown == "paper" and len(df) > 1
    # a corrupt committed table is an error naming the file, never the quick figures
    path = tmp_path / "fake-a.csv"
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])
    with pytest.raises(CorruptResultsError, match=str(path)):
        runner.for_display(fake, quick, paper_dir=tmp_path)
    # an incomplete one: an error naming the file and the command that completes it
    path.write_bytes(good)
    df_a = pd.read_csv(path)
    df_a[df_a["N"] == 10].to_csv(path, index=False)
    with pytest.raises(IncompleteResultsError, match=r"incomplete: .* missing from .*fake-a.csv.*python -m cnce run"):
        runner.for_display(fake, quick, paper_dir=tmp_path)


def test_sigint_stops_a_run_within_a_second_and_keeps_finished_cells(fake, tmp_path):
    """A cell that never returns (a long compiled kernel) does not delay Ctrl-C: the run stops
    at once with RunInterrupted, every finished cell stored."""
    import os
    import signal
    import threading
    import time

    release = threading.Event()

    class SlowFit(FakeFit):
        def __call__(self, *a, **kw):
            if len(self.calls) == 3:
                self.calls.append("slow")
                release.wait(30)  # the 4th cell "computes" until the test ends
            return super().__call__(*a, **kw)

    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(RunInterrupted, match=r"interrupted during cell .*3 cell\(s\) finished .*resume"):
            _run(fake, tmp_path, SlowFit())
        assert time.perf_counter() - t0 < 3.0
    finally:
        release.set()
    assert len(runner.missing_cells(fake, ResultStore(tmp_path))) == len(fake.cells) - 3
    prov = json.loads((tmp_path / "fake-a.provenance.json").read_text())
    assert prov["runs"][-1]["status"] == "interrupted" and prov["runs"][-1]["cells_computed"] == 3


@pytest.mark.parametrize("where", ["file", "readonly"])
def test_unwritable_results_dir_is_one_storage_error(fake, tmp_path, where, capsys):
    import os


    if where == "file":
        target = tmp_path / "a-file"
        target.write_text("")
    else:
        if os.geteuid() == 0:
            pytest.skip("root writes into read-only folders")  # the file case covers the path
        target = tmp_path / "ro"
        target.mkdir()
        target.chmod(0o500)
    with pytest.raises(StorageError, match=r"cannot write .*choose another, writable folder"):
        _run(fake, target, FakeFit())


# ----------------------------------------------------------------------------- store
def test_atomic_write_keeps_the_old_file_when_writing_fails(fake, tmp_path, monkeypatch):
    _run(fake, tmp_path, FakeFit())
    path = tmp_path / "fake-a.csv"
    before = path.read_bytes()
    st = ResultStore(tmp_path)
    df = st.load("fake-a")

    def broken_to_csv(self, fh, **kw):
        fh.write("study,model,method\nfake-a,fa")  # half a file, then the process "dies"
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken_to_csv)
    with pytest.raises(OSError, match="disk full"):
        st.write("fake-a", df)
    assert path.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    "content, match",
    [
        (b"\x00\xff\xfe garbage", "corrupt|cannot be read|missing column"),
        (b"study,model\nfake-a,fake\n", "missing column"),
        (None, "cell"),  # a table cut after a few rows: a cell without all simulations
        (b"", "corrupt"),
    ],
)
def test_corrupt_results_file_gives_a_clear_error(fake, tmp_path, content, match):
    _run(fake, tmp_path, FakeFit())
    path = tmp_path / "fake-a.csv"
    if content is None:
        lines = path.read_text().splitlines()
        path.write_text("\n".join(lines[:3]) + "\n")
    else:
        path.write_bytes(content)
    with pytest.raises(CorruptResultsError, match=match) as info:
        ResultStore(tmp_path).load("fake-a", n_sims=4)
    assert str(path) in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(CorruptResultsError):
        _run(fake, tmp_path, FakeFit())


def test_non_numeric_value_is_reported_with_its_column(fake, tmp_path):
    _run(fake, tmp_path, FakeFit())
    path = tmp_path / "fake-a.csv"
    df = pd.read_csv(path, dtype=str)
    df.loc[2, "error"] = "oops"
    df.to_csv(path, index=False)
    with pytest.raises(CorruptResultsError, match="'error'"):
        ResultStore(tmp_path).load("fake-a")


def test_corrupt_provenance_gives_a_clear_error(fake, tmp_path):
    _run(fake, tmp_path, FakeFit())
    (tmp_path / "fake-b.provenance.json").write_text("{not json")
    with pytest.raises(CorruptResultsError, match="provenance"):
        runner.load_results(fake, results_dir=tmp_path)


def test_load_results_reports_missing_cells(fake, tmp_path):
    with pytest.raises(ValueError, match="missing"):
        runner.load_results(fake, results_dir=tmp_path)
    assert runner.load_results(fake, results_dir=tmp_path, allow_missing=True).empty


# ----------------------------------------------------------------------------- CLI
def test_cli_lists_and_runs(monkeypatch, tmp_path, capsys):
    from cnce.cli import main

    assert main(["list", "--scale", "paper", "--results-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "consistency" in out and "Fig. 2a-b" in out and "100" in out
    seen = {}
    monkeypatch.setattr(runner, "run", lambda name, scale, seed, **kw: seen.setdefault(name, (scale, seed)) and {"wall_seconds": 0.0} or {"wall_seconds": 0.0})
    assert main(["run", "ring", "--scale", "paper", "--no-progress", "--results-dir", str(tmp_path)]) == 0
    assert seen == {"ring": ("paper", 0)}
    with pytest.raises(SystemExit):
        main(["run", "nonsense"])


def test_study_lock_makes_a_second_runner_wait(tmp_path):
    import threading

    st = ResultStore(tmp_path)
    got = threading.Event()

    def second():
        with ResultStore(tmp_path).job("fake-a"):
            got.set()

    with st.job("fake-a"):
        t = threading.Thread(target=second)
        t.start()
        assert not got.wait(0.3)  # blocked while the first holder computes
    assert got.wait(5)
    t.join()
    assert not (tmp_path / ".fake-a.lock").exists()


def test_an_empty_lock_file_of_the_older_scheme_is_taken_over(fake, tmp_path):
    """Runs before cnce.jobs left an empty .<study>.lock (fcntl.flock) in the folder: an old one does not
    block the runner (a fresh empty one, a lock being written, still does)."""
    import os
    import time

    lock = tmp_path / ".fake-a.lock"
    lock.write_text("")
    old = time.time() - 60
    os.utime(lock, (old, old))
    _run(fake, tmp_path, FakeFit())
    assert (tmp_path / "fake-a.csv").is_file() and not lock.exists()
