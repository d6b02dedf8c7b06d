"""Every eps rule is an :class:`cnce.eps.EpsRule`: the image model's rules run by the one batched
loop of :func:`cnce.eps.choose_eps` give the same eps and evaluations as the scalar loops the
image trainer has used (``cnce.images.train.choose_eps_authors`` / ``choose_eps``)."""
import math

import pytest
import torch

from cnce.eps import IMAGE_AUTHORS_RULE, IMAGE_CARRY_RULE, RULES, EpsRule, EpsSearch, choose_eps
from cnce.images.train import choose_eps as carry_scalar
from cnce.images.train import choose_eps_authors
from cnce.losses import LOG4


CURVES = {
    "flat": lambda e: LOG4,
    "zero": lambda e: 0.0,
    "decay": lambda e: LOG4 * math.exp(-20 * e),
    "bump": lambda e: LOG4 * math.exp(-((e / 1.0) ** 8)),
    "slow": lambda e: LOG4 * math.exp(-((e / 3.0) ** 2)),
    "mid": lambda e: 0.5 * LOG4,
}


def _batched(curves):
    """``J (S,)`` of one scalar curve per simulation."""
    def J(e, idx=None):
        idx = range(len(curves)) if idx is None else idx.tolist()
        return torch.tensor([curves[i](float(v)) for i, v in zip(idx, e)], dtype=torch.float64)
    return J


@pytest.mark.parametrize("cap", [4.0, 8.0])
@pytest.mark.parametrize("eps_base", [0.5, 0.3])
def test_image_authors_rule_matches_the_scalar_loop(cap, eps_base):
    curves = list(CURVES.values())
    x = torch.zeros(len(curves), 2, 1, dtype=torch.float64)
    for active_only in (False, True):
        eps, trace = choose_eps(_batched(curves), x, IMAGE_AUTHORS_RULE.replace(cap=cap), unit=eps_base,
                                return_trace=True, active_only=active_only)
        for s, J in enumerate(curves):
            want, tr = choose_eps_authors(J, eps_base=eps_base, cap=cap)
            assert float(eps[s]) == want  # bit for bit
            got = [(float(e[s]), float(j[s])) for e, j in zip(trace.eps, trace.J)][: len(tr)]
            assert got == tr


@pytest.mark.parametrize("eps0", [0.5, 2.0, 7.0])
def test_image_carry_rule_matches_the_scalar_loop(eps0):
    curves = list(CURVES.values())
    x = torch.zeros(len(curves), 2, 1, dtype=torch.float64)
    eps = choose_eps(_batched(curves), x, IMAGE_CARRY_RULE.replace(start=eps0))
    for s, J in enumerate(curves):
        want, _ = carry_scalar(J, eps0=eps0, cap=4.0)
        assert float(eps[s]) == want


def test_rules_are_validated_and_named():
    assert set(RULES) >= {"authors", "bernoulli", "scale", "image-authors", "image-carry"}
    assert all(isinstance(r, EpsRule) for r in RULES.values())
    for bad in (dict(search="newton"), dict(grow=0.0), dict(cap=float("inf")), dict(max_steps=-1), dict(limit=-1.0)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            EpsRule(**bad)
    rule = RULES["authors"].bounded(1.0)
    assert rule.limit == 1.0 and RULES["bernoulli"].bounded(2.0) is RULES["bernoulli"]
    with pytest.raises(ValueError, match="prefix"):
        EpsSearch(IMAGE_AUTHORS_RULE, prefix=1).run(lambda e: e, torch.zeros(1, 4, 1))
