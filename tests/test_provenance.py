"""Shared infrastructure (cnce.provenance): seeds, atomic writes, provenance records."""
from __future__ import annotations

import pytest
import torch

from cnce import provenance
from cnce.experiments import runner


def test_derive_seed_is_stable_and_shared():
    assert runner.derive_seed is provenance.derive_seed
    # a fixed value: results drawn from these seeds must not move when the code is reorganised
    assert provenance.derive_seed(0, "gaussian", "truth") == provenance.derive_seed(0, "gaussian", "truth")
    assert provenance.derive_seed(0, "a") != provenance.derive_seed(1, "a")
    assert 0 <= provenance.derive_seed(7, "x", 3) < 2**63
    a = torch.rand(3, generator=provenance.generator(0, "k"))
    b = torch.rand(3, generator=provenance.generator(0, "k"))
    assert torch.equal(a, b)


def test_atomic_torch_save_keeps_the_old_file_on_error(tmp_path):
    p = tmp_path / "state.pt"
    provenance.atomic_torch_save({"a": torch.ones(2)}, p)
    before = p.read_bytes()

    class Boom:
        def __reduce__(self):
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        provenance.atomic_torch_save({"a": Boom()}, p)
    assert p.read_bytes() == before
    assert [q.name for q in tmp_path.iterdir()] == ["state.pt"]
    assert torch.equal(torch.load(p)["a"], torch.ones(2))


def test_environment_record_names_code_and_machine():
    rec = provenance.environment_record("cpu")
    for k in ("package_version", "git_commit", "git_dirty_package", "package_source_sha256", "torch", "cpu", "device"):
        assert k in rec
    assert len(rec["package_source_sha256"]) == 64
    assert provenance.package_source_hash() != provenance.package_source_hash(exclude=())
    assert (provenance.PACKAGE_ROOT / "provenance.py").is_file()


def test_int_seed_is_the_image_trainers_scheme():
    import numpy as np

    assert provenance.int_seed(3, 1, 0, 2) == int(np.random.SeedSequence([3, 1, 0, 2]).generate_state(1)[0])
    assert 0 <= provenance.int_seed(0) < 2**32


def test_source_hash_covers_extra_files_and_not_the_checkouts_place(tmp_path):
    base = provenance.package_source_hash()
    assert provenance.package_source_hash(extra=()) == base
    script = tmp_path / "driver.py"
    script.write_text("print(1)\n")
    config = tmp_path / "config.json"
    config.write_text("{}")
    with_extra = provenance.package_source_hash(extra=(script, config))
    assert with_extra != base
    config.write_text('{"a": 1}')
    assert provenance.package_source_hash(extra=(script, config)) != with_extra
    # the same files elsewhere hash the same (names relative to the root given)
    other = tmp_path / "copy"
    other.mkdir()
    (other / "driver.py").write_text("print(1)\n")
    assert provenance.source_hash(other / "driver.py", root=other) == provenance.source_hash(script, root=tmp_path)
    with pytest.raises(ValueError, match="paths must name existing files"):
        provenance.source_hash(tmp_path / "missing.py")


def test_git_object_and_state_name_the_paths():
    state = provenance.git_state()
    assert set(state) == {"git_commit", "git_dirty_package"}
    obj = provenance.git_object("HEAD:cnce", "cnce")
    if state["git_commit"] is not None:
        assert obj is not None and len(obj.split("+")[0]) == 40
    assert provenance.git_object("no-such-revision-xyz", "cnce") is None


def test_t_interval_one_home_and_one_value():
    import math

    import numpy as np

    from cnce.report import t_interval

    m, lo, hi = t_interval([0.8, 0.9, 1.0])
    assert m == pytest.approx(0.9)
    assert hi - m == pytest.approx(4.302653 * 0.1 / np.sqrt(3), rel=1e-5) and m - lo == pytest.approx(hi - m)
    m, lo, hi = t_interval([0.5])
    assert m == 0.5 and math.isnan(lo) and math.isnan(hi)  # one value: no interval, not a zero-width one
    with pytest.raises(ValueError, match="empty"):
        t_interval([])
    with pytest.raises(ValueError, match="level"):
        t_interval([1.0, 2.0], level=95)
