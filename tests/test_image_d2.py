"""Known-answer tests of the Supp. D.2 measures (cnce.images.d2): RMS radius of a Gaussian, the
matching of a permuted and sign-flipped copy against random sets, the per-meta table on a small
synthetic run, and the seed intervals (t with 2 degrees of freedom for 3 seeds, the range for 2,
shares clipped)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from cnce.images import d2 as D
from cnce.images.data import Whitener
from cnce.images.measures import project_to_whitened
from cnce.images.probes import gabor

TORCH_THREADS = 2


def test_rms_radius_of_gaussians_is_their_width():
    yy, xx = np.mgrid[0:32, 0:32].astype(float)
    for s in (1.5, 3.0, 5.0):
        g = np.exp(-0.5 * ((xx - 15.3) ** 2 + (yy - 16.2) ** 2) / s**2)  # energy g**2 has width s / sqrt(2)
        assert D.rms_radius(g)[0] == pytest.approx(s, rel=1e-3)
    gb = gabor(32, 16, 16, 0.3, 0.2, 0.0, 3.0)
    assert D.rms_radius(gb)[0] == pytest.approx(3.0, rel=0.05)  # the carrier averages out
    with pytest.raises(ValueError, match="images"):
        D.rms_radius(np.zeros(5))


def test_matched_similarity_recovers_a_permuted_copy():
    rng = np.random.default_rng(0)
    A = rng.standard_normal((30, 64))
    perm = rng.permutation(30)
    B = -2.0 * A[perm] + 3.0  # sign, scale and offset do not matter
    s, pairs, cols = D.matched_similarity(A, B)
    assert s == pytest.approx(1.0) and np.all(perm[cols] == np.arange(30))
    s_r, _, _ = D.matched_similarity(A, rng.standard_normal((30, 64)))
    assert s_r < 0.5
    with pytest.raises(ValueError, match="same size"):
        D.matched_similarity(A, A[:, :10])


@pytest.fixture(scope="module")
def small_whitener():
    rng = np.random.default_rng(1)
    n = 16
    X = np.stack([gabor(n, *rng.uniform(3, 12, 2), rng.uniform(0, np.pi), rng.uniform(0.15, 0.35), rng.uniform(0, 6), 2.0)
                  for _ in range(3000)]).reshape(3000, -1) + 0.1 * rng.standard_normal((3000, n * n))
    return Whitener.fit(X - X.mean(1, keepdims=True), 60)


def test_d2_table_on_a_synthetic_run(small_whitener):
    wh = small_whitener
    rng = np.random.default_rng(2)
    K = 20
    start = torch.randn(K, wh.D, generator=torch.Generator().manual_seed(0)) / 8
    gab = np.stack([gabor(16, *rng.uniform(5, 10, 2), rng.uniform(0, np.pi), 0.25, 0.0, 2.0) for _ in range(K)])
    learned = project_to_whitened(gab, wh)
    learned = learned / learned.norm(dim=1, keepdim=True)
    snaps = {"cnce": {0: start, 1: start * 0.5 + learned, 2: learned},
             "nce": {0: start, 1: learned, 2: learned[torch.randperm(K, generator=torch.Generator().manual_seed(1))]}}
    t = D.d2_table(snaps, wh, variants=("cnce", "nce"), n_random=5)
    assert list(t.index) == [0, 1, 2]
    assert t.loc[0, "similarity"] == pytest.approx(1.0, abs=1e-4) and t.loc[2, "similarity"] == pytest.approx(1.0, abs=1e-4)
    assert t.loc[2, "random_p95"] < 0.9 and t.loc[2, "vs_init_cnce"] < 0.9
    assert t.loc[2, "oriented_cnce"] == t.loc[2, "oriented_nce"] and t.loc[2, "oriented_cnce"] > 0.5
    assert t.loc[2, "rms_cnce"] == pytest.approx(t.loc[2, "rms_nce"])
    c = D.similar_claim(t, meta=2)
    assert c.verdict.startswith("supported") and c.value == pytest.approx(1.0, abs=1e-4)
    c0 = D.similar_claim(t.assign(similarity=t["random"]), meta=2)
    assert c0.verdict.startswith("not supported")
    with pytest.raises(ValueError, match="variants"):
        D.d2_table(snaps, wh, variants=("cnce", "x"))


def _fake_d2(shares_a, shares_b):
    """A d2/paper.pt-like dict: one entry per seed with histories of the oriented share."""
    return {f"s{s}": {"seed": s, "history": {"cnce": [{"meta": m, "oriented": v} for m, v in enumerate(a)],
                                             "nce-reset": [{"meta": m, "oriented": v} for m, v in enumerate(b)]}}
            for s, (a, b) in enumerate(zip(shares_a, shares_b))}


def test_seed_table_and_faster_claim_rules():
    d = _fake_d2([[0.2, 0.9], [0.3, 0.95], [0.25, 0.99]], [[0.1, 0.5], [0.1, 0.6], [0.2, 0.55]])
    t = D.d2_seed_table(d)
    assert "2 degrees of freedom" in t.attrs["rule"] and t.loc[2, "oriented_cnce_hi"] <= 1.0
    c = D.faster_claim(d, meta=2)
    assert c.verdict.startswith("supported") and c.interval[0] > 0 and c.n_seeds == 3
    d2 = _fake_d2([[0.2, 0.4], [0.3, 0.5]], [[0.1, 0.6], [0.1, 0.7]])
    t2 = D.d2_seed_table(d2)
    assert t2.attrs["rule"] == "range of 2 seeds" and t2.loc[2, "difference_lo"] == pytest.approx(-0.2)
    assert D.faster_claim(d2, meta=2).verdict.startswith("contradicted")
    with pytest.raises(ValueError, match="meta"):
        D.faster_claim(d2, meta=5)


def test_similar_over_seeds_pools_the_per_seed_verdicts():
    from cnce.images.d2 import similar_over_seeds
    from cnce.images.verdicts import Measured

    def m(word, v, kind):
        return Measured(claim="c", measure="m", value=v, baselines={"random sets": 0.3}, verdict=f"{word}: x",
                        extra={"same kind": kind})

    all_partly = similar_over_seeds([m("partly", 0.5, False), m("partly", 0.6, False), m("partly", 0.55, False)])
    assert all_partly.verdict.startswith("partly:") and all_partly.n_seeds == 3 and "0 of 3" in all_partly.verdict
    assert all_partly.interval[0] < 0.55 < all_partly.interval[1]
    mixed = similar_over_seeds([m("supported", 0.7, True), m("not supported", 0.3, False)])
    assert mixed.verdict.startswith("partly:") and mixed.rule == "range of 2 seeds" and mixed.interval == (0.3, 0.7)
    assert similar_over_seeds([m("not supported", 0.3, False)] * 2).verdict.startswith("not supported:")
