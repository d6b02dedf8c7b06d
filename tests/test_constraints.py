"""The one constraint system (cnce.constraints): known answers for each constraint, one wording,
wrong types are both ValueError and TypeError, ranges are InputError."""
from __future__ import annotations

import math

import numpy as np
import pytest

from cnce.constraints import Boolean, Integer, InvalidArgument, OneOf, Real, validate, validate_fields
from cnce.errors import InputError, InputTypeError
from cnce.options import FitOptions, LBFGSSettings, NewtonSettings


@pytest.mark.parametrize("c, good, bad_type, bad_value", [
    (Integer(lo=0), [0, 5, np.int64(3)], [True, 1.0, "1", None, np.bool_(True)], [-1]),
    (Integer(lo=1, hi=4), [1, 4], [2.0], [0, 5]),
    (Real(lo=0), [0, 0.5, 3, np.float32(2)], [False, "0.1", None], [-1e-9, math.inf, math.nan]),
    (Real(lo=0, lo_open=True), [1e-300], [True], [0, 0.0]),
    (Real(lo=0, hi=1, lo_open=True), [1, 0.5], ["x"], [0, 1.5]),
    (Boolean(), [True, False, np.bool_(False)], [0, 1, "True", None], []),
    (OneOf("a", "b"), ["a", "b"], [1, None], ["c"]),
])
def test_known_answers(c, good, bad_type, bad_value):
    for v in good:
        assert validate(v, c, "x") is v
    for v in bad_type:
        with pytest.raises(InvalidArgument, match=r"^x must be .*; got "):
            validate(v, c, "x")
    for v in bad_value:
        with pytest.raises(InputError, match=r"^x must be .*; got ") as e:
            validate(v, c, "x")
        assert not isinstance(e.value, TypeError)


def test_a_wrong_type_is_both_a_value_and_a_type_error():
    with pytest.raises(ValueError):
        validate(True, Integer(), "n")
    with pytest.raises(TypeError):
        validate(True, Integer(), "n")
    assert issubclass(InvalidArgument, InputTypeError) and issubclass(InvalidArgument, InputError)


def test_one_wording():
    cases = [(Integer(lo=1), 0, "n must be an integer >= 1; got 0"),
             (Integer(lo=1, hi=4), 5, "n must be an integer in [1, 4]; got 5"),
             (Real(lo=0), -1, "n must be a finite number >= 0; got -1"),
             (Real(lo=0, lo_open=True), 0, "n must be a finite number > 0; got 0"),
             (Real(lo=0, hi=1, lo_open=True), 2, "n must be a number in (0, 1]; got 2"),
             (Integer(lo=0) | None, -1, "n must be an integer >= 0 or None; got -1"),
             (Boolean(), 1, "n must be True or False; got 1")]
    for c, v, msg in cases:
        with pytest.raises(InputError) as e:
            validate(v, c, "n")
        assert str(e.value) == msg
    assert validate(None, Integer(lo=0) | None, "n") is None


def test_settings_name_their_class_and_field():
    with pytest.raises(InputError, match=r"^NewtonSettings.hess_last must be an integer >= 0 or None; got -1$"):
        NewtonSettings(hess_last=-1)
    with pytest.raises(InvalidArgument, match=r"^LBFGSSettings.history must be an integer >= 1; got 2.0$"):
        LBFGSSettings(history=2.0)
    with pytest.raises(InputError, match=r"^hess_points must be an integer >= 0 \(0 = all points\); got -1$"):
        FitOptions(hess_points=-1)
    with pytest.raises(InvalidArgument, match=r"^threads must be an integer >= 1 or None; got True$"):
        FitOptions(threads=True)


def test_validate_fields_prefix():
    class S:
        a = 0

    with pytest.raises(InputError, match=r"^S.a must be an integer >= 1; got 0$"):
        validate_fields(S(), {"a": Integer(lo=1)})
    with pytest.raises(InputError, match=r"^a must be an integer >= 1; got 0$"):
        validate_fields(S(), {"a": Integer(lo=1)}, prefix="")


def test_formulation_is_an_enum_equal_to_its_text():
    import json

    import cnce
    from cnce.backends.plan import Formulation, formulation
    from cnce.models import ICA, Gaussian

    f = formulation(Gaussian(dim=2), "cnce")
    assert f is Formulation.LINEAR and f == "linear" and f"{f}" == "linear" and json.dumps(f) == '"linear"'
    assert formulation(ICA(dim=2), "cnce") is Formulation.PROJECTIONS
    assert formulation(ICA(dim=2), "mle") is Formulation.LIKELIHOOD_LBFGS
    with pytest.raises(ValueError):
        Formulation("linear, something else")
    assert cnce.fit  # the package front door still resolves
