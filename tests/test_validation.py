"""Every bad input raises ``ValueError`` naming the argument and the value it got."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import cnce
from cnce.models import ICA, Bernoulli, Gaussian, LogNormal, Ring, get_model


@pytest.fixture
def data(gen):
    return torch.randn(2, 20, 5, generator=gen, dtype=torch.float64)


def _fit(model, x, **kw):
    kw.setdefault("max_iter", 2)
    return cnce.fit(model, x, **kw)


@pytest.mark.parametrize("shape,pattern", [((20,), r"x must have shape .*got shape \(20,\)"),
                                           ((1, 2, 20, 5), r"x must have shape .*got shape \(1, 2, 20, 5\)"),
                                           ((2, 20, 4), r"x must have D = 5 columns \(its last dimension\).*got shape \(2, 20, 4\)"),
                                           ((2, 1, 5), r"x must hold at least 2 data points.*got shape \(2, 1, 5\)"),
                                           ((0, 20, 5), r"x must hold at least one simulation.*got shape \(0, 20, 5\)")])
def test_wrong_data_shapes(shape, pattern):
    with pytest.raises(ValueError, match=pattern):
        _fit(Gaussian(), torch.zeros(shape, dtype=torch.float64) + 1.0)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_or_inf_in_data(data, bad):
    x = data.clone()
    x[1, 3, 2] = bad
    with pytest.raises(ValueError, match=r"x must be finite; simulation 1, row 3 is \[.*" + ("nan" if math.isnan(bad) else "-?inf") + r".*\] \(1 rows with NaN or inf\)"):
        _fit(Gaussian(), x)


def test_data_not_numbers():
    with pytest.raises(TypeError, match=r"x must be a torch.Tensor, a numpy array, .*got str"):
        _fit(Gaussian(), "data")
    with pytest.raises(TypeError, match=r"x must hold real numbers; got the complex dtype torch.complex128 \(a torch.Tensor\)"):
        _fit(Gaussian(dim=1), torch.ones(5, 1, dtype=torch.complex128))


@pytest.mark.parametrize("eps,shown", [(-0.1, r"-0\.1"), (math.nan, "nan"), (math.inf, "inf"), ("big", "'big'"), (True, "True")])
def test_bad_eps(data, eps, shown):
    with pytest.raises(ValueError, match=r"eps must .*got " + shown):
        _fit(Gaussian(), data, eps=eps)


def test_eps_tensor_shape_and_negative_entry(data):
    with pytest.raises(ValueError, match=r"eps must be a scalar or have shape \(2,\); got shape \(3,\)"):
        _fit(Gaussian(), data, eps=torch.ones(3))
    with pytest.raises(ValueError, match=r"eps must be finite and >= 0; got tensor\(\[0\.5, -1\.0\]\)"):
        _fit(Gaussian(), data, eps=torch.tensor([0.5, -1.0]))


@pytest.mark.parametrize("eps,shown", [(1.5, r"1\.5"), (-0.2, r"-0\.2")])
def test_bernoulli_eps_outside_unit_interval(eps, shown):
    x = torch.tensor([[0.0], [1.0], [1.0]])
    with pytest.raises(ValueError, match=r"eps must .*got " + shown):
        _fit(Bernoulli(), x, eps=eps)
    _fit(Bernoulli(), x, eps=1.0)  # the upper end point is admissible
    with pytest.raises(ValueError, match=r"eps must be > 0: at eps = 0 the conditional noise equals the data"):
        _fit(Bernoulli(), x, eps=0.0)


@pytest.mark.parametrize("kappa,shown", [(0, "0"), (-3, "-3"), (2.5, r"2\.5"), (2.0, r"the float 2\.0"), ("3", "'3'"), (True, "True")])
def test_bad_kappa(data, kappa, shown):
    with pytest.raises(ValueError, match=r"kappa must be an integer >= 1; got " + shown):
        _fit(Gaussian(), data, kappa=kappa)
    with pytest.raises(ValueError, match=r"kappa must be an integer >= 1; got " + shown):
        _fit(Gaussian(), data, kappa=kappa, method="nce")


def test_numpy_integer_kappa_is_accepted(data):
    assert _fit(Gaussian(), data, kappa=np.int64(2)).kappa == 2


def test_unknown_method_or_model(data):
    with pytest.raises(ValueError, match=r"method must be one of \('cnce', 'nce', 'mle', 'sm'\); got 'ml'"):
        _fit(Gaussian(), data, method="ml")
    with pytest.raises(ValueError, match=r"method 'sm' does not apply to ICA\(dim=4\)"):
        _fit(ICA(), data[..., :4], method="sm")
    with pytest.raises(ValueError, match=r"method 'nce' does not apply to Bernoulli\(\)"):
        _fit(Bernoulli(), torch.tensor([[0.0], [1.0]]), method="nce")
    with pytest.raises(ValueError, match=r"model must be a cnce.models.UnnormalisedModel instance; got 'gaussian'"):
        _fit("gaussian", data)
    with pytest.raises(ValueError, match=r"model must be one of .*got 'gauss'"):
        get_model("gauss")


def test_other_fit_arguments(data):
    with pytest.raises(ValueError, match=r"theta0 must have shape \(2, 15\) or \(15,\); got shape \(2, 14\)"):
        _fit(Gaussian(), data, theta0=torch.zeros(2, 14))
    with pytest.raises(ValueError, match=r"theta0 contains NaN"):
        _fit(Gaussian(), data, theta0=torch.full((15,), math.nan))
    with pytest.raises(ValueError, match=r"noise_base must have shape \(2, >=20, >=10, 5\); got \(2, 20, 3, 5\)"):
        _fit(Gaussian(), data, noise_base=torch.zeros(2, 20, 3, 5))
    with pytest.raises(ValueError, match=r"noise must be a cnce.noise.ConditionalNoise; got 'gauss'"):
        _fit(Gaussian(), data, noise="gauss")
    with pytest.raises(ValueError, match=r"device must be .*got 'tpu'"):
        _fit(Gaussian(), data, device="tpu")
    with pytest.raises(ValueError, match=r"dtype must be torch.float64 or torch.float32; got torch.float16"):
        _fit(Gaussian(), data, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"seed must be an integer or a torch.Generator; got 'abc'"):
        _fit(Gaussian(), data, seed="abc")
    with pytest.raises(ValueError, match=r"sim_batch must be an integer >= 1; got 0"):
        _fit(Gaussian(), data, sim_batch=0)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"device='cuda' was requested but CUDA is not available"):
            _fit(Gaussian(), data, device="cuda")


def test_model_specific_inputs(gen):
    with pytest.raises(ValueError, match=r"x must hold only 0 and 1 for the Bernoulli model; got 0\.5"):
        _fit(Bernoulli(), torch.tensor([[0.0], [0.5], [1.0]]))
    with pytest.raises(ValueError, match=r"theta of the Bernoulli model must be positive; got min -1\.0"):
        _fit(Bernoulli(), torch.tensor([[0.0], [1.0]]), theta0=torch.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"x must be positive for the log-normal maximum-likelihood estimate"):
        _fit(LogNormal(), torch.tensor([[1.0], [-0.5]]), method="mle")
    with pytest.raises(ValueError, match=r"mu must be a positive float .*got -1\.0"):
        Ring(mu=-1.0)
    with pytest.raises(ValueError, match=r"dim must be an integer >= 2; got 1"):
        Ring(dim=1)
    with pytest.raises(ValueError, match=r"dim must be an integer >= 1; got 0"):
        Gaussian(dim=0)
    with pytest.raises(ValueError, match=r"radial must be 'exact' or 'authors'; got 'normal'"):
        Ring().sample(torch.tensor([1.0]), 5, gen, radial="normal")
    with pytest.raises(ValueError, match=r"theta \(the precision gamma\) must be > 0 to sample; got -2\.0"):
        Ring().sample(torch.tensor([-2.0]), 5, gen)
    with pytest.raises(ValueError, match=r"this Ring has mu for 2 simulations but got 3"):
        Ring(mu=torch.tensor([5.0, 6.0])).log_phi(torch.ones(3, 4, 5), torch.ones(3, 1))
    with pytest.raises(ValueError, match=r"u must have shape \(S, M, 5\) or \(M, 5\); got shape \(4, 3\)"):
        Gaussian().log_phi(torch.ones(4, 3), torch.ones(15))
    with pytest.raises(ValueError, match=r"theta must have shape \(1, 15\) or \(15,\); got shape \(14,\)"):
        Gaussian().log_phi(torch.ones(4, 5), torch.ones(14))
    with pytest.raises(ValueError, match=r"n must be an integer >= 1; got 0"):
        Gaussian().sample(torch.ones(15), 0)
    with pytest.raises(ValueError, match=r"theta_hat has 3 rows but theta_true has 2"):
        Gaussian().error(torch.ones(3, 15), torch.ones(2, 15))


@pytest.mark.parametrize("method", ["mle", "sm"])
def test_arguments_that_do_not_apply_to_the_method_are_named(data, method):
    base = torch.zeros(2, 20, 3, 5, dtype=torch.float64)
    with pytest.raises(ValueError, match=rf"kappa=3 applies to methods \('cnce', 'nce'\) only; method '{method}' takes none"):
        _fit(Gaussian(), data, method=method, kappa=3)
    with pytest.raises(ValueError, match=r"noise=.* applies to .*; noise_base=tensor of shape \(2, 20, 3, 5\) applies to"):
        _fit(Gaussian(), data, method=method, noise=cnce.noise.GaussianNoise(), noise_base=base)
    _fit(Gaussian(), data, method=method)  # the defaults are not "given"


def test_eps_of_any_numeric_kind(data):
    for eps in (np.float64(0.25), torch.tensor(0.25), np.array([0.25, 0.25])):
        assert torch.equal(_fit(Gaussian(), data, eps=eps).eps, torch.full((2,), 0.25, dtype=torch.float64))
    with pytest.raises(ValueError, match="eps_rule applies to eps='auto' only"):
        _fit(Gaussian(), data, eps=0.3, eps_rule=cnce.eps.AUTHORS_RULE)


def test_check_rows_for_one_problems_data():
    from cnce._validation import check_rows

    x = check_rows(np.ones((4, 2), dtype=np.float32))
    assert x.dtype == torch.float32 and x.shape == (4, 2)
    assert check_rows([[1, 2], [3, 4]]).dtype == torch.float64
    with pytest.raises(ValueError, match=r"x_val must have D = 3 columns .*; got shape \(4, 2\)"):
        check_rows(torch.ones(4, 2), name="x_val", D=3)
    bad = torch.ones(4, 2)
    bad[2, 1] = math.nan
    with pytest.raises(ValueError, match=r"x must be finite; row 2 is \[1.0, nan\]"):
        check_rows(bad)
    with pytest.raises(ValueError, match=r"x must have shape \(N, D\)"):
        check_rows(torch.ones(2, 4, 2))


# ---------------------------------------------------------------- the one data validator and dtype policy
def test_data_policy_refuses_by_type_naming_argument_type_and_what_is_accepted():
    from cnce.errors import InputDtypeError

    accepted = r"torch.Tensor, a numpy array, a pandas DataFrame"
    cases = [(np.array([["a", "b"], ["c", "d"]]), r"numpy.ndarray of string dtype"),
             (np.array([[1, None], [2, 3]], dtype=object), r"numpy.ndarray of object"),
             (np.ones((4, 2), dtype=np.complex128), r"numpy.ndarray of complex"),
             ([[1.0, 2.0], [3.0]], r"list that is not a rectangular array"),
             ({"a": 1}, r"got dict"), (None, r"got NoneType"),
             (pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["u", "v", "w"]}), r"pandas.DataFrame with non-numeric columns 'b'"),
             (pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [True, False, True]}), r"pandas.DataFrame with boolean columns \['b'\]")]
    for bad, shown in cases:
        with pytest.raises(InputDtypeError, match=r"x must be .*" + accepted + r".*" + shown):
            _fit(Gaussian(dim=2), bad)
    # an InputDtypeError is a TypeError and (as before the hierarchy) a ValueError
    with pytest.raises(ValueError):
        _fit(Gaussian(dim=2), "data")


def test_booleans_refused_for_continuous_models_accepted_for_discrete_ones():
    xb = torch.rand(50, 2, generator=torch.Generator().manual_seed(0)) > 0.5
    x1 = xb[:, :1]
    with pytest.raises(TypeError, match=r"x must hold real numbers; got dtype torch.bool \(a torch.Tensor; booleans "
                                        r"are data of discrete models only: cast it with x.float\(\)"):
        _fit(Gaussian(dim=2), xb)
    with pytest.raises(TypeError, match=r"got dtype torch.bool \(a numpy.ndarray"):
        _fit(Gaussian(dim=2), xb.numpy())
    r = _fit(Bernoulli(), x1, max_iter=3)  # discrete data: booleans are the data
    assert torch.isfinite(r.theta).all()


def test_dataframes_grad_tensors_and_devices():
    from cnce._validation import check_rows
    from cnce.errors import InputError

    g = torch.Generator().manual_seed(1)
    x = torch.randn(200, 2, generator=g, dtype=torch.float64)
    frame = pd.DataFrame({"a": x[:, 0].numpy(), "b": x[:, 1].numpy()})
    assert torch.equal(check_rows(frame, D=2), x)
    r1, r2 = _fit(Gaussian(dim=2), frame), _fit(Gaussian(dim=2), x)
    assert torch.equal(r1.theta, r2.theta)
    xg = x.clone().requires_grad_(True)
    out = check_rows(xg)
    assert not out.requires_grad and torch.equal(out, x)
    assert torch.equal(_fit(Gaussian(dim=2), xg).theta, r2.theta)
    with pytest.raises(InputError, match=r"x is on the meta device .*got torch.Tensor on device 'meta'"):
        _fit(Gaussian(dim=2), torch.empty(10, 2, device="meta"))
    with pytest.raises(InputError, match=r"x must be finite; row 1 is \[1.0, nan\]"):  # pandas' NA is missing data
        check_rows(pd.DataFrame({"a": [0.5, 1.0, 2.0], "b": pd.array([1, None, 3], dtype="Int64")}))
    assert check_rows(x.to_sparse()).layout == torch.strided
    assert check_rows(np.ones((3, 2), dtype=np.float16)).dtype == torch.float32
    assert check_rows(np.arange(6, dtype=np.uint32).reshape(3, 2)).dtype == torch.float64
