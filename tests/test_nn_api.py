"""cnce.nn as a practitioner meets it: loss objects in a loop of one's own (bitwise the
trainer), resuming, every bad input named before a step, a likelihood that refuses an improper
density, and Langevin sampling on known densities."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import cnce.eps as cnce_eps
import cnce.nn as nn
from cnce.errors import InputDtypeError, InputError, InputTypeError, TrainingError
from cnce.provenance import derive_seed


def _x(n=300, seed=0, name="8gaussians"):
    return nn.sample_toy(name, n, generator=torch.Generator().manual_seed(seed)).float()


def _net(seed=0):
    return nn.MLPEnergy(hidden=8, layers=1, seed=seed)


# --------------------------------------------------------------------------- loss objects
@pytest.mark.parametrize("method", ["cnce", "nce", "dsm", "ssm"])
def test_trainer_equals_a_users_loop_bitwise(method):
    """The loop written out in cnce.nn.train's docstring gives bitwise the trainer's network."""
    x, seed, steps, B = _x(), 4, 12, 32
    a = _net()
    nn.train(a, x, method, kappa=3, steps=steps, batch_size=B, lr=1e-2, seed=seed, progress=False,
             **({"eps_every": 5, "eps": "rechoose"} if method == "cnce" else {}))
    b = _net()
    kw = {"every": 5, "eps": "rechoose"} if method == "cnce" else {}
    loss = {"cnce": nn.CNCELoss, "nce": lambda k, seed: nn.NCELoss(k, data=x, seed=seed), "dsm": nn.DSMLoss,
            "ssm": nn.SSMLoss}[method](3, seed=derive_seed(seed, "noise"), **kw)
    opt = torch.optim.Adam(list(b.parameters()) + list(loss.parameters()), lr=1e-2)
    g = torch.Generator().manual_seed(derive_seed(seed, "batch"))
    for _ in range(steps):
        xb = x[torch.randint(0, len(x), (B,), generator=g)]
        opt.zero_grad()
        loss(b, xb).backward()
        opt.step()
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)


def test_loss_state_dict_continues_a_loop_exactly():
    x = _x()
    net = _net()
    loss = nn.CNCELoss(4, eps="carry", every=3, seed=1)
    for _ in range(4):
        loss(net, x[:32])
    state = loss.state_dict()
    want = [float(loss(net, x[:32])) for _ in range(5)]
    again = nn.CNCELoss(4, eps="carry", every=3, seed=99)
    again.load_state_dict(state)
    assert again.eps == loss.eps or again.calls == 4
    assert [float(again(net, x[:32])) for _ in range(5)] == want
    with pytest.raises(ValueError, match="schedule"):
        nn.CNCELoss(4, eps="once", seed=1).load_state_dict(state)


def test_cnce_loss_chooses_eps_itself_and_on_request():
    x = _x()
    net = _net()
    loss = nn.CNCELoss(5, seed=0)  # eps="auto"
    assert loss.schedule == nn.DEFAULT_SCHEDULE and loss.eps is None
    with pytest.raises(RuntimeError, match="eps has not been chosen"):
        loss(net, x, generator=torch.Generator())
    value = loss(net, x[:64])
    assert value.shape == () and loss.eps > 0 and len(loss.eps_runs) == 1
    e = loss.choose_eps(net, x)
    assert e == loss.eps and len(loss.eps_runs) == 2
    fixed = nn.CNCELoss(5, eps=np.float32(0.5))
    assert fixed.eps == 0.5 and nn.CNCELoss(5, eps=torch.tensor(0.25)).eps == 0.25
    assert nn.CNCELoss(5, eps="scale")(net, x) > 0


def test_energy_adapter_is_the_negated_network():
    x = _x()
    net = _net()

    class Energy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = net

        def forward(self, u):
            return -self.inner(u)

    a = nn.DSMLoss(3, sigma=0.2, seed=0)(net, x[:20])
    b = nn.DSMLoss(3, sigma=0.2, seed=0, energy=True)(Energy(), x[:20])
    assert torch.equal(a, b)


# --------------------------------------------------------------------------- errors naming the argument
def test_data_errors_name_x():
    x, net = _x(), _net()
    with pytest.raises(ValueError, match="x must hold real numbers; got dtype torch.bool"):
        nn.train(net, x > 0, steps=1)
    with pytest.raises(ValueError, match="x must hold real numbers; got the complex dtype"):
        nn.train(net, x.to(torch.complex64), steps=1)
    r = nn.train(_net(), (x * 10).long(), "dsm", steps=2, batch_size=8, kappa=2, progress=False)  # integers are cast
    assert r.steps_run == 2
    with pytest.raises(ValueError, match=r"x has shape \(2, 300\).*did you mean x.T"):
        nn.train(net, x.T.contiguous(), steps=1)


@pytest.mark.parametrize("method,kw,name", [
    ("dsm", {"eps": 0.5}, "eps"), ("nce", {"eps": 0.5}, "eps"), ("cnce", {"sigma": 0.1}, "sigma"),
    ("cnce", {"ssm_variance_reduction": False}, "ssm_variance_reduction"), ("dsm", {"eps_every": 3}, "eps_every"),
    ("ssm", {"noise": nn.losses.GaussianNoise()}, "noise"), ("nce", {"eps_rule": cnce_eps.NETWORK_RULE}, "eps_rule"),
])
def test_arguments_that_do_not_apply_are_refused(method, kw, name):
    with pytest.raises(ValueError, match=f"{name}=.* applies to method '"):
        nn.train(_net(), _x(), method, steps=1, **kw)


def test_numbers_as_tensors_and_numpy_scalars():
    x = _x()
    r = nn.train(_net(), x, eps=torch.tensor(0.5), seed=np.int64(3), steps=2, batch_size=8, kappa=2, progress=False)
    assert r.eps == 0.5 and r.seed == 3
    nn.train(_net(), x, eps=np.float32(0.5), seed=torch.tensor(1), steps=1, batch_size=8, kappa=2, progress=False)
    with pytest.raises(ValueError, match=r"eps must be a real number \(a number or a 0-d tensor\); got an array of shape \(2,\)"):
        nn.train(_net(), x, eps=torch.tensor([0.5, 0.6]), steps=1)
    with pytest.raises(ValueError, match="seed must be an integer >= 0; got -1"):
        nn.train(_net(), x, seed=-1, steps=1)
    with pytest.raises(ValueError, match="seed must be an integer >= 0; got 1.5"):
        nn.train(_net(), x, seed=1.5, steps=1)
    with pytest.raises(ValueError, match="lr must be a finite number > 0; got -0.1"):
        nn.train(_net(), x, lr=-0.1, steps=1)


class _Detached(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 1)

    def forward(self, u):
        return self.lin(u.detach()).squeeze(-1) * 0 + self.lin.bias.expand(u.shape[0])


class _Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 1)

    def forward(self, u):
        return self.lin(u).squeeze(-1)


def test_networks_that_cannot_be_trained_are_named():
    x = _x()
    with pytest.raises(ValueError, match="log_phi does not depend on its input"):
        nn.train(_Detached(), x, "cnce", steps=1)
    with pytest.raises(ValueError, match="log_phi does not depend on its input"):
        nn.train(_Detached(), x, "ssm", steps=1)
    for m in ("dsm", "ssm"):
        with pytest.raises(ValueError, match=f"log_phi is linear in its input.*method='{m}'"):
            nn.train(_Linear(), x, m, steps=1)
    frozen = _net()
    frozen.requires_grad_(False)
    with pytest.raises(ValueError, match="log_phi has no trainable parameter"):
        nn.train(frozen, x, steps=1)


def test_a_non_finite_loss_names_lr_for_every_method():
    x = _x()
    for m in nn.METHODS:
        net = _net()
        with torch.no_grad():
            net.net[0].weight.mul_(1e30)
            net.net[2].weight.mul_(1e30)
        with pytest.raises(TrainingError, match="lower lr"):
            nn.train(net, x, m, steps=3, batch_size=8, kappa=2, progress=False)


# --------------------------------------------------------------------------- checkpoints
def test_checkpoint_paths_and_files_that_are_not_ours(tmp_path):
    x = _x()
    with pytest.raises(ValueError, match="checkpoint must be a file path; got the directory"):
        nn.train(_net(), x, steps=1, checkpoint=tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ValueError, match="checkpoint .* cannot be written"):
        nn.train(_net(), x, steps=1, checkpoint=blocker / "run.pt")
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"\x80\x04not a pickle at all")
    with pytest.raises(ValueError, match="is not a checkpoint of cnce.nn.train"):
        nn.train(_net(), x, steps=1, checkpoint=garbage)
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(3)}, other)
    with pytest.raises(ValueError, match="is not a checkpoint of cnce.nn.train"):
        nn.train(_net(), x, steps=1, checkpoint=other)


def test_resume_refuses_other_networks_and_data_and_grows_steps_for_every_method(tmp_path):
    x = _x()
    kw = dict(kappa=2, batch_size=16, lr=1e-2, seed=0, progress=False)
    ck = tmp_path / "a.pt"
    nn.train(_net(), x, steps=4, checkpoint=ck, **kw)
    with pytest.raises(ValueError, match="log_phi has another architecture"):
        nn.train(nn.MLPEnergy(hidden=9, layers=1), x, steps=6, checkpoint=ck, **kw)
    with pytest.raises(ValueError, match="x is not the data checkpoint"):
        nn.train(_net(), x.flip(1), steps=6, checkpoint=ck, **kw)
    for m in nn.METHODS:
        ck = tmp_path / f"{m}.pt"
        full = _net()
        nn.train(full, x, m, steps=8, **kw)
        part = _net()
        nn.train(part, x, m, steps=4, checkpoint=ck, **kw)
        r = nn.train(part, x, m, steps=8, checkpoint=ck, **kw)  # steps grow: 4 -> 8
        assert r.resumed_from == 4 and r.steps_run == 4
        for p, q in zip(full.parameters(), part.parameters()):
            assert torch.equal(p, q), m


# --------------------------------------------------------------------------- the likelihood's checks
def test_log_likelihood_refuses_an_energy_that_grows_linearly():
    x = _x(500)
    mix = nn.eight_gaussians_log_prob
    for f in (lambda u: 0.8 * u[:, 0], lambda u: torch.logaddexp(mix(u), 0.8 * u[:, 0] - 3.0),
              lambda u: torch.logaddexp(mix(u), u.norm(dim=-1) - 6.0)):
        with pytest.raises(nn.ImproperDensityError, match=r"box \(\(-4.5, 4.5\), \(-4.5, 4.5\)\) is widened"):
            nn.log_likelihood(f, x)
        with pytest.warns(RuntimeWarning, match="mass outside"):
            assert math.isnan(nn.log_likelihood(f, x, on_fail="warn"))
    c = nn.normaliser_check(lambda u: mix(u) + 3.0)
    assert c.ok and abs(c.log_z - 3.0) < 1e-5 and c.outside < 1e-5
    narrow = lambda u: -0.5 * ((u - 0.1) ** 2).sum(-1) / 0.05**2  # noqa: E731  (std 0.05, cells of 0.45)
    with pytest.raises(nn.ImproperDensityError, match="resolution error .* raise n"):
        nn.log_likelihood(narrow, x, n=20)
    assert nn.normaliser_check(narrow, n=300).ok


def test_rectangular_boxes():
    """A Gaussian N(0, I) normalised on [-6, 6] x [-7, 7]: log Z = log 2 pi; on [0, 6] x [-6, 6]: log pi."""
    f = lambda u: -0.5 * (u**2).sum(-1)  # noqa: E731
    assert abs(nn.grid_log_normaliser(f, box=((-6, 6), (-7, 7))) - math.log(2 * math.pi)) < 1e-6
    assert abs(nn.grid_log_normaliser(f, box=((0, 6), (-6, 6))) - math.log(math.pi)) < 1e-4
    with pytest.raises(ValueError, match="box must be"):
        nn.grid_log_normaliser(f, box=((1, 0), (0, 1)))
    with pytest.raises(ValueError, match="x must lie in the box"):
        nn.log_likelihood(f, torch.tensor([[5.0, 0.0], [0.0, 0.0]]), box=((-1, 1), (-1, 1)))


# --------------------------------------------------------------------------- Langevin on known densities
def test_langevin_on_a_gaussian_energy_matches_its_mean_and_covariance():
    e = nn.GaussianEnergy()
    mu = torch.tensor([0.5, -1.0], dtype=torch.float64)
    cov = torch.tensor([[1.0, 0.6], [0.6, 2.0]], dtype=torch.float64)
    Lp = torch.linalg.cholesky(torch.linalg.inv(cov))
    with torch.no_grad():
        e.mu.copy_(mu)
        e.raw.copy_(torch.stack([Lp[0, 0].log(), Lp[1, 0], Lp[1, 1].log()]))
    x0 = torch.randn(4000, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 3
    for metropolis in (False, True):
        s, info = nn.langevin(e, x0, steps=300, step_size=0.05, seed=1, metropolis=metropolis, return_info=True)
        # 4000 independent chains: standard error of the mean <= sqrt(2 / 4000) = 0.022; ULA's bias at h = 0.05 is
        # a few per cent of the covariance
        assert (s.mean(0) - mu).abs().max() < 0.08, (metropolis, s.mean(0))
        assert (torch.cov(s.T) - cov).abs().max() < 0.15, (metropolis, torch.cov(s.T))
        if metropolis:
            assert 0.5 < info["acceptance"][0] <= 1.0


def test_langevin_weights_a_mixture_right():
    """0.3 N((-1.5, 0), I) + 0.7 N((1.5, 0), I): the mean responsibility of the right component
    over 4000 chains must be 0.7 within 4 standard errors (annealed MALA)."""
    w = torch.tensor([0.3, 0.7], dtype=torch.float64)
    mu = torch.tensor([[-1.5, 0.0], [1.5, 0.0]], dtype=torch.float64)

    def log_phi(u):
        return torch.logsumexp(-0.5 * ((u.unsqueeze(1) - mu) ** 2).sum(-1) + w.log(), -1)

    x0 = torch.randn(4000, 2, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    s = nn.langevin(log_phi, x0, steps=400, step_size=0.1, seed=3, metropolis=True, temperatures=(4, 2, 1))
    resp = torch.softmax(-0.5 * ((s.unsqueeze(1) - mu) ** 2).sum(-1) + w.log(), -1)[:, 1]
    se = float(resp.std()) / math.sqrt(len(resp))
    assert abs(float(resp.mean()) - 0.7) < 4 * se + 0.01, (float(resp.mean()), se)


def test_langevin_errors_name_the_argument():
    f = lambda u: -(u**2).sum(-1)  # noqa: E731
    with pytest.raises(ValueError, match="step_size must be a finite number > 0"):
        nn.langevin(f, torch.zeros(3, 2), 5, -1.0)
    with pytest.raises(ValueError, match="x0 must have shape"):
        nn.langevin(f, torch.zeros(3), 5, 0.1)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        nn.langevin(f, torch.zeros(3, 2), 5, 0.1, seed=-2)
    with pytest.raises(ValueError, match="steps must be >= the number of temperatures"):
        nn.langevin(f, torch.zeros(3, 2), 2, 0.1, temperatures=(3, 2, 1))


def test_the_noise_bound_applies_to_every_eps_of_the_loss():
    """A noise's largest admissible eps (its declared ``eps_max``) bounds a fixed eps, the
    searched schedules' rule and the scale rule, as in cnce.fit (cnce.eps.resolve_eps)."""
    from cnce.noise import BernoulliFlipNoise

    with pytest.raises(ValueError, match=r"eps must lie in \[0, 1.0\] for this noise"):
        nn.CNCELoss(eps=2.0, noise=BernoulliFlipNoise())
    assert nn.CNCELoss(eps="once", noise=BernoulliFlipNoise()).rule.limit == 1.0
    loss = nn.CNCELoss(eps="scale", factor=100.0, noise=BernoulliFlipNoise())
    x = (torch.rand(64, 3, generator=torch.Generator().manual_seed(0)) > 0.5).double()
    loss(lambda u: -(u ** 2).sum(-1), x)
    assert loss.eps == 1.0


# --------------------------------------------------------------------------- guarded losses (issue 46)
@pytest.mark.parametrize("make", [lambda: nn.CNCELoss(3, eps=0.3, seed=0), lambda: nn.NCELoss(3, seed=0),
                                  lambda: nn.DSMLoss(3, seed=0), lambda: nn.SSMLoss(3, seed=0)])
def test_loss_objects_check_their_batch_like_train(make):
    x, net = _x(), _net()
    bad = x[:16].clone()
    bad[3, 1] = float("nan")
    with pytest.raises(InputError, match=r"x must be finite; row 3"):
        make()(net, bad)
    with pytest.raises(InputDtypeError, match="x must hold real numbers; got dtype torch.bool"):
        make()(net, x[:16] > 0)
    with pytest.raises(InputDtypeError, match="complex"):
        make()(net, x[:16].to(torch.complex64))
    with pytest.raises(InputError, match=r"x has shape \(16, 3\).*fails on it"):
        make()(net, torch.zeros(16, 3))
    with pytest.raises(InputError, match=r"x must have shape \(N, D\)"):
        make()(net, x[:16, 0])
    # float64 and integer batches are cast to the network's float32, as train casts them
    a = make()(net, x[:16].double())
    b = make()(net, x[:16])
    assert a.dtype == torch.float32 and torch.equal(a, b)
    assert torch.isfinite(make()(net, (x[:16] * 10).long()))
    loss = make()
    loss(net, x[:16])
    with pytest.raises(InputError, match="D = 2 columns"):
        loss(net, torch.zeros(16, 5))


def test_b1_outputs_reduction_and_none_means_auto():
    x, net = _x(), _net()

    class Column(torch.nn.Module):  # ends in Linear(h, 1): returns (B, 1)
        def __init__(self):
            super().__init__()
            self.inner = net

        def forward(self, u):
            return self.inner(u).unsqueeze(-1)

    for make in (lambda **k: nn.CNCELoss(3, eps=0.3, seed=0, **k), lambda **k: nn.NCELoss(3, seed=0, **k),
                 lambda **k: nn.DSMLoss(3, seed=0, **k), lambda **k: nn.SSMLoss(3, seed=0, **k)):
        mean = make()(net, x[:16])
        assert torch.equal(make()(Column(), x[:16]), mean)
        per = make(reduction="none")(net, x[:16])
        assert per.shape == (16,)
        torch.testing.assert_close(per.mean(), mean, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(make(reduction="sum")(net, x[:16]), per.sum(), rtol=1e-6, atol=1e-6)
    with pytest.raises(InputError, match="reduction must be one of"):
        nn.SSMLoss(3, reduction="batchmean")
    assert nn.CNCELoss(3, eps=None).schedule == nn.CNCELoss(3, eps="auto").schedule
    assert nn.DSMLoss(3, sigma=None).sigma is None
    r = nn.train(_net(), x, "cnce", eps=None, steps=2, batch_size=8, kappa=2, progress=False)
    assert r.eps > 0


def test_noise_follows_torchs_global_generator_unless_seeded():
    x, net = _x(), _net()
    loss = nn.CNCELoss(3, eps=0.3)
    torch.manual_seed(5)
    a = loss(net, x[:16])
    torch.manual_seed(5)
    b = loss(net, x[:16])
    torch.manual_seed(6)
    c = loss(net, x[:16])
    assert torch.equal(a, b) and not torch.equal(a, c)
    torch.manual_seed(5)
    s1 = nn.CNCELoss(3, eps=0.3, seed=1)(net, x[:16])
    torch.manual_seed(6)
    s2 = nn.CNCELoss(3, eps=0.3, seed=1)(net, x[:16])
    assert torch.equal(s1, s2)
    g = torch.Generator().manual_seed(3)
    h = torch.Generator().manual_seed(3)
    assert torch.equal(nn.DSMLoss(3, generator=g)(net, x[:16]), nn.DSMLoss(3, generator=h)(net, x[:16]))
    with pytest.raises(InputError, match="seed or generator, not both"):
        nn.DSMLoss(3, seed=1, generator=g)
    with pytest.raises(InputTypeError, match="generator must be a torch.Generator"):
        nn.DSMLoss(3, generator=5)


def test_auto_eps_is_rechecked_when_the_first_batch_is_not_representative():
    """A sorted first batch (the smallest x1 values) has about a third of the data's scale: the
    warm-up sees it and chooses again on all rows seen; the choice is recorded."""
    x, net = _x(1000), _net()
    order = x[:, 0].argsort()
    xs = x[order]
    loss = nn.CNCELoss(3, seed=0)  # eps="auto"
    loss(net, xs[:64])
    first = loss.eps
    assert loss.eps_choice["why"] == "the first batch"
    g = torch.Generator().manual_seed(0)
    for _ in range(nn.objectives.DEFAULT_WARMUP):
        loss(net, x[torch.randint(0, len(x), (64,), generator=g)])
    whole = nn.DEFAULT_FACTOR * float(x.std(0).mean())
    assert abs(first / whole - 1) > 0.3  # the sorted batch was far off
    assert abs(loss.eps / whole - 1) < 0.1  # the re-check brought eps to the data's scale
    assert "re-checked" in loss.eps_choice["why"] and loss.eps_choice["rows"] > 64
    assert len(loss.eps_runs) >= 2
    # searched schedules re-run the heuristic once, at the end of the warm-up, on rows of every batch
    once = nn.CNCELoss(3, eps="once", seed=0, warmup=5)
    once(net, xs[:64])
    for _ in range(5):
        once(net, x[torch.randint(0, len(x), (64,), generator=g)])
    assert len(once.eps_runs) == 2 and "re-checked" in once.eps_choice["why"]
    # a representative first batch is kept
    rnd = nn.CNCELoss(3, seed=0)
    for _ in range(nn.objectives.DEFAULT_WARMUP + 2):
        rnd(net, x[torch.randint(0, len(x), (256,), generator=g)])
    assert len(rnd.eps_runs) == 1


def test_nce_normaliser_is_a_parameter_and_a_stalled_one_is_caught():
    x = _x()
    net, loss = _net(), nn.NCELoss(3, data=x, seed=0)
    assert [p is loss.log_normaliser for p in loss.parameters()] == [True]
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)  # the normaliser forgotten
    with pytest.warns(RuntimeWarning, match="log_normaliser has stayed"):  # a loop without the check
        for i in range(nn.objectives.STALL_CALLS + 2):
            opt.zero_grad()
            v = loss(net, x[:32])
            v.backward()
            opt.step()
    with pytest.raises(TrainingError, match="stalled normaliser.*loss.parameters"):
        nn.HealthCheck(loss, lr=1e-2)(v, net, x[:32])
    # with loss.parameters() in the optimiser it trains and nothing is raised
    net, loss = _net(), nn.NCELoss(3, data=x, seed=0)
    opt = torch.optim.Adam(list(net.parameters()) + list(loss.parameters()), lr=1e-2)
    check = nn.HealthCheck(loss, lr=1e-2)
    for i in range(nn.objectives.STALL_CALLS + 5):
        opt.zero_grad()
        v = loss(net, x[:32])
        v.backward()
        opt.step()
        check(v, net, x[:32])
    assert float(loss.log_normaliser) != 0.0


@pytest.mark.parametrize("method,cause", [("cnce", "blow-up|collapse"), ("nce", "blow-up|collapse")])
def test_train_catches_divergence_and_keeps_the_last_good_checkpoint(tmp_path, method, cause):
    x = nn.sample_toy("mixture3", 600, generator=torch.Generator().manual_seed(0)).float()
    ck = tmp_path / "run.pt"
    net = nn.MLPEnergy(2, 16, 2, seed=0)
    with pytest.raises(TrainingError, match=f"({cause}).*lower lr.*last good") as info:
        # healthy for 20 steps at lr 1e-3, then lr 1e6 from a checkpoint on
        nn.train(net, x, method, steps=20, batch_size=64, lr=1e-3, seed=0, progress=False)
        nn.train(net, x, method, steps=60, batch_size=64, lr=1e6, seed=0, progress=False, checkpoint=ck,
                 checkpoint_every=1)
    assert info.value.last_good is not None and info.value.last_good >= 1
    state = torch.load(ck, weights_only=True)
    assert state["step"] == info.value.last_good
    # the check itself, on the values of a healthy and a collapsed CNCE run
    check = nn.HealthCheck(nn.CNCELoss(3, eps=0.3), lr=1.0, patience=2)
    flat = lambda u: u.sum(-1) * 0 + 1.0  # noqa: E731
    check(1.2)
    with pytest.raises(TrainingError, match="no-information value 2 log 2"):
        for _ in range(3):
            check(nn.losses.LOG4, flat, x[:8])


# --------------------------------------------------------------------------- the sampler says when it is wrong
def test_langevin_on_a_student_t_known_answer():
    """A heavy-tailed target, Student-t with 5 degrees of freedom in 2-D: annealed MALA with
    adaptation must reproduce the quantiles of |x_1| (exact from scipy) within 6 % (the
    median's standard error over 4000 chains is about 2 %); the old even split of (4, 2, 1)
    with a fixed small step came out 1.6-1.8x too wide. At T = 4 this target's tempered
    density is improper ((1 + r^2/5)^(-7/8) in 2-D): the sampler says so."""
    from scipy import stats

    nu, D = 5.0, 2

    def log_phi(u):
        return -(nu + D) / 2 * torch.log1p((u**2).sum(-1) / nu)

    x0 = 3 * torch.randn(4000, D, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    s, info = nn.langevin(log_phi, x0, steps=600, step_size=0.01, seed=1, metropolis=True, temperatures=(2, 1),
                          return_info=True)
    assert info["steps"] == [150, 450] and len(info["step_size"]) == 2
    assert abs(info["acceptance"][-1] - nn.sampling.TARGET_ACCEPTANCE) < 0.1
    # the marginal of a bivariate t with nu degrees of freedom is a univariate t with nu
    for q in (0.5, 0.9):
        want = stats.t.ppf(0.5 + q / 2, nu)
        got = float(torch.quantile(s[:, 0].abs(), q))
        assert abs(got / want - 1) < 0.06, (q, got, want)
    with pytest.warns(RuntimeWarning, match="at T = 4.*may be improper"):
        nn.langevin(log_phi, x0[:500], steps=400, step_size=0.01, seed=1, metropolis=True, temperatures=(4, 2, 1))


def test_langevin_warns_and_refuses():
    f = lambda u: -0.5 * (u**2).sum(-1)  # noqa: E731
    x0 = torch.randn(500, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    with pytest.warns(RuntimeWarning, match="steps are so small"):
        nn.langevin(f, x0, 20, 1e-6, seed=0, metropolis=True, adapt=False)
    with pytest.warns(RuntimeWarning, match="barely move"):
        nn.langevin(f, x0, 20, 20.0, seed=0, metropolis=True, adapt=False)
    with pytest.warns(RuntimeWarning, match="outside the data's range"):
        nn.langevin(lambda u: -0.5 * (u**2).sum(-1) / 100, x0, 50, 0.5, seed=0, data=x0)
    with pytest.raises(InputError, match="step_size 1000 moves the chains"):
        nn.langevin(f, x0, 5, 1e3, seed=0)
    net = _net()
    with pytest.raises(InputError, match=r"x0 has shape \(500, 3\).*fails on it"):
        nn.langevin(net, torch.zeros(500, 3), 5, 0.1)
    with pytest.raises(InputError, match="adapt=True needs metropolis"):
        nn.langevin(f, x0, 5, 0.1, adapt=True)
    # the noise follows torch's global generator unless seeded
    torch.manual_seed(3)
    a = nn.langevin(f, x0, 3, 0.1)
    torch.manual_seed(3)
    assert torch.equal(a, nn.langevin(f, x0, 3, 0.1))


def test_train_uses_one_thread_for_a_small_network_and_restores_the_setting():
    before = torch.get_num_threads()
    seen = []

    class Spy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = _net()

        def forward(self, u):
            seen.append(torch.get_num_threads())
            return self.inner(u)

    nn.train(Spy(), _x(), "cnce", eps=0.3, steps=2, batch_size=8, kappa=2, progress=False)
    assert set(seen[-2:]) == {1} and torch.get_num_threads() == before
    seen.clear()
    nn.train(Spy(), _x(), "cnce", eps=0.3, steps=2, batch_size=8, kappa=2, progress=False, threads=2)
    assert set(seen[-2:]) == {2} and torch.get_num_threads() == before


def test_cnce_loss_holds_its_eps_as_a_spec():
    """CNCELoss reads eps once into the cnce.eps spec type; a spec given as such is the same eps."""
    Fixed, Schedule = cnce_eps.Fixed, cnce_eps.Schedule
    assert nn.CNCELoss(3, eps=0.3).spec == Fixed(0.3) and nn.CNCELoss(3, eps=0.3).schedule == "fixed"
    assert nn.CNCELoss(3, eps="auto").spec == Schedule(nn.DEFAULT_SCHEDULE, auto=True)
    assert nn.CNCELoss(3, eps="carry", every=5).spec == Schedule("carry")
    a, b = nn.CNCELoss(3, eps=Schedule("scale", auto=True)), nn.CNCELoss(3, eps="auto")
    assert (a.schedule, a.factor) == (b.schedule, b.factor) == ("scale", nn.DEFAULT_FACTOR)
    assert nn.CNCELoss(3, eps="scale").factor == 1.0
    with pytest.raises(InputError, match="eps must be 'auto'.*got Schedule"):
        nn.CNCELoss(3, eps=Schedule("sometimes"))
    with pytest.raises(InputError, match="every applies to the re-choosing"):
        nn.CNCELoss(3, eps="once", every=5)
    with pytest.raises(InputError, match="got rule with eps='scale'"):
        nn.CNCELoss(3, eps="scale", rule=cnce_eps.NETWORK_RULE)


def test_a_checkpoint_in_use_is_refused_and_its_lock_released_after_a_refusal(tmp_path):
    """The checkpoint is a cnce.jobs.Job: a second training into a file another run holds is refused; a
    refused resume (other data) releases the lock, so the next call with the right data resumes."""
    from cnce.jobs import Job, JobLockedError

    x = _x()
    kw = dict(kappa=2, batch_size=16, lr=1e-2, seed=0, progress=False)
    ck = tmp_path / "a.pt"
    with Job(tmp_path, "a.pt", lock_file=".a.pt.lock"):
        with pytest.raises(JobLockedError, match="in use by another run"):
            nn.train(_net(), x, steps=2, checkpoint=ck, **kw)
    assert not ck.exists()
    nn.train(_net(), x, steps=2, checkpoint=ck, **kw)
    with pytest.raises(ValueError, match="x is not the data checkpoint"):
        nn.train(_net(), x.flip(1), steps=3, checkpoint=ck, **kw)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pt"]  # no lock left behind
    assert nn.train(_net(), x, steps=3, checkpoint=ck, **kw).resumed_from == 2
