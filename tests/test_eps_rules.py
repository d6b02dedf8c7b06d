"""Every eps rule is an :class:`cnce.eps.EpsRule`: the image model's rules run by the one batched
loop of :func:`cnce.eps.choose_eps` give the same eps and evaluations as the scalar loops the
image trainer used (kept below as references), and so do the trainer's wrappers."""
import math

import pytest
import torch

from cnce.eps import AUTHORS_RULE, IMAGE_AUTHORS_RULE, IMAGE_CARRY_RULE, RULES, SCALE_RULE, EpsRule, EpsSearch, choose_eps
from cnce.images import recipe as image_recipe
from cnce.losses import LOG4


# -- the rules written as scalar loops, one value at a time: references for cnce.eps's batched rules --
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
        assert image_recipe.choose_eps_authors(J, eps_base=0.5, cap=cap) == authors_scalar(J, eps_base=0.5, cap=cap)
    for eps0 in (0.5, 2.0):
        assert image_recipe.choose_eps_carry(J, eps0=eps0)[0] == carry_scalar(J, eps0=eps0)[0]


# --------------------------------------------------------------------------- the one resolver
def test_resolve_eps_accepts_numbers_of_every_kind_and_expands_them():
    import numpy as np

    from cnce.eps import resolve_eps
    from cnce.noise import BernoulliFlipNoise, GaussianNoise

    for given in (0.5, np.float64(0.5), np.float32(0.5), torch.tensor(0.5), np.array(0.5), 1 / 2):
        e = resolve_eps(given, GaussianNoise(), S=3)
        assert e.shape == (3,) and e.dtype == torch.float64 and torch.equal(e, torch.full((3,), 0.5))
    e = resolve_eps(np.array([0.1, 0.2]), None, S=2)
    assert e.tolist() == [0.1, 0.2]
    with pytest.raises(ValueError, match=r"eps must lie in \[0, 1\.0\] .*got 1\.5"):
        resolve_eps(torch.tensor(1.5), BernoulliFlipNoise(), S=2)
    with pytest.raises(ValueError, match=r"eps must be finite and > 0; got 0\.0"):
        resolve_eps(0.0, GaussianNoise(), positive=True)
    assert resolve_eps(0.0, GaussianNoise()).tolist() == [0.0]
    with pytest.raises(ValueError, match=r"eps_rule applies to eps='auto' only"):
        resolve_eps(0.5, GaussianNoise(), rule=AUTHORS_RULE)
    with pytest.raises(ValueError, match=r"eps must be 'auto' or a number >= 0; got 'big'"):
        resolve_eps("big")


def test_resolve_eps_applies_the_noises_rule_and_bound():
    from cnce.eps import NETWORK_RULE, EpsSearch, resolve_eps
    from cnce.noise import BernoulliFlipNoise, GaussianNoise

    s = resolve_eps("auto", BernoulliFlipNoise())
    assert isinstance(s, EpsSearch) and s.rule == RULES["bernoulli"]
    assert resolve_eps("auto", GaussianNoise()).rule is AUTHORS_RULE
    assert resolve_eps("auto", GaussianNoise(), rule=NETWORK_RULE, prefix=64, margin=0.1) == EpsSearch(NETWORK_RULE, 64, 0.1)
    # a rule without a bound is bounded by the noise
    assert resolve_eps("auto", BernoulliFlipNoise(), rule=SCALE_RULE).rule.limit == 1.0
    with pytest.raises(ValueError, match="eps_rule must be a cnce.eps.EpsRule"):
        resolve_eps("auto", GaussianNoise(), rule="authors")


def test_the_image_and_network_rules_are_rules_with_their_caps_as_data():
    from cnce.eps import IMAGE_LAYER_CAPS, NETWORK_RULE, image_rule

    assert NETWORK_RULE == AUTHORS_RULE.replace(cap=4.0) and RULES["network"] is NETWORK_RULE
    assert [image_rule(k).cap for k in (1, 2, 3, 4)] == list(IMAGE_LAYER_CAPS) == [4.0, 4.0, 4.0, 8.0]
    assert image_rule(4, IMAGE_CARRY_RULE) == IMAGE_CARRY_RULE.replace(cap=8.0)
    with pytest.raises(ValueError, match="layer must be an integer in \\[1, 4\\]; got 5"):
        image_rule(5)


@pytest.mark.parametrize("text", ["default", "x0.5", "x1", "x0.0333", "x30", "rule:scale", "rule:pilot", "rule:authors"])
def test_eps_setting_round_trips(text):
    from cnce.eps import EpsSetting

    s = EpsSetting.parse(text)
    assert str(s) == text and EpsSetting.parse(str(s)) == s


def test_eps_setting_multiples_order_and_errors():
    import math

    from cnce.eps import EpsSetting

    assert EpsSetting.parse("default").multiple == 1.0 and EpsSetting.parse("x0.25").multiple == 0.25
    assert math.isnan(EpsSetting.parse("rule:scale").multiple)
    texts = ["rule:scale", "x2", "default", "x0.5"]
    assert sorted(texts, key=lambda t: EpsSetting.parse(t).sort_key()) == ["default", "x0.5", "x2", "rule:scale"]
    for bad in ("x", "x-1", "x0", "xnan", "rule:nope", "auto", None, 3):
        with pytest.raises(ValueError, match="eps setting must be"):
            EpsSetting.parse(bad)


# ---------------------------------------------------------------- the eps specification
@pytest.mark.parametrize("given,want", [
    ("auto", "Heuristic()"), ("x2", "Multiple(2.0)"), ("x0.25", "Multiple(0.25)"), (0.5, "Fixed(0.5)"),
    ("once", "Schedule('once')"), ("rule:authors", "Heuristic('authors')"), ("rule:pilot", "Heuristic('pilot')"),
])
def test_parse_eps_known_answers(given, want):
    import numpy as np

    from cnce.eps import Fixed, Heuristic, Multiple, Schedule, format_eps, parse_eps

    want = eval(want, {"Fixed": Fixed, "Heuristic": Heuristic, "Multiple": Multiple, "Schedule": Schedule})
    spec = parse_eps(given, schedules=("once",), rules=True)
    assert spec == want and type(spec) is type(want)
    assert parse_eps(spec, rules=True) is spec  # a spec is parsed once: parsing it again is the identity
    if not isinstance(spec, (Heuristic, Fixed)) or (isinstance(spec, Heuristic) and spec.rule is not None):
        assert parse_eps(format_eps(spec), schedules=("once",), rules=True) == spec
    arr = np.array([0.1, 0.2])
    assert parse_eps(arr).value is arr and parse_eps(torch.tensor(0.3)).value.item() == pytest.approx(0.3)


def test_parse_eps_spellings_of_the_heuristic_and_the_default_schedule():
    from cnce.eps import Heuristic, Schedule, format_eps, parse_eps

    assert parse_eps("default", auto="default") == Heuristic() and format_eps(Heuristic()) == "default"
    assert parse_eps("auto", schedules=("scale",), default="scale") == Schedule("scale", auto=True)
    assert parse_eps("scale", schedules=("scale",), default="scale") == Schedule("scale", auto=False)


@pytest.mark.parametrize("given,kw,message", [
    ("big", {}, r"eps must be 'auto', 'x<factor>' with factor > 0 or a number >= 0; got 'big'"),
    (True, {}, r"eps must be .*; got True"),
    (None, {}, r"eps must be .*; got None"),
    ("x0", {}, r"got 'x0'"), ("x-1", {}, r"got 'x-1'"), ("xnan", {}, r"got 'xnan'"),
    ("rule:authors", {}, r"got 'rule:authors'"),  # rule names only where rules=True
    ("rule:nope", {"rules": True}, r"'rule:<name>' with a name in \[.*'pilot'.*\] or a number >= 0; got 'rule:nope'"),
    ("x2", {"name": "eps_x", "kinds": "FH"}, r"eps_x must be 'auto' or a number >= 0; got 'x2'"),
    ("default", {}, r"got 'default'"),  # 'default' is the experiments' spelling only
    ("upward", {"schedules": ("once",)}, r"one of \('once',\).*got 'upward'"),
])
def test_parse_eps_errors_name_the_argument_and_value(given, kw, message):
    from cnce.eps import Fixed, Heuristic, parse_eps
    from cnce.errors import InputError

    if kw.get("kinds") == "FH":
        kw = kw | {"kinds": (Fixed, Heuristic)}
    with pytest.raises(InputError, match=message):
        parse_eps(given, **kw)


def test_eps_labels_of_the_network_study_round_trip():
    from cnce.eps import Fixed, Schedule, eps_label, parse_eps_label
    from cnce.errors import InputError

    for spec, text in [(Fixed(0.3), "eps=0.3"), (Fixed(1.0), "eps=1"), (Fixed(3.0), "eps=3"), (Schedule("carry"), "eps=carry")]:
        assert eps_label(spec) == text and parse_eps_label(text) == spec
    for bad in ("lr=0.005", "eps=", "eps=auto", 3):
        with pytest.raises(InputError, match="label must be"):
            parse_eps_label(bad)
