"""Every eps rule is an :class:`cnce.eps.EpsRule`: the image model's rules run by the one batched
loop of :func:`cnce.eps.choose_eps` give the same eps and evaluations as the scalar loops the
image trainer used (kept below as references), and so do the trainer's wrappers."""
import math

import pytest
import torch

from cnce.eps import IMAGE_AUTHORS_RULE, IMAGE_CARRY_RULE, RULES, EpsRule, EpsSearch, choose_eps
from cnce.images import train as image_train
from cnce.losses import LOG4


# -- the scalar loops the image trainer used before its rules moved to cnce.eps (references) --
def carry_scalar(J_of_eps, *, eps0: float = 0.5, cap: float = 4.0, max_steps: int = 20,
               too_close: float = 0.05, too_easy: float = 0.2, grow: float = 1.15):
    """The image-model epsilon rule (experiment settings; the paper only sketches it, Sec. 2).

    eps is *too small* when ``|2 log 2 - J| < too_close * 2 log 2`` (noise hardly differs from
    data) and *too large* when ``J < too_easy * 2 log 2`` (noise trivially told apart). Starting
    at ``eps0``, grow by ``grow`` until an upper bound is found, then bisect; at most
    ``max_steps`` evaluations of ``J_of_eps``; never above ``cap``.

    Returns ``(eps, trace)`` with ``trace`` the list of ``(eps, J)`` evaluated.
    """
    if not eps0 > 0:
        raise ValueError(f"eps0 must be > 0; got {eps0!r}")
    lo, hi, eps, trace = 0.0, None, min(eps0, cap), []
    for _ in range(max_steps):
        J = float(J_of_eps(eps))
        trace.append((eps, J))
        if abs(LOG4 - J) < too_close * LOG4:
            lo = eps
            nxt = eps * grow if hi is None else 0.5 * (lo + hi)
        elif J < too_easy * LOG4:
            hi = eps
            nxt = 0.5 * (lo + hi)
        else:
            break
        if nxt >= cap:
            eps = cap
            if lo >= cap:
                break
        else:
            eps = nxt
    return eps, trace


def authors_scalar(J_of_eps, *, eps_base: float = 0.5, cap: float = 4.0, max_evals: int = 20,
                       too_close: float = 0.05, too_easy: float = 0.2, grow: float = 1.15):
    """The eps rule of the authors' image code (``NoiseProcessor.m``, ``generateNoiseExtra``).

    ``eps = f * eps_base`` with a multiplier ``f`` that starts at 1 at *every* meta-iteration.
    J is *too close* to ``2 log 2`` (eps too small) when ``|2 log 2 - J| < too_close * 2 log 2``
    and *too small* (eps too large, noise trivially told apart) when ``J < too_easy * 2 log 2``.
    While either holds, at most ``max_evals`` evaluations in all and ``f < cap``: if eps is too
    small, raise the lower bound to ``f`` and grow ``f`` by ``grow`` until an upper bound is
    known, then bisect; if too large, lower the upper bound to ``f`` and bisect towards the lower
    bound (0 at first). The loop tests ``f < cap`` *before* a step, so ``f`` can end just above
    the cap (``1.15**10 = 4.05`` for cap 4), as in their code; they use cap 4 (8 for layer 4).

    Returns ``(eps, trace)`` with ``trace`` the list of ``(eps, J)`` evaluated.
    """
    if not eps_base > 0:
        raise ValueError(f"eps_base must be > 0; got {eps_base!r}")
    if not cap > 1:
        raise ValueError(f"cap must be > 1; got {cap!r}")
    if max_evals < 1:
        raise ValueError(f"max_evals must be >= 1; got {max_evals!r}")
    close = lambda J: abs(LOG4 - J) < too_close * LOG4  # noqa: E731
    easy = lambda J: J < too_easy * LOG4  # noqa: E731
    f, lower, upper = 1.0, 0.0, None
    J = float(J_of_eps(eps_base * f))
    trace = [(eps_base * f, J)]
    while len(trace) < max_evals and (close(J) or easy(J)) and f < cap:
        if close(J):
            lower = f
            f = f * grow if upper is None else 0.5 * (upper + lower)
        else:
            upper = f
            f = 0.5 * (upper + lower)
        J = float(J_of_eps(eps_base * f))
        trace.append((eps_base * f, J))
    return eps_base * f, trace


choose_eps_authors = authors_scalar


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


@pytest.mark.parametrize("name", list(CURVES))
def test_the_trainers_rules_are_cnce_eps_rules(name):
    J = CURVES[name]
    for cap in (4.0, 8.0):
        assert image_train.choose_eps_authors(J, eps_base=0.5, cap=cap) == authors_scalar(J, eps_base=0.5, cap=cap)
    for eps0 in (0.5, 2.0):
        assert image_train.choose_eps_carry(J, eps0=eps0)[0] == carry_scalar(J, eps0=eps0)[0]
